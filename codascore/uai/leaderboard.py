"""The UAI tasks' final leaderboard (codascore.board.Board; docs/uai.md#final-leaderboard).

The unit of evidence is one instance under one time limit. Per task and time limit a team's score is the
mean of its instance scores over every instance, an unanswered one counting 0 (criteria page, "Final solver
scores"). MPE and MMAP scores are first re-normalised against the best answer any team found on the
instance, under any time limit (the criteria page: "the best known solution out of all solvers in the
competition to date"; the 2022 boards: no MPE or MMAP instance lacks a 100 under some time limit, while 32
MPE and 43 MMAP (instance, time limit) pairs have none under that limit). The official ranking orders the
teams by 1·S(20 s) + 4·S(1200 s) + 5·S(3600 s), the order of the rows of the 2022 final table (commit
588c98b, "w=1,4,5", of uaicompetition/uci-2022); each time limit alone is an alternative rule.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pandas as pd

from ..board import Board, Design, Evidence
from ..errors import ReferenceDataError
from ..formats.details import Details
from . import metrics
from .judge_plan import group_seconds, time_limit_group

#: The 2022 final table's weight of each time limit (seconds) in its row order (commit 588c98b "w=1,4,5";
#: the draft of 2022-12-20, commit c09413d, used 1, 2, 3). A time limit outside these weighs 1.
OFFICIAL_WEIGHTS = {20.0: 1.0, 1200.0: 4.0, 3600.0: 5.0}
DRAFT_WEIGHTS = {20.0: 1.0, 1200.0: 2.0, 3600.0: 3.0}
#: The time limits of the 2022 final table, named as the judge's groups are (judge_plan.time_limit_group).
OFFICIAL_LIMITS = tuple(time_limit_group(seconds) for seconds in (20, 1200, 3600))
#: The per-unit metrics of MPE and MMAP: the score as the scorer gave it, then the raw values the fold needs.
BEST_KNOWN_METRICS = ["score", "log10_value", "best_log10", "trivial_log10"]


def weighted_mean(limit_scores: dict[str, np.ndarray], weights: dict[float, float]) -> np.ndarray:
    """sum_t w_t S_t / sum_t w_t over the time limits present (a limit without a weight weighs 1)."""
    total, weight = 0.0, 0.0
    for label, scores in limit_scores.items():
        seconds = group_seconds(label)
        w = weights.get(seconds, 1.0) if seconds is not None else 1.0
        total, weight = total + w * scores, weight + w
    return total / weight


class UAIBoard(Board):
    """One UAI task's final ranking. ``folds_best``: MPE and MMAP, whose scores are re-normalised against
    the best answer of any team (:meth:`prepare`); PR, MAR and MLC are scored against exact answers."""

    design = Design(strata=("family", "time_limit"))
    higher_is_better = True
    missing_policy = "worst"  # an unanswered instance scores 0 (criteria page; the boards' "0.0 (nan)")
    rules = {
        "official": "1·S(20 s) + 4·S(1200 s) + 5·S(3600 s), over 10, S a time limit's mean instance score: the "
                    "order of the 2022 final table (commit 588c98b 'w=1,4,5'); the time limits present "
                    "otherwise, each weighing 1",
        **{label: f"the mean instance score under {label} alone (a column of the 2022 final table)"
           for label in OFFICIAL_LIMITS},
        "draft_1_2_3": "1·S(20 s) + 2·S(1200 s) + 3·S(3600 s), over 6: the order of 2022-12-20 (commit c09413d)",
    }

    def __init__(self, task: str, folds_best: bool, tolerance: float = metrics.DEFAULT_TOLERANCE):
        self.task, self.folds_best, self.tolerance = task, folds_best, float(tolerance)

    def metric_names(self) -> list[str]:
        return list(BEST_KNOWN_METRICS) if self.folds_best else ["score"]

    def unit_rows(self, details: Details) -> list[dict[str, Any]]:
        """One row per instance record: unit its id (the leaderboard names it within the file's group, a
        time limit: ``20s/<id>``), the instance, its family and time limit (the group), and the metrics (NaN
        where a record has no raw value)."""
        records = details.instances
        if not isinstance(records, list):
            raise ReferenceDataError("details.json: field 'instances' is not a list of instance records")
        return [self._row(record, k, details.group) for k, record in enumerate(records)]

    def _row(self, record: Any, k: int, limit: str) -> dict[str, Any]:
        if not isinstance(record, dict) or not isinstance(record.get("id"), str):
            raise ReferenceDataError(f"details.json: instances[{k}] has no string 'id'")
        row = {"unit": record["id"], "instance": record["id"],
               "family": str(record.get("family", "")), "time_limit": limit}
        for name in self.metric_names():
            value = record.get(name)
            if name == "score" and not (isinstance(value, (int, float)) and math.isfinite(value)):
                raise ReferenceDataError(f"details.json: instances[{k}] ({record['id']}): field 'score' is "
                                         f"{value!r}, not a number")
            row[name] = float(value) if isinstance(value, (int, float)) else math.nan
        return row

    def check(self, evidence: Evidence) -> None:
        """MPE and MMAP: every team scored against the same trivial answers (the same reference data), and
        every valid answer carrying its log10 value (details.json of a scorer that wrote it)."""
        if not self.folds_best:
            return
        trivial = _metric(evidence, "trivial_log10")
        instances = _instances(evidence)
        frame = pd.DataFrame({"instance": np.tile(instances, len(evidence.teams)), "trivial": trivial.ravel()})
        spread = frame.dropna().groupby("instance")["trivial"].agg(lambda t: t.max() - t.min())
        differing = sorted(spread[spread > 1e-6].index)
        if differing:
            raise ReferenceDataError(f"{self.task}: the teams were scored on different reference data (trivial "
                                     f"values differ on {len(differing)} instance(s): {differing[:5]})")
        score, value = _metric(evidence, "score"), _metric(evidence, "log10_value")
        for t, team in enumerate(evidence.teams):
            lacking = np.flatnonzero((score[t] > 0) & np.isnan(value[t]))
            if lacking.size:
                raise ReferenceDataError(
                    f"{self.task}: team {team}: details.json has no log10_value for {lacking.size} answered "
                    f"unit(s) ({list(evidence.units['unit'].iloc[lacking[:3]])}): re-score it with this "
                    f"codascore so that its answers can be compared with the best any team found")

    def prepare(self, evidence: Evidence) -> Evidence:
        """MPE and MMAP: best := the highest of the stored best values and every team's answer on the
        instance, under any time limit (as ``codascore uai update-best`` folds them); each answer with a
        value is re-scored against it by the scorer's own rule (metrics.instance_score)."""
        if not self.folds_best:
            return evidence
        values = evidence.values.copy()
        index = {name: evidence.metrics.index(name) for name in BEST_KNOWN_METRICS}
        codes, _ = pd.factorize(_instances(evidence))
        best = _fold_max(np.fmax(values[:, :, index["best_log10"]], values[:, :, index["log10_value"]]), codes)
        trivial = _fold_max(values[:, :, index["trivial_log10"]], codes)
        for t in range(values.shape[0]):
            for u in range(values.shape[1]):
                value = values[t, u, index["log10_value"]]
                if math.isfinite(value) and math.isfinite(trivial[u]):
                    values[t, u, index["score"]] = metrics.instance_score(
                        metrics.gap_error(best[u], value), max(0.0, best[u] - trivial[u]), self.tolerance)
        values[:, :, index["best_log10"]] = np.where(np.isfinite(best), best, np.nan)[None, :]
        return dataclasses.replace(evidence, values=values)

    def rules_for(self, evidence: Evidence) -> list[str]:
        """Every rule but the time limits no team was scored under (they would rank every team first)."""
        present = set(evidence.units["time_limit"]) if "time_limit" in evidence.units else set()
        return [rule for rule in self.rules if rule not in OFFICIAL_LIMITS or rule in present]

    def scores(self, evidence: Evidence, rule: str) -> np.ndarray:
        """The rule's score of every team; a unit without a score (a missing answer) counts 0."""
        limits = limit_means(evidence)
        if rule == "official":
            return weighted_mean(limits, OFFICIAL_WEIGHTS)
        if rule == "draft_1_2_3":
            return weighted_mean(limits, DRAFT_WEIGHTS)
        if rule in self.rules:
            # a time limit the evidence lacks ranks nobody: every team gets the worst score, 0
            return limits.get(rule, np.zeros(len(evidence.teams)))
        raise ValueError(f"{self.task}: unknown rule {rule!r}; known: {sorted(self.rules)}")


def limit_means(evidence: Evidence) -> dict[str, np.ndarray]:
    """Time limit label -> every team's mean instance score under it (NaN counting 0), in sorted order."""
    score = _metric(evidence, "score")
    score = np.where(np.isnan(score), 0.0, score)
    labels = evidence.units["time_limit"] if "time_limit" in evidence.units else pd.Series([""] * score.shape[1])
    codes, names = pd.factorize(labels, sort=True)  # hashing: run on every bootstrap replicate
    onehot = np.zeros((score.shape[1], len(names)))
    onehot[np.arange(score.shape[1]), codes] = 1.0
    means = (score @ onehot) / onehot.sum(axis=0)
    return {str(name): means[:, k] for k, name in enumerate(names)}


def _metric(evidence: Evidence, name: str) -> np.ndarray:
    return evidence.values[:, :, evidence.metrics.index(name)]


def _instances(evidence: Evidence) -> np.ndarray:
    """Each unit's instance id (the ``instance`` column, else the unit id after its time limit)."""
    units = evidence.units
    if "instance" in units:
        return units["instance"].astype(str).to_numpy()
    return units["unit"].astype(str).str.split("/", n=1).str[-1].to_numpy()


def _fold_max(table: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Per unit, the largest finite value of its instance over every team and unit (-inf when none)."""
    per_instance = np.full(codes.max() + 1 if codes.size else 0, -np.inf)
    finite = np.where(np.isfinite(table), table, -np.inf)
    np.maximum.at(per_instance, np.tile(codes, table.shape[0]), finite.ravel())
    return per_instance[codes]


def board_for(task_name: str, kind: str, config: dict) -> UAIBoard:
    """The Board of a UAI task (Task.final_board): MPE and MMAP fold the best answers."""
    return UAIBoard(task_name, folds_best=kind in ("MPE", "MMAP"), tolerance=config.get("tolerance",
                                                                                        metrics.DEFAULT_TOLERANCE))
