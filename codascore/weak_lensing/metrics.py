"""Pure metrics of the FAIR Universe Weak Lensing challenge (numpy in, float out; no file I/O).

Each formula, its source and the official code's quirks kept here:
docs/weak_lensing.md#formulas-and-their-sources (official code: FAIR-Universe/Cosmology_Challenge,
scoring_program/score.py, Phase 1 at commit b2f4afc, Phase 2 at 922c32c).
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
    """Per-instance Phase 1 score s_i (before the mean and the floor);
    docs/weak_lensing.md#phase-1-the-inference-score.

    s_i = - sum_{p in (Omega_m, S_8)} [ d_p^2 / sigma_p^2 + ln(sigma_p^2) + lam * d_p^2 ],  d = mean - truth

    Natural log; sigma enters only squared (a negative sigma acts as |sigma|, as in the official code:
    docs/weak_lensing.md#sigma-enters-only-squared).
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
    floored; +inf is floored too so that scores stay finite: docs/weak_lensing.md#the-floor-on-the-mean).
    Higher is better.

    Parameters: truth, means, errorbars of shape (N, 2) in the order (Omega_m, S_8); lam the weight of
    the squared error (1000 in the challenge).
    """
    return floored_mean(inference_score_per_instance(truth, means, errorbars, lam))


def floored_mean(per_instance) -> float:
    """mean_i s_i, or -1e6 when that mean is not finite or below -1e6 (the official floor; the final
    leaderboard applies it to resampled maps: docs/weak_lensing.md#the-floor-on-the-mean)."""
    value = float(np.mean(per_instance))
    return value if np.isfinite(value) and value >= SCORE_FLOOR else SCORE_FLOOR


def covered(truth, means, errorbars, n_sigma: float = 1.0) -> np.ndarray:
    """Boolean (N, 2): truth inside [mean - n sigma, mean + n sigma], bounds inclusive and computed in
    float64 as the official code does (m - s, m + s;
    docs/weak_lensing.md#coverage-bounds-computed-as-m--s-and-m--s)."""
    truth, means, errorbars = _pairs("truth", truth), _pairs("means", means), _pairs("errorbars", errorbars)
    _check_same_rows(truth, means=means, errorbars=errorbars)
    half = errorbars if n_sigma == 1.0 else n_sigma * errorbars
    with np.errstate(invalid="ignore"):
        return (truth >= means - half) & (truth <= means + half)


def coverage(truth, means, errorbars) -> float:
    """Official ``avg_coverage``: the fraction of instances with m - s <= t <= m + s, per parameter, then
    the mean over the two parameters. A calibrated Gaussian 1-sigma interval gives about 0.683
    (docs/weak_lensing.md#avg_coverage)."""
    return float(np.mean(covered(truth, means, errorbars).mean(axis=0)))


def r_squared(truth, means) -> float:
    """Official ``R_squared`` (docs/weak_lensing.md#r_squared): scikit-learn ``r2_score(truth, means)`` on raw
    values, uniform average of the two parameters' R^2 (default ``force_finite=True``):

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
    per-column mean and population standard deviation (StandardScaler fit on label.npy[:, :2];
    docs/weak_lensing.md#mse-and-its-scaler)."""
    truth, means = _pairs("truth", truth), _pairs("means", means)
    _check_same_rows(truth, means=means)
    mean = np.asarray(scaler_mean, dtype=np.float64).reshape(2)
    scale = np.asarray(scaler_scale, dtype=np.float64).reshape(2)
    if not np.all(scale > 0):
        raise ValueError(f"scaler_scale must be positive, got {scale.tolist()}")
    with np.errstate(all="ignore"):
        return float(np.mean(((means - mean) / scale - (truth - mean) / scale) ** 2))


# --------------------------------------------------------------------------- Phase 2: OoD detection

#: Phase 2 clipping of probabilities (the project's choice: docs/weak_lensing.md#the-choice-of-eps).
OOD_EPS = 1e-15


def _vector(name: str, value) -> np.ndarray:
    array = np.asarray(value, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a 1-d array of N values, got shape {array.shape}")
    return array


def _labels(name: str, value) -> np.ndarray:
    labels = _vector(name, value)
    bad = np.flatnonzero((labels != 0) & (labels != 1))
    if bad.size:
        raise ValueError(f"{name}[{bad[0]}] = {float(labels[bad[0]])!r}: labels must be 0 or 1")
    return labels


def _same_length(reference_name: str, reference: np.ndarray, name: str, array: np.ndarray) -> None:
    if len(array) != len(reference):
        raise ValueError(f"{name} has {len(array)} values, {reference_name} has {len(reference)}")


def _check_finite_vector(name: str, array: np.ndarray) -> None:
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise ValueError(f"{name}[{bad[0]}] = {float(array[bad[0]])!r}: values must be finite")


def ood_log_likelihood_per_instance(is_ind, p_ind, eps: float = OOD_EPS) -> np.ndarray:
    """Per-instance Bernoulli log-likelihood y ln p + (1 - y) ln(1 - p), p clipped to [eps, 1 - eps]
    (equivalently: the log of the probability given to the true class, clipped to [eps, 1 - eps]).

    y = is_ind (1 = in-distribution, the seed's orientation), p = p_ind in [0, 1]."""
    y, p = _labels("is_ind", is_ind), _vector("p_ind", p_ind)
    _same_length("is_ind", y, "p_ind", p)
    _check_finite_vector("p_ind", p)
    outside = np.flatnonzero((p < 0) | (p > 1))
    if outside.size:
        raise ValueError(f"p_ind[{outside[0]}] = {float(p[outside[0]])!r}: probabilities must lie in [0, 1]")
    if not 0 < eps < 0.5:
        raise ValueError(f"eps must lie in (0, 0.5), got {eps!r}")
    # The probability given to the true class, clipped: p for InD maps, 1 - p for OoD maps. Clipping it
    # (rather than p itself) treats both classes alike in float64, where 1 - (1 - eps) != eps.
    return np.log(np.clip(np.where(y == 1, p, 1.0 - p), eps, 1.0 - eps))


def ood_score(is_ind, p_ind, eps: float = OOD_EPS) -> float:
    """Phase 2 score (the seed's formula): the mean Bernoulli log-likelihood

        score = (1/N) sum_i [ y_i ln(p_i) + (1 - y_i) ln(1 - p_i) ],   p_i clipped to [eps, 1 - eps],

    with y_i = 1 when map i is in-distribution (InD) and p_i the submitted probability that it is InD.
    Source: the seed's Phase 2 evaluation page (the early page at FAIR-Universe/Cosmology_Challenge
    commit 720f486 writes "+eps" without a value); eps = 1e-15 is this product's choice
    (docs/weak_lensing.md#phase-2-the-log-likelihood-score, docs/weak_lensing.md#the-choice-of-eps). Range [ln
    eps, ~0]: ln 0.5 for p = 0.5 everywhere, ln eps = -34.54 for a perfectly wrong answer. Higher is better.

    The official label files use the opposite orientation (1 = OoD): pass ``1 - label``.
    """
    return float(np.mean(ood_log_likelihood_per_instance(is_ind, p_ind, eps)))


def tpr_at_low_fpr(is_ood, ood_scores, fpr_min: float = 1e-3, fpr_max: float = 0.05,
                   n_points: int = 100) -> float:
    """The metric the challenge deployed for Phase 2: the mean true-positive rate at ``n_points``
    false-positive rates log-spaced from fpr_min to fpr_max,

        score = (1/n) sum_k TPR(FPR_k),   FPR_k = 10 ** linspace(log10 fpr_min, log10 fpr_max, n),

    where TPR(.) is numpy ``interp`` on the points of scikit-learn ``roc_curve(is_ood, ood_scores)``
    (defaults: drop_intermediate=True, positive class 1 = OoD; tied scores form one ROC point).
    Source: FAIR-Universe/Cosmology_Challenge scoring_program/score.py at 922c32c
    (docs/weak_lensing.md#tpr_low_fpr-the-deployed-metric). Higher ood_scores mean more likely OoD. Range [0,
    1]; a constant score gives the diagonal, 0.012657. NaN (with no exception) when is_ood holds a single
    class, as the official code (docs/weak_lensing.md#a-single-class-reference).

    The ROC points are scikit-learn's, computed in numpy (see :func:`roc`).
    """
    y, scores, grid = _tpr_arguments(is_ood, ood_scores, fpr_min, fpr_max, n_points)
    if y.size == 0 or y.min() == y.max():
        return float("nan")
    fpr, tpr = roc(y, scores)
    return float(np.mean(np.interp(grid, fpr, tpr)))


def tpr_credits(is_ood, ood_scores, fpr_min: float = 1e-3, fpr_max: float = 0.05,
                n_points: int = 100) -> np.ndarray:
    """Each out-of-distribution map's share of :func:`tpr_at_low_fpr`, in the order of the OoD maps: their
    mean is the TPR score (to rounding). With the ROC's thresholds fixed by the data given,

        TPR(FPR_k) = sum_j w_kj tpr_j  (numpy interp is linear in the ROC's tpr values),
        tpr_j = (1/P) sum_{i OoD} [s_i >= theta_j],
        so  score = (1/P) sum_{i OoD} c_i,   c_i = (1/n) sum_k sum_j w_kj [s_i >= theta_j],

    c_i in [0, 1] being the share of the n false positive rates at which map i counts as detected (a map on
    the interpolated segment counting the interpolated fraction). The in-distribution maps set the
    thresholds theta_j and have no share. NaN for every map when is_ood holds a single class.
    """
    y, scores, grid = _tpr_arguments(is_ood, ood_scores, fpr_min, fpr_max, n_points)
    ood = scores[y == 1]
    if y.size == 0 or y.min() == y.max():
        return np.full(ood.size, np.nan)
    fpr, _, thresholds = roc_points(y, scores)
    # interp's value at x reads the two points around x only: each point's mean weight over the grid
    # from interp on that point's indicator vector, for the points some grid value reads
    around = np.searchsorted(fpr, grid, side="right") - 1
    weights = np.zeros(fpr.size)
    for point in np.unique(np.clip(np.r_[around, around + 1], 0, fpr.size - 1)):
        weights[point] = np.mean(np.interp(grid, fpr, np.eye(1, fpr.size, point)[0]))
    return (ood[:, None] >= thresholds[None, :]) @ weights


def _tpr_arguments(is_ood, ood_scores, fpr_min, fpr_max, n_points) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The checked labels and scores, and the grid of false positive rates."""
    y, scores = _labels("is_ood", is_ood), _vector("ood_scores", ood_scores)
    _same_length("is_ood", y, "ood_scores", scores)
    _check_finite_vector("ood_scores", scores)
    if not 0 < fpr_min < fpr_max <= 1:
        raise ValueError(f"need 0 < fpr_min < fpr_max <= 1, got fpr_min={fpr_min!r}, fpr_max={fpr_max!r}")
    if int(n_points) != n_points or n_points < 1:
        raise ValueError(f"n_points must be a positive integer, got {n_points!r}")
    return y, scores, np.logspace(np.log10(fpr_min), np.log10(fpr_max), int(n_points))


def roc(is_ood: np.ndarray, ood_scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(fpr, tpr): the points of scikit-learn ``roc_curve(is_ood, ood_scores)`` with its defaults.

    Definition (scikit-learn's; docs/weak_lensing.md#tied-scores-and-vertical-roc-segments): one threshold per
    distinct score, from the highest down; at each, the counts of OoD (tp) and InD (fp) maps scoring at least
    that much; a first point (0, 0); with ``drop_intermediate=True``, points whose second differences of both
    counts are zero (collinear, equally spaced) are dropped; rates are counts over their totals.

    Computed in numpy because importing scikit-learn costs over a second of the scorer's 1.5 s budget;
    tests check these points against ``sklearn.metrics.roc_curve`` element for element, ties included.
    """
    fpr, tpr, _ = roc_points(is_ood, ood_scores)
    return fpr, tpr


def roc_points(is_ood: np.ndarray, ood_scores: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(fpr, tpr, thresholds) of :func:`roc`: a map counts at a point when its score is at least the
    point's threshold (+inf for the first point, as scikit-learn's)."""
    order = np.argsort(-np.asarray(ood_scores, dtype=np.float64), kind="stable")
    labels, scores = np.asarray(is_ood, dtype=np.float64)[order], np.asarray(ood_scores)[order]
    block_ends = np.r_[np.flatnonzero(scores[1:] != scores[:-1]), scores.size - 1]
    tps = np.cumsum(labels)[block_ends]
    fps = (block_ends + 1) - tps
    thresholds = scores[block_ends].astype(np.float64)
    if tps.size > 2:
        keep = np.r_[True, (np.diff(fps, 2) != 0) | (np.diff(tps, 2) != 0), True]
        tps, fps, thresholds = tps[keep], fps[keep], thresholds[keep]
    tps, fps, thresholds = np.r_[0.0, tps], np.r_[0.0, fps], np.r_[np.inf, thresholds]
    return fps / fps[-1], tps / tps[-1], thresholds