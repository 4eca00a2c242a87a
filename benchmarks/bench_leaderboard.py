"""codascore leaderboard: 1,000 paired bootstrap replicates of the real family boards, against a straightforward
loop that reruns each family's existing formula on every replicate.

The evidence is made as ``codascore leaderboard`` makes it: synthetic details.json dicts, as the scorers write
them, passed through the board's own ``unit_rows`` and the leaderboard's own stacking
(codascore/leaderboard/evidence.py), so its shapes, NaN and missing units are the real ones.

- srbench.synthetic (``TASKS[...].final_board``, official rule "median"): 13 teams, 16 datasets x 10 runs,
  a few failed runs; two levels (datasets, then runs within each). The loop: per replicate, the drawn long
  table (algorithm, dataset, run, r2_test, simplicity, property; a dataset drawn twice under two names) and
  ``codascore.srbench.metrics.rank_methods``, what ``codascore srbench rank`` runs, on it.
- uai.mpe (folds the best answers found by any team): 20 teams, 500 instances in 5 families under one time
  limit (20 s), some answers invalid (score 0, no value) and a few instances without a record (counted 0);
  drawn within each family. The loop: per replicate, a pandas groupby mean per team of the folded instance
  scores; and a second loop that also re-folds the best answers with pandas and re-scores every answer with
  ``codascore.uai.metrics.instance_score`` (what ``codascore uai update-best`` then a re-score would do).

Each loop draws its replicates with the leaderboard's own Resampler and seed, so that its scores can be held
equal to ours on the replicates it runs (checked below, a wrong loop would be refused); the draw is a small
part of its time. Ours (medians of 3 runs): the whole analysis (``codascore.leaderboard.analyse``: fold,
replicates, every statistic); the replicates alone (``statistics.bootstrap``); the page and files (one run).
The loops are timed on LOOP_REPLICATES replicates and scaled to 1,000 (they are linear in the replicates);
the ratio is loop / our replicates. Target: each analysis under 10 s.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import median_time, print_table  # noqa: E402

from codascore.board import Board, Evidence  # noqa: E402
from codascore.leaderboard import analyse  # noqa: E402
from codascore.leaderboard.evidence import stack  # noqa: E402
from codascore.leaderboard.inputs import Inputs, TeamFiles  # noqa: E402
from codascore.leaderboard.outputs import write_outputs  # noqa: E402
from codascore.leaderboard.resample import Resampler  # noqa: E402
from codascore.leaderboard.statistics import bootstrap  # noqa: E402
from codascore.srbench import TASKS as SRBENCH_TASKS  # noqa: E402
from codascore.srbench.cli import load_results  # noqa: E402
from codascore.srbench.metrics import rank_methods  # noqa: E402
from codascore.srbench.tasks import run_instances  # noqa: E402
from codascore.uai import TASKS as UAI_TASKS  # noqa: E402
from codascore.uai.metrics import gap_error, instance_score  # noqa: E402

REPLICATES, LOOP_REPLICATES, CHECKED = 1000, 60, 5
SR_TEAMS, SR_DATASETS, SR_RUNS = 13, 16, 10
UAI_TEAMS, UAI_LIMIT = 20, "20s"
#: instance family -> how many of the 500 instances (the 2022 MPE set mixed families of unequal sizes)
UAI_FAMILIES = {"grid": 150, "pedigree": 110, "promedas": 100, "segmentation": 80, "objdetect": 60}


def board_of(tasks: dict, name: str) -> Board:
    task = tasks[name]
    return task.final_board(task.load_config({}))


def stacked(board: Board, task: str, details: dict[str, dict]) -> Evidence:
    """The leaderboard's own Evidence of these teams' details.json dicts (team -> one details.json)."""
    teams = [TeamFiles(team, [(Path(team) / "details.json", d)]) for team, d in details.items()]
    return stack(board, Inputs(task, teams))


# --------------------------------------------------------------------------- SRBench synthetic

def srbench_details(rng: np.random.Generator) -> dict[str, dict]:
    """team -> a details.json of srbench.synthetic as the scorer writes it (tasks.run_instances): per run its
    R² on the test set (3 decimals, so aggregates tie now and then), simplicity -round(log5(nodes), 1) and
    property in [0, 1]; about 1 run in 80 failed (no model, or a model that did not compile)."""
    skill = np.linspace(0.55, 0.95, SR_TEAMS)
    size = np.linspace(1.2, 3.0, SR_TEAMS)[::-1]  # the accurate teams write larger models
    hardness = rng.uniform(-0.3, 0.05, SR_DATASETS)
    details = {}
    for t in range(SR_TEAMS):
        records = []
        for d in range(SR_DATASETS):
            level = skill[t] + hardness[d] + rng.normal(scale=0.06)
            for seed in range(SR_RUNS):
                record = {"dataset": f"synthetic_{d:02d}", "seed": 1000 + seed}
                if rng.random() < 1 / 80:
                    records.append({**record, "failed": "invalid model: could not compile"})
                    continue
                nodes = max(1, int(round(5 ** (size[t] + rng.normal(scale=0.3)))))
                records.append({**record, "r2_test": float(np.round(min(1.0, level + rng.normal(scale=0.05)), 3)),
                                "simplicity": float(-np.round(np.log(nodes) / np.log(5), 1)),
                                "property": float(np.clip(skill[t] + rng.normal(scale=0.2), 0, 1))})
        details[f"sr_team_{t:02d}"] = {"task": "srbench.synthetic", "status": "scored",
                                       "instances": run_instances(records)}
    return details


def srbench_long(details: dict[str, dict], evidence: Evidence) -> tuple[pd.DataFrame, np.ndarray]:
    """What ``codascore srbench rank`` reads from these details.json files (load_results), and per (team,
    unit) its row there: a replicate's long table is ``table.iloc[rows[:, index]]``."""
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for team, data in details.items():
            (Path(folder) / team).mkdir()
            paths.append(str(Path(folder) / team / "details.json"))
            Path(paths[-1]).write_text(json.dumps(data))
        table = load_results(paths, None)
    where = {(a, f"{d}/{s}"): k for k, (a, d, s) in enumerate(zip(table["algorithm"], table["dataset"], table["seed"]))}
    rows = np.array([[where[team, unit] for unit in evidence.units["unit"]] for team in evidence.teams])
    return table.drop(columns=["seed"]), rows


def srbench_loop(board: Board, evidence: Evidence, details: dict[str, dict], replicates: int,
                 seed: int) -> np.ndarray:
    """Per replicate: the drawn long table (each drawn unit a run of its drawn dataset's label) and
    rank_methods on it, the official rule's aggregate; the scores in the order of evidence.teams."""
    table, rows = srbench_long(details, evidence)
    aggregate = next(iter(board.rules))
    resampler, rng = Resampler(evidence.units, board.design), np.random.default_rng(seed)
    out = []
    for _ in range(replicates):
        index, units = resampler.draw(rng)
        drawn = table.iloc[rows[:, index].ravel()].assign(
            dataset=np.tile(units["dataset"].to_numpy(), len(evidence.teams)),
            run=np.tile(np.arange(len(index)), len(evidence.teams)))
        out.append(rank_methods(drawn, aggregate=aggregate)["score"].loc[evidence.teams].to_numpy())
    return np.array(out)


# --------------------------------------------------------------------------- UAI MPE

def uai_reference(rng: np.random.Generator) -> pd.DataFrame:
    """Per instance: its id, family, the trivial answer's log10 value and the best known one's."""
    families = np.repeat(list(UAI_FAMILIES), list(UAI_FAMILIES.values()))
    counters: dict[str, int] = {}
    ids = []
    for family in families:
        counters[family] = counters.get(family, 0) + 1
        ids.append(f"{family}_{counters[family]:03d}")
    trivial = -rng.uniform(20, 600, len(ids))
    return pd.DataFrame({"id": ids, "family": families, "trivial": trivial,
                         "best": trivial + rng.lognormal(mean=3.0, sigma=1.0, size=len(ids))})


def uai_details(rng: np.random.Generator, tolerance: float) -> dict[str, dict]:
    """team -> a details.json of uai.mpe scored under 20 s against the reference's best known answers: per
    instance its score, its answer's log10 value (a few beat the best known, which the fold picks up), the
    best and trivial log10 values; about 1 answer in 25 invalid (score 0, no value) and, for every fourth
    team, about 1 instance in 50 without a record (counted 0 by the official rule)."""
    reference = uai_reference(rng)
    skill = np.linspace(0.02, 0.6, UAI_TEAMS)  # the share of the gap a team typically misses
    details = {}
    for t in range(UAI_TEAMS):
        records = []
        for row in reference.itertuples():
            if t % 4 == 3 and rng.random() < 1 / 50:
                continue
            record = {"id": row.id, "family": row.family, "best_log10": row.best, "trivial_log10": row.trivial}
            if rng.random() < 1 / 25:
                records.append({**record, "score": 0.0, "status": "invalid", "log10_value": None})
                continue
            miss = max(-0.05, rng.normal(skill[t], 0.15)) * (row.best - row.trivial)
            value = row.best - miss
            score = instance_score(gap_error(row.best, value), row.best - row.trivial, tolerance)
            records.append({**record, "score": score, "status": "ok", "log10_value": value})
        details[f"uai_team_{t:02d}"] = {"task": "uai.mpe", "status": "scored", "group": UAI_LIMIT,
                                        "instances": records}
    return details


def uai_long(evidence: Evidence) -> pd.DataFrame:
    """One row per (team, unit): its unit's position and instance, and every metric of evidence.values."""
    teams, units, _ = evidence.values.shape
    frame = pd.DataFrame(evidence.values.reshape(teams * units, -1), columns=evidence.metrics)
    return frame.assign(team=np.repeat(np.arange(teams), units), position=np.tile(np.arange(units), teams),
                        instance=np.tile(evidence.units["instance"].to_numpy(), teams))


def uai_loop(board: Board, folded: Evidence, replicates: int, seed: int) -> np.ndarray:
    """Per replicate: the drawn units merged with the long table of folded scores, then a groupby mean of
    the scores per team (an unanswered instance counting 0). One time limit: the official rule's mean."""
    long = uai_long(folded)
    resampler, rng = Resampler(folded.units, board.design), np.random.default_rng(seed)
    out = []
    for _ in range(replicates):
        index, _ = resampler.draw(rng)
        drawn = pd.DataFrame({"position": index, "copy": np.arange(len(index))}).merge(long, on="position")
        out.append(drawn["score"].fillna(0.0).groupby(drawn["team"]).mean().to_numpy())
    return np.array(out)


def uai_refold_loop(board: Board, raw: Evidence, replicates: int, seed: int) -> np.ndarray:
    """As uai_loop, from the teams' scores as scored (before the fold): per replicate the best answer of
    every instance re-folded with a pandas groupby max, every answer re-scored with instance_score."""
    long = uai_long(raw)
    resampler, rng = Resampler(raw.units, board.design), np.random.default_rng(seed)
    out = []
    for _ in range(replicates):
        index, _ = resampler.draw(rng)
        drawn = pd.DataFrame({"position": index, "copy": np.arange(len(index))}).merge(long, on="position")
        candidates = np.fmax(drawn["best_log10"], drawn["log10_value"])
        best = candidates.groupby(drawn["instance"]).transform("max")
        score = [instance_score(gap_error(b, v), max(0.0, b - t), board.tolerance) if np.isfinite(v) else s
                 for b, v, t, s in zip(best, drawn["log10_value"], drawn["trivial_log10"], drawn["score"])]
        drawn["score"] = score
        out.append(drawn["score"].fillna(0.0).groupby(drawn["team"]).mean().to_numpy())
    return np.array(out)


# --------------------------------------------------------------------------- timing

def timed(func) -> tuple[float, object]:
    started = time.perf_counter()
    value = func()
    return time.perf_counter() - started, value


def checked_loop(name: str, loop, ours: np.ndarray) -> float:
    """The loop's time on LOOP_REPLICATES replicates scaled to REPLICATES, after holding its first CHECKED
    replicates equal to ours (the same draws): a loop computing something else would time nothing."""
    seconds, scores = timed(loop)
    if not np.allclose(scores[:CHECKED], ours[:CHECKED], rtol=1e-9, atol=1e-9):
        raise RuntimeError(f"{name}: the loop's scores differ from the board's on the same replicates")
    return seconds * REPLICATES / LOOP_REPLICATES


def measure(name: str, board: Board, evidence: Evidence, loops: dict) -> list[tuple]:
    """One table row per loop: ours timed once for all of them."""
    analysis = analyse(board, evidence, REPLICATES, seed=0)
    whole = median_time(lambda: analyse(board, evidence, REPLICATES, seed=0), repeat=3, warmup=0)
    prepared = board.prepare(evidence)
    ours = median_time(lambda: bootstrap(board, prepared, REPLICATES, seed=0), repeat=3, warmup=0)
    with tempfile.TemporaryDirectory() as folder:
        files, _ = timed(lambda: write_outputs(analysis, Path(folder)))
    official = analysis.replicates.drawn[analysis.official]
    rows = []
    for label, loop in loops.items():
        loop_time = checked_loop(f"{name} {label}", loop, official)
        rows.append((f"{name}; loop: {label}", f"{whole:.2f}", f"{ours:.2f}", f"{files:.2f}", f"{loop_time:.1f}",
                     f"{loop_time / ours:.0f}x", "yes" if whole < 10 else "NO"))
    return rows


def main() -> None:
    sr_board = board_of(SRBENCH_TASKS, "srbench.synthetic")
    sr_details = srbench_details(np.random.default_rng(0))
    sr_evidence = stacked(sr_board, "srbench.synthetic", sr_details)
    uai_board = board_of(UAI_TASKS, "uai.mpe")
    uai_evidence = stacked(uai_board, "uai.mpe", uai_details(np.random.default_rng(1), uai_board.tolerance))
    uai_folded = uai_board.prepare(uai_evidence)
    print(f"srbench.synthetic: {len(sr_evidence.teams)} teams, {sr_evidence.units['dataset'].nunique()} datasets, "
          f"{len(sr_evidence.units)} runs, {int(np.isnan(sr_evidence.values[:, :, 0]).sum())} failed; "
          f"uai.mpe: {len(uai_evidence.teams)} teams, {len(uai_evidence.units)} instances, "
          f"{sum(map(len, uai_evidence.missing.values()))} records missing, "
          f"{int((uai_evidence.values[:, :, 0] == 0).sum())} zero scores", flush=True)
    rows = measure(f"srbench.synthetic {SR_TEAMS} x {SR_DATASETS}x{SR_RUNS}", sr_board, sr_evidence, {
        "rank_methods": lambda: srbench_loop(sr_board, sr_evidence, sr_details, LOOP_REPLICATES, 0)})
    rows += measure(f"uai.mpe {UAI_TEAMS} x {len(uai_evidence.units)}", uai_board, uai_evidence, {
        "groupby mean": lambda: uai_loop(uai_board, uai_folded, LOOP_REPLICATES, 0),
        "re-fold + groupby mean": lambda: uai_refold_loop(uai_board, uai_evidence, LOOP_REPLICATES, 0)})
    print_table(rows, ("board", f"analysis s ({REPLICATES} rep.)", "replicates s", "page+csv s",
                       f"loop s (scaled from {LOOP_REPLICATES})", "ratio", "< 10 s"))


if __name__ == "__main__":
    main()
