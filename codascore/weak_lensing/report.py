"""The weak lensing report pages (detailed_results.html): figures and tables drawn from aggregates only,
so that no single map's truth or label can be read from them (docs/weak_lensing.md#report-pages).
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from ..report import figure_html, figure_or_note, new_figure, paragraph, table
from ..task import Section
from . import metrics
from .files import PRIOR
from .metrics import PARAMETERS

#: Report cells with fewer maps than this are not drawn: a participant knows their own predictions, so a
#: sparse cell of (truth, prediction) would give away that map's truth.
MIN_BIN_COUNT = 10


# --------------------------------------------------------------------------- Phase 1

def phase1_report(truth: np.ndarray, means: np.ndarray, errorbars: np.ndarray) -> list[Section]:
    """Predicted against true (hexagons and truth bins of at least MIN_BIN_COUNT maps, so that no single
    map's truth is readable), pull histograms against N(0, 1), coverage at 1 and 2 sigma against the
    Gaussian levels, and the calibration curve (coverage against nominal level)."""
    sigma = np.abs(errorbars)
    with np.errstate(all="ignore"):
        pulls = (means - truth) / sigma

    def draw_scatter() -> str:
        fig, axes = new_figure(10, 4.2, ncols=2)
        for p, ax in enumerate(axes):
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
                        label="median prediction ± median σ (truth bins)")
            ax.plot([lo, hi], [lo, hi], "k--", lw=1, label="prediction = truth")
            ax.set_xlabel(f"true {PARAMETERS[p]}")
            ax.set_ylabel(f"predicted {PARAMETERS[p]}")
            ax.legend(fontsize=8, loc="upper left")
        return figure_html(fig, "predicted against true, per parameter")

    scatter = figure_or_note("predicted against true", draw_scatter)

    def draw_pulls() -> str:
        fig, axes = new_figure(10, 3.6, ncols=2)
        grid = np.linspace(-5, 5, 201)
        for p, ax in enumerate(axes):
            finite = pulls[np.isfinite(pulls[:, p]), p]
            ax.hist(np.clip(finite, -5, 5), bins=60, range=(-5, 5), density=True, color="#5c7cba", alpha=0.8,
                    label="(μ − truth)/σ")
            ax.plot(grid, np.exp(-grid ** 2 / 2) / math.sqrt(2 * math.pi), "k-", lw=1.5, label="N(0, 1)")
            ax.set_xlabel(f"pull of {PARAMETERS[p]} (clipped to ±5)")
            ax.legend(fontsize=8)
        return figure_html(fig, "histogram of pulls against N(0,1)")

    histogram = figure_or_note("pulls against N(0, 1)", draw_pulls)

    rows = []
    for n_sigma in (1.0, 2.0):
        inside = metrics.covered(truth, means, errorbars, n_sigma).mean(axis=0)
        nominal = math.erf(n_sigma / math.sqrt(2))
        rows.append((f"{n_sigma:g} σ", nominal, float(inside[0]), float(inside[1])))
    coverage_table = table(rows, ("interval", "Gaussian level", "Omega_m", "S_8"),
                           caption="Fraction of maps whose truth lies within μ ± nσ")

    # Calibration curve: coverage of the central Gaussian interval at each nominal level.
    levels = np.linspace(0.02, 0.98, 49)
    half_widths = np.array([NormalDist().inv_cdf((1 + level) / 2) for level in levels])
    with np.errstate(invalid="ignore"):
        inside = np.abs(pulls)[None, :, :] <= half_widths[:, None, None]

    def draw_calibration() -> str:
        fig, ax = new_figure(5.2, 4.2)
        ax.plot([0, 1], [0, 1], "k--", lw=1, label="calibrated")
        for p, colour in zip(range(2), ("#1f4e9c", "#c62828")):
            ax.plot(levels, inside[:, :, p].mean(axis=1), "-", color=colour, lw=1.6, label=PARAMETERS[p])
        ax.axvline(math.erf(1 / math.sqrt(2)), color="#999", lw=0.8, ls=":")
        ax.set_xlabel("nominal level of μ ± zσ (Gaussian)")
        ax.set_ylabel("observed coverage")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.legend(fontsize=8, loc="upper left")
        return figure_html(fig, "coverage against nominal level")

    calibration = figure_or_note("coverage against nominal level", draw_calibration)
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

def coarse_roc(is_ood: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ROC curve sampled every MIN_BIN_COUNT in-distribution maps (the full curve's steps would
    give away the label of every map in score order)."""
    fpr, tpr = metrics.roc(is_ood, scores)
    n_ind = int((is_ood == 0).sum())
    grid = np.unique(np.r_[np.arange(0, n_ind + 1, MIN_BIN_COUNT), n_ind]) / n_ind
    return grid, np.interp(grid, fpr, tpr)


def phase2_report(is_ood: np.ndarray, p_ind: np.ndarray | None, scores: np.ndarray, eps: float,
                  source: str, ranking: str = "seed") -> list[Section]:
    """ROC with the official FPR band, reliability diagram and p_ind histograms per class (when p_ind was
    submitted). Only aggregates are drawn (bins of at least MIN_BIN_COUNT maps)."""
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
    sections = [Section("Scores explained", paragraph(text))]
    if is_ood.min() != is_ood.max():
        grid, tpr = coarse_roc(is_ood, scores)
        def draw_roc() -> str:
            fig, axes = new_figure(10, 4.0, ncols=2)
            for ax, log_axis in zip(axes, (False, True)):
                ax.axvspan(1e-3, 0.05, color="#ffd54f", alpha=0.35, label="FPR band of tpr_low_fpr")
                ax.plot(grid, tpr, "-", color="#1f4e9c", lw=1.6, label="ROC (OoD = positive)")
                ax.plot([1e-4, 1], [1e-4, 1], "k:", lw=1, label="chance")
                ax.set_xlabel("false positive rate (InD maps flagged)")
                ax.set_ylabel("true positive rate (OoD maps flagged)")
                if log_axis:
                    ax.set_xscale("log")
                    ax.set_xlim(1e-3 / 2, 1)
                else:
                    ax.set_xlim(0, 1)
                ax.set_ylim(0, 1.02)
            axes[0].legend(fontsize=8, loc="lower right")
            return figure_html(fig, "ROC curve with the FPR band of tpr_low_fpr")

        roc_html = figure_or_note("ROC curve", draw_roc)
        sections.append(Section("ROC curve", paragraph(
            f"Sampled every {MIN_BIN_COUNT} in-distribution maps; the right panel has a logarithmic FPR "
            f"axis. The shaded band is where tpr_low_fpr averages the TPR.") + roc_html))

    if p_ind is None:
        return sections
    edges = np.linspace(0, 1, 11)
    which = np.clip(np.digitize(p_ind, edges) - 1, 0, 9)
    counts = np.bincount(which, minlength=10)
    ind_counts = np.bincount(which, weights=(is_ood == 0), minlength=10)
    mean_p = np.bincount(which, weights=p_ind, minlength=10)
    shown = counts >= MIN_BIN_COUNT
    def draw_reliability() -> str:
        fig, axes = new_figure(10, 4.0, ncols=2)
        ax = axes[0]
        ax.plot([0, 1], [0, 1], "k--", lw=1, label="perfect calibration")
        ax.plot(mean_p[shown] / counts[shown], ind_counts[shown] / counts[shown], "o-", color="#c62828",
                label="observed InD fraction")
        ax.set_xlabel("mean submitted p_ind in the bin")
        ax.set_ylabel("fraction of maps in-distribution")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.legend(fontsize=8, loc="upper left")
        ax = axes[1]
        centres = (edges[:-1] + edges[1:]) / 2
        width = edges[1] - edges[0]
        ax.bar(centres[shown], (ind_counts)[shown], width=width * 0.9, color="#5c7cba", alpha=0.8,
               label="in-distribution maps")
        ax.bar(centres[shown], (counts - ind_counts)[shown], width=width * 0.9, bottom=ind_counts[shown],
               color="#e57373", alpha=0.8, label="out-of-distribution maps")
        ax.set_xlabel("submitted p_ind")
        ax.set_ylabel("number of maps")
        ax.legend(fontsize=8, loc="upper center")
        return figure_html(fig, "reliability diagram and p_ind histograms per class")

    reliability = figure_or_note("reliability diagram", draw_reliability)
    rows = [(f"[{a:.1f}, {b:.1f}{']' if b == 1 else ')'}", int(c), (f"{i / c:.3f}" if ok else "-"))
            for a, b, c, i, ok in zip(edges[:-1], edges[1:], counts, ind_counts, shown)]
    hidden = int(counts[~shown].sum())
    note = (f" {hidden} maps in bins of fewer than {MIN_BIN_COUNT} maps are left out of the figures."
            if hidden else "")
    sections.append(Section("Calibration of p_ind", paragraph(
        "Left: maps binned by submitted p_ind; a calibrated submission's points lie on the diagonal. "
        "Right: how many maps of each class fall in each bin (stacked)." + note) + reliability
        + table(rows, ("p_ind bin", "maps", "InD fraction"))))
    return sections
