"""Pure metrics of the FAIR Universe Weak Lensing challenge (numpy in, float out; no file I/O).

Spec: shared/spec/weak_lensing.md. Official code: repo FAIR-Universe/Cosmology_Challenge,
scoring_program/score.py (Phase 1 at commit b2f4afc).
"""

from __future__ import annotations

import numpy as np

#: The official Phase 1 floor on the mean score (it also catches NaN).
SCORE_FLOOR = -1e6
PARAMETERS = ("Omega_m", "S_8")


def _pairs(name: str, value) -> np.ndarray:
    array = np.asarray(value, dtype=np.float64)
    if array.ndim != 2 or array.shape[1] != 2:
        raise ValueError(f"{name} must have shape (N, 2) in the order {PARAMETERS}, got shape {array.shape}")
    return array


def _check_same_rows(truth, **arrays) -> None:
    for name, array in arrays.items():
        if array.shape != truth.shape:
            raise ValueError(f"{name} has shape {array.shape}, truth has {truth.shape}")


def inference_score_per_instance(truth, means, errorbars, lam: float = 1000.0) -> np.ndarray:
    """Per-instance Phase 1 score s_i (before the mean and the floor).

    s_i = - sum_{p in (Omega_m, S_8)} [ d_p^2 / sigma_p^2 + ln(sigma_p^2) + lam * d_p^2 ],  d = mean - truth

    Natural log; sigma enters only squared (a negative sigma acts as |sigma|, as in the official code).
    Non-finite inputs propagate (NaN, +-inf).
    """
    truth, means, errorbars = _pairs("truth", truth), _pairs("means", means), _pairs("errorbars", errorbars)
    _check_same_rows(truth, means=means, errorbars=errorbars)
    with np.errstate(all="ignore"):
        d2 = (means - truth) ** 2
        s2 = errorbars ** 2
        return -(d2 / s2 + np.log(s2) + lam * d2).sum(axis=1)


def inference_score(truth, means, errorbars, lam: float = 1000.0) -> float:
    """Phase 1 inference score (the seed's formula, the official implementation's floor).

    score = mean_i s_i with s_i from :func:`inference_score_per_instance`; when the mean is not finite or
    below -1e6, the score is -1e6 (official floor, commit b2f4afc; a NaN mean fails ``S >= -1e6`` and is
    floored; +inf is floored too so that scores stay finite). Higher is better.

    Parameters: truth, means, errorbars of shape (N, 2) in the order (Omega_m, S_8); lam the weight of
    the squared error (1000 in the challenge).
    """
    value = float(np.mean(inference_score_per_instance(truth, means, errorbars, lam)))
    return value if np.isfinite(value) and value >= SCORE_FLOOR else SCORE_FLOOR


def covered(truth, means, errorbars, n_sigma: float = 1.0) -> np.ndarray:
    """Boolean (N, 2): truth inside [mean - n sigma, mean + n sigma], bounds inclusive and computed in
    float64 as the official code does (m - s, m + s)."""
    truth, means, errorbars = _pairs("truth", truth), _pairs("means", means), _pairs("errorbars", errorbars)
    _check_same_rows(truth, means=means, errorbars=errorbars)
    half = errorbars if n_sigma == 1.0 else n_sigma * errorbars
    with np.errstate(invalid="ignore"):
        return (truth >= means - half) & (truth <= means + half)


def coverage(truth, means, errorbars) -> float:
    """Official ``avg_coverage``: the fraction of instances with m - s <= t <= m + s, per parameter, then
    the mean over the two parameters. A calibrated Gaussian 1-sigma interval gives about 0.683."""
    return float(np.mean(covered(truth, means, errorbars).mean(axis=0)))


def r_squared(truth, means) -> float:
    """Official ``R_squared``: scikit-learn ``r2_score(truth, means)`` on raw values, uniform average of
    the two parameters' R^2 (default ``force_finite=True``):

        R^2_p = 1 - sum_i (t_ip - m_ip)^2 / sum_i (t_ip - mean(t_p))^2,
        and when the denominator is 0: 1.0 if the numerator is 0, else 0.0.

    Computed in numpy with exactly those semantics (tests compare it with scikit-learn), because importing
    scikit-learn would cost over a second of the scorer's 1.5 s budget. NaN with fewer than two instances,
    as scikit-learn returns.
    """
    truth, means = _pairs("truth", truth), _pairs("means", means)
    _check_same_rows(truth, means=means)
    if len(truth) < 2:
        return float("nan")
    with np.errstate(all="ignore"):
        numerator = ((truth - means) ** 2).sum(axis=0)
        denominator = ((truth - truth.mean(axis=0)) ** 2).sum(axis=0)
        per_parameter = np.where(denominator != 0, 1 - numerator / np.where(denominator != 0, denominator, 1),
                                 np.where(numerator == 0, 1.0, 0.0))
    return float(np.mean(per_parameter))


def standardised_mse(truth, means, scaler_mean, scaler_scale) -> float:
    """Official ``MSE``: mean squared error after standard scaling both sides with the training labels'
    per-column mean and population standard deviation (StandardScaler fit on label.npy[:, :2])."""
    truth, means = _pairs("truth", truth), _pairs("means", means)
    _check_same_rows(truth, means=means)
    mean = np.asarray(scaler_mean, dtype=np.float64).reshape(2)
    scale = np.asarray(scaler_scale, dtype=np.float64).reshape(2)
    if not np.all(scale > 0):
        raise ValueError(f"scaler_scale must be positive, got {scale.tolist()}")
    with np.errstate(all="ignore"):
        return float(np.mean(((means - mean) / scale - (truth - mean) / scale) ** 2))
