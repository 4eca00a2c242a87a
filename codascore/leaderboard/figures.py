"""The leaderboard page's figures, each a matplotlib Figure drawn for Codabench's 760 px iframe (at most
8 inches at 90 dpi): team names are shortened and their ``$`` escaped (matplotlib would read mathtext),
and the margins grow with the longest name so that no text leaves its figure."""

from __future__ import annotations

import numpy as np

from ..report import new_figure

#: A team name in a figure: at most this many characters.
NAME_CHARS = 22
WIDTH = 7.6
#: Inches per team row; the points of a name's label.
ROW_INCHES, LABEL_POINTS = 0.28, 8


def label(name: str) -> str:
    short = name if len(name) <= NAME_CHARS else name[:NAME_CHARS - 1] + "…"
    return short.replace("$", r"\$")


def text_inches(texts: list[str], points: float = LABEL_POINTS) -> float:
    """The width of the widest text in inches, measured on its glyphs (matplotlib's TextPath, in points):
    a row of W is three times as wide as a row of i."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextPath

    font = FontProperties(size=points)
    return max([TextPath((0, 0), text, prop=font).get_extents().width / 72 for text in texts if text] + [0.0])


def name_margin(names: list[str], suffix: str = "") -> float:
    """Inches that the widest shortened name (with suffix) needs beside an axis, tick and padding included."""
    return 0.3 + text_inches([label(n) + suffix for n in names])


def team_axes(names: list[str], extra_bottom: float = 0.0, width: float = WIDTH):
    """A figure with one row per team (the names as y tick labels, the first at the top)."""
    height = 1.1 + extra_bottom + ROW_INCHES * len(names)
    fig, ax = new_figure(width, height, left=name_margin(names) / width, right=1 - 0.25 / width,
                         bottom=(0.55 + extra_bottom) / height, top=1 - 0.35 / height)
    ax.set_yticks(range(len(names)), [label(n) for n in names], fontsize=8)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.tick_params(axis="x", labelsize=8)
    return fig, ax


def blob_plot(names: list[str], counts: np.ndarray, low: np.ndarray, high: np.ndarray, median: np.ndarray,
              full: np.ndarray):
    """Rank distributions (challengeR's blob plot, turned: one row per team): a circle's area is the
    share of replicates giving the team that rank; the bar spans the 95% rank interval, ``|`` marks the
    median rank and ``x`` the rank on the full data."""
    k = len(names)
    fig, ax = team_axes(names)
    share = counts / max(counts.sum(axis=1).max(), 1)
    rows, rank_index = np.nonzero(share)
    ax.scatter(rank_index + 1, rows, s=share[rows, rank_index] * 260, color="#3b6fb6", alpha=0.55, linewidths=0)
    ax.hlines(range(k), low, high, color="#1d2330", linewidth=1)
    ax.scatter(median, range(k), marker="|", s=120, color="#1d2330")
    ax.scatter(full, range(k), marker="x", s=30, color="#c62828")
    ax.set_xlim(0.4, k + 0.6)
    ax.set_xticks(range(1, k + 1))
    ax.set_xlabel("rank in the bootstrap replicates", fontsize=9)
    ax.grid(axis="x", color="#e4e6ee", linewidth=0.6)
    ax.set_axisbelow(True)
    return fig


def interval_plot(names: list[str], score: np.ndarray, low: np.ndarray, high: np.ndarray, what: str):
    """Each team's score on the full data (a dot) and its 95% bootstrap interval (a bar)."""
    fig, ax = team_axes(names)
    ax.hlines(range(len(names)), low, high, color="#3b6fb6", linewidth=2.2)
    ax.scatter(score, range(len(names)), color="#1d2330", s=16, zorder=3)
    ax.set_xlabel(what, fontsize=9)
    ax.grid(axis="x", color="#e4e6ee", linewidth=0.6)
    ax.set_axisbelow(True)
    return fig


def matrix_axes(names: list[str]):
    """A square team x team figure: rows and columns in rank order, names on both axes."""
    k = len(names)
    margin = name_margin(names)
    side = min(WIDTH - margin - 1.3, max(2.2, 0.32 * k))
    width, height = margin + side + 1.3, margin + side + 0.45
    fig, ax = new_figure(width, height, left=margin / width, right=(margin + side) / width,
                         bottom=margin / height, top=1 - 0.3 / height)
    ax.set_xticks(range(k), [label(n) for n in names], rotation=90, fontsize=8)
    ax.set_yticks(range(k), [label(n) for n in names], fontsize=8)
    return fig, ax


def beats_heatmap(names: list[str], beats: np.ndarray):
    """P(row beats column): the share of replicates in which the row's team scores better."""
    fig, ax = matrix_axes(names)
    image = ax.imshow(beats, vmin=0, vmax=1, cmap="RdBu", aspect="equal")
    if len(names) <= 10:
        for (i, j), value in np.ndenumerate(beats):
            if np.isfinite(value):
                ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=7,
                        color="white" if abs(value - 0.5) > 0.3 else "#1d2330")
    colorbar = fig.colorbar(image, ax=ax, fraction=0.05, pad=0.03)
    colorbar.ax.tick_params(labelsize=7)
    return fig


def significance_map(names: list[str], better: np.ndarray):
    """Wilcoxon signed-rank with Holm's correction: +1 where the row's team is significantly better than
    the column's, -1 where significantly worse, 0 where the test cannot tell them apart."""
    from matplotlib.colors import ListedColormap

    fig, ax = matrix_axes(names)
    ax.imshow(better, vmin=-1, vmax=1, cmap=ListedColormap(["#e8a0a0", "#f1f2f6", "#7fbf7f"]), aspect="equal")
    ax.set_xticks(np.arange(len(names) + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(len(names) + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="white", linewidth=1)
    ax.tick_params(which="minor", length=0)
    return fig


def rule_lines(names: list[str], rules: list[str], rank_table: np.ndarray):
    """The ranking under each rule side by side (one column per rule), a line joining each team's ranks;
    names at the left in the first rule's order and at the right in the last's."""
    k, m = len(names), len(rules)
    margin = name_margin(names, f" ({k})")  # the rank in brackets after the name
    height = 1.2 + ROW_INCHES * k
    fig, ax = new_figure(WIDTH, height, left=margin / WIDTH, right=1 - margin / WIDTH, bottom=0.7 / height,
                         top=1 - 0.3 / height)
    # positions, not ranks, on the y axis: teams tied on a rank stay apart (their labels give the rank)
    orders = [np.lexsort((np.arange(k), rank_table[:, r])) for r in range(m)]
    position = np.empty((k, m), dtype=int)
    for r, order in enumerate(orders):
        position[order, r] = np.arange(1, k + 1)
    for t in range(k):
        ax.plot(range(m), position[t], marker="o", markersize=4, color=f"C{t % 10}", linewidth=1.3)
    ax.set_ylim(k + 0.5, 0.5)
    ax.set_xlim(-0.15, m - 0.85)
    ax.set_xticks(range(m), [label(rule) for rule in rules], fontsize=8)
    ax.set_yticks(range(1, k + 1), [f"{label(names[t])} ({rank_table[t, 0]})" for t in orders[0]], fontsize=8)
    right = ax.twinx()
    right.set_ylim(k + 0.5, 0.5)
    right.set_yticks(range(1, k + 1), [f"({rank_table[t, -1]}) {label(names[t])}" for t in orders[-1]], fontsize=8)
    for axis in (ax, right):
        for side in ("top", "bottom", "left", "right"):
            axis.spines[side].set_visible(False)
        axis.tick_params(length=0)
    return fig
