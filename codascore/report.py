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
from typing import Any, Iterable, Sequence


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
          caption: str | None = None) -> str:
    """An HTML table; every cell is formatted and escaped. Rows beyond max_rows are counted, not shown."""
    rows = list(rows)
    shown = rows if max_rows is None else rows[:max_rows]
    out = ["<table>"]
    if caption:
        out.append(f"<caption>{escape(caption)}</caption>")
    out.append("<tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr>")
    for row in shown:
        out.append("<tr>" + "".join(f"<td>{escape(format_number(c))}</td>" for c in row) + "</tr>")
    out.append("</table>")
    if len(shown) < len(rows):
        out.append(f"<p class='note'>{len(rows) - len(shown)} more rows in details.json.</p>")
    return "\n".join(out)


def paragraph(text: str) -> str:
    return f"<p>{escape(text)}</p>"


def new_figure(width: float = 6.4, height: float = 4.0, ncols: int = 1, nrows: int = 1):
    """A matplotlib Figure and its axes, without pyplot (no global state, faster, thread-safe)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=True)
    return fig, axes


def figure_html(fig, alt: str, dpi: int = 90) -> str:
    """Render a matplotlib Figure as an inline PNG <img> (base64 data URI)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f"<img alt='{escape(alt)}' src='data:image/png;base64,{data}'>"
