"""Building blocks of detailed_results.html: escaping, tables, inline figures.

The page must be self-contained (Codabench shows it in an iframe): inline CSS, images as base64
``data:`` URIs, no relative links. Every string that may come from a participant goes through
:func:`escape` (tables escape every cell themselves).
"""

from __future__ import annotations

import base64
import html
import io
import math
from typing import Any, Callable, Iterable, Sequence


def escape(value: Any) -> str:
    """HTML-escape str(value), quotes included."""
    return html.escape(str(value), quote=True)


def format_number(value: Any, digits: int = 6) -> str:
    """Compact display of a number (``n/a`` for None, non-finite shown as such)."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return f"{value:.{digits}g}"
    return str(value)


def table(rows: Iterable[Sequence[Any]], header: Sequence[str], max_rows: int | None = None,
          caption: str | None = None, text_columns: Sequence[int] = ()) -> str:
    """An HTML table; every cell is formatted and escaped. Rows beyond max_rows are counted, not shown.
    The columns numbered in text_columns hold text (formulas, reasons): left-aligned."""
    rows = list(rows)
    shown = rows if max_rows is None else rows[:max_rows]
    out = ["<table class='with-text'>" if text_columns else "<table>"]
    if caption:
        out.append(f"<caption>{escape(caption)}</caption>")
    out.append("<tr>" + "".join(f"<th class='text'>{escape(h)}</th>" if k in text_columns else f"<th>{escape(h)}</th>"
                                for k, h in enumerate(header)) + "</tr>")
    opening = ["<td class='text'>" if k in text_columns else "<td>" for k in range(len(header))]
    for row in shown:
        out.append("<tr>" + "".join(f"{opening[k] if k < len(opening) else '<td>'}{escape(format_number(c))}</td>"
                                    for k, c in enumerate(row)) + "</tr>")
    out.append("</table>")
    if len(shown) < len(rows):
        out.append(f"<p class='note'>{len(rows) - len(shown)} more rows in details.json.</p>")
    return "\n".join(out)


def paragraph(text: str) -> str:
    return f"<p>{escape(text)}</p>"


def new_figure(width: float = 6.4, height: float = 4.0, ncols: int = 1, nrows: int = 1, **adjust):
    """A matplotlib Figure and its axes, without pyplot (no global state, faster, thread-safe).

    Margins are fixed (``adjust`` overrides them): a constrained or tight layout draws the figure once
    more, which doubles the scorer's plotting time."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100)
    margins = {"left": 0.8 / width, "right": 1 - 0.25 / width, "bottom": 0.55 / height,
               "top": 1 - 0.3 / height, "wspace": 0.28, "hspace": 0.35}
    fig.subplots_adjust(**{**margins, **adjust})
    axes = fig.subplots(nrows, ncols, squeeze=True)
    return fig, axes


def figure_or_note(what: str, draw: Callable[[], str]) -> str:
    """The HTML that draw() returns (a figure built with :func:`new_figure` and :func:`figure_html`), or a
    short note when it cannot be drawn: extreme but valid values (a mean of 1e300, an error of 1e-300) can
    make matplotlib fail, and a report never fails a scored submission (docs/codabench.md#reports). The
    failure is logged in one line, without a traceback: the scores stand."""
    try:
        return draw()
    except Exception as exc:  # noqa: BLE001: any failure of the drawing leaves the scores as they are
        from .task import log

        log(f"WARNING: the figure '{what}' could not be drawn ({type(exc).__name__}: {str(exc)[:200]}); "
            "the page shows a note instead, the scores are unaffected")
        return (f"<p class='note'>The figure {escape(what)} could not be drawn from these values "
                f"({escape(type(exc).__name__)}); the scores are unaffected.</p>")


def figure_html(fig, alt: str, dpi: int = 90) -> str:
    """Render a matplotlib Figure as an inline PNG <img> (base64 data URI)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f"<img alt='{escape(alt)}' src='data:image/png;base64,{data}'>"


def figure_row(figures: Iterable[str]) -> str:
    """Several figures (each from :func:`figure_or_note`) side by side while the page is wide and one
    under another in Codabench's ~760 px iframe, each at its own size: small figures in a row stay
    readable where one wide grid would shrink."""
    return "<div class='figures'>" + "".join(figures) + "</div>"


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:1.5em;color:#1d2330;max-width:70em}
h1{font-size:1.4em;margin-bottom:.2em} h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #dde}
table{border-collapse:collapse;margin:.6em 0;font-size:.92em} caption{text-align:left;font-weight:600}
th,td{border:1px solid #ccd;padding:.25em .6em;text-align:right} th{background:#eef1f7}
td:first-child,th:first-child{text-align:left} .note{color:#556;font-size:.9em}
.warn{background:#fff6e0;border-left:4px solid #e0a000;padding:.4em .8em}
.error{background:#fde8e8;border-left:4px solid #c62828;padding:.4em .8em}
img{max-width:100%;height:auto} code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.9em}
pre{white-space:pre-wrap;word-break:break-all}
td{overflow-wrap:anywhere} table{max-width:100%}
.guide{margin:.8em 0} .guide summary{font-weight:600;cursor:pointer} .guide td,.guide th{text-align:left}
.guide td code{overflow-wrap:normal}
.figures{display:flex;flex-wrap:wrap;gap:.4em 1em;align-items:flex-start}
.with-text td{overflow-wrap:normal} .with-text .text{text-align:left;overflow-wrap:anywhere}
@media (max-width:800px){body{margin:.6em} table{font-size:.85em} th,td{padding:.2em .35em}}
"""


def reading_guide(guide: Sequence) -> str:
    """The "how to read this page" block: for each score, its formula, which direction is better and its
    range (each item has key, formula, better, range: codascore.task.ScoreGuide)."""
    if not guide:
        return ""
    rows = "".join(f"<tr><td><code>{escape(g.key)}</code></td><td>{escape(g.formula)}</td>"
                   f"<td>{escape(g.better)} is better</td><td>{escape(g.range)}</td></tr>" for g in guide)
    return ("<details class='guide' open><summary>How to read this page</summary><table>"
            "<tr><th>score</th><th>what it is</th><th>direction</th><th>range</th></tr>"
            + rows + "</table></details>")


def render_page(title: str, task_name: str, scores: dict, warnings: Sequence[str], sections: Sequence,
                problems: Sequence[str] | None = None, guide: Sequence = ()) -> str:
    """The whole self-contained detailed_results.html: scores, warnings or problems, then sections.

    Every string from outside (titles, warnings, problems) is escaped here; section bodies are built by
    the helpers above, which escape their own content."""
    from . import __version__

    parts = ["<!DOCTYPE html>", "<html lang='en'><head><meta charset='utf-8'>",
             f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>{escape(title)}</h1>",
             f"<p class='note'>task <code>{escape(task_name)}</code> · codascore {escape(__version__)}</p>"]
    if problems:
        parts.append("<div class='error'><p><b>The submission is invalid; nothing was scored.</b> "
                     "Failed submissions do not count against your limits.</p><pre>"
                     + escape("\n".join(problems)) + "</pre></div>")
    if scores:
        parts.append("<h2>Scores</h2>")
        parts.append(table(((k, v) for k, v in scores.items()), ("key", "value")))
        parts.append(reading_guide(guide))
    if warnings:
        parts.append("<div class='warn'><p><b>Warnings</b></p><ul>"
                     + "".join(f"<li>{escape(w)}</li>" for w in warnings) + "</ul></div>")
    for section in sections:
        parts.append(f"<h2>{escape(section.title)}</h2>\n{section.html}")
    parts.append("</body></html>\n")
    return "\n".join(parts)
