"""SRBench 2022 ranking: aggregate runs per dataset, rank methods per aspect, harmonic mean, mean.

Source: cavalab/srbench branch ``srcomp``, competition-2022/postprocessing/stage1.ipynb and
docs/JudgingCriteria.md, as specified in spec srbench.md §4. Re-implemented, not copied.

For method m on dataset d, with runs r:
    A = round(agg_r r2_test, 3),  S = agg_r simplicity,  P = agg_r property      (agg: median or mean)
    rank_X = n_algs - denserank_desc(X over the methods on d)                       (X in A, S, P)
    score(m, d) = hmean(rank_A, rank_S, rank_P)   (0 when a rank is 0)
    final(m) = mean_d score(m, d)
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: Columns of a per-run results table.
RESULT_COLUMNS = ("algorithm", "dataset", "run", "r2_test", "simplicity", "property")
#: Missing-value profiles of spec §4.4.
PROFILES = ("seed", "official2022")
AGGREGATES = ("median", "mean")
ASPECTS = (("r2", "r2_test"), ("simplicity", "simplicity"), ("property", "property"))


def _check_results(results: pd.DataFrame, aggregate: str, profile: str | None) -> str:
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
            raise ValueError(f"results[{column!r}] row {bad[0]} = {raw[bad[0]]!r} is not a finite number or NaN")
    return profile


def _is_nan(value) -> bool:
    try:
        return bool(np.isnan(value))
    except TypeError:
        return False


def aggregate_runs(results: pd.DataFrame, aggregate: str = "median") -> pd.DataFrame:
    """Per (algorithm, dataset): A = round(agg r2_test, 3), S = agg simplicity, P = agg property.

    NaN runs are skipped (a failed run is missing); S and P are rounded to 9 decimals so that equal
    aggregates tie whatever the summation order (spec §4.1, product rule).
    """
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
    """scipy.stats.hmean of the ranks; 0 as soon as one rank is 0 (as scipy 1.7–1.11 returned)."""
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


def rank_per_dataset(results: pd.DataFrame, aggregate: str = "median", profile: str | None = None,
                     datasets=None) -> pd.DataFrame:
    """Per (algorithm, dataset): the aggregates, the three ranks and their harmonic mean ``hmean``.

    results:   one row per run with columns algorithm, dataset, run, r2_test, simplicity, property
               (NaN where a run has no value).
    aggregate: "median" (the written rules) or "mean" (the 2022 code).
    profile:   missing-value rules of spec §4.4; default "official2022" for mean, "seed" for median.
               official2022: a NaN aggregate has a NaN rank that counts as n_algs inside hmean, and a
               method without runs on a dataset has no row for it. seed: NaN ranks are 0 and a method
               without runs on a dataset (of ``datasets``, default all in results) gets a row of zeros.
    """
    profile = _check_results(results, aggregate, profile)
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


def final_scores(per_dataset: pd.DataFrame) -> pd.DataFrame:
    """Per algorithm: ``score`` = mean of hmean over its datasets, and ``n_datasets``; best first."""
    grouped = per_dataset.groupby("algorithm", sort=False)["hmean"]
    table = pd.DataFrame({"score": grouped.mean(), "n_datasets": grouped.size()})
    table = table.sort_values("score", ascending=False, kind="stable")
    table.index.name = "algorithm"
    return table


def rank_methods(results: pd.DataFrame, aggregate: str = "median", profile: str | None = None,
                 datasets=None) -> pd.DataFrame:
    """The all-against-all SRBench 2022 ranking: one row per algorithm (index), column ``score`` (the
    mean over datasets of the harmonic mean of the accuracy, simplicity and property ranks) and
    ``n_datasets``, best first. See rank_per_dataset for the arguments; aggregate="mean" reproduces the
    2022 notebook."""
    return final_scores(rank_per_dataset(results, aggregate, profile, datasets))


__all__ = ["aggregate_runs", "harmonic_mean_of_ranks", "rank_per_dataset", "final_scores", "rank_methods",
           "RESULT_COLUMNS", "PROFILES", "AGGREGATES"]
