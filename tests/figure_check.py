"""A test helper: every text artist of every figure a report draws must lie inside its figure."""

from __future__ import annotations

import io

import matplotlib.text

from codascore import report


def clipped_texts(fig) -> list[str]:
    """The visible, non-empty texts of fig whose extent leaves the figure by more than 1 px."""
    fig.savefig(io.BytesIO(), format="png")
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    out = []
    for text in fig.findobj(matplotlib.text.Text):
        if text.get_visible() and text.get_text():
            extent = text.get_window_extent(renderer)
            if (extent.x0 < box.x0 - 1 or extent.y0 < box.y0 - 1 or extent.x1 > box.x1 + 1
                    or extent.y1 > box.y1 + 1):
                out.append(text.get_text())
    return out


def watch_figures(monkeypatch, *modules) -> list[tuple[str, list[str]]]:
    """Record (alt, clipped texts) of each figure rendered through figure_html, in codascore.report and in
    every module given that imported figure_html by name."""
    drawn: list[tuple[str, list[str]]] = []
    original = report.figure_html

    def checked(fig, alt, dpi=90):
        html = original(fig, alt, dpi)  # attaches the Agg canvas
        drawn.append((alt, clipped_texts(fig)))
        return html

    monkeypatch.setattr(report, "figure_html", checked)
    for module in modules:
        monkeypatch.setattr(module, "figure_html", checked)
    return drawn
