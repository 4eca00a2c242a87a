"""The SRBench 2022 final rankings as leaderboard boards (codascore/board.py): the synthetic track's
all-against-all ranking and the real-world track's ranking with the expert's trust ratings, each computed
with numpy on a whole Evidence so that ``codascore leaderboard`` can rerun it on every bootstrap replicate.

The unit of evidence is one run (``"<dataset>/<seed>"``); the design is two-level (Design(cluster="dataset")):
datasets (real world: targets) are drawn with replacement, then the runs within each drawn dataset. The
formulas are those of metrics.rank_per_dataset and final_scores (docs/srbench.md#ranking), vectorised over
teams and datasets; tests/test_srbench_leaderboard.py holds them equal to ``codascore srbench rank`` and to
the scorers. Sources: docs/srbench.md#all-against-all-ranking, #missing-values and #real-world-track
(cavalab/srbench, branch srcomp: competition-2022/postprocessing/stage1.ipynb and
stage2_final_ratings.ipynb; docs/JudgingCriteria.md).
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..board import Board, Design, Evidence
from ..errors import ReferenceDataError
from ..formats.details import Details
from . import files
from .evaluation import run_rows

#: The metrics of a unit row, in the order of Evidence.values' last axis. ``present`` is 1 on every row a
#: team's details.json holds and NaN where the leaderboard found none: official2022 tells "a run that
#: failed" (a row, NaN values) from "no run at all on the dataset" (no row).
SYNTHETIC_METRICS = ("r2_test", "simplicity", "property", "present")
#: The real-world track's: ``trust`` is NaN in unit_rows and filled by RealworldBoard.prepare.
REALWORLD_METRICS = ("r2_test", "simplicity", "trust", "present")
#: The synthetic track's rules: name -> (aggregate over runs, missing-value profile, what it is).
SYNTHETIC_RULES = {
    "median": ("median", "seed", "the judging page: the median of the runs per dataset (docs/JudgingCriteria.md, "
                                 "line 38); a dataset without runs scores 0 (profile seed)"),
    "mean": ("mean", "official2022", "the 2022 notebook, which made the published table: the mean of the runs "
                                     "(stage1.ipynb cell 12); NaN ranks count n_algs, a dataset without runs "
                                     "is left out of the team's mean (profile official2022)"),
}
#: The configuration key naming the expert's trust ratings file (columns task, method, trust).
TRUST_RATINGS_KEY = "trust_ratings"


# --------------------------------------------------------------------------- shared numpy pieces

def run_seeds(units: pd.DataFrame) -> np.ndarray:
    """Each unit's data seed, read from its id ``"<dataset>/<seed>"`` (which a replicate keeps)."""
    return np.array([int(str(unit).rsplit("/", 1)[1]) for unit in units["unit"]])


def runs_by_cluster(evidence: Evidence, cluster: str, by_seed: bool = False) -> tuple[np.ndarray, int]:
    """Evidence.values laid out as (teams, clusters, runs, metrics), NaN-padded where a cluster has fewer
    units than the largest; clusters numbered by first appearance in ``evidence.units[cluster]``, units kept
    in their order within a cluster (or sorted by seed). Returns (array, n_clusters)."""
    codes, labels = pd.factorize(evidence.units[cluster].to_numpy(), sort=False)
    keys = (codes,) if not by_seed else (run_seeds(evidence.units), codes)
    index = np.lexsort(keys)  # stable: by cluster, then by ``order``, then by position
    counts = np.bincount(codes, minlength=len(labels))
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    sorted_codes = codes[index]
    position = np.arange(index.size) - starts[sorted_codes]
    teams, _, n_metrics = evidence.values.shape
    table = np.full((teams, len(labels), int(counts.max(initial=1)), n_metrics), np.nan)
    table[:, sorted_codes, position, :] = evidence.values[:, index, :]
    return table, len(labels)


def nan_median(values: np.ndarray, axis: int = -1) -> np.ndarray:
    """The median of the non-NaN values along ``axis`` (the mean of the two middle ones for an even count,
    as numpy and pandas compute it), NaN where there is none; -inf sorts first."""
    ordered = np.sort(values, axis=axis)  # NaN last
    count = np.sum(~np.isnan(values), axis=axis, keepdims=True)
    low = np.take_along_axis(ordered, np.maximum((count - 1) // 2, 0), axis=axis)
    high = np.take_along_axis(ordered, np.maximum(count // 2, 0), axis=axis)
    with np.errstate(invalid="ignore"):
        middle = (low + high) / 2
    return np.squeeze(np.where(count > 0, middle, np.nan), axis=axis)


def nan_mean(values: np.ndarray, axis: int = -1) -> np.ndarray:
    """The mean of the non-NaN values along ``axis`` (pandas' skipna mean), NaN where there is none."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN slice is NaN, as meant
        return np.nanmean(values, axis=axis)


def points_from_ranks(values: np.ndarray) -> np.ndarray:
    """n − dense descending rank among the teams (axis 0), NaN where the value is NaN: the best gets n − 1
    (pandas ``rank(method="dense", ascending=False)``, stage1.ipynb cell 12; docs/srbench.md#ranks)."""
    n_teams = values.shape[0]
    with np.errstate(invalid="ignore"):
        order = np.argsort(-values, axis=0, kind="stable")  # best first, NaN last
    ordered = np.take_along_axis(values, order, axis=0)
    new_value = np.ones(ordered.shape, dtype=bool)
    new_value[1:] = ordered[1:] != ordered[:-1]
    dense = np.cumsum(new_value, axis=0).astype(float)
    dense[np.isnan(ordered)] = np.nan
    ranks = np.empty_like(dense)
    np.put_along_axis(ranks, order, dense, axis=0)
    return n_teams - ranks


def harmonic_means(ranks: np.ndarray) -> np.ndarray:
    """scipy.stats.hmean over the last axis, 1 / mean(1 / r), and 0 as soon as one rank is 0
    (docs/srbench.md#a-zero-rank-zeroes-the-harmonic-mean); ranks must hold no NaN."""
    with np.errstate(divide="ignore"):
        means = 1.0 / np.mean(1.0 / ranks, axis=-1)
    return np.where(np.any(ranks == 0, axis=-1), 0.0, means)


def rounded_aspects(aspects: np.ndarray) -> np.ndarray:
    """(..., 3) aggregates as metrics.aggregate_runs rounds them: A to 3 decimals, S and P to 9 (numpy's
    half to even; docs/srbench.md#ties)."""
    return np.concatenate([np.round(aspects[..., :1], 3), np.round(aspects[..., 1:], 9)], axis=-1)


def unit_table(records: list[dict], nonfinite: str, metrics: tuple[str, ...]) -> list[dict[str, Any]]:
    """Board unit rows from per-run records, through evaluation.run_rows (what ``srbench rank`` reads):
    unit ``"<dataset>/<seed>"``, dataset, seed and the metrics (``present`` = 1, other names NaN)."""
    seeds: dict[str, set] = {}
    for record in records:
        seeds.setdefault(record["dataset"], set()).add(record["seed"])
    rows = run_rows(records, "", {dataset: sorted(values) for dataset, values in seeds.items()}, nonfinite)
    table = []
    for row in rows:
        unit = {"unit": files.run_key(row["dataset"], row["seed"]), "dataset": row["dataset"],
                "seed": row["seed"], "present": 1.0}
        table.append({**unit, **{m: float(row.get(m, math.nan)) for m in metrics if m not in unit}})
    return table


# --------------------------------------------------------------------------- synthetic track

class SyntheticBoard(Board):
    """The all-against-all ranking of the synthetic track (docs/srbench.md#all-against-all-ranking): per
    dataset, each team's runs aggregated (A = round(agg R², 3), S = agg simplicity, P = agg property), each
    aspect ranked n_algs − dense descending rank, the harmonic mean of the three ranks; the score is the mean
    over datasets (higher wins; at most n_algs − 1).

    Rules: the task's ``aggregate``/``profile`` first (official; default "median" with profile seed, the
    judging page), then the other of SYNTHETIC_RULES ("mean" with official2022: the 2022 notebook, which made
    the published table). A failed run (a unit with NaN values) is left out of its dataset's aggregate, as
    2022 left out a run that did not finish (docs/srbench.md#missing-values). A unit a team's details.json
    lacks is refused (missing_policy "refuse"): the scorer writes every run of its reference data, a failed
    one included, so such a team was scored on other reference data. Given such evidence anyway, a dataset
    without any run scores 0 (seed) or is left out of the team's mean (official2022), as rank_per_dataset.
    """

    design = Design(cluster="dataset")
    higher_is_better = True
    missing_policy = "refuse"
    task = "srbench.synthetic"

    def __init__(self, config: dict):
        self.nonfinite = config.get("nonfinite_predictions", "worst")
        aggregate = config.get("aggregate", "median")
        default = SYNTHETIC_RULES[aggregate][1]
        profile = config.get("profile") or default
        official = aggregate if profile == default else f"{aggregate}/{profile}"
        self.settings = {official: (aggregate, profile)}
        self.rules = {official: SYNTHETIC_RULES[aggregate][2] if profile == default
                      else f"the task's aggregate ({aggregate}) with missing values as profile {profile}"}
        for name, (other_aggregate, other_profile, text) in SYNTHETIC_RULES.items():
            if name not in self.settings:
                self.settings[name] = (other_aggregate, other_profile)
                self.rules[name] = text

    def metric_names(self) -> list[str]:
        return list(SYNTHETIC_METRICS)

    def unit_rows(self, details: Details) -> list[dict[str, Any]]:
        return unit_table(files.details_runs(details.data, str(details.path)), self.nonfinite, SYNTHETIC_METRICS)

    def scores(self, evidence: Evidence, rule: str) -> np.ndarray:
        aggregate, profile = self.settings[rule]
        table, _ = runs_by_cluster(evidence, self.design.cluster)
        present = np.any(table[..., 3] == 1.0, axis=2)  # (teams, datasets): the team has a row
        aggregated = (nan_median if aggregate == "median" else nan_mean)(table[..., :3], axis=2)
        aggregated = rounded_aspects(aggregated)
        ranks = points_from_ranks(aggregated)  # (teams, datasets, 3)
        n_teams = len(evidence.teams)
        if profile == "seed":
            ranks = np.where(np.isnan(ranks) | ~present[..., None], 0.0, ranks)
            return harmonic_means(ranks).mean(axis=1)
        per_dataset = np.where(present, harmonic_means(np.nan_to_num(ranks, nan=float(n_teams))), np.nan)
        return np.nan_to_num(nan_mean(per_dataset, axis=1), nan=0.0)  # no dataset at all: the worst, 0


# --------------------------------------------------------------------------- real-world track

class RealworldBoard(Board):
    """The real-world track's ranking (docs/srbench.md#real-world-track; stage2_final_ratings.ipynb): per
    target, each team's representative run (the run whose R² is closest to the median R² of its runs, the
    first by seed on ties), A = round(its R², 3), S = its unsimplified simplicity, T = the expert's trust
    rating of the team's model on that target; each ranked n_algs − dense descending rank, a missing value
    ranking 0, the harmonic mean of the three ranks, the mean over targets (higher wins).

    The trust ratings come from the CSV file the configuration's ``trust_ratings`` names, with the columns
    of expert.csv: ``task`` (the target, a dataset of datasets.json), ``method`` (the team, as the leaderboard
    names it) and ``trust``. A team without a rating on a target is refused (exit 2, naming them): the
    expert rates every ranked model (2022 left eql, with no finished run, unranked).

    Rules: "official" (as above); "expert" (the trust rank alone, mean over targets: the judging page's
    first rule, "the winning SR method is the one whose model is ranked 1st by the expert",
    docs/JudgingCriteria.md line 67, before the organisers added accuracy and simplicity).
    """

    design = Design(cluster="dataset")
    higher_is_better = True
    missing_policy = "refuse"  # as the synthetic track: every run is in details.json
    task = "srbench.realworld"
    rules = {"official": "the 2022 rule: the harmonic mean of the ranks of the representative run's R², its "
                         "simplicity and the expert's trust, mean over targets",
             "expert": "the judging page's first rule: the expert's trust rank alone, mean over targets"}

    def __init__(self, config: dict):
        self.nonfinite = config.get("nonfinite_predictions", "worst")
        self.trust_path = config.get(TRUST_RATINGS_KEY)

    def metric_names(self) -> list[str]:
        return list(REALWORLD_METRICS)

    def unit_rows(self, details: Details) -> list[dict[str, Any]]:
        return unit_table(files.details_runs(details.data, str(details.path)), self.nonfinite, REALWORLD_METRICS)

    def prepare(self, evidence: Evidence) -> Evidence:
        """Every unit's ``trust``: the rating of its team on its target, from the trust ratings file."""
        if not self.trust_path:
            raise ReferenceDataError(f"{self.task}: the final ranking needs the expert's trust ratings: give "
                                     f"{TRUST_RATINGS_KEY} (a CSV file with columns task, method, trust)")
        ratings = files.read_expert(Path(self.trust_path))
        targets = evidence.units["dataset"].to_numpy()
        lacking = sorted({(team, target) for team in evidence.teams for target in set(targets)
                          if (target, team) not in ratings})
        if lacking:
            shown = ", ".join(f"{team} on {target}" for team, target in lacking[:10])
            raise ReferenceDataError(f"{Path(self.trust_path).name}: no trust rating for {len(lacking)} "
                                     f"(team, target) pair(s): {shown}")
        values = evidence.values.copy()
        column = REALWORLD_METRICS.index("trust")
        for index, team in enumerate(evidence.teams):
            values[index, :, column] = [ratings[(target, team)] for target in targets]
        return Evidence(evidence.task, evidence.teams, evidence.units, evidence.metrics, values,
                        evidence.missing, evidence.reference)

    def scores(self, evidence: Evidence, rule: str) -> np.ndarray:
        table, _ = runs_by_cluster(evidence, self.design.cluster, by_seed=True)
        r2 = table[..., 0]
        finite = np.where(np.isfinite(r2), r2, np.nan)  # metrics.representative skips non-finite R²
        distance = np.abs(finite - nan_median(finite, axis=2)[..., None])
        chosen = np.argmin(np.nan_to_num(distance, nan=np.inf), axis=2)[..., None]  # the first on ties
        scored = np.any(np.isfinite(finite), axis=2)
        aspects = np.stack([np.take_along_axis(r2, chosen, axis=2)[..., 0],
                            np.take_along_axis(table[..., 1], chosen, axis=2)[..., 0],
                            nan_mean(table[..., 2], axis=2)], axis=-1)  # trust: one value per (team, target)
        aspects[..., :2] = np.where(scored[..., None], aspects[..., :2], np.nan)
        ranks = np.nan_to_num(points_from_ranks(rounded_aspects(aspects)), nan=0.0)  # profile seed
        if rule == "expert":
            return ranks[..., 2].mean(axis=1)
        return harmonic_means(ranks).mean(axis=1)


def final_board(task: str, config: dict) -> Board | None:
    """The board of an SRBench task: the synthetic and real-world tracks have a final ranking; the
    qualification is pass/fail against LinearRegression (docs/srbench.md#qualification) and has none."""
    if task == SyntheticBoard.task:
        return SyntheticBoard(config)
    if task == RealworldBoard.task:
        return RealworldBoard(config)
    return None
