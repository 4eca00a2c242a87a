"""Ground-truth posteriors for the demo planets: a real sampler on the builtin forward model.

An affine-invariant ensemble MCMC (Goodman & Weare 2010, the "stretch move" of emcee) runs on a
*tempered* posterior prior x L^beta, vectorised over all planets at once; the kept samples are then
importance-weighted by L^(1 - beta), which turns them into weighted samples of the true posterior
(weights like a nested-sampling trace's; tempering helps the walkers cross the broad, bounded
log-abundance directions). Likelihood: independent Gaussian noise per bin. Prior: uniform on the
ADC2023 prior box (metrics.PRIOR_BOUNDS).
"""

from __future__ import annotations

import numpy as np

from .metrics import N_TARGETS, PRIOR_BOUNDS


def log_likelihood(forward_model, params, spectra, noise, star_radius_m, planet_mass_kg) -> np.ndarray:
    """-0.5 chi^2 of (P, W, 7) parameters against the (P, 52) observed spectra; -inf outside the prior."""
    n_planets, n_walkers, _ = params.shape
    flat = params.reshape(-1, N_TARGETS)
    model = forward_model.spectra(flat, np.repeat(star_radius_m, n_walkers),
                                  np.repeat(planet_mass_kg, n_walkers)).reshape(n_planets, n_walkers, -1)
    chi2 = (((model - spectra[:, None, :]) / noise[:, None, :]) ** 2).sum(axis=2)
    inside = np.all((params >= PRIOR_BOUNDS[:, 0]) & (params <= PRIOR_BOUNDS[:, 1]), axis=2)
    return np.where(inside, -0.5 * chi2, -np.inf)


def ensemble_posteriors(forward_model, spectra, noise, star_radius_m, planet_mass_kg, start, rng,
                        n_walkers: int = 32, n_burn: int = 500, n_keep: int = 400, thin: int = 8,
                        beta: float = 0.8, stretch: float = 2.0):
    """Weighted posterior samples per planet: (traces (P, S, 7), weights (P, S), acceptance rate).

    start: (P, 7) centre of the initial walker ball (any point of high likelihood). S = n_walkers x
    n_keep / thin. Weights are exp((1 - beta) log L), normalised per planet."""
    n_planets = spectra.shape[0]
    half = n_walkers // 2
    width = PRIOR_BOUNDS[:, 1] - PRIOR_BOUNDS[:, 0]
    walkers = start[:, None, :] + 1e-3 * width * rng.standard_normal((n_planets, n_walkers, N_TARGETS))
    walkers = np.clip(walkers, PRIOR_BOUNDS[:, 0], PRIOR_BOUNDS[:, 1])
    loglike = log_likelihood(forward_model, walkers, spectra, noise, star_radius_m, planet_mass_kg)
    kept, kept_loglike = [], []
    accepted = 0
    for step in range(n_burn + n_keep):
        for first in (slice(0, half), slice(half, n_walkers)):
            other = slice(half, n_walkers) if first.start == 0 else slice(0, half)
            current, partners = walkers[:, first], walkers[:, other]
            pick = rng.integers(0, partners.shape[1], size=(n_planets, current.shape[1]))
            partner = np.take_along_axis(partners, pick[:, :, None], axis=1)
            z = ((stretch - 1.0) * rng.random((n_planets, current.shape[1])) + 1.0) ** 2 / stretch
            proposal = partner + z[:, :, None] * (current - partner)
            new_loglike = log_likelihood(forward_model, proposal, spectra, noise, star_radius_m,
                                         planet_mass_kg)
            log_ratio = (N_TARGETS - 1) * np.log(z) + beta * (new_loglike - loglike[:, first])
            accept = np.log(rng.random(log_ratio.shape)) < log_ratio
            walkers[:, first] = np.where(accept[:, :, None], proposal, current)
            loglike[:, first] = np.where(accept, new_loglike, loglike[:, first])
            if step >= n_burn:
                accepted += int(accept.sum())
        if step >= n_burn and (step - n_burn) % thin == thin - 1:
            kept.append(walkers.copy())
            kept_loglike.append(loglike.copy())
    traces = np.concatenate(kept, axis=1)
    log_w = (1.0 - beta) * np.concatenate(kept_loglike, axis=1)
    weights = np.exp(log_w - log_w.max(axis=1, keepdims=True))
    weights /= weights.sum(axis=1, keepdims=True)
    return traces, weights, accepted / (n_keep * n_walkers * n_planets)
