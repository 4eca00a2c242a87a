"""codascore leaderboard: 1,000 paired bootstrap replicates of two boards shaped like the real ones, against a
straightforward loop (the same resampling and formula written with pandas groupby on every replicate).

- SRBench-like: 13 teams, 16 datasets x 10 runs; two levels (datasets, then runs within each, a dataset
  drawn twice counted twice); the formula: per dataset the median R^2 over runs, teams ranked per dataset,
  then the harmonic mean of a team's ranks (official; lower is better) and the mean (the alternative).
- UAI-like: 20 teams, 500 instances in 5 families (strata); the formula: per instance a normalised score,
  100 x (worst - error) / (worst - best) over the teams, then its mean per team (official), or its median.

Ours (medians of 3 runs): the whole analysis (replicates and every statistic of
codascore.leaderboard.analyse); its replicates alone; and the page and files (one run). The loop is timed on 100 replicates and scaled to 1,000 (it is linear in the
replicates); the ratio is loop / our replicates. Target: each analysis under 10 s.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import median_time, print_table  # noqa: E402

from codascore.board import Board, Design, Evidence  # noqa: E402
from codascore.leaderboard import analyse  # noqa: E402
from codascore.leaderboard.outputs import write_outputs  # noqa: E402
from codascore.leaderboard.statistics import bootstrap  # noqa: E402

REPLICATES, LOOP_REPLICATES = 1000, 100


class SRBenchLike(Board):
    design = Design(cluster="dataset")
    higher_is_better = False
    rules = {"harmonic": "harmonic mean over datasets of the rank of the median R^2 over runs",
             "mean": "mean over datasets of the same ranks"}

    def unit_rows(self, details):
        return details["rows"]

    def scores(self, evidence: Evidence, rule: str) -> np.ndarray:
        codes, labels = pd.factorize(evidence.units["dataset"])
        order = np.argsort(codes, kind="stable")
        sizes = np.bincount(codes)
        r2 = evidence.values[:, order, 0]
        if np.all(sizes == sizes[0]):  # every dataset keeps its 10 runs: one reshape
            medians = np.median(r2.reshape(r2.shape[0], len(labels), sizes[0]), axis=2)
        else:
            medians = np.stack([np.median(part, axis=1) for part in np.split(r2, np.cumsum(sizes)[:-1], axis=1)], 1)
        ranks = average_ranks(medians)
        return len(labels) / np.sum(1 / ranks, axis=1) if rule == "harmonic" else ranks.mean(axis=1)


def average_ranks(r2: np.ndarray) -> np.ndarray:
    """Per column, the teams ranked by R^2 (1 the best), ties sharing the average rank: rankdata's
    'average', counted at once for every dataset (rankdata with an axis loops over them)."""
    better = (r2[None, :, :] > r2[:, None, :]).sum(axis=1)
    equal = (r2[None, :, :] == r2[:, None, :]).sum(axis=1)
    return 1 + better + (equal - 1) / 2


class UAILike(Board):
    design = Design(strata=("family",))
    rules = {"mean": "mean normalised score", "median": "median normalised score"}

    def unit_rows(self, details):
        return details["rows"]

    def scores(self, evidence: Evidence, rule: str) -> np.ndarray:
        error = evidence.values[:, :, 0]
        best, worst = error.min(axis=0), error.max(axis=0)
        spread = np.where(worst > best, worst - best, 1.0)
        normalised = 100 * (worst - error) / spread
        return normalised.mean(axis=1) if rule == "mean" else np.median(normalised, axis=1)


def srbench_evidence(rng) -> Evidence:
    datasets, runs, teams = 16, 10, 13
    units = pd.DataFrame({"unit": [f"d{d}/{r}" for d in range(datasets) for r in range(runs)],
                          "dataset": [f"d{d}" for d in range(datasets) for _ in range(runs)]})
    skill = np.linspace(0.6, 0.9, teams)[:, None] + rng.normal(scale=0.08, size=(teams, datasets)).repeat(runs, 1)
    r2 = np.clip(skill + rng.normal(scale=0.05, size=(teams, datasets * runs)), -1, 1)
    return Evidence("srbench.synthetic", [f"team{t:02d}" for t in range(teams)], units, ["r2"], r2[:, :, None])


def uai_evidence(rng) -> Evidence:
    instances, teams = 500, 20
    units = pd.DataFrame({"unit": [f"i{i}" for i in range(instances)], "family": [f"f{i % 5}" for i in range(instances)]})
    error = np.abs(rng.normal(size=(teams, instances)) * np.linspace(0.5, 1.5, teams)[:, None])
    return Evidence("uai.pr", [f"team{t:02d}" for t in range(teams)], units, ["error"], error[:, :, None])


def srbench_loop(evidence: Evidence, replicates: int, seed: int) -> np.ndarray:
    """The straightforward loop: a long table, per replicate the datasets then the runs drawn with
    DataFrame.sample, then groupby median, rank and harmonic mean."""
    long = pd.DataFrame({"team": np.repeat(evidence.teams, len(evidence.units)),
                         "dataset": np.tile(evidence.units["dataset"], len(evidence.teams)),
                         "run": np.tile(evidence.units["unit"], len(evidence.teams)),
                         "r2": evidence.values[:, :, 0].ravel()})
    runs = {d: g["unit"].to_numpy() for d, g in evidence.units.groupby("dataset")}
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(replicates):
        parts = []
        for copy, dataset in enumerate(rng.choice(sorted(runs), len(runs))):
            chosen = pd.DataFrame({"run": rng.choice(runs[dataset], len(runs[dataset]))})
            part = chosen.merge(long[long["dataset"] == dataset], on="run")
            parts.append(part.assign(dataset=f"{dataset}#{copy}"))
        table = pd.concat(parts)
        medians = table.groupby(["dataset", "team"])["r2"].median().reset_index()
        medians["rank"] = medians.groupby("dataset")["r2"].rank(ascending=False)
        out.append(medians.groupby("team")["rank"].agg(lambda r: len(r) / (1 / r).sum()).to_numpy())
    return np.array(out)


def uai_loop(evidence: Evidence, replicates: int, seed: int) -> np.ndarray:
    long = pd.DataFrame({"team": np.repeat(evidence.teams, len(evidence.units)),
                         "unit": np.tile(evidence.units["unit"], len(evidence.teams)),
                         "error": evidence.values[:, :, 0].ravel()})
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(replicates):
        drawn = evidence.units.groupby("family").sample(frac=1, replace=True, random_state=rng)
        drawn = drawn.assign(copy=np.arange(len(drawn)))[["unit", "copy"]].merge(long, on="unit")
        by_copy = drawn.groupby("copy")["error"]
        best, worst = by_copy.transform("min"), by_copy.transform("max")
        drawn["normalised"] = 100 * (worst - drawn["error"]) / (worst - best).where(worst > best, 1.0)
        out.append(drawn.groupby("team")["normalised"].mean().to_numpy())
    return np.array(out)


def timed(func) -> tuple[float, object]:
    started = time.perf_counter()
    value = func()
    return time.perf_counter() - started, value


def main() -> None:
    rows = []
    for name, board, evidence, loop in (("SRBench-like 13 x 16x10", SRBenchLike(), srbench_evidence(np.random.default_rng(0)), srbench_loop),
                                        ("UAI-like 20 x 500", UAILike(), uai_evidence(np.random.default_rng(1)), uai_loop)):
        analysis = analyse(board, evidence, REPLICATES, seed=0)
        whole = median_time(lambda: analyse(board, evidence, REPLICATES, seed=0), repeat=3, warmup=0)
        ours = median_time(lambda: bootstrap(board, evidence, REPLICATES, seed=0), repeat=3, warmup=0)
        with tempfile.TemporaryDirectory() as folder:
            files, _ = timed(lambda: write_outputs(analysis, Path(folder)))
        loop_time, _ = timed(lambda: loop(evidence, LOOP_REPLICATES, seed=0))
        loop_time *= REPLICATES / LOOP_REPLICATES
        rows.append((name, f"{whole:.2f}", f"{ours:.2f}", f"{files:.2f}", f"{loop_time:.1f}",
                     f"{loop_time / ours:.0f}x", "yes" if whole < 10 else "NO"))
    print_table(rows, ("board", f"analysis s ({REPLICATES} rep.)", "replicates s", "page+csv s",
                       "pandas loop s (scaled)", "ratio", "< 10 s"))


if __name__ == "__main__":
    main()
