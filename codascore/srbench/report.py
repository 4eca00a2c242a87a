"""Sections of detailed_results.html for the SRBench tasks, and their "how to read this page" lines
(docs/srbench.md#the-results-page). Every submitted string is escaped (by codascore.report.table, which escapes every cell)."""

from __future__ import annotations

import numpy as np

from ..report import figure_html, figure_or_note, figure_row, new_figure, paragraph, table
from ..task import Result, ScoreGuide, Section
from .files import SUBMISSION

#: Accuracy-against-complexity figures draw an R² below this at this value: one failed extrapolation
#: (R² of −100) would otherwise squash every other point into a line.
R2_SHOWN_FLOOR = -1.0
#: Model strings longer than this are cut in the page's table (details.json keeps them whole).
MODEL_SHOWN_CHARS = 160


def _fmt(value, digits: int = 4):
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return value


def _with_rank(value, rank) -> str:
    return f"{_fmt(value)} ({_fmt(rank)})"


def _short(name: str, limit: int = 28) -> str:
    return name if len(name) <= limit else name[:limit - 1] + "…"


ACCURACY_SOURCE_TEXT = {
    "string": "Accuracy: R² of each model string evaluated on the test features (a results submission, or "
              "accuracy_source: string).",
    "predictions": "Accuracy: R² of the fitted estimator's predictions on the test features (recorded by the "
                   "ingestion program); simplicity and property come from the model strings.",
}

SIMPLICITY_TEXT = "simplicity = −round(log₅(number of nodes of the model), 1)"
RANK_TEXT = ("each rank is n_algs − the dense descending rank among the reference pool and this submission "
             "(n_algs methods; the best gets n_algs − 1, the worst 0 when all differ)")


# --------------------------------------------------------------------------- guides

def synthetic_guide(config: dict) -> list[ScoreGuide]:
    """The synthetic track's scores (docs/srbench.md#scores-of-the-synthetic-track)."""
    over_runs = f"the {config['aggregate']} over the dataset's runs"
    return [
        ScoreGuide("score", "mean over datasets of the harmonic mean of three ranks (accuracy, simplicity, "
                            f"property of {over_runs}); {RANK_TEXT}", "higher",
                   "0 to n_algs − 1"),
        ScoreGuide("mean_r2", f"mean over datasets of round(test R² ({over_runs}), 3), each clamped to "
                              "[−10⁶, 1] for display", "higher", "−10⁶ to 1"),
        ScoreGuide("mean_simplicity", f"mean over datasets of {over_runs} of {SIMPLICITY_TEXT}, after sympy "
                                      "simplification", "higher", "≤ 0 (0: a single node)"),
        ScoreGuide("mean_property", f"mean over datasets of {over_runs} of the property: 1 or 0 for symbolic "
                                    "equivalence to the true formula (exact_formula), the share of bad features "
                                    "left out (featureselection, localopt), the test R² (extrapolation, noise)",
                   "higher", "unbounded below (R² datasets) to 1"),
        ScoreGuide("pool_position", "the submission's place when the reference pool and the submission are "
                                    "sorted by score, 1 = best", "lower", "1 to n_algs"),
        ScoreGuide("n_failed_runs", "runs without an accuracy: no model, an invalid model, a time limit or "
                                    "non-finite predictions", "lower", "0 to datasets × seeds"),
        ScoreGuide("n_unsimplified", "models scored unsimplified because sympy's simplify ran longer than "
                                     f"{_fmt(float(config['simplify_time_limit']))} s", "lower",
                   "0 to datasets × seeds"),
    ]


def qualification_guide(config: dict) -> list[ScoreGuide]:
    """The qualification's scores (docs/srbench.md#qualification)."""
    return [
        ScoreGuide("score", "−(mean over datasets of the median over seeds of d), d = rank(submission) − "
                            "rank(LinearRegression) by round(test R², 3): −1 when the submission is better, 0 on "
                            "a tie, +1 when it is worse or missing; above 0 qualifies", "higher", "−1 to 1"),
        ScoreGuide("qualified", "1 when score > 0, else 0", "higher", "0 or 1"),
        ScoreGuide("mean_r2", "mean over datasets of the submission's mean test R² over seeds (failed runs left "
                              "out), clamped to [−10⁶, 1]", "higher", "−10⁶ to 1"),
        ScoreGuide("linear_mean_r2", "the same for LinearRegression, fitted by the scorer on each training split: "
                                     "the bar to beat, which the submission does not change", "higher",
                   "−10⁶ to 1"),
        ScoreGuide("n_failed_runs", "runs without an accuracy: no model, an invalid model, a time limit or "
                                    "non-finite predictions", "lower", "0 to datasets × seeds"),
    ]


def realworld_guide(config: dict) -> list[ScoreGuide]:
    """The real-world track's scores (docs/srbench.md#real-world-track)."""
    run = "the representative run (R² closest to the median of its runs)"
    return [
        ScoreGuide("score", "mean over targets of the harmonic mean of three ranks (R² and simplicity of "
                            f"{run}, the expert's trust); {RANK_TEXT}", "higher", "0 to n_algs − 1"),
        ScoreGuide("mean_r2", f"mean over targets of round(test R² of {run}, 3), clamped to [−10⁶, 1]", "higher",
                   "−10⁶ to 1"),
        ScoreGuide("mean_simplicity", f"mean over targets of {SIMPLICITY_TEXT} of {run}'s model, not simplified",
                   "higher", "≤ 0 (0: a single node)"),
        ScoreGuide("mean_trust", "mean over targets of the expert's trust score for the submission (expert.csv; "
                                 "0 where it has none)", "higher", "the expert's scale (1 to 5 in 2022), 0 if none"),
        ScoreGuide("n_failed_runs", "runs without an accuracy: no model, an invalid model, a time limit or "
                                    "non-finite predictions", "lower", "0 to targets × seeds"),
    ]


# --------------------------------------------------------------------------- sections

def synthetic_report(result: Result) -> list[Section]:
    """srbench.synthetic: the per-dataset values and ranks, accuracy against complexity, the final scores of
    the reference pool and the submission, and every run's simplified model or why the run failed."""
    per_dataset = result.details.get("per_dataset", [])
    rows = [(r["dataset"], _with_rank(r.get("r2"), r.get("r2_rank")),
             _with_rank(r.get("simplicity"), r.get("simplicity_rank")),
             _with_rank(r.get("property"), r.get("property_rank")), _fmt(r.get("hmean"))) for r in per_dataset]
    sections = [Section("Per dataset", paragraph(
        f"Each value is the {result.details.get('aggregate')} over the dataset's runs (missing values: "
        f"{result.details.get('profile')} profile), with its rank in brackets: {RANK_TEXT}. The dataset score "
        f"is the harmonic mean of the three ranks (0 as soon as one rank is 0). {SIMPLICITY_TEXT}. The property "
        "is symbolic equivalence (1 or 0) on exact_formula datasets, the share of bad features left out on "
        "featureselection and localopt, the test R² on extrapolation and noise. "
        + ACCURACY_SOURCE_TEXT.get(result.details.get("accuracy_source"), ""))
        + table(rows, ["dataset", "R² (rank)", "simplicity (rank)", "property (rank)", "harmonic mean"]))]
    sections += _tradeoff_sections(result)
    sections += _pool_sections(result)
    sections.append(runs_section(result, simplified=True))
    return sections


def _outcome(run: dict) -> str:
    """A run's outcome and reason: what the ingestion saw (runs.json, code submissions) and what scoring
    found."""
    fit, why = run.get("fit_outcome"), run.get("fit_reason") or ""
    if "failed" in run:
        if fit and fit not in ("fitted", "fitted at the alarm") and why:
            return f"{fit}: {why}"  # the ingestion's reason says more than "no model submitted"
        return f"failed: {run['failed']}"
    if run.get("r2_test") is None:
        return f"worst R²: {run.get('reason', 'no accuracy')}"
    return f"scored; {why}" if why else "scored"


def runs_section(result: Result, simplified: bool) -> Section:
    """Every run of the submission, failures first: dataset, seed, outcome and reason, the fit's seconds
    (code submissions: runs.json), R², simplicity and the model (cut at MODEL_SHOWN_CHARS)."""
    rows = []
    for i in result.instances:
        dataset, _, seed = str(i["id"]).rpartition("/")
        model = str(i.get("simplified") or "")
        if len(model) > MODEL_SHOWN_CHARS:
            model = f"{model[:MODEL_SHOWN_CHARS]}… ({len(model)} characters)"
        failed = "failed" in i or i.get("r2_test") is None
        rank = 0 if failed else 1 if i.get("fit_reason") else 2
        rows.append((rank, (dataset, seed, _outcome(i), _fmt(i.get("fit_seconds"), 3), _fmt(i.get("r2_test")),
                            _fmt(i.get("simplicity")), model)))
    rows = [row for _, row in sorted(rows, key=lambda r: r[0])]
    n_failed = sum(1 for i in result.instances if "failed" in i or i.get("r2_test") is None)
    text = (f"One row per run ({len(rows)} runs, {n_failed} without an accuracy), failed runs first, with what "
            "happened to each: for a code submission the ingestion's outcome (fitted, fitted at the alarm, "
            "stopped by the watchdog, killed at the time limit, failed) and the fit's seconds; then R², "
            f"simplicity and the model{' after simplification' if simplified else ' as submitted'}. Models "
            f"longer than {MODEL_SHOWN_CHARS} characters are cut here; details.json holds every run whole.")
    return Section("Every run", paragraph(text) + table(
        rows, ["dataset", "seed", "outcome", "fit s", "R²", "simplicity", "model"], max_rows=200,
        text_columns=(2, 6)))


def table_report(result: Result) -> list[Section]:
    """srbench.qualification: the per-dataset table score() put in details, and how d is counted."""
    header = list(result.details["table_header"])
    note = ACCURACY_SOURCE_TEXT.get(result.details.get("accuracy_source"), "")
    explain = ("Per seed, the submission and LinearRegression are ranked by round(test R², 3): d = −1 when the "
               "submission is better, 0 on a tie, +1 when it is worse or its run failed. The last column is the "
               "median of d over the seeds; the score is minus the mean of that column, and the submission "
               "qualifies when the score is above 0. ")
    rows = result.details["table"]
    figure = figure_or_note("mean R² per dataset", lambda: _qualification_figure(rows)) if rows else ""
    return [Section("Per dataset", paragraph(explain + note) + table(rows, header) + figure),
            runs_section(result, simplified=False)]


def _qualification_figure(rows) -> str:
    """Each dataset's mean R² of the submission and of LinearRegression, side by side."""
    names = [_short(str(r[0])) for r in rows][::-1]
    left, axes_width, right = 0.25 + 0.085 * max(len(name) for name in names), 4.4, 0.3
    width = left + axes_width + right
    fig, ax = new_figure(width, 0.5 * len(rows) + 1.5, left=left / width, right=1 - right / width,
                         top=1 - 0.55 / (0.5 * len(rows) + 1.5))
    y = np.arange(len(rows))
    shown = [[max(float(v), R2_SHOWN_FLOOR) if v is not None else R2_SHOWN_FLOOR for v in r[1:3]] for r in rows][::-1]
    ax.barh(y + 0.2, [v[0] for v in shown], height=0.4, color="tab:orange", label="submission")
    ax.barh(y - 0.2, [v[1] for v in shown], height=0.4, color="tab:blue", label="LinearRegression")
    ax.set_yticks(y, names)
    ax.set_xlim(min(0.0, *(min(v) for v in shown)) - 0.02, 1.02)
    ax.set_xlabel(f"mean test R² over seeds (below {R2_SHOWN_FLOOR:g} drawn at {R2_SHOWN_FLOOR:g})")
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=2, fontsize=8, borderaxespad=0.2)
    return figure_html(fig, "mean R² per dataset, submission and LinearRegression")


def realworld_report(result: Result) -> list[Section]:
    """srbench.realworld: the per-target values and ranks, accuracy against complexity, and the final scores
    of the reference pool and the submission."""
    rows = [(r[0], _with_rank(r[1], r[4]), _with_rank(r[2], r[5]), _with_rank(r[3], r[6]), _fmt(r[7]))
            for r in result.details["table"]]
    explain = ("Per target, the submission's representative run (the run whose R² is closest to the median R² of "
               f"its runs): its R², the simplicity of its model as submitted (not simplified; {SIMPLICITY_TEXT}) "
               f"and the expert's trust score, each with its rank in brackets: {RANK_TEXT}. The target's score is "
               "the harmonic mean of the three ranks. ")
    note = ACCURACY_SOURCE_TEXT.get(result.details.get("accuracy_source"), "")
    sections = [Section("Per target", paragraph(explain + note) + table(
        rows, ["target", "R² (rank)", "simplicity (rank)", "trust (rank)", "harmonic mean"]))]
    return (sections + _tradeoff_sections(result) + _pool_sections(result, unit="targets")
            + [runs_section(result, simplified=False)])


def _pool_sections(result: Result, unit: str = "datasets") -> list[Section]:
    """The final scores of the reference pool and the submission: a bar chart and a table."""
    pool = result.details.get("pool", {})
    if not pool:
        return []

    def draw_pool() -> str:
        names = list(pool)[::-1]
        labels = [_short(n) for n in names]
        # the left margin fits the longest label (about 0.085 in per character at 10 pt); the axes keep
        # their width, wide enough for the x label
        left, axes_width, right = 0.25 + 0.085 * max(len(label) for label in labels), 4.6, 0.6
        width = left + axes_width + right
        fig, ax = new_figure(width, 0.45 * len(pool) + 1.2, left=left / width, right=1 - right / width)
        colors = ["tab:orange" if n == SUBMISSION else "tab:blue" for n in names]
        bars = ax.barh(range(len(names)), [pool[n] for n in names], color=colors)
        ax.bar_label(bars, fmt="%.3g", padding=3, fontsize=9)
        ax.set_yticks(range(len(names)), labels)
        ax.set_xlim(0, max(max(pool.values()), 1e-9) * 1.15)
        ax.set_xlabel(f"final score (mean over {unit} of the harmonic mean of ranks)")
        return figure_html(fig, "final scores of the reference pool and the submission")

    return [Section("Rank against the reference pool", paragraph(
        "The final score of each method of the reference pool and of this submission (orange), ranked together; "
        "higher is better.") + figure_or_note("final scores", draw_pool)
        + table(sorted(pool.items(), key=lambda kv: -kv[1]), ["method", "score"]))]


def pareto_front(points: dict[str, tuple[float, float]]) -> list[str]:
    """The methods no other method dominates in (higher R², lower complexity), by increasing complexity."""
    front = [name for name, (r2, cx) in points.items()
             if not any(r2_o >= r2 and cx_o <= cx and (r2_o > r2 or cx_o < cx)
                        for other, (r2_o, cx_o) in points.items() if other != name)]
    return sorted(front, key=lambda name: (points[name][1], -points[name][0]))


def _tradeoff_points(methods: dict[str, list]) -> dict[str, tuple[float, float]]:
    """(R², complexity = −simplicity) of each method with both values, R² floored for display."""
    return {name: (max(float(r2), R2_SHOWN_FLOOR), -float(simplicity))
            for name, (r2, simplicity) in methods.items() if r2 is not None and simplicity is not None}


def _method_colors(names) -> dict[str, str]:
    pool = sorted(n for n in names if n != SUBMISSION)
    palette = ["tab:blue", "tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan", "tab:grey"]
    return {**{n: palette[k % len(palette)] for k, n in enumerate(pool)}, SUBMISSION: "tab:orange"}


def _draw_tradeoff(ax, points: dict[str, tuple[float, float]], colors: dict[str, str], small: bool) -> None:
    """One accuracy-against-complexity axes: the pool's methods, their Pareto front and the submission."""
    pool = {n: p for n, p in points.items() if n != SUBMISSION}
    front = pareto_front(pool)
    if front:
        xs = [pool[n][1] for n in front]
        ys = [pool[n][0] for n in front]
        ax.step(xs, ys, where="post", color="black", lw=1, ls="--", label="pool's Pareto front")
    for name, (r2, cx) in pool.items():
        ax.scatter([cx], [r2], s=25 if small else 40, color=colors[name], label=_short(name), zorder=3)
    if SUBMISSION in points:
        r2, cx = points[SUBMISSION]
        ax.scatter([cx], [r2], s=90 if small else 140, marker="*", color=colors[SUBMISSION],
                   edgecolor="black", linewidth=0.5, label="this submission", zorder=4)
    values = [p[0] for p in points.values()] or [0.0]
    ax.set_ylim(min(min(values), 0.0) - 0.08, 1.08)
    spans = [p[1] for p in points.values()] or [0.0]
    ax.set_xlim(min(spans) - 0.2, max(spans) + 0.2)
    ax.grid(alpha=0.3)


def _tradeoff_sections(result: Result) -> list[Section]:
    """Accuracy against complexity: pooled over datasets, then one small panel per dataset."""
    data = {dataset: methods for dataset, methods in result.report_data.get("accuracy_complexity", {}).items()
            if _tradeoff_points(methods)}
    if not data:  # no method has both values anywhere: nothing to draw
        return []
    names = list(dict.fromkeys(name for methods in data.values() for name in methods))
    colors = _method_colors(names)

    def draw_pooled() -> str:
        per_method: dict[str, list[tuple[float, float]]] = {}
        for methods in data.values():
            for name, point in _tradeoff_points(methods).items():
                per_method.setdefault(name, []).append(point)
        points = {name: (float(np.mean([p[0] for p in pts])), float(np.mean([p[1] for p in pts])))
                  for name, pts in per_method.items()}
        # the legend right of the axes fits the longest label (about 0.065 in per character at 8 pt)
        longest = max(len(label) for label in [*map(_short, points), "pool's Pareto front"])
        left, axes_width, right = 0.8, 4.2, 0.55 + 0.065 * longest
        width = left + axes_width + right
        fig, ax = new_figure(width, 4.0, left=left / width, right=1 - right / width)
        _draw_tradeoff(ax, points, colors, small=False)
        ax.set_xlabel("complexity: −simplicity, about log₅(nodes)")
        ax.set_ylabel(f"R² (below {R2_SHOWN_FLOOR:g} drawn at {R2_SHOWN_FLOOR:g})")
        ax.set_title("mean over datasets", fontsize=10)
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, borderaxespad=0)
        return figure_html(fig, "accuracy against complexity, mean over datasets")

    def draw_panel(dataset: str, methods: dict[str, list]) -> str:
        fig, ax = new_figure(2.6, 2.3, left=0.5 / 2.6, right=1 - 0.1 / 2.6, bottom=0.45 / 2.3, top=1 - 0.28 / 2.3)
        _draw_tradeoff(ax, _tradeoff_points(methods), colors, small=True)
        ax.tick_params(labelsize=7)
        ax.set_xlabel("complexity", fontsize=7, labelpad=1)
        ax.set_ylabel("R²", fontsize=7, labelpad=1)
        ax.set_title(_short(dataset, 34), fontsize=8)
        return figure_html(fig, f"accuracy against complexity on {dataset}")

    panels = figure_row(figure_or_note(f"accuracy against complexity on {dataset}",
                                       lambda dataset=dataset, methods=methods: draw_panel(dataset, methods))
                        for dataset, methods in data.items())
    text = paragraph(
        "Accuracy (R²) against complexity (−simplicity, which grows with the logarithm of the node count; "
        "left is simpler) for each method of the reference pool, the dashed line joining the pool's "
        "non-dominated methods (its Pareto front: no other pool method is both as accurate and as simple), and "
        f"this submission (orange star). Up and left is better. R² below {R2_SHOWN_FLOOR:g} is drawn at "
        f"{R2_SHOWN_FLOOR:g}; the first figure averages the datasets' values so clamped, the others show each "
        "dataset.")
    return [Section("Accuracy against complexity", text + figure_or_note("accuracy against complexity", draw_pooled)
                    + panels)]


#: Each track's guide and sections, by task name (the tasks look theirs up here).
GUIDES = {"srbench.synthetic": synthetic_guide, "srbench.qualification": qualification_guide,
          "srbench.realworld": realworld_guide}
REPORTS = {"srbench.synthetic": synthetic_report, "srbench.qualification": table_report,
           "srbench.realworld": realworld_report}
