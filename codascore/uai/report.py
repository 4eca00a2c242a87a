"""The UAI report sections: the per-instance table, Err against the trivial error, and new best answers.

Built from the Result alone (score() returns every number the page shows); no file I/O.
"""

from __future__ import annotations

import numpy as np

from .. import report as html
from ..task import Result, Section


def report_sections(kind: str, result: Result) -> list[Section]:
    """Sections of detailed_results.html for a UAI task of type kind (PR, MAR, MPE, MMAP, MLC)."""
    rows = [(r["id"], r["family"], r["status"], round(r["score"], 3), r.get("error"), r.get("max_error"),
             r.get("reason", "")) for r in result.instances]
    sections = [Section("Per-instance scores", html.table(
        rows, ["instance", "family", "status", "score", "Err", "MaxErr (trivial)", "reason"], max_rows=500))]
    points = result.report_data.get("points", [])
    if points:
        figure = html.figure_or_note("Err against MaxErr", lambda: _error_figure(kind, points))
        sections.append(Section("Error against the trivial solver", figure))
    if result.details.get("new_best"):
        rows = [(b["id"], b["log10_value"]) for b in result.details["new_best"]]
        sections.append(Section("New best answers", html.paragraph(
            "These answers beat the stored best known value; organisers can fold them into the reference "
            "with 'codascore uai update-best'.") + html.table(rows, ["instance", "log10 value of the answer"])))
    return sections


def _error_figure(kind: str, points: list[tuple[float, float]]) -> str:
    """Err against MaxErr on log axes, one point per valid answer (per test line for MLC)."""
    fig, ax = html.new_figure(5.5, 4.0)
    trivial_err = np.array([p[0] for p in points], dtype=float)
    err = np.array([p[1] for p in points], dtype=float)
    floor = max(1e-12, 0.1 * min([v for v in np.r_[trivial_err, err] if v > 0], default=1e-6))
    ax.scatter(np.maximum(trivial_err, floor), np.maximum(err, floor), s=18)
    hi = max(float(np.max(trivial_err)), float(np.max(err)), floor * 10)
    ax.plot([floor, hi], [floor, hi], color="grey", lw=1, label="Err = MaxErr (score 0)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("MaxErr: error of the trivial answer")
    ax.set_ylabel("Err: error of the submission")
    ax.set_title(f"{kind}: error against the trivial error")
    ax.legend(loc="best", fontsize=8)
    unit = "test line" if kind == "MLC" else "validly answered instance"
    return html.paragraph(f"One point per {unit}; points below the grey line score above 0; errors of 0 are "
                          "drawn at the lower or left edge.") + html.figure_html(fig, "Err vs MaxErr")
