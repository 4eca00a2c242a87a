"""Sections of detailed_results.html for the SRBench tasks. Every submitted string is escaped (by
codascore.report.table, which escapes every cell)."""

from __future__ import annotations

from ..report import figure_html, figure_or_note, new_figure, paragraph, table
from ..task import Result, Section
from .files import SUBMISSION


def _fmt(value, digits: int = 4):
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return value


ACCURACY_SOURCE_TEXT = {
    "string": "Accuracy: R² of each model string evaluated on the test features.",
    "predictions": "Accuracy: R² of the fitted estimator's predictions on the test features (recorded by the "
                   "ingestion program); simplicity and property come from the model strings.",
}


def synthetic_report(result: Result) -> list[Section]:
    """srbench.synthetic: the per-dataset ranks, the final scores of the reference pool and the submission
    (a bar chart), and every run's simplified model or why the run failed."""
    per_dataset = result.details.get("per_dataset", [])
    rows = [(r["dataset"], _fmt(r.get("r2")), _fmt(r.get("simplicity")), _fmt(r.get("property")),
             _fmt(r.get("r2_rank")), _fmt(r.get("simplicity_rank")), _fmt(r.get("property_rank")),
             _fmt(r.get("hmean"))) for r in per_dataset]
    sections = [Section("Per dataset", paragraph(
        f"Aggregate over runs: {result.details.get('aggregate')} (missing values: {result.details.get('profile')} "
        "profile). Ranks are n_algs − dense rank within the reference pool plus this submission; the "
        "dataset score is the harmonic mean of the three ranks. "
        + ACCURACY_SOURCE_TEXT.get(result.details.get("accuracy_source"), ""))
        + table(rows, ["dataset", "accuracy (R²)", "simplicity", "property", "rank accuracy",
                       "rank simplicity", "rank property", "harmonic mean"]))]
    pool = result.details.get("pool", {})
    if pool:
        def draw_pool() -> str:
            fig, ax = new_figure(6.4, 0.45 * len(pool) + 1.2)
            names = list(pool)[::-1]
            colors = ["tab:orange" if n == SUBMISSION else "tab:blue" for n in names]
            ax.barh(range(len(names)), [pool[n] for n in names], color=colors)
            ax.set_yticks(range(len(names)), names)
            ax.set_xlabel("final score (mean over datasets of the harmonic mean of ranks)")
            return figure_html(fig, "final scores of the reference pool and the submission")

        sections.append(Section("Rank against the reference pool", figure_or_note("final scores", draw_pool)
                                 + table(sorted(pool.items(), key=lambda kv: -kv[1]), ["method", "score"])))
    runs = [(i["id"], i.get("nodes", "n/a"), _fmt(i.get("r2_test")), i.get("simplified") or i.get("failed", ""))
            for i in result.instances]
    sections.append(Section("Models after simplification", table(
        runs, ["run", "nodes", "R²", "simplified model (or why the run failed)"], max_rows=200)))
    return sections


def table_report(result: Result) -> list[Section]:
    """srbench.qualification and srbench.realworld: the per-dataset table score() put in details."""
    header = list(result.details["table_header"])
    note = ACCURACY_SOURCE_TEXT.get(result.details.get("accuracy_source"), "")
    return [Section("Per dataset", paragraph(note) + table(result.details["table"], header))]
