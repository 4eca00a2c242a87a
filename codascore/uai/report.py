"""The UAI report sections: how a score is computed, the per-instance table, Err against the trivial
solver's error per instance family, and new best answers.

Built from the Result alone (score() returns every number the page shows); no file I/O
(docs/uai.md#the-results-page).
"""

from __future__ import annotations

import numpy as np

from .. import report as html
from ..task import Result, ScoreGuide, Section

#: Err of each inference type (docs/uai.md#errors-of-each-task), in the words the page shows.
ERROR_TEXT = {
    "PR": "Err = |log10 Z* − log10 Ẑ|, the distance between the true and the submitted log10 partition function",
    "MAR": "Err = the mean over the unobserved variables of the Hellinger distance between the exact and the "
           "submitted marginal",
    "MPE": "Err = log10 L(best known assignment) − log10 L(submitted assignment), L the product of the factors",
    "MMAP": "Err = log10 V(best known query answer) − log10 V(submitted answer), V the sum over the other "
            "variables",
    "MLC": "per test line, Err = log10 V(optimal labels | e) − log10 V(submitted labels | e); the instance "
           "score is the mean of the line scores",
}


def reading_guide(kind: str, config: dict) -> list[ScoreGuide]:
    """The "how to read this page" lines of a UAI task (docs/uai.md#scoring)."""
    tolerance = html.format_number(float(config["tolerance"]))
    return [
        ScoreGuide("score", f"mean over all reference instances of max(0, 100·(1 − Err/MaxErr)), MaxErr being "
                            f"the trivial solver's Err on the same instance; {ERROR_TEXT[kind]}; a missing or "
                            "invalid answer counts 0", "higher", "0 to 100"),
        ScoreGuide("n_answered", "instances with a valid answer of non-zero likelihood", "higher",
                   "0 to the number of instances"),
        ScoreGuide("n_perfect", f"instances scoring 100 (Err ≤ {tolerance})", "higher",
                   "0 to the number of instances"),
    ]


def report_sections(kind: str, result: Result) -> list[Section]:
    """Sections of detailed_results.html for a UAI task of type kind (PR, MAR, MPE, MMAP, MLC)."""
    rows = [(r["id"], r["family"], r["status"], round(r["score"], 3), r.get("error"), r.get("max_error"),
             r.get("reason", "")) for r in result.instances]
    explain = ("Each instance scores max(0, 100·(1 − Err/MaxErr)): 100 for an exact answer, 0 for one no "
               f"better than the trivial solver's, whose error is MaxErr. {ERROR_TEXT[kind]}. The task score "
               "is the mean over all instances, a missing or invalid answer counting 0 (its reason is in the "
               "last column).")
    if kind == "MLC":
        explain += " An MLC instance has one Err and MaxErr per test line, so its row leaves them empty."
    sections = [Section("Per-instance scores", html.paragraph(explain) + html.table(
        rows, ["instance", "family", "status", "score", "Err", "MaxErr (trivial)", "reason"], max_rows=500,
        text_columns=(6,)))]
    points = result.report_data.get("points", [])
    figure = (html.figure_or_note("Err against MaxErr", lambda: _error_figure(kind, points)) if points else
              "<p class='note'>No valid answer of non-zero likelihood: no error to plot.</p>")
    sections.append(Section("Error against the trivial solver, per instance family",
                            figure + _family_table(result.instances)))
    if result.details.get("new_best"):
        rows = [(b["id"], b["log10_value"]) for b in result.details["new_best"]]
        sections.append(Section("New best answers", html.paragraph(
            "These answers beat the stored best known value; organisers can fold them into the reference "
            "with 'codascore uai update-best'.") + html.table(rows, ["instance", "log10 value of the answer"])))
    return sections


def _family_table(instances: list[dict]) -> str:
    """Per family: instances, valid answers and the mean instance score."""
    families: dict[str, list[dict]] = {}
    for r in instances:
        families.setdefault(r["family"] or "(none)", []).append(r)
    rows = [(name, len(rs), sum(r["status"] == "ok" for r in rs), round(float(np.mean([r["score"] for r in rs])), 3))
            for name, rs in families.items()]
    return html.table(rows, ["family", "instances", "valid answers", "mean score"])


def _error_figure(kind: str, points: list[tuple]) -> str:
    """Err against MaxErr on log axes, one point per valid answer (per test line for MLC), coloured by the
    instance family, with the line Err = MaxErr where the score reaches 0."""
    trivial_err = np.array([p[0] for p in points], dtype=float)
    err = np.array([p[1] for p in points], dtype=float)
    family = [str(p[2]) if len(p) > 2 else "" for p in points]
    # the legend right of the axes fits the longest label (about 0.065 in per character at 8 pt)
    longest = max(len(label) for label in [*map(_short, family), "Err = MaxErr"])
    left, axes_width, right = 0.85, 3.9, 0.55 + 0.065 * longest
    width = left + axes_width + right
    fig, ax = html.new_figure(width, 4.4, left=left / width, right=1 - right / width)
    # errors below 1e-9 are rounding (an exact answer); they sit on the floor with the zeros
    positive = np.r_[trivial_err, err]
    positive = positive[positive > 1e-9]
    floor = 0.1 * float(positive.min()) if positive.size else 1e-6
    hi = max(float(np.max(trivial_err)), float(np.max(err)), floor * 10)
    ax.plot([floor, hi], [floor, hi], color="grey", lw=1, label="Err = MaxErr\n(score 0)")
    ax.plot([floor, hi], [floor / 2, hi / 2], color="grey", lw=1, ls=":", label="score 50")
    markers = "osD^v<>ph*"
    for k, name in enumerate(dict.fromkeys(family)):
        chosen = np.array([f == name for f in family])
        ax.scatter(np.maximum(trivial_err[chosen], floor), np.maximum(err[chosen], floor), s=22,
                   marker=markers[k % len(markers)], label=_short(name or "(none)"), alpha=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("MaxErr: error of the trivial answer")
    ax.set_ylabel("Err: error of the submission")
    ax.set_title(f"{kind}: error against the trivial error")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, title="family", title_fontsize=8,
              borderaxespad=0)
    unit = "test line" if kind == "MLC" else "validly answered instance"
    return html.paragraph(f"One point per {unit}, coloured by instance family. Points on the grey line score "
                          "0, points on the dotted line 50, points further below score more. Errors of 0 (below "
                          "1e-9) are drawn on the lower edge (Err, a score of 100) or the left edge (MaxErr: the "
                          "trivial answer was already exact).") + html.figure_html(fig, "Err vs MaxErr")


def _short(name: str, limit: int = 24) -> str:
    """A legend label that fits the space right of the axes."""
    return name if len(name) <= limit else name[:limit - 1] + "…"
