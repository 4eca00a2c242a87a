"""SRBench 2022 metrics, as the 2022 judging code computed them under sympy 1.10.1: the per-model metrics
(node count, simplicity, symbolic equivalence, feature absence, R²) and the ranking of methods (aggregate
the runs per dataset, rank each aspect, harmonic mean, mean over datasets), with the qualification and
real-world rules. Pure functions: they validate their arguments and read no file.

Sources, with file and line: docs/srbench.md#per-model-metrics and docs/srbench.md#ranking (cavalab/srbench,
branch srcomp: competition-2022/experiment/metrics/evaluation.py and postprocessing/stage1.ipynb).
Re-implemented, not copied.

Every per-model metric takes either a model string or a :class:`CanonicalModel`; scoring canonicalises
each model once (:func:`canonicalize`) and hands the same object to every metric, where 2022 re-parsed and
re-simplified the string for each metric. pandas is imported by the ranking functions only.

The clock is the one thing they share with 2022 beyond their arguments: like 2022's, every sympy.simplify
runs under a wall-clock limit (10 s), whose SIGALRM timer lives in srbench/canonical_form.py; a model
whose simplification times out is judged unsimplified (docs/srbench.md#canonical-form).
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np

from ..validate import shown
from .canonical_form import SIMPLIFY_TIME_LIMIT, CanonicalModel, canonicalize, time_limit
from .expressions import check_feature_names

def simplicity_from_nodes(nodes: int) -> float:
    """simplicity = -round(log_5(s), 1) with numpy's round (half to even); s = 1 gives -0.0.

    Source: docs/srbench.md#node-count-and-simplicity (evaluation.py ``simplicity``; the judging page).
    """
    if isinstance(nodes, bool) or not isinstance(nodes, (int, np.integer)) or nodes < 1:
        raise ValueError(f"nodes must be a positive integer, got {shown(nodes)}")
    return float(-np.round(np.log(nodes) / np.log(5), 1))


def complexity(model, feature_names: Iterable[str],
               simplify_time_limit: float | None = SIMPLIFY_TIME_LIMIT) -> int:
    """Number of nodes s of the canonical model (docs/srbench.md#node-count-and-simplicity): preorder
    traversal of the sympy expression after simplify (10 s limit, unsimplified on timeout) and float
    rounding (3 decimals, |a| < 1e-3 -> 0).
    """
    return canonicalize(model, feature_names, simplify_time_limit).nodes


def simplicity(model, feature_names: Iterable[str],
               simplify_time_limit: float | None = SIMPLIFY_TIME_LIMIT) -> float:
    """SRBench 2022 simplicity = -round(log_5(complexity(model)), 1); higher is simpler
    (docs/srbench.md#node-count-and-simplicity)."""
    return simplicity_from_nodes(complexity(model, feature_names, simplify_time_limit))


def symbolic_equivalence(true_model, model, feature_names: Iterable[str],
                         simplify_time_limit: float | None = SIMPLIFY_TIME_LIMIT, shortcuts: bool = True) -> bool:
    """Whether the canonical model equals the canonical truth up to an additive or multiplicative constant.

    With T, P canonical, diff = T - P and ratio = P / T: equivalent iff str(P) != "0" and
    (str(diff) == "0" or diff is constant or ratio is constant). ``is_constant(simplify=False)`` is tried
    first; only if both fail are diff and ratio simplified (one shared time limit) and tested with the
    default ``is_constant()``. Source: docs/srbench.md#symbolic-equivalence (evaluation.py, 2022).
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
    """(|bad| - |bad ∩ symbols(P)|) / |bad| over the Symbols of the canonical model P
    (docs/srbench.md#feature-absence).

    1 means no bad feature is used, 0 that all are. Computed after canonicalisation, so ``x2/x2`` and
    ``0.0004*x2`` do not use x2.
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
    (what 2022 used for ``r2_test``; docs/srbench.md#accuracy). Inputs must be finite 1-D arrays of equal
    length."""
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


def predictions_problem(y_pred: np.ndarray, what: str = "predictions") -> str | None:
    """Why predictions cannot be scored (None when they are all finite); ``what`` names the values."""
    bad = np.flatnonzero(~np.isfinite(y_pred))
    if bad.size:
        return f"{bad.size} of {y_pred.size} {what} are not finite (first at row {bad[0]}: {y_pred[bad[0]]})"
    return None


# --------------------------------------------------------------------------- ranking (docs/srbench.md#ranking)
#
# For method m on dataset d, with runs r:
#     A = round(agg_r r2_test, 3),  S = agg_r simplicity,  P = agg_r property      (agg: median or mean)
#     rank_X = n_algs - denserank_desc(X over the methods on d)                       (X in A, S, P)
#     score(m, d) = hmean(rank_A, rank_S, rank_P)   (0 when a rank is 0)
#     final(m) = mean_d score(m, d)

#: Columns of a per-run results table.
RESULT_COLUMNS = ("algorithm", "dataset", "run", "r2_test", "simplicity", "property")
#: Missing-value profiles (docs/srbench.md#missing-values).
PROFILES = ("seed", "official2022")
#: Aggregates over runs (docs/srbench.md#aggregation-over-runs).
AGGREGATES = ("median", "mean")
ASPECTS = (("r2", "r2_test"), ("simplicity", "simplicity"), ("property", "property"))


def _check_results(results, aggregate: str, profile: str | None) -> str:
    import pandas as pd

    if not isinstance(results, pd.DataFrame):
        raise ValueError(f"results must be a pandas DataFrame, got {type(results).__name__}")
    missing = [column for column in RESULT_COLUMNS if column not in results.columns and column != "run"]
    if missing:
        raise ValueError(f"results lacks column(s) {missing}; needs {list(RESULT_COLUMNS)}")
    if aggregate not in AGGREGATES:
        raise ValueError(f"aggregate must be one of {AGGREGATES}, got {aggregate!r}")
    if profile is None:
        profile = "official2022" if aggregate == "mean" else "seed"
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
    for column in ("r2_test", "simplicity", "property"):
        values = pd.to_numeric(results[column], errors="coerce").to_numpy(dtype=float)
        raw = results[column].to_numpy()
        # -inf is allowed for r2_test and property: a run with non-finite predictions (worst accuracy).
        allowed_inf = -np.inf if column != "simplicity" else None
        bad = [i for i, (value, original) in enumerate(zip(values, raw))
               if (np.isinf(value) and value != allowed_inf)
               or (np.isnan(value) and original is not None and not _is_nan(original))]
        if bad:
            raise ValueError(f"results[{column!r}] row {bad[0]} = {shown(raw[bad[0]])} is not a finite number or NaN")
    return profile


def _is_nan(value) -> bool:
    try:
        return bool(np.isnan(value))
    except TypeError:
        return False


def aggregate_runs(results, aggregate: str = "median"):
    """Per (algorithm, dataset): A = round(agg r2_test, 3), S = agg simplicity, P = agg property.

    NaN runs are skipped (a failed run is missing); S and P are rounded to 9 decimals so that equal
    aggregates tie whatever the summation order (docs/srbench.md#ties).
    """
    import pandas as pd

    frame = results.copy()
    for column in ("r2_test", "simplicity", "property"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype(float)
    grouped = frame.groupby(["algorithm", "dataset"], sort=False)[["r2_test", "simplicity", "property"]]
    table = grouped.agg(aggregate)
    table["n_runs"] = frame.groupby(["algorithm", "dataset"], sort=False).size()
    table = table.reset_index().rename(columns={"r2_test": "r2"})
    table["r2"] = np.round(table["r2"].to_numpy(dtype=float), 3)
    table["simplicity"] = np.round(table["simplicity"].to_numpy(dtype=float), 9)
    table["property"] = np.round(table["property"].to_numpy(dtype=float), 9)
    return table


def harmonic_mean_of_ranks(ranks) -> float:
    """scipy.stats.hmean of the ranks; 0 as soon as one rank is 0 (as scipy 1.7–1.11 returned;
    docs/srbench.md#a-zero-rank-zeroes-the-harmonic-mean)."""
    from scipy.stats import hmean

    ranks = np.asarray(ranks, dtype=float)
    if ranks.ndim != 1 or ranks.size == 0:
        raise ValueError(f"ranks must be a non-empty 1-D array, got shape {ranks.shape}")
    bad = np.flatnonzero(~np.isfinite(ranks) | (ranks < 0))
    if bad.size:
        raise ValueError(f"ranks[{bad[0]}] = {ranks[bad[0]]} is not a finite non-negative number")
    if np.any(ranks == 0):
        return 0.0
    return float(hmean(ranks))


def rank_per_dataset(results, aggregate: str = "median", profile: str | None = None, datasets=None):
    """Per (algorithm, dataset): the aggregates, the three ranks and their harmonic mean ``hmean``.

    results:   a pandas DataFrame, one row per run with columns algorithm, dataset, run, r2_test,
               simplicity, property (NaN where a run has no value; a failed run has none).
    aggregate: "median" (the written rules) or "mean" (the 2022 code).
    profile:   missing-value rules (docs/srbench.md#missing-values); default "official2022" for mean,
               "seed" for median. official2022, as stage1.ipynb: a failed run (no value at all) has no row,
               as 2022 read one file per finished run (cell 4); a method without a finished run on a dataset
               has no row for it (its final score averages its other datasets), n_algs counts the methods
               with a finished run (cell 12), and a NaN aggregate has a NaN rank that counts as n_algs inside
               hmean (cell 14). seed: n_algs counts every method, NaN ranks are 0 and a method without runs
               on a dataset (of ``datasets``, default all in results) gets a row of zeros.
    """
    import pandas as pd

    profile = _check_results(results, aggregate, profile)
    if profile == "official2022":
        values = results[["r2_test", "simplicity", "property"]].apply(pd.to_numeric, errors="coerce")
        results = results[values.notna().any(axis=1)]
    table = aggregate_runs(results, aggregate)
    algorithms = list(dict.fromkeys(results["algorithm"]))
    n_algs = len(algorithms)
    for name, _ in ASPECTS:
        dense = table.groupby("dataset", sort=False)[name].rank(method="dense", ascending=False)
        table[f"{name}_rank"] = n_algs - dense
    rank_columns = [f"{name}_rank" for name, _ in ASPECTS]
    if profile == "seed":
        table[rank_columns] = table[rank_columns].fillna(0.0)
        all_datasets = list(dict.fromkeys(results["dataset"])) if datasets is None else list(datasets)
        present = set(zip(table["algorithm"], table["dataset"]))
        absent = [{"algorithm": a, "dataset": d, "n_runs": 0, **{c: 0.0 for c in rank_columns}}
                  for a in algorithms for d in all_datasets if (a, d) not in present]
        if absent:
            table = pd.concat([table, pd.DataFrame(absent)], ignore_index=True)
    filled = table[rank_columns].fillna(float(n_algs)).to_numpy(dtype=float)
    table["hmean"] = [harmonic_mean_of_ranks(row) for row in filled]
    return table.sort_values(["algorithm", "dataset"], kind="stable").reset_index(drop=True)


def final_scores(per_dataset, algorithms=None):
    """Per algorithm: ``score`` = mean of hmean over its datasets, and ``n_datasets``; best first
    (docs/srbench.md#harmonic-mean-and-final-score). ``algorithms``: every method to list; one without a
    row (official2022: no finished run at all, which 2022 left unranked) scores 0, the worst, on 0 datasets."""
    import pandas as pd

    grouped = per_dataset.groupby("algorithm", sort=False)["hmean"]
    table = pd.DataFrame({"score": grouped.mean(), "n_datasets": grouped.size()})
    unranked = [a for a in dict.fromkeys(algorithms if algorithms is not None else []) if a not in table.index]
    if unranked:
        table = pd.concat([table, pd.DataFrame({"score": 0.0, "n_datasets": 0}, index=unranked)])
    table = table.sort_values("score", ascending=False, kind="stable")
    table.index.name = "algorithm"
    return table


def rank_methods(results, aggregate: str = "median", profile: str | None = None, datasets=None):
    """The all-against-all SRBench 2022 ranking: one row per algorithm (index), column ``score`` (the
    mean over datasets of the harmonic mean of the accuracy, simplicity and property ranks) and
    ``n_datasets``, best first. See rank_per_dataset for the arguments; aggregate="mean" reproduces the
    2022 notebook."""
    return final_scores(rank_per_dataset(results, aggregate, profile, datasets), results["algorithm"])


def head_to_head(mine: float | None, linear: float) -> float:
    """rank(submission) − rank(LinearRegression) for one run of the qualification: ranks by round(R², 3)
    descending, average ranks on ties, a missing run ranked after the last (docs/srbench.md#qualification)."""
    if mine is None or not math.isfinite(mine):
        return 1.0
    a, b = round(mine, 3), round(linear, 3)
    return 0.0 if a == b else (-1.0 if a > b else 1.0)


#: The algorithm seeds of the 2022 harness in the order it launched a method's runs: ``analyze.py`` takes
#: ``random_state = SEEDS[t]`` for t = 0 .. n_trials - 1 from ``seeds.py``, and stage 2 ran 10 trials
#: (``submit_stage2.sh``: ``-n_trials 10``). The real-world track's runs are these ten seeds.
HARNESS_SEEDS = (24305, 8356, 16130, 24399, 2804, 32373, 25941, 8068, 32163, 19397)


def launch_position(seed) -> tuple[int, float]:
    """A run's place in the order the 2022 harness launched the runs (HARNESS_SEEDS), a seed outside it
    after them by value: the order of the runs when the representative run is chosen."""
    if seed in HARNESS_SEEDS:
        return HARNESS_SEEDS.index(seed), 0.0
    return len(HARNESS_SEEDS), float(seed) if seed is not None else math.inf


def representative(runs: list[dict]) -> dict | None:
    """The run whose R² is closest to the median R² of the runs (|R² − median| as pandas computes it, the
    median of an even count being the mean of the two middle values), the first in launch order on ties
    (launch_position; docs/srbench.md#the-representative-run); None when no run has a finite R²."""
    scored = [r for r in runs if r.get("r2_test") is not None and math.isfinite(r["r2_test"])]
    if not scored:
        return None
    median = float(np.median([r["r2_test"] for r in scored]))
    return min(scored, key=lambda r: (abs(r["r2_test"] - median), launch_position(r.get("seed"))))


__all__ = ["CanonicalModel", "canonicalize", "complexity", "simplicity",
           "simplicity_from_nodes", "symbolic_equivalence", "feature_absence_score", "r2_score",
           "compile_model", "predictions_problem", "SIMPLIFY_TIME_LIMIT",
           "aggregate_runs", "harmonic_mean_of_ranks", "rank_per_dataset", "final_scores", "rank_methods",
           "head_to_head", "representative", "launch_position", "HARNESS_SEEDS", "RESULT_COLUMNS", "PROFILES",
           "AGGREGATES"]
