"""The units of work of a judgement, and the function a Dask worker runs for one.

A unit is the smallest piece of a team's judgement that runs on its own, is recorded on its own and is
retried on its own. Three kinds (docs/judge.md#units):

- ``pipeline``: the whole (team, task) run of the worker's steps, one :func:`codascore.runner.run` call, so
  that a unit judged scores exactly as ``codascore run`` does; a task without a judging plan, a judgement
  without a budget, a results submission (one per group of the plan, each scored with its group's
  settings, so that it names the same units as a code submission's groups);
- ``part``: one of the organisers' jobs of a code submission (JudgePlan.parts: one UAI solver run per
  instance and time limit), its prediction step alone on the part's input data (:mod:`.parts`);
- ``score``: a group's parts merged into one results submission (JudgePlan.merge) and run through
  :func:`codascore.runner.run`; it needs every part of its group finished.

The scheduler and the store see only a unit's key, kind, group, needs and resources. The worker side
(:func:`run_unit`) takes and returns plain dicts: it runs where the judge's objects may not be, and what it
returns travels back through the scheduler. It never touches the results database: it makes its attempt's
folder and tells the judge when it starts (codascore/judge/worker.py), and returns its result.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
from pathlib import Path
from typing import Callable

from .. import containers, runner
from ..errors import RunnerError
from ..formats.atomic import write_json_atomic
from ..formats.judgement import PART, PIPELINE, SCORE
from ..formats.run_folder import UNIT_RESULT, prediction_output
from ..plan import DEFAULT_CORES, DEFAULT_MEMORY, Group, Part
from .parts import result_dict, run_part, run_score

#: What a unit asks of a worker when its budget says nothing: Dask resources (cores; memory in bytes). A
#: worker offers cores_per_worker cores, so a unit asking for all of them runs alone there.
DEFAULT_RESOURCES = {"cores": DEFAULT_CORES, "memory": DEFAULT_MEMORY}
#: The steps of each kind of unit, each under the unit's time limit: a pipeline and a score unit run the
#: prediction and the scoring step, a part its prediction step.
STEPS = {PIPELINE: 2, PART: 1, SCORE: 2}
#: Seconds a unit may take besides its steps: its folders made and the archives extracted, the merge.
PREPARATION_SECONDS = 30.0


@dataclasses.dataclass(frozen=True)
class Unit:
    """One unit of work: whose (team), of which task, what kind, its key (unique within the team's task,
    and the name of its run folder), the submission it runs, the Dask resources it asks for, its time
    limit per step (None: the phase's), its group (the parts scored together, or the group a results
    submission is scored for; "" for the whole task), the keys of the units it needs finished first, a
    part's own settings (Part.as_data()), and the task.yaml values its scoring takes (its group's and the
    budget's: SRBench's accuracy_source); the team's environment (its interpreter and digest) for units that
    run the team's code."""

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
    #: the interpreter the unit's participant code runs under (its team's environment; None: the judge's own)
    #: and the digest of that environment ("" without one), a part of the unit's fingerprint
    python: str | None = None
    environment: str = ""

    @property
    def name(self) -> str:
        """team/task/key: the unit in messages and in Dask's task keys."""
        return f"{self.team}/{self.task}/{self.key}"

    @property
    def seconds(self) -> float:
        """The most seconds the unit may take on a worker: each of its steps at its time limit, and its
        preparation (the judge's walltime check; its order among units: longest first)."""
        return STEPS[self.kind] * float(self.time_limit or runner.DEFAULT_TIME_LIMIT) + PREPARATION_SECONDS

    def named(self, key: str) -> str:
        """The name of another unit of the same team and task (one this unit needs)."""
        return f"{self.team}/{self.task}/{key}"


def list_units(task: str, team: str, submission: Path, time_limit: float | None = None,
               budget: dict | None = None, groups: list[Group] | None = None, scoring: dict | None = None,
               parts: list[Part] | None = None, code: bool = True, phase_limit: float | None = None,
               python: str | None = None, environment: str = "") -> list[Unit]:
    """The units of one team's judgement on task. time_limit (seconds per step) overrides the budget's,
    which overrides the phase's (phase_limit: a unit's time limit is then the phase's own, recorded and
    fingerprinted; None leaves it to the worker); the budget may also set a code submission's cores and
    memory (code: the submission runs code; a results submission asks the default resources).

    groups and scoring (a judgement under a plan's budget): without parts (a results submission) one
    pipeline unit per group, scored with the group's settings and scoring's, asking the default resources
    (it runs no code); with parts (a code submission) a part unit each, then a score unit per group needing
    its parts. Without groups: one pipeline unit, as ``codascore run`` runs the submission.

    python and environment (the team's environment): a pipeline unit's steps and every part run under
    python, as ``codascore run --python`` runs them; a score unit runs no team code, under the judge's own."""
    team_env = {"python": python, "environment": environment}
    budget, scoring = dict(budget or {}), dict(scoring or {})
    limit = time_limit if time_limit is not None else budget.get("time_limit", phase_limit)
    limit = float(limit) if limit is not None else None
    if not groups:
        resources = {name: float(budget.get(name, default) if code else default)
                     for name, default in DEFAULT_RESOURCES.items()}
        return [Unit(team, task, PIPELINE, PIPELINE, Path(submission), resources, limit, **team_env)]
    if not parts:
        return [Unit(team, task, PIPELINE, group_key(PIPELINE, group.name), Path(submission), dict(DEFAULT_RESOURCES),
                     limit, group.name, scoring={**scoring, **group.config}, **team_env) for group in groups]
    units = []
    for part in parts:
        part_limit = part.time_limit if part.time_limit is not None else limit
        units.append(Unit(team, task, PART, part.key, Path(submission),
                          {"cores": float(part.cores), "memory": float(part.memory)},
                          float(part_limit) if part_limit is not None else None, part.group, part=part.as_data(),
                          **team_env))
    for group in groups:
        keys = tuple(part.key for part in parts if part.group == group.name)
        units.append(Unit(team, task, SCORE, group_key(SCORE, group.name), Path(submission), dict(DEFAULT_RESOURCES),
                          limit, group.name, keys, scoring={**scoring, **group.config}))
    return units


def group_key(kind: str, group: str) -> str:
    """The key of a group's pipeline or score unit: the kind for the whole task, ``score,group=20s`` for a
    group."""
    return f"{kind},group={group}" if group else kind


def unit_spec(unit: Unit, staging: Path, root: Path, needs: list[dict] | None = None, attempt: int = 1,
              topic: str = "", digests: dict[str, str] | None = None, runs_code: bool = False,
              unisolated: bool = False) -> dict:
    """What a worker needs to run the unit, as plain data: the task, the submission, the staging run folder
    of this attempt (which the worker makes when it starts it), the project root and the time limit; a
    part's settings; the task.yaml values its scoring takes; for a score unit, what each of its parts left
    (:func:`part_record`); the attempt's number and the judgement's event topic (the worker tells the judge
    when it starts); the digests of the folders it reads (path -> sha256: the worker keeps their archives);
    whether it runs the participant's code, and whether the organiser allowed that without isolation; the
    interpreter of the team's environment (None: the worker's own)."""
    return {"kind": unit.kind, "task": unit.task, "submission": str(unit.submission), "run_dir": str(staging),
            "root": str(root), "time_limit": unit.time_limit, "name": unit.name, "part": unit.part,
            "reference_config": dict(unit.scoring), "parts": list(needs or []), "attempt": attempt,
            "topic": topic, "seconds": unit.seconds, "digests": dict(digests or {}), "runs_code": runs_code,
            "unisolated": unisolated, "python": unit.python}


def part_record(part: dict, row, run_dir: Path) -> dict:
    """A finished part as a score unit's worker is told of it: the part (Part.as_data()), its prediction
    output folder and how its run was recorded (the store's row: outcome, the ingestion's exit code, the
    messages)."""
    return {"part": dict(part), "output": str(prediction_output(run_dir)), "outcome": row["outcome"],
            "exit_code": row["exit_code"], "messages": json.loads(row["messages"] or "[]")}


def run_pipeline(spec: dict, container: containers.Container) -> dict:
    """The pipeline unit: runner.run, as ``codascore run`` does (``--python`` the team's environment), into
    the staging run folder."""
    return result_dict(runner.run(spec["task"], Path(spec["submission"]), Path(spec["run_dir"]),
                                  root=Path(spec["root"]), time_limit=spec["time_limit"], container=container,
                                  python=spec.get("python"),
                                  reference_config=spec.get("reference_config") or None))


#: The worker function of each kind of unit: spec and container in, the small result dict out.
UNIT_FUNCTIONS: dict[str, Callable[[dict, containers.Container], dict]] = {
    PIPELINE: run_pipeline, PART: run_part, SCORE: run_score}


def run_unit(spec: dict) -> dict:
    """Run one unit on a Dask worker and return its result as a small plain dict, with where it ran, when
    it started and how its steps were isolated. A unit that could not end before the worker's deadline is
    handed back to the scheduler first (worker.take_or_pass); then the attempt starts (worker.claim: its
    folder made, the judge told). An organiser's error in the setup (RunnerError: a program without a
    command, a step that cannot be isolated here) comes back as ``organiser_error``, not raised: it is no
    worker's failure and retrying it would change nothing."""
    from .worker import claim, take_or_pass

    where = worker_address()
    kept = kept_record(Path(spec["run_dir"]))
    if kept is not None:  # the attempt ended on a worker that died before the judge had its result
        return kept
    take_or_pass(float(spec.get("seconds") or 0))
    started = claim(Path(spec["run_dir"]), spec.get("topic", ""), spec["name"], int(spec.get("attempt", 1)), where)
    container = containers.choose()
    try:
        if spec.get("runs_code") and not container.isolated and not spec.get("unisolated"):
            raise RunnerError(f"worker {where} cannot isolate a step (no working bubblewrap): a code submission "
                              f"is not run there (install bubblewrap, or judge with --unisolated)")
        with runner.known_digests(spec.get("digests") or {}):
            result = UNIT_FUNCTIONS[spec["kind"]](spec, container)
    except RunnerError as exc:
        result = {"organiser_error": str(exc)}
    result.update(worker=where, started=started, isolation=container.kind)
    # In the order returned: a result read back from here is recorded exactly as one the judge received.
    write_json_atomic(Path(spec["run_dir"]) / UNIT_RESULT, result, sort_keys=False)
    return result


def kept_record(run_dir: Path, name: str = UNIT_RESULT) -> dict | None:
    """What an attempt's worker kept in its run folder (formats.run_folder.UNIT_RESULT, or UNIT_START: where
    and when it started), or None."""
    try:
        return json.loads((run_dir / name).read_text())
    except FileNotFoundError:
        return None


def worker_address() -> str:
    """The Dask worker's address when running on one, else host:pid."""
    try:
        from distributed import get_worker
        return get_worker().address
    except (ImportError, ValueError):
        return f"{socket.gethostname()}:{os.getpid()}"
