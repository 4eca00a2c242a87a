"""The contract between ``codascore judge`` and a family: how a task's submissions are judged as its
organisers judged them (docs/judge.md#plans).

A task that the organisers judged in pieces returns a :class:`JudgePlan` from ``Task.judge_plan()``. The
plan holds, as data, the family's budget profiles (``profiles``: the organisers' own seeds, time limits,
cores and memory, each with its source in the family's docs), the groups a task is scored in
(:meth:`JudgePlan.groups`: UAI scores each time limit apart) and the parts a code submission's prediction
splits into (:meth:`JudgePlan.parts`: one UAI solver run per instance and time limit, one SRBench fit per
dataset and seed), each :class:`Part` saying what it is (``item``) rather than encoding it in a key. The
judge runs each part's prediction step on the input data :meth:`JudgePlan.write_part_input` makes for it,
then hands every part's outcome to :meth:`JudgePlan.merge` as a value (:class:`PartOutcome`), which writes
the results submission the whole ingestion would have written. A results submission is scored once per
group, with the group's settings, so that both kinds name the same units (formats.details.unit_id).

The judge (codascore/judge/) knows only this contract; the family writes what a part is.
"""

from __future__ import annotations

import abc
import dataclasses
from pathlib import Path
from typing import Any

from .errors import ReferenceDataError

#: What a part or a unit asks of a worker when its budget says nothing: cores, memory in bytes.
DEFAULT_CORES, DEFAULT_MEMORY = 1.0, 2.0 * 1024**3
#: The keys every task's budget may set for a unit that runs a whole submission (a pipeline).
PIPELINE_KEYS = frozenset({"time_limit", "cores", "memory"})


@dataclasses.dataclass(frozen=True)
class Group:
    """The units scored together: one score each. ``name`` is what details.json's ``group`` holds ("" for
    the whole task; UAI: a time limit, ``20s``); ``config`` the task.yaml values its scoring, and its
    parts' input data, take (UAI: ``{"time_limit": 20.0}``)."""

    name: str = ""
    config: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Part:
    """One of the organisers' jobs of a code submission.

    key:        unique among the task's parts and a plain folder name (its run folder's);
    group:      the name of the Group it is scored in;
    item:       what it runs, as data (UAI: ``{"instance": "bn_1"}``; SRBench: ``{"dataset": ..., "seed": 3}``);
    config:     task.yaml values of its input data (the group's, and the part's own);
    cores, memory: what its run asks of a worker (memory in bytes);
    time_limit: seconds its prediction step may take.
    """

    key: str
    group: str = ""
    item: dict = dataclasses.field(default_factory=dict)
    config: dict = dataclasses.field(default_factory=dict)
    cores: float = DEFAULT_CORES
    memory: float = DEFAULT_MEMORY
    time_limit: float | None = None

    def as_data(self) -> dict[str, Any]:
        """The part as plain data (what travels to a worker): Part(**part.as_data()) is the part."""
        return dataclasses.asdict(self)


#: How a part's prediction step ended: the participant's code ran to its end and succeeded; it failed (the
#: ingestion's error says why); the step was stopped at its time limit; the submission was refused before it.
PART_DONE, PART_FAILED, PART_TIMED_OUT, PART_REFUSED = "done", "failed", "timed out", "refused"
PART_STATUSES = (PART_DONE, PART_FAILED, PART_TIMED_OUT, PART_REFUSED)


@dataclasses.dataclass(frozen=True)
class PartOutcome:
    """One part's recorded outcome, handed to :meth:`JudgePlan.merge`: the part, its prediction output folder
    (what its ingestion wrote, possibly nothing), how it ended (PART_STATUSES) and why when not done (the
    ingestion's error or the runner's reason)."""

    part: Part
    output: Path
    status: str
    reason: str = ""

    @property
    def done(self) -> bool:
        return self.status == PART_DONE


class JudgePlan(abc.ABC):
    """How a task is judged in parts. A family writes one for each task whose organisers did so.

    Set ``profiles`` (profile name -> this task's budget), ``budget_keys`` (the keys a budget may hold
    beyond PIPELINE_KEYS) and, for a task with a code entry, ``checked_import``. Write :meth:`parts`,
    :meth:`write_part_input` and :meth:`merge`. Optional:
    :meth:`check_budget` (refuse a budget's values), :meth:`groups` and :meth:`group_of` (a task scored in
    groups: both name a group the same way), :meth:`scoring_config` (budget values its scoring takes too).
    """

    profiles: dict[str, dict] = {}
    budget_keys: frozenset[str] = frozenset()
    #: task.yaml values every part takes once the judge has imported the submission's entry itself, once per
    #: team and environment (Task.code_entry; docs/judge.md#the-import-check), so that the part's ingestion
    #: does not check it again (SRBench: ``{"import_check": False}``); empty: each part checks as it would.
    checked_import: dict = {}

    def __init__(self, task):
        self.task = task  # the codascore.task.Task it judges (not imported: task imports this module's type)

    def check_budget(self, budget: dict) -> None:
        """ReferenceDataError naming a key the budget may not hold (and any value the plan cannot use)."""
        unknown = sorted(set(budget) - PIPELINE_KEYS - set(self.budget_keys))
        if unknown:
            raise ReferenceDataError(f"unknown budget key(s) {unknown} for {self.task.name}; known: "
                                     f"{', '.join(sorted(PIPELINE_KEYS | set(self.budget_keys)))}")

    def groups(self, config: dict, budget: dict) -> list[Group]:
        """The groups the task is scored in under the budget (default: one, the whole task)."""
        return [Group()]

    def group_of(self, config: dict) -> str:
        """The name of the group a scoring with this task.yaml config covers (what the scorer writes in
        details.json's ``group``); default "" (one group)."""
        return ""

    def scoring_config(self, budget: dict) -> dict:
        """Budget values that are task.yaml parameters of the scoring too (SRBench's accuracy_source): every
        group's scoring takes them (default: the budget's keys that are the task's parameters)."""
        return {key: value for key, value in budget.items() if key in self.task.defaults}

    @abc.abstractmethod
    def parts(self, input_dir: Path, config: dict, budget: dict) -> list[Part]:
        """The parts of a code submission under the budget, read from the input data (config: its task.yaml
        as the task loads it). ReferenceDataError when the input data or the budget cannot make them."""

    @abc.abstractmethod
    def write_part_input(self, input_dir: Path, part: Part, dest: Path) -> None:
        """Write into dest the input data of one part: input_dir's files it needs and a task.yaml with
        part.config over input_dir's. ReferenceDataError when input_dir cannot be read."""

    @abc.abstractmethod
    def merge(self, outcomes: list[PartOutcome], dest: Path, config: dict) -> None:
        """Write into dest the results submission a group's parts make together, as the whole ingestion
        would have written it from the same runs (a part not done is a missing run). SubmissionError, with
        the parts' reasons, when they hold nothing to score, as the whole ingestion's own error."""

    def budget(self, profile: str | None, overrides: dict | None) -> dict:
        """The budget: this plan's profile (ReferenceDataError naming the known ones), the overrides over it,
        checked (check_budget)."""
        budget: dict = {}
        if profile is not None:
            if profile not in self.profiles:
                raise ReferenceDataError(f"budget profile {profile!r} has no entry for {self.task.name}; its "
                                         f"profiles: {', '.join(sorted(self.profiles)) or 'none'}")
            budget = dict(self.profiles[profile])
        budget.update(overrides or {})
        self.check_budget(budget)
        return budget
