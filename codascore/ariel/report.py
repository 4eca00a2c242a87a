"""detailed_results.html sections of ``ariel.retrieval``: per-target bars, marginals, spectra bands."""

from __future__ import annotations

import numpy as np

from ..report import figure_html, figure_or_note, new_figure, paragraph, table
from ..task import Section
from .forward_model import WAVELENGTH_UM
from .metrics import PRIOR_BOUNDS, TARGETS, clip_to_prior

N_SHOWN = 3  # planets shown in the marginal and spectra figures


def report_sections(result, reference, submission) -> list[Section]:
    marginals = figure_or_note("marginal histograms", lambda: _marginals(result, reference, submission))
    spectra = figure_or_note("spectra with IQR bands", lambda: _spectra(result, reference, submission))
    return [_per_target(result), Section("Marginal posteriors", marginals), Section("Spectra", spectra),
            _planet_table(result)]


def _per_target(result) -> Section:
    per_target = result.details["per_target_posterior"]

    def draw() -> str:
        fig, ax = new_figure(7.0, 3.2)
        ax.bar(range(len(TARGETS)), [per_target[t] for t in TARGETS], color="#4a7ab5")
        ax.set_xticks(range(len(TARGETS)), TARGETS, rotation=20)
        ax.set_ylim(0, 1000)
        ax.set_ylabel("mean (1 - KS D) x 1000")
        return figure_html(fig, "posterior score per target")

    html = (figure_or_note("posterior score per target", draw) +
            table([(t, per_target[t]) for t in TARGETS], ["target", "mean posterior score"]))
    return Section("Posterior score per target", html)


def _worst_first(result, key: str) -> list[int]:
    values = [(inst.get(key), i) for i, inst in enumerate(result.instances) if inst.get(key) is not None]
    return [i for _, i in sorted(values)][:N_SHOWN]


def _marginals(result, reference, submission) -> str:
    shown = _worst_first(result, "posterior")
    fig, axes = new_figure(12.0, 2.2 * len(shown), ncols=len(TARGETS), nrows=len(shown))
    axes = np.atleast_2d(axes)
    sub, gt = submission.posteriors, reference.gt
    for row, p in enumerate(shown):
        for t, target in enumerate(TARGETS):
            ax = axes[row, t]
            bins = _shared_bins(clip_to_prior(gt.traces[p])[:, t], clip_to_prior(sub.traces[p])[:, t], t)
            ax.hist(clip_to_prior(gt.traces[p])[:, t], bins=bins, weights=gt.weights[p], color="#999999",
                    alpha=0.7, label="ground truth")
            ax.hist(clip_to_prior(sub.traces[p])[:, t], bins=bins, weights=sub.weights[p], histtype="step",
                    color="#c0392b", label="submission")
            ax.set_yticks([])
            if row == 0:
                ax.set_title(target, fontsize=8)
            if t == 0:
                ax.set_ylabel(reference.names[p], fontsize=8)
            ax.tick_params(labelsize=6)
    axes[0, 0].legend(fontsize=6)
    text = paragraph(f"Weighted marginal histograms (clipped to the prior) of the {len(shown)} planets with the "
                     "lowest posterior score: grey = ground truth, red = submission.")
    return text + figure_html(fig, "marginal histograms")


def _shared_bins(a: np.ndarray, b: np.ndarray, target: int) -> np.ndarray:
    """40 bins over the central 99 % of both samples (a point mass gets 1 % of the prior width)."""
    lo = min(np.percentile(a, 0.5), np.percentile(b, 0.5))
    hi = max(np.percentile(a, 99.5), np.percentile(b, 99.5))
    pad = max(0.05 * (hi - lo), 0.005 * (PRIOR_BOUNDS[target, 1] - PRIOR_BOUNDS[target, 0]))
    return np.linspace(lo - pad, hi + pad, 41)


def _spectra(result, reference, submission) -> str:
    views = result.report_data.get("spectral_quartiles", {})
    if not views:
        return paragraph("No spectral-subset planet was scored.")
    shown = [p for p in _worst_first(result, "spectral") if p in views]
    fig, axes = new_figure(7.0, 2.6 * len(shown), nrows=len(shown))
    axes = np.atleast_1d(axes)
    for ax, p in zip(axes, shown):
        (s1, s2, s3), (g1, g2, g3) = views[p]
        ax.fill_between(WAVELENGTH_UM, g1 * 1e2, g3 * 1e2, color="#999999", alpha=0.5, label="GT IQR")
        ax.plot(WAVELENGTH_UM, g2 * 1e2, color="#333333", label="GT median")
        ax.fill_between(WAVELENGTH_UM, s1 * 1e2, s3 * 1e2, color="#c0392b", alpha=0.25, label="submission IQR")
        ax.plot(WAVELENGTH_UM, s2 * 1e2, color="#c0392b", label="submission median")
        ax.set_xscale("log")
        ax.set_xticks([0.6, 1, 2, 3, 4, 5, 7], ["0.6", "1", "2", "3", "4", "5", "7"])
        ax.minorticks_off()
        ax.set_ylabel("transit depth (%)")
        ax.set_title(f"{reference.names[p]}: spectral score {result.instances[p]['spectral']:.1f}", fontsize=9)
    axes[0].legend(fontsize=7)
    axes[-1].set_xlabel("wavelength (um)")
    text = paragraph("Median spectrum and inter-quartile band of the forward-modelled posterior samples, "
                     "submission against ground truth, for the planets with the lowest spectral score.")
    return text + figure_html(fig, "spectra with IQR bands")


def _planet_table(result) -> Section:
    rows = [(inst["id"], inst["M"], inst["posterior"], inst["posterior_exact"], inst.get("spectral"))
            for inst in result.instances]
    return Section("Per planet", table(rows, ["planet", "M", "posterior", "posterior (exact)", "spectral"],
                                       max_rows=50))
