"""Pure metrics of the UAI 2022 inference track (numpy in, float out; docs/uai.md#scoring).

Source: UAI 2022 competition, evaluation criteria page (uaicompetition/uci-2022,
``_pages/root/results/evaluation-criteria.md``), and the project's rules for the cases that page leaves
open (docs/uai.md#tolerance-and-exact-trivial-answers, docs/uai.md#zero-likelihood).
"""

from __future__ import annotations

import math

import numpy as np

from .files import Model

#: Tolerance for "MaxErr is about 0" (docs/uai.md#tolerance-and-exact-trivial-answers): log10 units for PR/MPE/MMAP/MLC, Hellinger for MAR.
DEFAULT_TOLERANCE = 1e-6


def _likelihood_index(model: Model):
    """Flat log10 table of all factors, offsets, padded scopes and strides: one gather then evaluates
    every factor of many assignments at once."""
    arity = max((len(s) for s in model.scopes), default=0)
    m = model.n_factors
    scopes = np.zeros((m, max(arity, 1)), dtype=np.int64)
    strides = np.zeros((m, max(arity, 1)), dtype=np.int64)
    offsets = np.zeros(m, dtype=np.int64)
    pos = 0
    for f, (scope, table) in enumerate(zip(model.scopes, model.tables)):
        scopes[f, :len(scope)] = scope
        if scope:
            strides[f, :len(scope)] = np.array(table.strides, dtype=np.int64) // table.itemsize
        offsets[f] = pos
        pos += table.size
    flat = np.concatenate([t.ravel() for t in model.tables]) if m else np.zeros(0)
    with np.errstate(divide="ignore"):
        log_flat = np.log10(flat)
    return log_flat, offsets, scopes, strides


def log10_likelihood(model: Model, assignment, evidence: dict[int, int] | None = None) -> float | np.ndarray:
    """log10 L(x) = sum_f log10 f(x_scope(f)) of full assignments (docs/uai.md#likelihood-of-an-assignment).

    Raw table entries, no normalisation; -inf when an entry is 0. ``assignment`` holds one value per
    variable (shape (N,)), or one assignment per row (shape (K, N), returns K values). With ``evidence``,
    every assignment must give the evidence variables their observed values. Vectorised over factors
    (one gather into the concatenated log tables).
    """
    x = np.asarray(assignment)
    if x.ndim not in (1, 2) or x.shape[-1] != model.n_vars:
        raise ValueError(f"assignment: expected {model.n_vars} values per assignment, got shape {x.shape}")
    if not np.issubdtype(x.dtype, np.integer):
        if not np.all(np.isfinite(x)) or np.any(x != np.round(x)):
            raise ValueError("assignment: values must be integers")
        x = x.astype(np.int64)
    bad = np.argwhere((x < 0) | (x >= model.cards))
    if bad.size:
        i = tuple(int(k) for k in bad[0])
        raise ValueError(f"assignment{list(i)} = {x[i]} is not below the cardinality {model.cards[i[-1]]}")
    for v, val in (evidence or {}).items():
        wrong = np.flatnonzero(np.atleast_1d(x[..., v] != val))
        if wrong.size:
            raise ValueError(f"assignment: variable {v} must take its evidence value {val}")
    log_flat, offsets, scopes, strides = _likelihood_index(model)
    index = offsets + (x[..., scopes] * strides).sum(axis=-1)
    values = log_flat[index].sum(axis=-1)
    return float(values) if x.ndim == 1 else values


def hellinger(p, q) -> float:
    """Hellinger distance H(p, q) = sqrt(max(0, 1 - sum_k sqrt(p_k q_k))) of two distributions.

    Both are renormalised to sum 1 (docs/uai.md#mar-answers); entries must be finite and >= 0 with a positive sum.
    H lies in [0, 1] (docs/uai.md#hellinger-distance; the standard definition linked by the 2022 criteria
    page).
    """
    p = _distribution(p, "p")
    q = _distribution(q, "q")
    if p.shape != q.shape:
        raise ValueError(f"q: length {q.size} differs from p's length {p.size}")
    return math.sqrt(max(0.0, 1.0 - float(np.sum(np.sqrt(p * q)))))


def _distribution(p, name: str) -> np.ndarray:
    p = np.asarray(p, dtype=np.float64)
    if p.ndim != 1 or p.size == 0:
        raise ValueError(f"{name}: expected a non-empty 1-D probability vector, got shape {p.shape}")
    bad = np.flatnonzero(~np.isfinite(p) | (p < 0))
    if bad.size:
        raise ValueError(f"{name}[{bad[0]}] = {p[bad[0]]} is negative or not finite")
    total = p.sum()
    if not total > 0:
        raise ValueError(f"{name}: probabilities sum to {total}, must be positive")
    return p / total


def mean_hellinger(truth: list, answer: list, observed=()) -> float:
    """MAR error HErr = (1/N_u) sum_{i unobserved} H(P*_i, P^_i) (docs/uai.md#errors-of-each-task); 0 when every
    variable is observed."""
    if len(truth) != len(answer):
        raise ValueError(f"answer: {len(answer)} marginals for {len(truth)} variables")
    observed = set(observed)
    distances = [hellinger(t, a) for i, (t, a) in enumerate(zip(truth, answer)) if i not in observed]
    return float(np.mean(distances)) if distances else 0.0


def instance_score(err: float, max_err: float, tolerance: float = DEFAULT_TOLERANCE) -> float:
    """Score = max(0, 100 (1 - Err / MaxErr)) of one instance (2022 criteria page; docs/uai.md#instance-score).

    Err is the answer's error, MaxErr the trivial answer's; Err = +inf (zero likelihood) scores 0.
    Err <= tolerance scores 100 (rounding); MaxErr <= tolerance (the trivial answer is already exact)
    with Err > tolerance scores 0 (docs/uai.md#tolerance-and-exact-trivial-answers).
    """
    err = float(err)
    max_err = float(max_err)
    if math.isnan(err) or err < 0:
        raise ValueError(f"err must be >= 0 (or +inf), got {err}")
    if not (math.isfinite(max_err) and max_err >= 0):
        raise ValueError(f"max_err must be finite and >= 0, got {max_err}")
    if err <= tolerance:  # exact up to rounding (the Hellinger square root magnifies 1e-16 to 1e-8)
        return 100.0
    if max_err <= tolerance:
        return 0.0
    if err == math.inf:
        return 0.0
    return max(0.0, 100.0 * (1.0 - err / max_err))


def pr_error(truth: float, answer: float) -> float:
    """PR error |log10 Z* - log10 Z^| (docs/uai.md#errors-of-each-task); +inf when exactly one of
    them is -inf."""
    truth, answer = float(truth), float(answer)
    if math.isnan(truth) or math.isnan(answer) or truth == math.inf or answer == math.inf:
        raise ValueError(f"log10 Z values must be finite or -inf, got truth={truth}, answer={answer}")
    if truth == answer:
        return 0.0
    return abs(truth - answer)


def gap_error(best: float, value: float) -> float:
    """MPE/MMAP/MLC error log10 V(best) - log10 V(answer), clamped at 0 (docs/uai.md#errors-of-each-task,
    docs/uai.md#better-than-the-best-known-answer); +inf for V = 0."""
    best, value = float(best), float(value)
    if not math.isfinite(best):
        raise ValueError(f"best must be finite, got {best}")
    if math.isnan(value) or value == math.inf:
        raise ValueError(f"value must be finite or -inf, got {value}")
    if value == -math.inf:
        return math.inf
    return max(0.0, best - value)


def mlc_instance_score(line_errors, line_max_errors, tolerance: float = DEFAULT_TOLERANCE) -> float:
    """MLC instance score = (1/T) sum_t Score(Err_t, MaxErr_t): the mean over the T test lines of the
    per-instance rule applied to each line (docs/uai.md#mlc-instance-score).

    Err_t = log10 V(q*_t | e_t) - log10 V(q^_t | e_t) against the line's optimum, MaxErr_t the trivial
    answer's; an unreadable or zero-likelihood line has Err_t = +inf and scores 0.
    """
    if len(line_errors) != len(line_max_errors) or not line_errors:
        raise ValueError(f"expected one Err per MaxErr and at least one line, got {len(line_errors)} and "
                         f"{len(line_max_errors)}")
    return float(np.mean([instance_score(e, m, tolerance) for e, m in zip(line_errors, line_max_errors)]))
