"""From a weighted posterior sample to the (median, bound) spectra the spectral score compares
(docs/ariel.md#median-and-bound-spectra).

Two methods (task.yaml ``spectral_method``):

- ``quantiles`` (default): K rows by systematic resampling of the prior-clipped trace (one uniform
  draw), their K spectra, then the per-bin 25/50/75 % quantiles: median = Q2, bound = Q3 - Q1 + 1e-8.
- ``official``: the ADC2023 row selection (FM_utils ``compute_approx_mean_and_bound``): resample all M
  rows (one draw), order them by ``argsort`` of the *original weights*
  (docs/ariel.md#rows-chosen-by-argsort-of-the-weights), take rows l and l+1 with
  x = q (M - 1), l = floor(x), f = x - l for 10 levels q in linspace(0.01, 0.99), blend their spectra
  (1 - f) FM(S_l) + f FM(S_l+1), then the same per-bin quantiles over those 10 spectra.

Both sanitise like the official code: NaN and +-inf -> 0.1, then clip to [1e-8, 0.1]
(docs/ariel.md#sanitised-quartile-spectra).
"""

from __future__ import annotations

import math

import numpy as np

from .metrics import clip_to_prior, systematic_indices

Q_LEVELS = np.linspace(0.01, 0.99, 10)
BOUND_EPS = 1e-8


def spectral_quartiles(spectra: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-bin 25/50/75 % quantiles of a (K, bins) array (numpy's linear quantiles), each sanitised like
    the official code: NaN and +-inf -> 0.1, then clipped to [1e-8, 0.1]."""
    quartiles = np.quantile(np.asarray(spectra, dtype=np.float64), [0.25, 0.5, 0.75], axis=0)
    q1, q2, q3 = (np.clip(np.nan_to_num(q, nan=0.1, posinf=0.1, neginf=0.1), 1e-8, 0.1) for q in quartiles)
    return q1, q2, q3


def median_and_bound(q1, q2, q3) -> tuple[np.ndarray, np.ndarray]:
    """The spectral score's inputs: median = Q2, bound = Q3 - Q1 + 1e-8."""
    return q2, q3 - q1 + BOUND_EPS


def summarise_spectra(spectra: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(median, bound) per bin from a (K, bins) array of spectra."""
    return median_and_bound(*spectral_quartiles(spectra))


def quantile_rows(trace: np.ndarray, weights: np.ndarray, n_rows: int, u: float) -> np.ndarray:
    """n_rows equal-weight rows of the prior-clipped trace (systematic resampling, uniform u)."""
    return clip_to_prior(trace)[systematic_indices(weights, u, n_rows)]


def official_rows(trace: np.ndarray, weights: np.ndarray, u: float, argsort_compat: str = "numpy123"):
    """The ADC2023 rows: returns (rows (R, 7), pairs [(i, j, f)] indexing rows, one per q level).

    Spectrum of level q = (1 - f) FM(rows[i]) + f FM(rows[j]) (j is unused when f == 0)."""
    resampled = clip_to_prior(trace)[systematic_indices(weights, u)]
    order = argsort_by_mode(weights, argsort_compat)
    m = resampled.shape[0]
    needed: dict[int, int] = {}
    pairs = []
    for q in Q_LEVELS:
        x = q * (m - 1)
        low = int(x)
        f = x - low
        i = needed.setdefault(int(order[low]), len(needed))
        j = needed.setdefault(int(order[low + 1]), len(needed)) if f != 0 else i
        pairs.append((i, j, f))
    rows = resampled[np.fromiter(needed, dtype=np.int64)]
    return rows, pairs


def blend(spectra: np.ndarray, pairs) -> np.ndarray:
    """The 10 pseudo-quantile spectra of :func:`official_rows`."""
    return np.stack([spectra[i] if f == 0 else (1 - f) * spectra[i] + f * spectra[j]
                     for i, j, f in pairs])


def argsort_by_mode(values, argsort_compat: str) -> np.ndarray:
    if argsort_compat == "numpy123":
        return argsort_numpy123(values)
    if argsort_compat == "stable":
        return np.argsort(values, kind="stable")
    raise ValueError(f"argsort_compat: unknown value {argsort_compat!r} (numpy123 or stable)")


def argsort_numpy123(values) -> np.ndarray:
    """The permutation numpy 1.23's default ``np.argsort`` (introsort, float64) returns, ties included.

    Re-implemented from the algorithm's steps (docs/ariel.md#numpy-123-introsort-tie-order):
    median-of-three quicksort on ranges longer than 16, insertion sort below, heapsort once the depth
    budget 2 floor(log2 n) runs out. Newer numpy versions order tied values differently, and the official
    spectral rows depend on that order. NaN sorts after every number."""
    v = [float(x) for x in np.asarray(values, dtype=np.float64).ravel()]
    n = len(v)
    t = list(range(n))
    if n < 2:
        return np.array(t, dtype=np.int64)

    def less(a: float, b: float) -> bool:
        return a < b or (b != b and a == a)

    def heapsort(lo: int, hi: int) -> None:
        size = hi - lo + 1
        base = lo - 1  # 1-based heap: a[k] is t[base + k]

        def sift(start: int, end: int) -> None:
            tmp = t[base + start]
            i, j = start, start * 2
            while j <= end:
                if j < end and less(v[t[base + j]], v[t[base + j + 1]]):
                    j += 1
                if less(v[tmp], v[t[base + j]]):
                    t[base + i] = t[base + j]
                    i, j = j, j * 2
                else:
                    break
            t[base + i] = tmp

        for start in range(size >> 1, 0, -1):
            sift(start, size)
        end = size
        while end > 1:
            t[base + 1], t[base + end] = t[base + end], t[base + 1]
            end -= 1
            sift(1, end)

    stack: list[tuple[int, int, int]] = []
    lo, hi, depth = 0, n - 1, 2 * int(math.floor(math.log2(n)))
    while True:
        if depth < 0:
            heapsort(lo, hi)
        else:
            while hi - lo > 15:
                m = lo + ((hi - lo) >> 1)
                if less(v[t[m]], v[t[lo]]):
                    t[m], t[lo] = t[lo], t[m]
                if less(v[t[hi]], v[t[m]]):
                    t[hi], t[m] = t[m], t[hi]
                if less(v[t[m]], v[t[lo]]):
                    t[m], t[lo] = t[lo], t[m]
                pivot = v[t[m]]
                i, j = lo, hi - 1
                t[m], t[j] = t[j], t[m]
                while True:
                    i += 1
                    while less(v[t[i]], pivot):
                        i += 1
                    j -= 1
                    while less(pivot, v[t[j]]):
                        j -= 1
                    if i >= j:
                        break
                    t[i], t[j] = t[j], t[i]
                t[i], t[hi - 1] = t[hi - 1], t[i]
                depth -= 1
                if i - lo < hi - i:
                    stack.append((i + 1, hi, depth))
                    hi = i - 1
                else:
                    stack.append((lo, i - 1, depth))
                    lo = i + 1
            for k in range(lo + 1, hi + 1):
                item = t[k]
                key = v[item]
                j = k
                while j > lo and less(key, v[t[j - 1]]):
                    t[j] = t[j - 1]
                    j -= 1
                t[j] = item
        if not stack:
            break
        lo, hi, depth = stack.pop()
    return np.array(t, dtype=np.int64)


def posterior_spectra(forward_model, trace, weights, star_radius_m, planet_mass_kg, u,
                      method: str = "quantiles", n_samples: int = 256,
                      argsort_compat: str = "numpy123") -> np.ndarray:
    """The spectra whose per-bin quartiles summarise one weighted sample (one uniform draw u): K spectra
    of resampled rows (``quantiles``) or the 10 blended spectra of the ADC2023 rows (``official``)."""
    trace = np.asarray(trace, dtype=np.float64)
    weights = np.asarray(weights, dtype=np.float64)
    if method == "quantiles":
        return forward_model.spectra(quantile_rows(trace, weights, n_samples, u), star_radius_m,
                                     planet_mass_kg)
    if method == "official":
        rows, pairs = official_rows(trace, weights, u, argsort_compat)
        return blend(forward_model.spectra(rows, star_radius_m, planet_mass_kg), pairs)
    raise ValueError(f"spectral_method: unknown value {method!r} (quantiles or official)")


def posterior_quartiles(forward_model, trace, weights, star_radius_m, planet_mass_kg, u, config: dict,
                        method: str | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sanitised per-bin (q1, q2, q3) of one weighted sample's spectra with task.yaml's spectral
    settings (method: config's ``spectral_method`` unless given). The scorer and the frozen ground truth
    both come through here, so that they cannot drift apart."""
    return spectral_quartiles(posterior_spectra(
        forward_model, trace, weights, star_radius_m, planet_mass_kg, u, method or config["spectral_method"],
        int(config["spectral_samples"]), config["argsort_compat"]))
