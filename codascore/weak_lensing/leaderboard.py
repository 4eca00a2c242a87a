"""The final leaderboards of the weak lensing tasks (``codascore leaderboard``; the contract is
codascore/board.py), with test maps as the unit of evidence (docs/weak_lensing.md#the-final-leaderboard).

- Phase 1: the official score, the mean over maps of the per-map score s_i floored at -1e6, recomputed from
  the per-map scores of details.json; maps resampled with replacement.
- Phase 2: two rankings side by side, the seed's mean log-likelihood of p_ind and the deployed mean TPR at
  FPR 0.001-0.05 (task.yaml ``ranking`` says which is official). The TPR is a statistic of the whole ROC, not
  a mean over maps, so every replicate reruns the scorer's ROC on the resampled maps. In- and
  out-of-distribution maps are resampled separately, so each class keeps its count (and the TPR its
  definition). details.json holds no map's label (the suite shows it to participants): the labels come from
  the reference data, which the organiser ranking the teams has.

FAIR Universe's rules let its organisers declare a tie; the leaderboard's set of teams that cannot be told
apart from the winner is the evidence for one, and the rule texts say so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..board import Board, Design, Evidence
from ..errors import ReferenceDataError, SubmissionError
from ..formats.details import Details
from . import files, metrics

#: The unit column giving each map's place in the scorer's order: means are summed in that order, so the
#: full data reproduces scores.json to the last bit whatever order the leaderboard stacks the maps in.
POSITION = "position"
#: The unit column of Phase 2's labels (1 = OoD, the official orientation): the stratum of the resampling.
LABEL = "ood"
TIE = ("; FAIR Universe's organisers may declare a tie, and the teams that cannot be told apart from the "
       "winner are the ones such a tie would name")


class Phase1Board(Board):
    """Phase 1's official score over resampled test maps."""

    design = Design()
    higher_is_better = True
    missing_policy = "refuse"  # the scorer refuses a result without one answer per test map

    def __init__(self, task: str, lam: float):
        self.task, self.lam = task, float(lam)
        formula = f"−Σ_p [(μ_p − t_p)²/σ_p² + ln σ_p² + {self.lam:g} (μ_p − t_p)²]"
        self.rules = {"score": f"mean over maps of {formula}, floored at −10⁶ (the official Phase 1 score)" + TIE}

    def metric_names(self) -> list[str]:
        return ["score"]

    def unit_rows(self, details: Details) -> list[dict[str, Any]]:
        """One row per map: ``unit`` (its index), ``position`` and ``score`` (a null, a non-finite s_i, reads
        as −inf: the mean is then floored, as the scorer floors it)."""
        instances = scored_instances(details)
        rows = []
        for k, record in enumerate(instances):
            if "score" not in record:
                raise SubmissionError(f"details.json: instances[{k}] has no 'score' (not a Phase 1 map's record)")
            value = -np.inf if record["score"] is None else _number(record["score"], f"instances[{k}].score")
            rows.append({"unit": str(record.get("id", k)), POSITION: k, "score": value})
        return rows

    def scores(self, evidence: Evidence, rule: str) -> np.ndarray:
        if rule not in self.rules:
            raise ValueError(f"unknown rule {rule!r}; known: {list(self.rules)}")
        values = evidence.values[:, _scoring_order(evidence), evidence.metrics.index("score")]
        return np.array([metrics.floored_mean(np.ascontiguousarray(team)) for team in values])


class Phase2Board(Board):
    """Phase 2's log-likelihood and TPR rankings over maps resampled within each class."""

    design = Design(strata=(LABEL,))
    higher_is_better = True
    missing_policy = "refuse"
    needs_reference = True  # the maps' labels

    def __init__(self, task: str, ranking: str, eps: float, labels: np.ndarray | None = None):
        self.task, self.eps = task, float(eps)
        self.labels = None if labels is None else np.asarray(labels, dtype=int)
        likelihood = ("mean over maps of ln(p_ind or 1 − p_ind, the probability given to the map's true class), "
                      f"clipped to [ε, 1 − ε], ε = {self.eps:g} (the seed's Phase 2 score; a team that submitted "
                      "no p_ind gets ln ε)")
        tpr = ("mean true positive rate at 100 false positive rates log-spaced in [0.001, 0.05], ranking "
               "ood_scores or else 1 − p_ind (the Phase 2 score the challenge deployed)")
        official, other = ("TPR", "log-likelihood") if ranking == "deployed" else ("log-likelihood", "TPR")
        texts = {"log-likelihood": likelihood, "TPR": tpr}
        self.rules = {official: texts[official] + TIE, other: texts[other]}

    def metric_names(self) -> list[str]:
        return ["log_likelihood", "ood_score"]

    def use_reference(self, reference_dir: Path) -> None:
        """The maps' labels (1 = OoD) from the reference data's label file."""
        self.labels = files.read_phase2_labels(Path(reference_dir)).astype(int)

    def unit_rows(self, details: Details) -> list[dict[str, Any]]:
        """One row per map: ``unit``, ``position``, ``ood`` (its label, from the reference data), the map's
        log-likelihood (ln ε without p_ind) and the score the TPR ranks (ood_score, else 1 − p_ind)."""
        instances = scored_instances(details)
        if self.labels is None:
            raise ReferenceDataError(f"{self.task}: the final leaderboard needs every test map's label, which "
                                     "details.json does not hold: give the task's reference data")
        if len(instances) != len(self.labels):
            raise ReferenceDataError(f"details.json: field 'instances' holds {len(instances)} maps, the reference "
                                     f"data's labels {len(self.labels)}: scored on other reference data")
        p_ind, ood_scores = (_submitted(instances, field) for field in ("p_ind", "ood_score"))
        if p_ind is None and ood_scores is None:
            raise SubmissionError("details.json: field 'instances' holds neither p_ind nor ood_score")
        if ood_scores is None and details.data.get("tpr_low_fpr_from") == "ood_scores":  # scored before they were kept
            raise SubmissionError("details.json: field 'tpr_low_fpr_from' is 'ood_scores', but no map has its "
                                  "ood_score: rescore the submission with this version")
        if p_ind is None:
            likelihood = np.full(len(instances), np.log(self.eps))
        else:
            likelihood = metrics.ood_log_likelihood_per_instance(1 - self.labels, p_ind, self.eps)
        ranked = ood_scores if ood_scores is not None else 1.0 - p_ind
        return [{"unit": str(record.get("id", k)), POSITION: k, LABEL: int(self.labels[k]),
                 "log_likelihood": float(likelihood[k]), "ood_score": float(ranked[k])}
                for k, record in enumerate(instances)]

    def scores(self, evidence: Evidence, rule: str) -> np.ndarray:
        """The rule's score of each team: NaN (a replicate or a reference of one class) becomes the worst,
        0 for the TPR."""
        if rule == "log-likelihood":
            values = evidence.values[:, _scoring_order(evidence), evidence.metrics.index("log_likelihood")]
            return np.array([float(np.mean(np.ascontiguousarray(team))) for team in values])
        if rule != "TPR":
            raise ValueError(f"unknown rule {rule!r}; known: {list(self.rules)}")
        labels = evidence.units[LABEL].to_numpy(dtype=int)
        ranked = evidence.values[:, :, evidence.metrics.index("ood_score")]
        tpr = np.array([metrics.tpr_at_low_fpr(labels, team) for team in ranked])
        return np.nan_to_num(tpr, nan=0.0)


def scored_instances(details: Details) -> list:
    """The per-map records of a scored details.json, or SubmissionError naming the field."""
    instances = details.instances
    if not isinstance(instances, list) or not instances or not all(isinstance(r, dict) for r in instances):
        raise SubmissionError("details.json: field 'instances' holds no per-map record")
    return instances


def _submitted(instances: list, field: str) -> np.ndarray | None:
    """Every map's value of ``field``, or None when no map has one (SubmissionError when some lack it)."""
    present = [field in record for record in instances]
    if not any(present):
        return None
    if not all(present):
        raise SubmissionError(f"details.json: instances[{present.index(False)}] has no {field!r}, other maps have")
    return np.array([_number(record[field], f"instances[{k}].{field}") for k, record in enumerate(instances)])


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SubmissionError(f"details.json: field {where} is {value!r}, not a number")
    return float(value)


def _scoring_order(evidence: Evidence) -> np.ndarray:
    """Unit indices in the scorer's map order (a replicate's repeats stay next to each other)."""
    if POSITION not in evidence.units:
        return np.arange(len(evidence.units))
    return np.argsort(evidence.units[POSITION].to_numpy(), kind="stable")
