"""SRBench 2022 per-model metrics, as the 2022 judging code computed them under sympy 1.10.1.

Source: cavalab/srbench, branch ``srcomp``, ``competition-2022/experiment/metrics/evaluation.py`` and
docs/JudgingCriteria.md, as specified in spec srbench.md §2. Re-implemented, not copied.

Every metric takes either a model string or a :class:`CanonicalModel`; scoring canonicalises each model
once (:func:`canonicalize`) and hands the same object to every metric, where 2022 re-parsed and
re-simplified the string for each metric.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import threading
from typing import Iterable, Sequence

import numpy as np

from ..errors import SimplifyTimeout
from .expressions import check_feature_names, parse_model

#: Time limit of one sympy.simplify call, in seconds (2022: MAXTIME = 10).
SIMPLIFY_TIME_LIMIT = 10.0
#: Floats are rounded to this many decimals after simplification; smaller magnitudes become 0.
ROUND_DECIMALS = 3


#: After the limit, the alarm fires again at this interval until the block has exited: some sympy code
#: catches Exception and carries on, and a single swallowed alarm would leave the call unbounded.
ALARM_REPEAT = 0.05


@contextlib.contextmanager
def time_limit(seconds: float | None):
    """Raise SimplifyTimeout in the block after ``seconds`` of wall time, and again every ALARM_REPEAT
    seconds until it leaves the block (SIGALRM, main thread only; elsewhere, or with None, the block runs
    unbounded and the caller's process limit applies)."""
    usable = (seconds is not None and seconds > 0 and hasattr(signal, "setitimer")
              and threading.current_thread() is threading.main_thread())
    if not usable:
        yield
        return
    armed = True

    def on_alarm(signum, frame):
        if armed:
            raise SimplifyTimeout(f"sympy did not finish within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds, ALARM_REPEAT)
    try:
        yield
    finally:
        while True:  # a repeat may land during the clean-up itself: retry until it is done
            try:
                armed = False
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)
                break
            except SimplifyTimeout:
                continue


@dataclasses.dataclass(frozen=True)
class CanonicalModel:
    """A model after §2.2: parsed, simplified (or not, on timeout/failure), floats rounded.

    text:      the model string as submitted.
    parsed:    the expression as written (used for numeric evaluation).
    expr:      the canonical expression (used for complexity, equivalence and feature absence).
    timed_out: the simplify time limit fired (expr is then the rounded, unsimplified parse).
    """

    text: str
    parsed: object
    expr: object
    timed_out: bool = False
    simplify_error: str | None = None

    @property
    def nodes(self) -> int:
        return count_nodes(self.expr)


def round_floats(expr, decimals: int = ROUND_DECIMALS):
    """Round every sympy Float of ``expr`` to ``decimals`` decimals, replacing |a| < 10**-decimals by 0.

    As 2022: walk the *input* in preorder and substitute into the running result, one Float at a time
    (``subs`` replaces every equal Float and re-evaluates, so 0.0004*x2 + ... loses the term).
    """
    import sympy

    threshold = 10 ** (-decimals)
    result = expr
    for node in sympy.preorder_traversal(expr):
        if isinstance(node, sympy.Float):
            replacement = sympy.Integer(0) if abs(node) < threshold else round(node, decimals)
            result = result.subs(node, replacement)
    return result


def count_nodes(expr) -> int:
    """Number of nodes of sympy's preorder traversal (operators, functions and leaves count 1 each)."""
    import sympy

    return sum(1 for _ in sympy.preorder_traversal(expr))


def canonicalize(model, feature_names: Iterable[str], simplify_time_limit: float | None = SIMPLIFY_TIME_LIMIT,
                 strict: bool = False, simplify: bool = True) -> CanonicalModel:
    """Parse (safely), simplify under a time limit, then round floats (spec §2.2, the 2022 order).

    A CanonicalModel passed in is returned unchanged. ``strict`` is passed to parse_model (True rejects
    names that are not columns); ``simplify=False`` skips simplification (the 2022 real-world track's
    simplicity). Raises ModelSyntaxError for strings that are not accepted expressions.
    """
    import sympy

    if isinstance(model, CanonicalModel):
        return model
    parsed = parse_model(model, feature_names, strict=strict)
    simplified, timed_out, error = parsed, False, None
    if not simplify:
        return CanonicalModel(text=model, parsed=parsed, expr=round_floats(parsed))
    try:
        with time_limit(simplify_time_limit):
            simplified = sympy.simplify(parsed)
    except SimplifyTimeout:
        timed_out = True
        simplified = parsed
    except Exception as exc:  # 2022 kept the parsed model on any failure of simplify
        error = f"{type(exc).__name__}: {exc}"
        simplified = parsed
    return CanonicalModel(text=model, parsed=parsed, expr=round_floats(simplified),
                          timed_out=timed_out, simplify_error=error)


def simplicity_from_nodes(nodes: int) -> float:
    """simplicity = -round(log_5(s), 1) with numpy's round (half to even); s = 1 gives -0.0.

    Source: docs/JudgingCriteria.md ("complexity ... round(-log_5(s), 1)"); evaluation.simplicity.
    """
    if isinstance(nodes, bool) or not isinstance(nodes, (int, np.integer)) or nodes < 1:
        raise ValueError(f"nodes must be a positive integer, got {nodes!r}")
    return float(-np.round(np.log(nodes) / np.log(5), 1))


def complexity(model, feature_names: Iterable[str],
               simplify_time_limit: float | None = SIMPLIFY_TIME_LIMIT) -> int:
    """Number of nodes s of the canonical model (spec §2.3): preorder traversal of the sympy expression
    after simplify (10 s limit, unsimplified on timeout) and float rounding (3 decimals, |a| < 1e-3 -> 0).
    """
    return canonicalize(model, feature_names, simplify_time_limit).nodes


def simplicity(model, feature_names: Iterable[str],
               simplify_time_limit: float | None = SIMPLIFY_TIME_LIMIT) -> float:
    """SRBench 2022 simplicity = -round(log_5(complexity(model)), 1); higher is simpler (spec §2.3)."""
    return simplicity_from_nodes(complexity(model, feature_names, simplify_time_limit))


def symbolic_equivalence(true_model, model, feature_names: Iterable[str],
                         simplify_time_limit: float | None = SIMPLIFY_TIME_LIMIT, shortcuts: bool = True) -> bool:
    """Whether the canonical model equals the canonical truth up to an additive or multiplicative constant.

    With T, P canonical (§2.2), diff = T - P and ratio = P / T: equivalent iff str(P) != "0" and
    (str(diff) == "0" or diff is constant or ratio is constant). ``is_constant(simplify=False)`` is tried
    first; only if both fail are diff and ratio simplified (one shared time limit) and tested with the
    default ``is_constant()``. Source: evaluation.symbolic_equivalence (2022), spec §2.5.
    ``shortcuts`` skips work that cannot change the answer (a "0" model; the ratio once diff is
    constant); False does every step 2022 did (the benchmark's baseline).
    """
    import sympy

    names = check_feature_names(feature_names)
    truth = canonicalize(true_model, names, simplify_time_limit).expr
    predicted = canonicalize(model, names, simplify_time_limit).expr
    if shortcuts and str(predicted) == "0":  # the decision below is then False whatever diff and ratio are
        return False
    diff = truth - predicted
    ratio = predicted / truth
    try:
        diff_const = diff.is_constant(simplify=False)
        ratio_const = ratio.is_constant(simplify=False)
        if not diff_const and not ratio_const:
            try:
                with time_limit(simplify_time_limit):
                    diff = sympy.simplify(diff)
                    diff_const = diff.is_constant()
                    # 2022 simplified the ratio too, but once diff is constant the answer is True
                    # whatever the ratio gives (or if it times out): skipping it changes no result.
                    if not (shortcuts and diff_const):
                        ratio = sympy.simplify(ratio)
                        ratio_const = ratio.is_constant()
            except Exception:  # timeout or sympy failure: keep what was decided so far (as 2022)
                pass
    except Exception:
        diff_const = ratio_const = False
    return bool(str(predicted) != "0" and (str(diff) == "0" or diff_const or ratio_const))


def feature_absence_score(model, bad_features: Sequence[str], feature_names: Iterable[str],
                          simplify_time_limit: float | None = SIMPLIFY_TIME_LIMIT) -> float:
    """(|bad| - |bad ∩ symbols(P)|) / |bad| over the Symbols of the canonical model P (spec §2.5).

    1 means no bad feature is used, 0 that all are. Computed after canonicalisation, so ``x2/x2`` and
    ``0.0004*x2`` do not use x2. Source: evaluation.feature_absence_score (2022).
    """
    import sympy

    bad = list(bad_features)
    if not bad:
        raise ValueError("bad_features must not be empty")
    for index, name in enumerate(bad):
        if not isinstance(name, str):
            raise ValueError(f"bad_features[{index}] = {name!r} is not a name")
    bad_symbols = [sympy.Symbol(name) for name in bad]
    expr = canonicalize(model, feature_names, simplify_time_limit).expr
    used = {node for node in sympy.preorder_traversal(expr) if isinstance(node, sympy.Symbol)}
    misused = {symbol for symbol in bad_symbols if symbol in used}
    return (len(bad_symbols) - len(misused)) / len(bad_symbols)


def r2_score(y_true, y_pred) -> float:
    """Coefficient of determination R² = 1 - Σ(y - ŷ)² / Σ(y - ȳ)², scikit-learn's ``r2_score``
    (what 2022 used for ``r2_test``). Inputs must be finite 1-D arrays of equal length."""
    from sklearn.metrics import r2_score as sklearn_r2

    y_true = np.asarray(y_true, dtype=float)
    y_pred = np.asarray(y_pred, dtype=float)
    for name, array in (("y_true", y_true), ("y_pred", y_pred)):
        if array.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got shape {array.shape}")
        bad = np.flatnonzero(~np.isfinite(array))
        if bad.size:
            raise ValueError(f"{name}[{bad[0]}] = {array[bad[0]]} is not finite")
    if y_true.shape != y_pred.shape:
        raise ValueError(f"y_true has {y_true.size} values but y_pred has {y_pred.size}")
    if y_true.size < 2:
        raise ValueError("R² needs at least 2 samples")
    return float(sklearn_r2(y_true, y_pred))


def compile_model(expr, feature_names: Sequence[str]):
    """A numpy function f(X) -> predictions for a *validated* sympy expression (sympy.lambdify with the
    scipy/numpy printers, float64). Only expressions built by parse_model reach here, never a string."""
    import sympy
    from scipy.special import erf
    from sympy.utilities.lambdify import implemented_function

    names = list(feature_names)
    symbols = [sympy.Symbol(name) for name in names]
    # numpy.amax((x, 0.5), axis=0), lambdify's Max, fails when scalars and arrays mix: broadcast first.
    vector_max = implemented_function("vector_max", lambda *a: np.maximum.reduce(np.broadcast_arrays(*a)))
    vector_min = implemented_function("vector_min", lambda *a: np.minimum.reduce(np.broadcast_arrays(*a)))
    expr = expr.replace(sympy.Max, lambda *a: vector_max(*a)).replace(sympy.Min, lambda *a: vector_min(*a))

    function = sympy.lambdify(symbols, expr, modules=[{"erf": erf}, "numpy"])

    def predict(X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != len(names):
            raise ValueError(f"X must have shape (n, {len(names)}), got {X.shape}")
        with np.errstate(all="ignore"):
            values = function(*(X[:, j] for j in range(X.shape[1])))
            values = np.broadcast_to(np.asarray(values), (X.shape[0],))
        if np.iscomplexobj(values):
            values = np.where(np.imag(values) == 0, np.real(values), np.nan)
        return np.asarray(values, dtype=float)

    return predict


def predictions_problem(y_pred: np.ndarray) -> str | None:
    """Why predictions cannot be scored (None when they are all finite)."""
    bad = np.flatnonzero(~np.isfinite(y_pred))
    if bad.size:
        return f"{bad.size} of {y_pred.size} predictions are not finite (first at row {bad[0]}: {y_pred[bad[0]]})"
    return None


__all__ = ["CanonicalModel", "canonicalize", "round_floats", "count_nodes", "complexity", "simplicity",
           "simplicity_from_nodes", "symbolic_equivalence", "feature_absence_score", "r2_score",
           "compile_model", "predictions_problem", "time_limit", "SimplifyTimeout",
           "SIMPLIFY_TIME_LIMIT"]

