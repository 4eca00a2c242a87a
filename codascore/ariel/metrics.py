"""Ariel Data Challenge 2023 metrics: posterior score (KS on resampled traces) and spectral score.

Pure functions: numpy arrays in, floats out, no file access. The behaviour follows the organisers' scoring
code (ucl-exoplanets/ADC2023-baseline ``posterior_utils.py`` and ``spectral_metric.py``) as
docs/ariel.md describes it, with the file and line of each rule; nothing is copied from it.

Targets, in column order: planet radius (R_Jup), temperature (K), log10 mixing ratios of H2O, CO2, CO,
CH4 and NH3. Prior bounds below are the official ``default_prior_bounds``.
"""

from __future__ import annotations

import math

import numpy as np

TARGETS = ("planet_radius", "planet_temp", "log_H2O", "log_CO2", "log_CO", "log_CH4", "log_NH3")
N_TARGETS = len(TARGETS)
#: [lo, hi] per target, the official default_prior_bounds.
PRIOR_BOUNDS = np.array([[0.1, 3.0], [0.0, 7000.0]] + [[-12.0, -1.0]] * 5)
#: nestle 0.2.0 resample_equal refuses weights whose sum is further than this from 1.
SUM_TOLERANCE = math.sqrt(np.finfo(np.float64).eps)
#: scipy's ks_2samp uses its exact mode (D rounded to a multiple of 1/lcm) up to this sample size.
KS_EXACT_MAX_N = 10000
#: Number of bins of the Ariel spectral grid.
N_BINS = 52


# --------------------------------------------------------------------------------------------- inputs
def _as_trace(name: str, trace) -> np.ndarray:
    arr = np.asarray(trace, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != N_TARGETS:
        raise ValueError(f"{name}: expected shape (M, {N_TARGETS}), got {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name}: no samples")
    if not np.isfinite(arr).all():
        i, j = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(f"{name}[{i}][{j}] is not finite ({float(arr[i, j])!r})")
    return arr


def _as_weights(name: str, weights, n: int, check_sum: bool = True) -> np.ndarray:
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or w.shape[0] != n:
        raise ValueError(f"{name}: expected shape ({n},) to match the trace, got {w.shape}")
    if not (np.isfinite(w).all() and w.min() >= 0):
        bad = np.flatnonzero(~np.isfinite(w) | (w < 0))
        raise ValueError(f"{name}[{bad[0]}] = {float(w[bad[0]])!r} is not a finite non-negative weight")
    if check_sum:
        total = np.sum(w)
        if abs(total - 1.0) > SUM_TOLERANCE:
            raise ValueError(f"{name}: weights sum to {float(total)!r}, not 1 within {SUM_TOLERANCE:.3g}")
    elif not np.sum(w) > 0:
        raise ValueError(f"{name}: weights sum to 0")
    return w


def _uniform_draw(rng) -> float:
    """One uniform in [0, 1): the legacy global generator (rng=None, as the official code), a seed, or a
    RandomState / Generator object (consumed in place)."""
    if rng is None:
        return float(np.random.random())
    if isinstance(rng, np.random.RandomState):
        return float(rng.random_sample())
    if isinstance(rng, np.random.Generator):
        return float(rng.random())
    return float(np.random.RandomState(rng).random_sample())


def as_random_state(seed) -> np.random.RandomState | None:
    """None stays None (global generator); an int becomes RandomState(seed); generators pass through."""
    if seed is None or isinstance(seed, (np.random.RandomState, np.random.Generator)):
        return seed
    return np.random.RandomState(int(seed))


# ---------------------------------------------------------------------------------------- resampling
def systematic_indices(weights: np.ndarray, u: float, n_out: int | None = None) -> np.ndarray:
    """Row indices of systematic resampling (nestle 0.2.0 ``resample_equal``;
    docs/ariel.md#systematic-resampling).

    positions_i = (u + i) / n_out for i < n_out; idx_i = smallest j with positions_i < cumsum(w)_j,
    i.e. a right-sided binary search. Indices past the end (only possible when sum(w) is a hair below 1,
    where nestle would crash; docs/ariel.md#an-index-past-the-end-is-clamped) are clamped to the last
    row. Output keeps the original row order.
    """
    n = weights.shape[0]
    n_out = n if n_out is None else int(n_out)
    positions = (u + np.arange(n_out)) / n_out
    idx = np.searchsorted(np.cumsum(weights), positions, side="right")
    return np.minimum(idx, n - 1)


def clip_to_prior(trace: np.ndarray) -> np.ndarray:
    """Clip each column to its prior bounds (official ``restrict_to_prior``;
    docs/ariel.md#clipping-to-the-prior)."""
    return np.clip(trace, PRIOR_BOUNDS[:, 0], PRIOR_BOUNDS[:, 1])


def normalise(trace: np.ndarray) -> np.ndarray:
    """(clip(x) - lo) / (hi - lo) column-wise, in this order (rounding ties must match the official code).
    ``+ 0.0`` turns any -0.0 into +0.0 so that values sort by their bit patterns."""
    lo, hi = PRIOR_BOUNDS[:, 0], PRIOR_BOUNDS[:, 1]
    return (clip_to_prior(trace) - lo) / (hi - lo) + 0.0


def resampled_columns(trace, weights, gt_trace, gt_weights, rng, out=None) -> np.ndarray:
    """The pooled (7, 2M) array the KS tests compare: columns :M hold the normalised, resampled
    submission, columns M: the normalised, resampled GT (two draws, in that order) cyclically resized or
    truncated to M rows (np.resize, docs/ariel.md#the-ground-truth-resized-to-m). One row per target,
    so every elementwise pass runs along M; out, if given, is filled in place."""
    m = trace.shape[0]
    sub_rows = systematic_indices(weights, _uniform_draw(rng))
    gt_rows = systematic_indices(gt_weights, _uniform_draw(rng))
    if gt_rows.shape[0] != m:
        gt_rows = gt_rows[np.arange(m) % gt_rows.shape[0]]
    pooled = np.empty((N_TARGETS, 2 * m)) if out is None else out
    np.take(trace.T, sub_rows, axis=1, out=pooled[:, :m], mode="clip")
    np.take(gt_trace.T, gt_rows, axis=1, out=pooled[:, m:], mode="clip")
    _normalise_rows(pooled)
    return pooled


def _normalise_rows(columns: np.ndarray) -> None:
    """normalise() in place for a (7, n) array: the same operations in the same order, hence identical
    values (+ 0.0 turns -0.0 into +0.0)."""
    lo, hi = PRIOR_BOUNDS[:, :1], PRIOR_BOUNDS[:, 1:]
    np.maximum(columns, lo, out=columns)
    np.minimum(columns, hi, out=columns)
    columns -= lo
    columns /= hi - lo
    columns += 0.0


# ------------------------------------------------------------------------------------------------ KS
def ks_statistic_rows(a, b) -> np.ndarray:
    """Two-sample KS statistic D for each row pair of a (R, n) and b (R, n), equal to
    ``scipy.stats.ks_2samp(a[r], b[r]).statistic`` (two-sided, method 'auto') bit for bit.

    D = max_x |F_a(x) - F_b(x)| over pooled values, F counting "<=" (ties handled as scipy's
    right-sided searchsorted). For n <= 10000 scipy's exact mode rounds D to round(D n) / n, done here
    too (docs/ariel.md#the-ks-statistic-rounded-in-exact-mode). One batched sort replaces 2 sorts + 2
    searches per row.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.ndim != 2 or a.shape != b.shape or a.shape[1] == 0:
        raise ValueError(f"a, b: expected two (R, n) arrays of the same shape, got {a.shape} and {b.shape}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("a, b: values must be finite")
    return _ks_rows(a, b)


def _ks_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ks_statistic_rows on validated float64 arrays."""
    pooled = np.concatenate([a, b], axis=1)
    if pooled.min() >= 0:
        return _ks_pooled(pooled + 0.0)
    n = a.shape[1]  # negative values: a stable argsort carries the sample labels instead
    order = np.argsort(pooled, axis=1, kind="stable")
    values = np.take_along_axis(pooled, order, axis=1)
    last_of_tie = np.ones(pooled.shape, dtype=bool)
    np.not_equal(values[:, 1:], values[:, :-1], out=last_of_tie[:, :-1])
    return _ks_from_counts(np.cumsum(order >= n, axis=1, dtype=np.int64), last_of_tie)


class _KsWorkspace:
    """Scratch arrays for :func:`_ks_pooled`, reused across batches of one shape: fresh large arrays
    cost a page fault per 4 KiB on first touch, which dominated the batched path."""

    def __init__(self, rows: int, width: int):
        self.bits = np.empty((rows, width), dtype=np.uint64)
        self.counts = np.empty((rows, width), dtype=np.int64)
        self.last_of_tie = np.ones((rows, width), dtype=bool)
        self.positions = np.arange(1, width + 1, dtype=np.int64)


def _ks_pooled(pooled: np.ndarray, work: _KsWorkspace | None = None) -> np.ndarray:
    """KS D per row of a (R, 2n) array of non-negative floats, sample a in columns :n, b in n: (the
    array is consumed). Values and labels are packed into uint64 keys that sort like the values: for
    x >= 0 (not -0.0) the IEEE bit pattern is monotone and its top bit is free for a shift."""
    rows, width = pooled.shape
    n = width // 2
    if n > KS_EXACT_MAX_N or work is None or work.bits.shape[1] != width or work.bits.shape[0] < rows:
        work = _KsWorkspace(rows, width)
    bits, counts = work.bits[:rows], work.counts[:rows]
    last_of_tie = work.last_of_tie[:rows]  # its last column stays True: the end of every row counts
    keys = pooled.view(np.uint64)
    keys <<= np.uint64(1)
    keys[:, n:] |= np.uint64(1)
    keys.sort(axis=1)
    np.bitwise_and(keys, np.uint64(1), out=bits)
    np.cumsum(bits.view(np.int64), axis=1, out=counts)  # running count of b; no dtype cast (40x faster)
    np.bitwise_xor(keys[:, 1:], keys[:, :-1], out=bits[:, :-1])
    np.greater(bits[:, :-1], np.uint64(1), out=last_of_tie[:, :-1])  # compare after the last tied value
    if n > KS_EXACT_MAX_N:
        return _ks_from_counts(counts, last_of_tie)
    # scipy's exact mode rounds D to h / n; h = max |count_a - count_b| at run ends, found exactly.
    counts *= -2
    counts += work.positions
    np.abs(counts, out=counts)
    counts *= last_of_tie  # a multiply is ~20x faster than boolean-mask assignment
    return counts.max(axis=1) / n


def _ks_from_counts(count_b: np.ndarray, last_of_tie: np.ndarray) -> np.ndarray:
    """D from the running count of b-values along the sorted pooled rows, as scipy computes it."""
    n = count_b.shape[1] // 2
    if n <= KS_EXACT_MAX_N:
        # scipy rounds D to h / n in its exact mode; h is the integer count difference, found exactly.
        count_diff = np.abs(np.arange(1, 2 * n + 1) - 2 * count_b)
        count_diff *= last_of_tie  # a multiply is ~20x faster than boolean-mask assignment
        return count_diff.max(axis=1) / n
    count_a = np.arange(1, 2 * n + 1) - count_b
    diff = (count_a / n - count_b / n) * last_of_tie  # scipy's cdf1 - cdf2, same rounding
    d_max = diff.max(axis=1)
    d_min = np.clip(-diff.min(axis=1), 0, 1)
    return np.where(d_min > d_max, d_min, d_max)


def weighted_ks_rows(a, wa, b, wb) -> np.ndarray:
    """sup_x |F_a(x) - F_b(x)| per row of a (R, n) and b (R, m), between the weighted empirical CDFs
    (F(x) = sum of the weights of samples <= x over the total weight; weights wa (n,), wb (m,) shared by
    all rows). Deterministic: no resampling. One argsort per row of the pooled values; the running sum
    of +wa / -wb is read at the last of each run of tied values, so the order inside a run does not
    matter (beyond float rounding) and numpy's fast default sort is used."""
    pooled = np.concatenate([a, b], axis=1)
    signed = np.concatenate([wa / np.sum(wa), -(wb / np.sum(wb))])
    order = np.argsort(pooled, axis=1)
    values = np.take_along_axis(pooled, order, axis=1)
    gap = np.abs(np.cumsum(signed[order], axis=1))
    gap[:, :-1] *= values[:, 1:] != values[:, :-1]
    return np.minimum(gap.max(axis=1), 1.0)  # a running sum of weights may pass 1 by rounding (1 + 2e-17)


# ------------------------------------------------------------------------------------------ posterior
def posterior_target_scores(trace, weights, gt_trace, gt_weights, seed=None) -> np.ndarray:
    """The 7 per-target scores (1 - D_t) * 1000 of :func:`posterior_score`."""
    trace = _as_trace("trace", trace)
    weights = _as_weights("weights", weights, trace.shape[0])
    gt_trace = _as_trace("gt_trace", gt_trace)
    gt_weights = _as_weights("gt_weights", gt_weights, gt_trace.shape[0])
    pooled = resampled_columns(trace, weights, gt_trace, gt_weights, as_random_state(seed))
    return (1.0 - _ks_pooled(pooled)) * 1000.0


def posterior_score(trace, weights, gt_trace, gt_weights, seed=None) -> float:
    """ADC2023 posterior score of one planet, in [0, 1000] (higher is better).

    For the submission (trace M x 7, weights M) and the ground truth (gt_trace N x 7, gt_weights N):

        A = normalise(resample(trace, weights)),  B = normalise(resample(gt_trace, gt_weights))
        g_t = np.resize(B[:, t], M)                          (GT truncated or repeated cyclically)
        score = mean_t (1 - KS_D(A[:, t], g_t)) * 1000        over the 7 targets

    resample is systematic resampling (nestle 0.2.0 ``resample_equal``) drawing one uniform each, first
    for the submission then for the GT; normalise clips to the prior bounds and maps them to [0, 1]; KS_D
    is ``scipy.stats.ks_2samp(...).statistic``. Weights must be >= 0 and sum to 1 within sqrt(eps).

    seed: None uses NumPy's global legacy generator exactly like the official code; an int s gives the
    official result obtained right after ``np.random.seed(s)``; a RandomState is consumed in place.

    Source: ucl-exoplanets/ADC2023-baseline ``posterior_utils.py`` lines 72-85
    (``compute_posterior_loss``); ADC2023 documentation, "Posterior Score";
    docs/ariel.md#posterior-score-posterior_score.
    """
    return float(np.mean(posterior_target_scores(trace, weights, gt_trace, gt_weights, seed)))


def posterior_exact_target_scores(trace, weights, gt_trace, gt_weights) -> np.ndarray:
    """Per-target (1 - D_w) * 1000 with D_w the KS distance of the weighted empirical CDFs."""
    trace = _as_trace("trace", trace)
    weights = _as_weights("weights", weights, trace.shape[0], check_sum=False)
    gt_trace = _as_trace("gt_trace", gt_trace)
    gt_weights = _as_weights("gt_weights", gt_weights, gt_trace.shape[0], check_sum=False)
    return (1.0 - weighted_ks_rows(normalise(trace).T, weights, normalise(gt_trace).T, gt_weights)) * 1000.0


def posterior_exact_score(trace, weights, gt_trace, gt_weights) -> float:
    """Deterministic variant of :func:`posterior_score` (a project addition, not an ADC2023 score):

        score = mean_t (1 - sup_x |F_w(x) - G_w(x)|) * 1000

    with F_w, G_w the weighted empirical CDFs of the prior-clipped target t of the submission and the GT
    (weights divided by their sum). No resampling, no resizing, hence no random noise
    (docs/ariel.md#deterministic-variant-posterior_exact).
    """
    return float(np.mean(posterior_exact_target_scores(trace, weights, gt_trace, gt_weights)))


def posterior_target_scores_batch(traces, weights, gt_traces, gt_weights, seed=0,
                                  chunk_rows: int = 70_000) -> np.ndarray:
    """(P, 7) per-target posterior scores of P planets, identical to calling
    :func:`posterior_target_scores` planet by planet with one shared RandomState (draw order: planet 0
    submission, planet 0 GT, planet 1 submission, ...). KS statistics of planets with equal M are
    computed together in batches of about chunk_rows pooled values (small batches stay in the CPU cache)."""
    rng = as_random_state(seed)
    n_planets = len(traces)
    if not (len(weights) == len(gt_traces) == len(gt_weights) == n_planets):
        raise ValueError("traces, weights, gt_traces, gt_weights: lists of different lengths")
    scores = np.empty((n_planets, N_TARGETS))
    # M -> (pooled block for up to `per_batch` planets, their indices, KS workspace)
    batches: dict[int, tuple[np.ndarray, list[int], _KsWorkspace]] = {}

    def flush(m: int) -> None:
        block, planets, work = batches[m]
        rows = N_TARGETS * len(planets)
        scores[planets] = (1.0 - _ks_pooled(block[:rows], work).reshape(len(planets), N_TARGETS)) * 1000.0
        planets.clear()

    for p in range(n_planets):
        trace = _as_trace(f"traces[{p}]", traces[p])
        w = _as_weights(f"weights[{p}]", weights[p], trace.shape[0])
        gt = _as_trace(f"gt_traces[{p}]", gt_traces[p])
        gw = _as_weights(f"gt_weights[{p}]", gt_weights[p], gt.shape[0])
        m = trace.shape[0]
        if m not in batches:
            per_batch = max(1, chunk_rows // (2 * m * N_TARGETS))
            batches[m] = (np.empty((N_TARGETS * per_batch, 2 * m)), [],
                          _KsWorkspace(N_TARGETS * per_batch, 2 * m))
        block, planets, _ = batches[m]
        start = N_TARGETS * len(planets)
        resampled_columns(trace, w, gt, gw, rng, out=block[start:start + N_TARGETS])
        planets.append(p)
        if start + N_TARGETS == block.shape[0]:
            flush(m)
    for m, (_, planets, _) in batches.items():
        if planets:
            flush(m)
    return scores


# ------------------------------------------------------------------------------------------- spectral
def _as_spectrum(name: str, values) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or arr.shape[0] == 0:
        raise ValueError(f"{name}: expected a non-empty 1-D spectrum, got shape {arr.shape}")
    bad = np.flatnonzero(~np.isfinite(arr) | (arr <= 0))
    if bad.size:
        raise ValueError(f"{name}[{bad[0]}] = {float(arr[bad[0]])!r} is not a finite positive value")
    return arr


def inverse_huber_loss(values, gt_values) -> float:
    """100 x (mean squared if the mean levels differ by >= 1 dex else mean absolute) difference of
    log10 spectra: alpha = |log10(mean(values) / mean(gt_values))| decides once per spectrum."""
    alpha = abs(np.log10(np.mean(values) / np.mean(gt_values)))
    residual = np.log10(gt_values) - np.log10(values)
    loss = np.mean(residual ** 2) if alpha >= 1 else np.mean(np.abs(residual))
    return float(100.0 * loss)


def spectral_score(median, bound, gt_median, gt_bound) -> float:
    """ADC2023 spectral score of one planet, in [0, 1000] (higher is better).

        median_loss = inverse_huber(median, gt_median),  bound_loss = inverse_huber(bound, gt_bound)
        score = max(1000 - (median_loss + bound_loss) / 2, 0)

    where inverse_huber(x, y) = 100 * mean((log10 y - log10 x)^2) if |log10(mean x / mean y)| >= 1,
    else 100 * mean(|log10 y - log10 x|) (L1 within 1 dex, L2 beyond: an "inverse" Huber). median and
    bound are the per-bin median and inter-quartile range (+1e-8) of the spectra of a posterior sample.

    Source: ucl-exoplanets/ADC2023-baseline ``spectral_metric.py`` lines 12-46 (``compute_score``);
    ADC2023 documentation, "Spectral Score"; docs/ariel.md#spectral-score-spectral_score.
    """
    median = _as_spectrum("median", median)
    bound = _as_spectrum("bound", bound)
    gt_median = _as_spectrum("gt_median", gt_median)
    gt_bound = _as_spectrum("gt_bound", gt_bound)
    for name, arr in (("bound", bound), ("gt_median", gt_median), ("gt_bound", gt_bound)):
        if arr.shape != median.shape:
            raise ValueError(f"{name}: shape {arr.shape} differs from median's {median.shape}")
    losses = [inverse_huber_loss(bound, gt_bound), inverse_huber_loss(median, gt_median)]
    return float(max(1000.0 - np.mean(losses), 0.0))


def final_score(posterior: float, spectral: float, posterior_weight: float = 0.8) -> float:
    """final = beta * posterior + (1 - beta) * spectral, beta = 0.8 in ADC2023 (notebook cell 68;
    docs/ariel.md#final-score)."""
    return float(posterior_weight * posterior + (1.0 - posterior_weight) * spectral)
