"""The weak lensing report pages (detailed_results.html): figures and tables drawn from aggregates only,
so that no single map's truth or label can be read from them (docs/weak_lensing.md#report-pages).
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from ..report import figure_html, figure_or_note, figure_row, new_figure, paragraph, table
from ..task import Section
from . import metrics
from .files import PRIOR
from .metrics import PARAMETERS

#: Report cells with fewer maps than this are not drawn: a participant knows their own predictions, so a
#: sparse cell of (truth, prediction) would give away that map's truth.
MIN_BIN_COUNT = 10
#: The parameters as matplotlib draws them (both are dimensionless).
SYMBOLS = {"Omega_m": r"$\Omega_m$", "S_8": r"$S_8$"}
#: The left end of the ROC's logarithmic FPR axis (the band of tpr_low_fpr starts at 1e-3), or half the
#: smallest positive FPR when that is lower.
FPR_AXIS_MIN = 5e-4


# --------------------------------------------------------------------------- Phase 1

def _draw_scatter(truth: np.ndarray, means: np.ndarray, sigma: np.ndarray, p: int) -> str:
    """Predicted against true for parameter p: hexagons of at least MIN_BIN_COUNT maps, and the median
    prediction and median σ in bins of the true value."""
    fig, ax = new_figure(5.0, 4.4)
    lo, hi = PRIOR[PARAMETERS[p]]
    extent = (lo, hi, min(lo, np.percentile(means[:, p], 1)), max(hi, np.percentile(means[:, p], 99)))
    ax.hexbin(truth[:, p], means[:, p], gridsize=25, cmap="Blues", mincnt=MIN_BIN_COUNT, extent=extent)
    edges = np.linspace(truth[:, p].min(), truth[:, p].max(), 13)
    centres, mean_pred, mean_sigma = [], [], []
    for a, b in zip(edges[:-1], edges[1:]):
        rows = (truth[:, p] >= a) & (truth[:, p] <= b)
        if rows.sum() >= MIN_BIN_COUNT:
            centres.append((a + b) / 2)
            mean_pred.append(np.median(means[rows, p]))
            mean_sigma.append(np.median(sigma[rows, p]))
    ax.errorbar(centres, mean_pred, yerr=mean_sigma, fmt="o", color="#c62828", capsize=3,
                label="median prediction ± median σ\n(bins of the true value)")
    ax.plot([lo, hi], [lo, hi], "k--", lw=1, label="prediction = truth")
    ax.set_xlabel(f"true {SYMBOLS[PARAMETERS[p]]}")
    ax.set_ylabel(f"predicted {SYMBOLS[PARAMETERS[p]]}")
    ax.legend(fontsize=8, loc="upper left")
    return figure_html(fig, f"predicted against true {PARAMETERS[p]}")


def _draw_pulls(pulls: np.ndarray, p: int) -> str:
    """The histogram of parameter p's pulls (clipped to ±5) against N(0, 1)."""
    fig, ax = new_figure(5.0, 3.6)
    grid = np.linspace(-5, 5, 201)
    finite = pulls[np.isfinite(pulls[:, p]), p]
    ax.hist(np.clip(finite, -5, 5), bins=60, range=(-5, 5), density=True, color="#5c7cba", alpha=0.8,
            label="(μ − truth)/σ")
    ax.plot(grid, np.exp(-grid ** 2 / 2) / math.sqrt(2 * math.pi), "k-", lw=1.5, label="N(0, 1)")
    ax.set_xlabel(f"pull of {SYMBOLS[PARAMETERS[p]]} (clipped to ±5)")
    ax.set_ylabel("density of maps")
    ax.legend(fontsize=8)
    return figure_html(fig, f"histogram of pulls of {PARAMETERS[p]} against N(0,1)")


def _coverage_table(truth: np.ndarray, means: np.ndarray, errorbars: np.ndarray) -> str:
    """Coverage at 1 and 2 sigma against the Gaussian levels."""
    rows = []
    for n_sigma in (1.0, 2.0):
        inside = metrics.covered(truth, means, errorbars, n_sigma).mean(axis=0)
        nominal = math.erf(n_sigma / math.sqrt(2))
        rows.append((f"{n_sigma:g} σ", nominal, float(inside[0]), float(inside[1])))
    return table(rows, ("interval", "Gaussian level", "Omega_m", "S_8"),
                 caption="Fraction of maps whose truth lies within μ ± nσ")


def _calibration_curve(pulls: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Calibration curve: coverage of the central Gaussian interval at each nominal level; (levels, inside)
    with inside[level, map, parameter]."""
    levels = np.linspace(0.02, 0.98, 49)
    half_widths = np.array([NormalDist().inv_cdf((1 + level) / 2) for level in levels])
    with np.errstate(invalid="ignore"):
        inside = np.abs(pulls)[None, :, :] <= half_widths[:, None, None]
    return levels, inside


def _draw_calibration(levels: np.ndarray, inside: np.ndarray) -> str:
    fig, ax = new_figure(5.2, 4.2)
    ax.plot([0, 1], [0, 1], "k--", lw=1, label="calibrated")
    for p, colour in zip(range(2), ("#1f4e9c", "#c62828")):
        ax.plot(levels, inside[:, :, p].mean(axis=1), "-", color=colour, lw=1.6, label=SYMBOLS[PARAMETERS[p]])
    ax.axvline(math.erf(1 / math.sqrt(2)), color="#999", lw=0.8, ls=":")
    ax.set_xlabel("nominal level of μ ± zσ (Gaussian)")
    ax.set_ylabel("observed coverage")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8, loc="upper left")
    return figure_html(fig, "coverage against nominal level")


def phase1_report(truth: np.ndarray, means: np.ndarray, errorbars: np.ndarray) -> list[Section]:
    """Predicted against true (hexagons and truth bins of at least MIN_BIN_COUNT maps, so that no single
    map's truth is readable), pull histograms against N(0, 1), coverage at 1 and 2 sigma against the
    Gaussian levels, and the calibration curve (coverage against nominal level)."""
    sigma = np.abs(errorbars)
    with np.errstate(all="ignore"):
        pulls = (means - truth) / sigma
    scatter = figure_row(figure_or_note(f"predicted against true {PARAMETERS[p]}",
                                        lambda p=p: _draw_scatter(truth, means, sigma, p))
                         for p in range(len(PARAMETERS)))
    histogram = figure_row(figure_or_note(f"pulls of {PARAMETERS[p]} against N(0, 1)",
                                          lambda p=p: _draw_pulls(pulls, p))
                           for p in range(len(PARAMETERS)))
    coverage_table = _coverage_table(truth, means, errorbars)
    levels, inside = _calibration_curve(pulls)
    calibration = figure_or_note("coverage against nominal level", lambda: _draw_calibration(levels, inside))
    return [
        Section("Predicted against true", paragraph(
            f"Density of (true, predicted) pairs, in cells of at least {MIN_BIN_COUNT} maps; red points are "
            "the median prediction in bins of the true value, with the median submitted σ as error bars.")
            + scatter),
        Section("Pulls", paragraph("A calibrated submission's pulls follow N(0, 1).") + histogram),
        Section("Coverage", coverage_table + paragraph(
            "Calibration curve: the fraction of maps whose truth lies in the central Gaussian interval "
            "μ ± zσ of each nominal level (the dotted line marks 1σ, 68.3 %). Above the diagonal the "
            "errors are too wide, below it too narrow.") + calibration),
    ]


# --------------------------------------------------------------------------- Phase 2

def blocked_roc(is_ood: np.ndarray, scores: np.ndarray, k: int = MIN_BIN_COUNT, avoid=()
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ROC at cuts of the ranking into blocks of at least k maps (docs/weak_lensing.md#the-roc-figure).

    The maps are ordered by score, most OoD first. A cut falls after c maps only between two different
    scores (a tie block is never split), at least k maps after the previous cut and at least k maps before
    the end; so where the cuts fall depends on the submitted scores alone, never on a label, and a point
    tells only how many of each class the blocks before it hold. avoid: positions in the ranking where the
    page already publishes counts (the p_ind bins' edges when the ranking is p_ind's order); no cut falls
    within k maps of one, so that no difference of the two gives the counts of fewer than k maps.
    Returns (cuts, fpr, tpr): cuts from 0 to N, and the rates of the maps ranked above each cut (from
    (0, 0) to (1, 1))."""
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    ranked, labels = np.asarray(scores)[order], np.asarray(is_ood, dtype=np.int64)[order]
    n = ranked.size
    allowed = np.flatnonzero(ranked[1:] != ranked[:-1]) + 1  # positions between two different scores
    published = np.unique(np.asarray(avoid, dtype=np.int64))
    if published.size:
        after = np.searchsorted(published, allowed)
        gap_after = np.abs(published[np.minimum(after, published.size - 1)] - allowed)
        gap_before = np.abs(allowed - published[np.maximum(after - 1, 0)])
        allowed = allowed[np.minimum(gap_after, gap_before) >= k]
    cuts, last = [0], 0
    while True:
        i = np.searchsorted(allowed, last + k)
        if i == allowed.size or n - allowed[i] < k:
            break
        last = int(allowed[i])
        cuts.append(last)
    cuts.append(n)
    cuts = np.array(cuts)
    tp = np.r_[0, np.cumsum(labels)][cuts]
    fp = cuts - tp
    return cuts, fp / max(fp[-1], 1), tp / max(tp[-1], 1)


def _bin_edges_in_ranking(p_ind: np.ndarray | None, scores: np.ndarray, counts: np.ndarray | None) -> np.ndarray:
    """Where the p_ind bins' edges fall in the ROC's ranking, when that ranking orders the maps as p_ind
    does or its reverse (it ranks 1 - p_ind unless ood_scores were given): the bins' counts are published,
    so the ROC must keep its cuts away from them. Empty when there is no p_ind or the orders differ."""
    if p_ind is None:
        return np.empty(0, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    if np.all(np.diff(p_ind[np.lexsort((p_ind, -scores))]) >= 0):  # most OoD first = lowest p_ind first
        return np.cumsum(counts)[:-1]
    if np.all(np.diff(p_ind[np.lexsort((-p_ind, -scores))]) <= 0):  # the reverse order
        return p_ind.size - np.cumsum(counts)[:-1]
    return np.empty(0, dtype=np.int64)


def roc_envelope(fpr: np.ndarray, tpr: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The bounds the blocked points put on the ROC at the false positive rates ``at``: the curve is
    monotone and passes through every point, so at x it lies between the highest TPR of a point with FPR <= x
    and the lowest TPR of a point with FPR > x."""
    at = np.asarray(at, dtype=np.float64)
    lower = tpr[np.searchsorted(fpr, at, side="right") - 1]
    above = np.searchsorted(fpr, at, side="right")
    upper = np.where(above < fpr.size, tpr[np.minimum(above, fpr.size - 1)], 1.0)
    return lower, upper


def _scores_explained(p_ind: np.ndarray | None, eps: float, source: str, ranking: str) -> Section:
    """What each score of the leaderboard measures, and which one ranks."""
    likelihood = (f"the mean Bernoulli log-likelihood of the maps' classes under p_ind, with p_ind clipped "
                  f"to [{eps:g}, 1 - {eps:g}] (so the worst case is ln {eps:g} = {np.log(eps):.4f}; p_ind = 0.5 "
                  f"everywhere gives ln 0.5 = -0.6931)")
    tpr = (f"the challenge's deployed metric, the mean true positive rate (OoD detected) at 100 false "
           f"positive rates log-spaced in [0.001, 0.05], ranked by {source}")
    if ranking == "deployed":
        text = (f"score and tpr_low_fpr: {tpr} (this phase ranks as the challenge was deployed). "
                + (f"log_likelihood: {likelihood}." if p_ind is not None else "No p_ind was submitted, so "
                   "no log-likelihood is computed."))
    else:
        text = f"score and log_likelihood: {likelihood}. tpr_low_fpr: {tpr}."
    return Section("Scores explained", paragraph(text))


def _draw_roc(fpr: np.ndarray, tpr: np.ndarray, official: float) -> str:
    """The blocked ROC on a linear and a logarithmic FPR axis, with the FPR band of tpr_low_fpr."""
    fig, axes = new_figure(10, 4.2, ncols=2, bottom=0.24, top=0.93, left=0.07, right=0.98,
                           wspace=0.22)
    for ax, log_axis in zip(axes, (False, True)):
        left = min(FPR_AXIS_MIN, fpr[fpr > 0].min() / 2) if log_axis else 0.0
        x = np.maximum(fpr, left)  # FPR 0 sits on the log axis's left edge
        ax.axvspan(1e-3, 0.05, color="#ffd54f", alpha=0.35, lw=0, label="FPR band of tpr_low_fpr")
        # Box j spans [fpr_j, fpr_j+1] x [tpr_j, tpr_j+1]: the curve between two cuts lies in it.
        ax.fill_between(x, tpr, np.r_[tpr[1:], 1.0], step="post", color="#1f4e9c", alpha=0.25, lw=0,
                        label=f"where the ROC lies (blocks of ≥ {MIN_BIN_COUNT} maps)")
        ax.plot(x, tpr, "o", ms=3, color="#1f4e9c", label="ROC at the block cuts")
        ax.hlines(official, 1e-3, 0.05, color="#c62828", lw=1.8,
                  label=f"tpr_low_fpr = {official:.4f} (mean TPR in the band)")
        ax.plot([left, 1], [left, 1], "k:", lw=1, label="chance")
        ax.set_xlabel("false positive rate (InD maps flagged)")
        ax.set_xlim(left, 1)
        ax.set_ylim(0, 1.02)
        if log_axis:
            ax.set_xscale("log")
    axes[0].set_ylabel("true positive rate (OoD maps flagged)")
    axes[0].set_title("linear FPR axis", fontsize=9)
    axes[1].set_title("logarithmic FPR axis", fontsize=9)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncols=3, fontsize=9, frameon=False)
    return figure_html(fig, "ROC curve with the FPR band of tpr_low_fpr")


def _roc_section(is_ood: np.ndarray, scores: np.ndarray, source: str, avoid: np.ndarray) -> Section:
    """The ROC at the cuts of the ranking into blocks (avoiding the published bins' edges), and the bounds
    it puts on tpr_low_fpr."""
    cuts, fpr, tpr = blocked_roc(is_ood, scores, avoid=avoid)
    official = metrics.tpr_at_low_fpr(is_ood, scores)
    band = np.logspace(-3, np.log10(0.05), 100)  # the FPR grid of tpr_low_fpr
    in_band = int(((fpr >= band[0]) & (fpr <= band[-1])).sum())
    low, high = (float(side.mean()) for side in roc_envelope(fpr, tpr, band))
    roc_html = figure_or_note("ROC curve", lambda: _draw_roc(fpr, tpr, official))
    return Section("ROC curve", paragraph(
        f"The maps are ranked by {source}, most OoD first, and the ranking is cut into blocks of at least "
        f"{MIN_BIN_COUNT} maps (a cut never splits tied scores); "
        + (f"the points are the ROC at the {len(cuts) - 2} cut(s), {in_band} of them inside the FPR band of "
           "tpr_low_fpr. " if len(cuts) > 2 else
           "here the ranking is a single block (tied scores, or too few maps for two), so no point lies "
           "between the corners of the ROC. ")
        + "Inside a block the "
        "order of the classes is not shown, so that no map's label can be read: the curve runs somewhere "
        f"in the shaded box between two points. From the boxes alone, tpr_low_fpr lies between {low:.4f} "
        f"and {high:.4f}; its value, {official:.4f}, is drawn across the band (red). The right panel has a "
        "logarithmic FPR axis; false positive rates of 0 sit on its left edge.") + roc_html)


def _draw_reliability(mean_p: np.ndarray, ind_counts: np.ndarray, counts: np.ndarray, shown: np.ndarray) -> str:
    fig, ax = new_figure(5.0, 4.0)
    ax.plot([0, 1], [0, 1], "k--", lw=1, label="perfect calibration")
    ax.plot(mean_p[shown] / counts[shown], ind_counts[shown] / counts[shown], "o-", color="#c62828",
            label="observed InD fraction")
    ax.set_xlabel("mean submitted p_ind in the bin")
    ax.set_ylabel("fraction of maps in-distribution")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8, loc="upper left")
    return figure_html(fig, "reliability diagram")


def _draw_histograms(edges: np.ndarray, ind_counts: np.ndarray, counts: np.ndarray, shown: np.ndarray) -> str:
    fig, ax = new_figure(5.0, 4.0)
    centres = (edges[:-1] + edges[1:]) / 2
    width = edges[1] - edges[0]
    ax.bar(centres[shown], (ind_counts)[shown], width=width * 0.9, color="#5c7cba", alpha=0.8,
           label="in-distribution maps")
    ax.bar(centres[shown], (counts - ind_counts)[shown], width=width * 0.9, bottom=ind_counts[shown],
           color="#e57373", alpha=0.8, label="out-of-distribution maps")
    ax.set_xlabel("submitted p_ind")
    ax.set_ylabel("number of maps")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.3 * max(counts[shown].max(initial=0), 1))  # room for the legend above the bars
    ax.legend(fontsize=8, loc="upper center", ncols=2)
    return figure_html(fig, "p_ind histograms per class")


def _p_ind_section(is_ood: np.ndarray, p_ind: np.ndarray, edges: np.ndarray, which: np.ndarray,
                   counts: np.ndarray) -> Section:
    """The reliability diagram and the p_ind histograms per class, from the bins of at least MIN_BIN_COUNT
    maps, and the table of every bin."""
    ind_counts = np.bincount(which, weights=(is_ood == 0), minlength=10)
    mean_p = np.bincount(which, weights=p_ind, minlength=10)
    shown = counts >= MIN_BIN_COUNT
    reliability = figure_row([
        figure_or_note("reliability diagram", lambda: _draw_reliability(mean_p, ind_counts, counts, shown)),
        figure_or_note("p_ind histograms per class", lambda: _draw_histograms(edges, ind_counts, counts, shown))])
    rows = [(f"[{a:.1f}, {b:.1f}{']' if b == 1 else ')'}", int(c), (f"{i / c:.3f}" if ok else "-"))
            for a, b, c, i, ok in zip(edges[:-1], edges[1:], counts, ind_counts, shown)]
    hidden = int(counts[~shown].sum())
    note = (f" {hidden} maps in bins of fewer than {MIN_BIN_COUNT} maps are left out of the figures."
            if hidden else "")
    return Section("Calibration of p_ind", paragraph(
        "First figure: maps binned by submitted p_ind; a calibrated submission's points lie on the diagonal. "
        "Second: how many maps of each class fall in each bin (stacked)." + note) + reliability
        + table(rows, ("p_ind bin", "maps", "InD fraction")))


def phase2_report(is_ood: np.ndarray, p_ind: np.ndarray | None, scores: np.ndarray, eps: float,
                  source: str, ranking: str = "seed") -> list[Section]:
    """ROC with the official FPR band, reliability diagram and p_ind histograms per class (when p_ind was
    submitted). Only aggregates are drawn (bins of at least MIN_BIN_COUNT maps)."""
    sections = [_scores_explained(p_ind, eps, source, ranking)]
    edges = np.linspace(0, 1, 11)
    which = np.clip(np.digitize(p_ind, edges) - 1, 0, 9) if p_ind is not None else None
    counts = np.bincount(which, minlength=10) if p_ind is not None else None
    if is_ood.min() != is_ood.max():
        sections.append(_roc_section(is_ood, scores, source, _bin_edges_in_ranking(p_ind, scores, counts)))
    if p_ind is None:
        return sections
    sections.append(_p_ind_section(is_ood, p_ind, edges, which, counts))
    return sections
