"""Checks of the figures a report draws: every drawn text (titles, labels, legends, tick labels) lies inside
its figure, so that nothing is clipped on the page (docs/codabench.md#reports)."""

from __future__ import annotations

import io

import matplotlib.axis
import matplotlib.text


def texts_outside(fig) -> list[str]:
    """The drawn texts of fig that reach outside it by more than 1 px. Tick labels are checked through
    their axes' tight box, which counts only the ticks matplotlib draws (an axis keeps formatted labels
    of ticks outside its view, which are never drawn)."""
    fig.savefig(io.BytesIO(), format="png")
    renderer = fig.canvas.get_renderer()
    frame = fig.bbox.padded(1)
    tick_labels = {id(label) for tick in fig.findobj(matplotlib.axis.Tick) for label in (tick.label1, tick.label2)}
    outside = [f"axes {ax.get_title() or ax.get_label()!r}" for ax in fig.axes
               if not frame.contains(*ax.get_tightbbox(renderer).min) or
               not frame.contains(*ax.get_tightbbox(renderer).max)]
    for text in fig.findobj(matplotlib.text.Text):
        if text.get_visible() and text.get_text() and id(text) not in tick_labels:
            box = text.get_window_extent(renderer)
            if not (frame.contains(*box.min) and frame.contains(*box.max)):
                outside.append(text.get_text())
    return outside


def record_figures(monkeypatch, module) -> list:
    """Every figure module's figure_html renders from now on (module: a family's report module)."""
    figures = []
    original = module.figure_html

    def recording(fig, *args, **kwargs):
        figures.append(fig)
        return original(fig, *args, **kwargs)

    monkeypatch.setattr(module, "figure_html", recording)
    return figures


def overlapping_tick_labels(fig) -> list[tuple[str, str]]:
    """Pairs of drawn tick labels of one axis whose boxes overlap (labels that run into each other)."""
    fig.savefig(io.BytesIO(), format="png")
    renderer = fig.canvas.get_renderer()
    pairs = []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            slack = 1e-9 * max(abs(lo), abs(hi), 1.0)
            drawn = [tick.label1 for tick in axis.get_major_ticks()
                     if lo - slack <= tick.get_loc() <= hi + slack and tick.label1.get_visible()
                     and tick.label1.get_text()]
            boxes = [(label.get_text(), label.get_window_extent(renderer)) for label in drawn]
            pairs += [(a, b) for i, (a, box_a) in enumerate(boxes) for b, box_b in boxes[i + 1:]
                      if box_a.overlaps(box_b)]
    return pairs
