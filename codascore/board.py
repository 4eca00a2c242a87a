"""The contract between ``codascore leaderboard`` and a family: a task's official final formula, the unit of
evidence it is computed from, and how that evidence is resampled (docs/leaderboard.md).

A task that can be ranked returns a :class:`Board` from ``Task.final_board(config)``. The leaderboard
(``codascore/leaderboard/``) reads every team's ``details.json`` (checked once, codascore/formats/details.py),
asks the board for the per-unit rows of each (:meth:`Board.unit_rows`), stacks them into an :class:`Evidence`, folds what the official rule folds
across teams first (:meth:`Board.prepare`, e.g. UAI's best answers found by any team), then runs
:meth:`Board.scores` on the full evidence and on every paired bootstrap replicate drawn by the
:class:`Design`. The family writes the formula; the leaderboard writes the resampling and the statistics.
"""

from __future__ import annotations

import abc
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from .formats.details import Details


@dataclasses.dataclass(frozen=True)
class Design:
    """How a task's units are resampled, the same draw for every team (a paired bootstrap).

    Units are drawn with replacement within each stratum (the combinations of the ``strata`` columns of
    :attr:`Evidence.units`), each stratum keeping its size: e.g. UAI's instance family and time limit, weak
    lensing's in- and out-of-distribution maps. With ``cluster`` (a column), it is two-level: within each
    stratum the clusters are drawn with replacement, then the units within each drawn cluster (SRBench:
    datasets, then runs). A cluster drawn twice is two clusters in the replicate: its copies get new labels
    in the ``cluster`` column, so that a per-cluster rank counts it twice.
    """

    strata: tuple[str, ...] = ()
    cluster: str | None = None


@dataclasses.dataclass
class Evidence:
    """Every team's per-unit scores on one task.

    - ``units``: one row per unit of evidence, index 0..n-1; a column ``unit`` (its id, e.g. an instance,
      a map, ``dataset/run``) and the columns the board's Design and rules name;
    - ``values``: array (teams, units, metrics), NaN where a team has no value for a unit;
    - ``metrics``: the names of the last axis of ``values``;
    - ``teams``: the names of the first axis;
    - ``missing``: team -> the unit ids it lacks (shown on the page and in ranking.csv);
    - ``reference``: what identifies the reference data the teams were scored on ('' when unknown).
    """

    task: str
    teams: list[str]
    units: pd.DataFrame
    metrics: list[str]
    values: np.ndarray
    missing: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    reference: str = ""

    def take(self, index: np.ndarray, units: pd.DataFrame | None = None) -> "Evidence":
        """The evidence of the units at ``index`` (a replicate; repeats allowed), with ``units`` as the
        replicate's unit table when the resampling relabelled clusters."""
        table = self.units.iloc[index].reset_index(drop=True) if units is None else units
        return dataclasses.replace(self, units=table, values=self.values[:, index, :])


class Board(abc.ABC):
    """A task's official final ranking. A family writes one per task that has a final table.

    Set ``design`` (how units are resampled), ``higher_is_better`` (of the score :meth:`scores` returns)
    and ``rules`` (name -> one line saying what the rule is; the first is the official one, the others are
    the alternatives the organisers might have chosen, drawn side by side on the page). Write:

    - :meth:`unit_rows`: one team's ``details.json`` -> its per-unit rows;
    - :meth:`scores`: the official formula (or an alternative rule) on an Evidence -> a score per team.

    Optional: :meth:`prepare` (fold across teams what the rule folds once on the full data),
    :meth:`check` (refuse, by raising ReferenceDataError naming the team and field, evidence the official
    rule cannot rank; the default refuses nothing) and, with ``needs_reference``, :meth:`use_reference` (read
    from the task's reference data what the rule needs and details.json must not hold, e.g. weak lensing
    Phase 2's labels, which the suite's participants could read in their details.json).
    """

    design: Design = Design()
    higher_is_better: bool = True
    rules: dict[str, str] = {}
    #: What a team lacking a unit gets: "refuse" (exit 2, naming the team and units), or "worst" (the
    #: official rule's worst value for that unit, counted and shown), or "skip" (left out of its means).
    missing_policy: str = "refuse"
    #: Whether the leaderboard must hand the task's reference data folder to :meth:`use_reference` before
    #: :meth:`unit_rows` (and refuse to run without it).
    needs_reference: bool = False

    @abc.abstractmethod
    def unit_rows(self, details: "Details") -> list[dict[str, Any]]:
        """One team's per-unit rows from one scored ``details.json``, already checked by the leaderboard for
        its task, status, reference digest and board settings (codascore.formats.details.Details): each a
        dict with ``unit`` (the item's id within the file's group; the leaderboard names the unit with
        ``details.unit(id)``), the design's columns, and a float per metric. SubmissionError (or
        ReferenceDataError) naming the field when its records are not this task's."""

    @abc.abstractmethod
    def scores(self, evidence: Evidence, rule: str) -> np.ndarray:
        """The rule's score of every team (array aligned with ``evidence.teams``), computed only from
        ``evidence`` so that it can be rerun on every replicate. Never NaN: a rule that cannot score a team
        gives its worst value."""

    def use_reference(self, reference_dir: Path) -> None:
        """Read what the rule needs from the task's reference data folder (ReferenceDataError when it is
        not there); called once, before :meth:`unit_rows`, when ``needs_reference``. The default reads nothing."""

    def prepare(self, evidence: Evidence) -> Evidence:
        """Fold across teams, once on the full evidence, what the official rule folds before scoring."""
        return evidence

    def check(self, evidence: Evidence) -> None:
        """Raise ReferenceDataError when the official rule cannot rank this evidence."""

    def rules_for(self, evidence: Evidence) -> list[str]:
        """The rules this evidence can rank by, the official one first (default: every rule). A board
        drops an alternative whose units no team has (a time limit no team was scored under)."""
        return list(self.rules)

    def metric_names(self) -> list[str]:
        """The metrics :meth:`unit_rows` gives, in the order of ``Evidence.values``' last axis (default: as
        read from the rows)."""
        return []
