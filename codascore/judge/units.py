"""The units of work of a judgement, and the function a Dask worker runs for one.

A unit is the smallest piece of a team's judgement that runs on its own, is recorded on its own and is
retried on its own. This first version has one kind, ``pipeline``: the whole (team, task) run of the
worker's steps, one :func:`codascore.runner.run` call, so that a unit judged scores exactly as
``codascore run`` does. Finer kinds (one SRBench fit per dataset and seed, one UAI solver run per instance
and time limit) are added by listing them in :func:`list_units` and giving their function in
:data:`UNIT_FUNCTIONS`: the scheduler and the store see only a unit's key, kind and resources.

The worker side (:func:`run_unit`) takes and returns plain dicts: it runs where the judge's objects may not
be, and what it returns travels back through the scheduler. It never touches the results database.
"""

from __future__ import annotations

import dataclasses
import os
import socket
from pathlib import Path
from typing import Callable

from .. import runner
from ..errors import RunnerError
from ..outcomes import exit_code_of

#: What a unit asks of a worker when its task's profile says nothing: Dask resources (cores; memory in
#: bytes). A worker offers cores_per_worker cores, so a unit asking for all of them runs alone there.
DEFAULT_RESOURCES = {"cores": 1, "memory": 2 * 1024**3}
#: The keys a task's profile (the ``profiles`` hook of :func:`codascore.judge.judge`) may set.
PROFILE_KEYS = {"time_limit", "cores", "memory"}


@dataclasses.dataclass(frozen=True)
class Unit:
    """One unit of work: whose (team), of which task, what kind, its key (unique within the team's task,
    and the name of its run folder), the submission it runs, the Dask resources it asks for, and its time
    limit per step (None: the phase's)."""

    team: str
    task: str
    kind: str
    key: str
    submission: Path
    resources: dict[str, float]
    time_limit: float | None = None

    @property
    def name(self) -> str:
        """team/task/key: the unit in messages and in Dask's task keys."""
        return f"{self.team}/{self.task}/{self.key}"


def list_units(task: str, team: str, submission: Path, time_limit: float | None = None,
               profile: dict | None = None) -> list[Unit]:
    """The units of one team's judgement on task. time_limit (seconds per step) overrides the profile's,
    which overrides the phase's; the profile may also set the unit's cores and memory."""
    profile = dict(profile or {})
    resources = {name: float(profile.get(name, default)) for name, default in DEFAULT_RESOURCES.items()}
    limit = time_limit if time_limit is not None else profile.get("time_limit")
    return [Unit(team, task, "pipeline", "pipeline", Path(submission), resources,
                 float(limit) if limit is not None else None)]


def unit_spec(unit: Unit, staging: Path, root: Path) -> dict:
    """What a worker needs to run the unit, as plain data: the task, the submission, the staging run folder
    it writes, the project root and the time limit."""
    return {"kind": unit.kind, "task": unit.task, "submission": str(unit.submission), "run_dir": str(staging),
            "root": str(root), "time_limit": unit.time_limit, "name": unit.name}


def run_pipeline(spec: dict) -> dict:
    """The pipeline unit: runner.run, as ``codascore run`` does, into the staging run folder."""
    result = runner.run(spec["task"], Path(spec["submission"]), Path(spec["run_dir"]), root=Path(spec["root"]),
                        time_limit=spec["time_limit"])
    return {"outcome": result.outcome.name, "exit_code": int(exit_code_of(result.outcome)),
            "scoring_exit_code": result.exit_code, "scores": dict(result.scores),
            "violations": list(result.violations), "warnings": list(result.warnings),
            "error": result.error[-4000:] if not result.scored else "", "elapsed": result.elapsed,
            "run_dir": str(result.run_dir)}


#: The worker function of each kind of unit: spec in, the small result dict out.
UNIT_FUNCTIONS: dict[str, Callable[[dict], dict]] = {"pipeline": run_pipeline}


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
