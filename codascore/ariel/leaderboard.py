"""The final leaderboard of ``ariel.retrieval`` (``codascore leaderboard``; the contract is codascore/board.py):
ADC2023's final score recomputed from every team's per-planet scores, with planets as the unit of evidence
and the spectral subset resampled within itself (docs/ariel.md#the-final-leaderboard).

The final score is not a mean over one set of planets: its posterior part averages every planet, its
spectral part the spectral subset only,

    final = beta * mean_{all planets} posterior_p + (1 - beta) * mean_{spectral subset} spectral_p,

so a replicate draws the spectral planets among themselves and the others among themselves (each part
keeps its number of planets). Each per-planet posterior score is already a mean over the seven targets of
one KS statistic computed *within* that planet (over its samples, never across planets), so the per-planet
values of details.json are all the formula needs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..board import Board, Design, Evidence
from ..errors import ReferenceDataError, SubmissionError
from ..formats.details import Details
from .metrics import final_score

#: The per-planet metrics, in Evidence.values' order; "spectral" is 0 outside the spectral subset (never read
#: there: the column in_spectral_subset says which planets count). "final" is the planet's share of the final
#: score, beta posterior_p + (1 - beta) (N / N_spectral) spectral_p, whose mean over the N planets is the final
#: score: the leaderboard's per-unit tests (Wilcoxon) compare teams on it; the formula never reads it.
METRICS = ("final", "posterior", "spectral", "posterior_exact")
SUBSET = "in_spectral_subset"
#: The unit column giving each planet's place in the scorer's order: means are summed in that order, so the
#: full data reproduces scores.json to the last bit whatever order the leaderboard stacks the units in.
POSITION = "position"


class ArielBoard(Board):
    """ADC2023's final score; as alternative rules its two parts alone and the deterministic posterior score."""

    design = Design(strata=(SUBSET,))
    higher_is_better = True
    # The scorer refuses a submission lacking a planet, so a scored team lacks none unless it was scored on
    # other reference data (which the leaderboard refuses first).
    missing_policy = "refuse"

    def __init__(self, task: str, posterior_weight: float):
        self.task = task
        self.beta = float(posterior_weight)
        self.rules = {
            "final": f"{self.beta:g} × mean posterior score over all planets + {1 - self.beta:g} × mean spectral "
                     "score over the spectral subset (ADC2023's final score; the posterior score alone when no "
                     "planet has spectral ground truth)",
            "posterior": "mean posterior score over all planets (the KS comparison of the marginals alone)",
            "spectral": "mean spectral score over the spectral subset (the forward-modelled spectra alone)",
            "posterior_exact": "mean deterministic posterior score: the weighted marginal CDFs compared without "
                               "resampling (a project addition, free of the official score's resampling noise)",
        }

    def metric_names(self) -> list[str]:
        return list(METRICS)

    def unit_rows(self, details: Details) -> list[dict[str, Any]]:
        """One row per planet: ``unit`` (its name), ``in_spectral_subset``, ``position`` and the metrics.
        SubmissionError naming the field when the file holds no planet."""
        instances = details.instances
        if not isinstance(instances, list) or not instances:
            raise SubmissionError("details.json: field 'instances' holds no planet")
        rows = [_planet_row(k, record) for k, record in enumerate(instances)]
        n_spectral = sum(row[SUBSET] for row in rows)
        for row in rows:
            share = (len(rows) / n_spectral) * row["spectral"] if n_spectral else row["posterior"]
            row["final"] = self.beta * row["posterior"] + (1 - self.beta) * share
        return rows

    def scores(self, evidence: Evidence, rule: str) -> np.ndarray:
        """The rule's score of each team; 0 (the worst) where a rule has nothing to average."""
        if rule not in self.rules:
            raise ValueError(f"unknown rule {rule!r}; known: {list(self.rules)}")
        order = _scoring_order(evidence)
        subset = evidence.units[SUBSET].to_numpy(dtype=bool)[order]
        column = {name: evidence.metrics.index(name) for name in METRICS[1:]}
        out = np.empty(len(evidence.teams))
        for team in range(len(evidence.teams)):
            planets = evidence.values[team][order]
            posterior = _mean(planets[:, column["posterior"]])
            spectral = _mean(planets[subset, column["spectral"]])
            if rule == "final":
                out[team] = posterior if np.isnan(spectral) else final_score(posterior, spectral, self.beta)
            elif rule == "posterior":
                out[team] = posterior
            elif rule == "spectral":
                out[team] = spectral
            else:
                out[team] = _mean(planets[:, column["posterior_exact"]])
        return np.nan_to_num(out, nan=0.0)


def _planet_row(position: int, record: Any) -> dict[str, Any]:
    """A planet's row from its details.json record, or SubmissionError naming the field."""
    where = f"details.json: instances[{position}]"
    if not isinstance(record, dict) or not isinstance(record.get("id"), str):
        raise SubmissionError(f"{where}: field 'id' (the planet's name) is missing")
    in_subset = "spectral" in record
    if record.get(SUBSET, in_subset) != in_subset:  # written by the scorer since the leaderboard came
        raise SubmissionError(f"{where}: field '{SUBSET}' disagrees with its 'spectral' score")
    row: dict[str, Any] = {"unit": record["id"], SUBSET: int(in_subset), POSITION: position}
    for name in METRICS[1:]:
        value = record.get(name, 0.0 if name == "spectral" and not in_subset else None)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SubmissionError(f"{where} ({record['id']}): field {name!r} is {value!r}, not a number")
        row[name] = float(value)
    return row


def _scoring_order(evidence: Evidence) -> np.ndarray:
    """Unit indices in the scorer's planet order (a replicate's repeats stay next to each other)."""
    if POSITION not in evidence.units:
        return np.arange(len(evidence.units))
    return np.argsort(evidence.units[POSITION].to_numpy(), kind="stable")


def _mean(values: np.ndarray) -> float:
    """np.mean of a contiguous copy, as the scorer takes it (the same summation, hence the same bits);
    NaN for no value."""
    return float(np.mean(np.ascontiguousarray(values))) if values.size else float("nan")
