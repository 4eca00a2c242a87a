"""Draw logo.png, the competitions' image: one quadrant per family, drawn from its own science.

Run ``python pages/draw_logo.py`` (``make logo``); the PNG is committed so that bundles do not depend on
the plotting library's version. Everything is computed here, nothing is fetched.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "logo.png"


def lensing(ax) -> None:
    """Galaxies sheared tangentially around a foreground mass."""
    rng = np.random.default_rng(7)
    xy = rng.uniform(-1, 1, size=(55, 2))
    for x, y in xy:
        r = max(np.hypot(x, y), 0.25)
        angle = np.degrees(np.arctan2(y, x)) + 90
        stretch = 1 + 0.35 / r
        ax.add_patch(matplotlib.patches.Ellipse((x, y), 0.09 * stretch, 0.09 / stretch, angle=angle,
                                                color="#f3c969", alpha=0.9))
    ax.add_patch(matplotlib.patches.Circle((0, 0), 0.12, color="#ffffff"))
    ax.set_facecolor("#16213e")


def transit(ax) -> None:
    """A transmission spectrum: molecular bands over a Rayleigh slope."""
    wl = np.linspace(0.5, 7.8, 300)
    depth = 1.0 + 0.08 / wl ** 2 + sum(a * np.exp(-0.5 * ((wl - c) / w) ** 2)
                                       for a, c, w in ((0.12, 1.4, 0.12), (0.16, 2.7, 0.2), (0.2, 4.3, 0.15),
                                                       (0.1, 6.3, 0.35)))
    ax.fill_between(wl, 1.0, depth, color="#7fd1ae")
    ax.plot(wl, depth, color="#ffffff", lw=2.5)
    ax.set_xlim(0.5, 7.8)
    ax.set_ylim(0.95, 1.45)
    ax.set_facecolor("#0f3d3e")


def expression_tree(ax) -> None:
    """The tree of x0 * sin(x1) + 2: the nodes SRBench's simplicity counts."""
    nodes = {"+": (0.5, 0.66), "*": (0.3, 0.42), "2": (0.72, 0.42), "x0": (0.15, 0.14), "sin": (0.45, 0.14)}
    for parent, child in (("+", "*"), ("+", "2"), ("*", "x0"), ("*", "sin")):
        (x0, y0), (x1, y1) = nodes[parent], nodes[child]
        ax.plot([x0, x1], [y0, y1], color="#ffffff", lw=3, zorder=1)
    for label, (x, y) in nodes.items():
        ax.add_patch(matplotlib.patches.Circle((x, y), 0.1, color="#e76f51", zorder=2))
        ax.text(x, y, label, ha="center", va="center", color="white", fontsize=20, weight="bold", zorder=3)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_facecolor("#3d1e2e")


def graphical_model(ax) -> None:
    """A small Markov network on a grid, the UAI instances' shape."""
    points = [(x, y) for x in (0.2, 0.5, 0.8) for y in (0.2, 0.5, 0.8)]
    for (x, y) in points:
        for (u, v) in points:
            if abs(abs(x - u) + abs(y - v) - 0.3) < 1e-9:
                ax.plot([x, u], [y, v], color="#bde0fe", lw=3, zorder=1)
    shades = ["#4361ee", "#4cc9f0", "#4895ef"]
    for k, (x, y) in enumerate(points):
        ax.add_patch(matplotlib.patches.Circle((x, y), 0.08, color=shades[k % 3], zorder=2))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_facecolor("#1b263b")


def main(out: Path = OUT) -> Path:
    fig = plt.figure(figsize=(4, 4), dpi=100)
    for k, draw in enumerate((lensing, transit, expression_tree, graphical_model)):
        ax = fig.add_axes((0.5 * (k % 2), 0.5 - 0.5 * (k // 2) + 0.0, 0.5, 0.5))
        draw(ax)
        if draw is lensing:
            ax.set_xlim(-1, 1)
            ax.set_ylim(-1, 1)
        ax.set_xticks([])
        ax.set_yticks([])
        for spine in ax.spines.values():
            spine.set_visible(False)
    fig.text(0.5, 0.5, "codascore", ha="center", va="center", fontsize=30, weight="bold", color="#16213e",
             bbox=dict(boxstyle="round,pad=0.3", facecolor="white", edgecolor="none"))
    fig.savefig(out, dpi=100, metadata={"Software": None})
    plt.close(fig)
    return out


if __name__ == "__main__":
    print(main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT))
