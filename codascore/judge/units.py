"""The units of work of a judgement, and the function a Dask worker runs for one.

A unit is the smallest piece of a team's judgement that runs on its own, is recorded on its own and is
retried on its own. Three kinds (docs/judge.md#units):

- ``pipeline``: the whole (team, task) run of the worker's steps, one :func:`codascore.runner.run` call, so
  that a unit judged scores exactly as ``codascore run`` does; a task without parts, a results submission,
  or a judgement without a budget profile;
- ``part``: one of the organisers' jobs of a code submission (Task.judge_parts: one UAI solver run per
  instance and time limit), its prediction step alone on the part's input data (:mod:`.parts`);
- ``score``: a group's parts merged into one results submission (Task.merge_part_outputs) and run through
  :func:`codascore.runner.run`; it needs every part of its group finished.

The scheduler and the store see only a unit's key, kind, group, needs and resources. The worker side
(:func:`run_unit`) takes and returns plain dicts: it runs where the judge's objects may not be, and what it
returns travels back through the scheduler. It never touches the results database.
"""

from __future__ import annotations

import dataclasses
import os
import socket
from pathlib import Path
from typing import Callable

from .. import runner
from ..errors import RunnerError
from ..registry import get_task
from ..task import JudgePart
from .parts import PART_OUTPUT, result_dict, run_part, run_score

#: What a unit asks of a worker when its task's profile says nothing: Dask resources (cores; memory in
#: bytes). A worker offers cores_per_worker cores, so a unit asking for all of them runs alone there.
DEFAULT_RESOURCES = {"cores": 1, "memory": 2 * 1024**3}
#: The keys a task's budget (profile and overrides of :func:`codascore.judge.judge`) sets for a pipeline unit.
PROFILE_KEYS = {"time_limit", "cores", "memory"}


@dataclasses.dataclass(frozen=True)
class Unit:
    """One unit of work: whose (team), of which task, what kind, its key (unique within the team's task,
    and the name of its run folder), the submission it runs, the Dask resources it asks for, its time
    limit per step (None: the phase's), its group (the parts scored together; "" for a pipeline), the keys
    of the units it needs finished first, a part's own settings (JudgePart's fields, as plain data), and
    for a score unit the task.yaml values its scoring takes from the budget (SRBench's accuracy_source)."""

    team: str
    task: str
    kind: str
    key: str
    submission: Path
    resources: dict[str, float]
    time_limit: float | None = None
    group: str = ""
    needs: tuple[str, ...] = ()
    part: dict | None = None
    scoring: dict = dataclasses.field(default_factory=dict)

    @property
    def name(self) -> str:
        """team/task/key: the unit in messages and in Dask's task keys."""
        return f"{self.team}/{self.task}/{self.key}"

    def named(self, key: str) -> str:
        """The name of another unit of the same team and task (one this unit needs)."""
        return f"{self.team}/{self.task}/{key}"


def list_units(task: str, team: str, submission: Path, time_limit: float | None = None,
               profile: dict | None = None, parts: list[JudgePart] | None = None) -> list[Unit]:
    """The units of one team's judgement on task. time_limit (seconds per step) overrides the profile's,
    which overrides the phase's; the profile may also set the unit's cores and memory. With parts (a code
    submission of a task that has them): a part unit each, then a score unit per group needing its parts."""
    profile = dict(profile or {})
    resources = {name: float(profile.get(name, default)) for name, default in DEFAULT_RESOURCES.items()}
    limit = time_limit if time_limit is not None else profile.get("time_limit")
    limit = float(limit) if limit is not None else None
    if not parts:
        return [Unit(team, task, "pipeline", "pipeline", Path(submission), resources, limit)]
    units, groups = [], {}
    for part in parts:
        part_limit = part.time_limit if part.time_limit is not None else limit
        units.append(Unit(team, task, "part", part.key, Path(submission),
                          {"cores": float(part.cores), "memory": float(part.memory)},
                          float(part_limit) if part_limit is not None else None, part.group,
                          part={"key": part.key, "group": part.group, "config": dict(part.config),
                                "cores": part.cores, "memory": part.memory, "time_limit": part.time_limit}))
        groups.setdefault(part.group, []).append(part.key)
    scoring = scoring_config(task, profile)
    for group, keys in groups.items():
        units.append(Unit(team, task, "score", score_key(group), Path(submission), dict(DEFAULT_RESOURCES),
                          limit, group, tuple(keys), scoring=scoring))
    return units


def scoring_config(task: str, budget: dict) -> dict:
    """The budget's values that are task.yaml parameters of the task (SRBench's accuracy_source): the
    scoring of the parts takes them too, as the organisers' scoring did. A results submission (a pipeline
    unit) is scored with the reference data's own."""
    return {key: value for key, value in budget.items() if key in get_task(task).defaults}


def score_key(group: str) -> str:
    """The key of a group's score unit: ``score`` for the whole task, ``score,group=20s`` for a group."""
    return f"score,group={group}" if group else "score"


def unit_spec(unit: Unit, staging: Path, root: Path, out: Path | None = None) -> dict:
    """What a worker needs to run the unit, as plain data: the task, the submission, the staging run folder
    it writes, the project root and the time limit; a part's settings; for a unit needing parts, each
    part's output folder (below out's runs/, where the parts' recorded run folders are)."""
    spec = {"kind": unit.kind, "task": unit.task, "submission": str(unit.submission), "run_dir": str(staging),
            "root": str(root), "time_limit": unit.time_limit, "name": unit.name, "part": unit.part,
            "reference_config": dict(unit.scoring)}
    if unit.needs and out is not None:
        spec["outputs"] = {key: str(Path(out) / "runs" / unit.team / unit.task / key / PART_OUTPUT)
                           for key in unit.needs}
    return spec


def run_pipeline(spec: dict) -> dict:
    """The pipeline unit: runner.run, as ``codascore run`` does, into the staging run folder."""
    return result_dict(runner.run(spec["task"], Path(spec["submission"]), Path(spec["run_dir"]),
                                  root=Path(spec["root"]), time_limit=spec["time_limit"]))


#: The worker function of each kind of unit: spec in, the small result dict out.
UNIT_FUNCTIONS: dict[str, Callable[[dict], dict]] = {"pipeline": run_pipeline, "part": run_part,
                                                     "score": run_score}


def run_unit(spec: dict) -> dict:
    """Run one unit on a Dask worker and return its result as a small plain dict, with where it ran. An
    organiser's error in the setup (RunnerError: a program without a command) comes back as
    ``organiser_error``, not raised: it is no worker's failure and retrying it would change nothing."""
    where = worker_address()
    try:
        result = UNIT_FUNCTIONS[spec["kind"]](spec)
    except RunnerError as exc:
        return {"organiser_error": str(exc), "worker": where}
    result["worker"] = where
    return result


def worker_address() -> str:
    """The Dask worker's address when running on one, else host:pid."""
    try:
        from distributed import get_worker
        return get_worker().address
    except (ImportError, ValueError):
        return f"{socket.gethostname()}:{os.getpid()}"
