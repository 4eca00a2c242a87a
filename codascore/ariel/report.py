"""detailed_results.html sections of ``ariel.retrieval``: per-target bars, marginals, a corner view of one
planet, spectra bands and the per-planet table (docs/ariel.md#report-page)."""

from __future__ import annotations

import numpy as np

from ..report import figure_html, figure_or_note, figure_row, new_figure, paragraph, table
from ..task import Section
from .forward_model import WAVELENGTH_UM
from .metrics import PRIOR_BOUNDS, TARGETS, clip_to_prior, systematic_indices

N_SHOWN = 3  # planets shown in the marginal and spectra figures
#: Axis labels of the targets, with their units (mixing ratios X are dimensionless).
TARGET_LABELS = {"planet_radius": "radius (R_Jup)", "planet_temp": "temperature (K)",
                 "log_H2O": "log₁₀ X(H₂O)", "log_CO2": "log₁₀ X(CO₂)", "log_CO": "log₁₀ X(CO)",
                 "log_CH4": "log₁₀ X(CH₄)", "log_NH3": "log₁₀ X(NH₃)"}
#: Short names for the bar chart and the corner view's diagonal.
TARGET_SHORT = {"planet_radius": "R_p", "planet_temp": "T", "log_H2O": "H₂O", "log_CO2": "CO₂",
                "log_CO": "CO", "log_CH4": "CH₄", "log_NH3": "NH₃"}
TARGET_UNITS = {"planet_radius": "Jupiter radii (R_Jup)", "planet_temp": "kelvin (K)"}
CORNER_POINTS = 400  # equally weighted points drawn per side in the corner view
GT_COLOUR, SUB_COLOUR = "#7f7f7f", "#c0392b"


def report_sections(result, reference, submission) -> list[Section]:
    return [_per_target(result), _marginals(result, reference, submission),
            _corner(result, reference, submission), _spectra(result, reference), _planet_table(result, reference)]


def _per_target(result) -> Section:
    per_target = result.details["per_target_posterior"]

    def draw() -> str:
        fig, ax = new_figure(6.4, 3.0, left=0.12, bottom=0.14, top=0.95)
        ax.bar(range(len(TARGETS)), [per_target[t] for t in TARGETS], color="#4a7ab5")
        ax.set_xticks(range(len(TARGETS)), [TARGET_SHORT[t] for t in TARGETS])
        ax.set_ylim(0, 1000)
        ax.set_ylabel("mean of (1 − D) × 1000")
        return figure_html(fig, "posterior score per target")

    rows = [(t, TARGET_UNITS.get(t, "log₁₀ of the mixing ratio"), per_target[t]) for t in TARGETS]
    html = (paragraph("Each target's posterior score: 1000 × (1 − D), D the Kolmogorov–Smirnov distance "
                      "between the submission's and the ground truth's marginals (resampled, clipped to the "
                      "prior), averaged over the planets. R_p is the planet radius, T its temperature, the "
                      "molecules their log₁₀ mixing ratios.")
            + figure_or_note("posterior score per target", draw)
            + table(rows, ["target", "unit", "mean posterior score"]))
    return Section("Posterior score per target", html)


def _order_by(result, key: str) -> list[int]:
    """Planet positions with a value of key, lowest value first."""
    values = [(inst.get(key), i) for i, inst in enumerate(result.instances) if inst.get(key) is not None]
    return [i for _, i in sorted(values)]


def _shared_bins(a: np.ndarray, b: np.ndarray, target: int) -> np.ndarray:
    """40 bins over the central 99 % of both samples (a point mass gets 1 % of the prior width)."""
    lo = min(np.percentile(a, 0.5), np.percentile(b, 0.5))
    hi = max(np.percentile(a, 99.5), np.percentile(b, 99.5))
    pad = max(0.05 * (hi - lo), 0.005 * (PRIOR_BOUNDS[target, 1] - PRIOR_BOUNDS[target, 0]))
    return np.linspace(lo - pad, hi + pad, 41)


def _few_ticks(ax, x: bool = True, y: bool = False, size: float = 6.5) -> None:
    """At most three ticks per axis, so that tick labels never run into each other on small panels."""
    from matplotlib.ticker import MaxNLocator

    if x:
        ax.xaxis.set_major_locator(MaxNLocator(3))
    if y:
        ax.yaxis.set_major_locator(MaxNLocator(3))
    ax.tick_params(labelsize=size, length=2, pad=1.5)


def _histograms(ax, sub_column, sub_weights, gt_column, gt_weights, bins) -> None:
    ax.hist(gt_column, bins=bins, weights=gt_weights, color=GT_COLOUR, alpha=0.6, label="ground truth")
    ax.hist(sub_column, bins=bins, weights=sub_weights, histtype="step", color=SUB_COLOUR, lw=1.2,
            label="submission")
    ax.set_yticks([])


def _marginals(result, reference, submission) -> Section:
    shown = _order_by(result, "posterior")[:N_SHOWN]
    sub, gt = submission.posteriors, reference.gt

    def draw(p: int) -> str:
        fig, axes = new_figure(6.0, 3.4, ncols=4, nrows=2, left=0.03, right=0.97, bottom=0.15, top=0.89,
                               wspace=0.15, hspace=0.75)
        sub_trace, gt_trace = clip_to_prior(sub.traces[p]), clip_to_prior(gt.traces[p])
        for t, ax in enumerate(axes.flat[:len(TARGETS)]):
            bins = _shared_bins(gt_trace[:, t], sub_trace[:, t], t)
            _histograms(ax, sub_trace[:, t], sub.weights[p], gt_trace[:, t], gt.weights[p], bins)
            ax.set_xlabel(TARGET_LABELS[TARGETS[t]], fontsize=8, labelpad=1)
            _few_ticks(ax, size=7)
        legend_ax = axes.flat[-1]
        legend_ax.axis("off")
        legend_ax.legend(*axes.flat[0].get_legend_handles_labels(), loc="center", fontsize=7, frameon=False)
        fig.suptitle(f"{reference.names[p]}: posterior score {result.instances[p]['posterior']:.1f}",
                     fontsize=9)
        return figure_html(fig, f"marginal histograms of {reference.names[p]}")

    figures = figure_row(figure_or_note(f"marginal histograms of {reference.names[p]}", lambda p=p: draw(p))
                         for p in shown)
    text = paragraph(f"Weighted marginal histograms (clipped to the prior) of the {len(shown)} planets with the "
                     "lowest posterior score, one figure per planet: grey = ground truth, red = submission.")
    return Section("Marginal posteriors", text + figures)


def _corner_planet(result) -> int:
    """The planet whose posterior score is the median over the planets (the lower middle one when their
    number is even): a typical planet, where the marginals show the worst."""
    order = _order_by(result, "posterior")
    return order[(len(order) - 1) // 2]


def _equal_weight_points(trace: np.ndarray, weights: np.ndarray, n: int) -> np.ndarray:
    """n rows drawn by systematic resampling at a fixed offset, so that a scatter shows the weighted
    density with equally weighted points (the same resampling the scores use; no random draw)."""
    return trace[systematic_indices(weights / weights.sum(), 0.5, n)]


def _corner(result, reference, submission) -> Section:
    p = _corner_planet(result)
    name = reference.names[p]
    sub_trace, gt_trace = clip_to_prior(submission.posteriors.traces[p]), clip_to_prior(reference.gt.traces[p])
    sub_w, gt_w = submission.posteriors.weights[p], reference.gt.weights[p]

    def draw() -> str:
        n = len(TARGETS)
        fig, axes = new_figure(7.4, 7.4, ncols=n, nrows=n, left=0.09, right=0.99, bottom=0.09, top=0.97,
                               wspace=0.08, hspace=0.08)
        bins = [_shared_bins(gt_trace[:, t], sub_trace[:, t], t) for t in range(n)]
        sub_points = _equal_weight_points(sub_trace, sub_w, CORNER_POINTS)
        gt_points = _equal_weight_points(gt_trace, gt_w, CORNER_POINTS)
        for row in range(n):
            for col in range(n):
                ax = axes[row, col]
                if col > row:
                    ax.axis("off")
                    continue
                if col == row:
                    _histograms(ax, sub_trace[:, col], sub_w, gt_trace[:, col], gt_w, bins[col])
                else:
                    ax.scatter(gt_points[:, col], gt_points[:, row], s=2, color=GT_COLOUR, alpha=0.35, lw=0)
                    ax.scatter(sub_points[:, col], sub_points[:, row], s=2, color=SUB_COLOUR, alpha=0.35, lw=0)
                    ax.set_ylim(bins[row][0], bins[row][-1])
                ax.set_xlim(bins[col][0], bins[col][-1])
                _few_ticks(ax, x=True, y=col < row, size=5.5)
                if row == n - 1:
                    ax.set_xlabel(TARGET_SHORT[TARGETS[col]], fontsize=8, labelpad=1)
                    ax.tick_params(axis="x", labelrotation=45)
                else:
                    ax.set_xticklabels([])
                if col == 0 and row > 0:
                    ax.set_ylabel(TARGET_SHORT[TARGETS[row]], fontsize=8, labelpad=1)
                elif col < row:
                    ax.set_yticklabels([])
        handles, labels = axes[0, 0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="upper right", bbox_to_anchor=(0.97, 0.95), fontsize=9, frameon=False,
                   title=f"{name}\nposterior score {result.instances[p]['posterior']:.1f}", title_fontsize=9)
        return figure_html(fig, f"corner view of {name}")

    text = paragraph(
        f"The 7 targets of {name}, the planet whose posterior score is the median over the planets (a typical "
        f"planet; the marginals above show the worst). Lower triangle: {CORNER_POINTS} equally weighted points "
        "per side (systematic resampling of the weighted samples, clipped to the prior), ground truth grey, "
        "submission red; diagonal: the marginal histograms. R_p in R_Jup, T in K, the molecules as log₁₀ "
        "mixing ratios. The score compares the marginals only; this view also shows the correlations.")
    return Section("Corner view of one planet", text + figure_or_note("corner view", draw))


def _spectra(result, reference) -> Section:
    views = result.report_data.get("spectral_quartiles", {})
    if not views:
        return Section("Spectra", paragraph("No spectral-subset planet was scored."))
    shown = [p for p in _order_by(result, "spectral") if p in views][:N_SHOWN]

    def draw(p: int) -> str:
        fig, ax = new_figure(6.0, 3.2, left=0.13, bottom=0.27, top=0.91)
        (s1, s2, s3), (g1, g2, g3) = views[p]
        ax.fill_between(WAVELENGTH_UM, g1 * 1e2, g3 * 1e2, color=GT_COLOUR, alpha=0.5, lw=0,
                        label="ground truth IQR")
        ax.plot(WAVELENGTH_UM, g2 * 1e2, color="#333333", label="ground truth median")
        ax.fill_between(WAVELENGTH_UM, s1 * 1e2, s3 * 1e2, color=SUB_COLOUR, alpha=0.25, lw=0,
                        label="submission IQR")
        ax.plot(WAVELENGTH_UM, s2 * 1e2, color=SUB_COLOUR, label="submission median")
        ax.set_xscale("log")
        ax.set_xticks([0.6, 1, 2, 3, 4, 5, 7], ["0.6", "1", "2", "3", "4", "5", "7"])
        ax.minorticks_off()
        ax.tick_params(labelsize=8)
        ax.set_ylabel("transit depth (%)", fontsize=9)
        ax.set_xlabel("wavelength (µm)", fontsize=9)
        ax.set_title(f"{reference.names[p]}: spectral score {result.instances[p]['spectral']:.1f}", fontsize=9)
        fig.legend(*ax.get_legend_handles_labels(), loc="lower center", fontsize=7, ncols=4, frameon=False)
        return figure_html(fig, f"spectra of {reference.names[p]}")

    figures = figure_row(figure_or_note(f"spectra of {reference.names[p]}", lambda p=p: draw(p)) for p in shown)
    text = paragraph("Median spectrum and inter-quartile band (IQR) of the forward-modelled posterior samples, "
                     "submission against ground truth, for the planets with the lowest spectral score. The "
                     "spectral score compares the medians and the IQR widths, bin by bin, in log₁₀.")
    return Section("Spectra", text + figures)


def _planet_table(result, reference) -> Section:
    n_spectral = len(reference.spectral_index)
    rows = [(inst["id"], inst["M"], inst["posterior"], inst["posterior_exact"],
             inst["spectral"] if "spectral" in inst else "not in subset")
            for inst in result.instances]
    text = paragraph(
        f"M is the number of samples submitted for the planet; posterior and posterior (exact) are the "
        f"planet's mean over the 7 targets of (1 − D) × 1000. The spectral score is computed only for the "
        f"{n_spectral} of {len(result.instances)} planets that the reference data marks as its spectral subset "
        "(planets.csv, in_spectral_subset), as ADC2023 scored spectra for a subset of its test planets only; "
        "the other planets show \"not in subset\" and count in the posterior score only.")
    return Section("Per planet", text + table(rows, ["planet", "M (samples)", "posterior", "posterior (exact)",
                                                     "spectral"], max_rows=50))

