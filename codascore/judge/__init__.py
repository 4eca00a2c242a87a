"""The final judgement: every team's submission run again on the private data with the real budgets, on a
Dask cluster, resumably (docs/judge.md).

:func:`judge` reads the teams of a submissions folder (:mod:`.teams`), lists each team's units of work
(:mod:`.units`), runs those not yet judged on a cluster (:mod:`.cluster`, :mod:`.scheduler`), records every
attempt and result in OUT/judge.sqlite (:mod:`.store`) and writes OUT/results.csv (:mod:`.results`).
:func:`status` reads the database without running anything. Killed at any moment, the same call again runs
only what is unfinished; nothing already judged is deleted.

Nothing below this package imports it, and only this package imports ``distributed``: the bundle's
programs never need Dask.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Callable

from ..competition import project_root
from ..environments import Settings
from ..errors import JudgeError, ReferenceDataError, RunnerError
from ..formats.environment import ENVIRONMENTS
from ..formats.judgement import Judgement, status_table
from ..plan import PIPELINE_KEYS
from ..registry import get_task
from ..runner import find_layout
from ..task import Task
from .parts import DEFAULT_IMPORT_TIME_LIMIT, check_imports, is_code_submission, plan_units
from .progress import Progress
from .results import write_results
from .scheduler import Scheduler, run_folder, settle_folders
from .store import FINISHED, Store
from .teams import Skipped, folder_sha256, read_teams, with_environments
from .units import Unit, list_units

__all__ = ["JudgeSummary", "budget_of", "judge", "status"]


@dataclasses.dataclass
class JudgeSummary:
    """How a judgement ended: the units in each state (all of the task's, judged now or before), how many
    this call ran, the entries skipped with their reasons, results.csv, the dashboard's address."""

    task: str
    out: Path
    counts: dict[str, int]
    ran: int
    skipped: list[Skipped]
    results: Path
    dashboard: str
    elapsed: float

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def finished(self) -> bool:
        """Whether every unit has a result (none pending, running or lost to the cluster)."""
        return sum(self.counts[state] for state in FINISHED) == self.total


def judge(submissions: Path, task: str, out: Path, root: Path | None = None, workers: int | None = None,
          scheduler: str | None = None, cluster_file: Path | None = None, retries: int = 2,
          time_limit: float | None = None, progress: Callable[[str], None] | None = None,
          profile: str | None = None, overrides: dict | None = None, environments: Settings | None = None,
          import_time_limit: float = DEFAULT_IMPORT_TIME_LIMIT) -> JudgeSummary:
    """Judge every team of the submissions folder on task and return how it ended.

    root: the project folder of the programs and the private data (default: the installed project's).
    workers: worker processes of the LocalCluster (default: one per core); scheduler: the address of a
    running Dask scheduler instead; cluster_file: a YAML file describing a batch system's cluster instead.
    retries: attempts after the first for a unit the cluster lost. time_limit: seconds per step (default:
    the phase's). progress: called with each line to show. profile: a budget profile's name (the task's
    JudgePlan.profiles); overrides: values set over it (docs/judge.md#profiles). With either, a code
    submission of a task that has a judging plan is judged as the organisers' jobs, and a results
    submission once per group of the plan (docs/judge.md#units). environments: build each team's declared
    environment with uv and run its code there (docs/judge.md#environments), with the organiser's settings;
    a team whose environment cannot be had is skipped with the reason. import_time_limit: seconds the import
    check of a code submission judged in parts may take, once per team and environment
    (docs/judge.md#the-import-check)."""
    say = progress or (lambda line: None)
    started = time.monotonic()
    task_obj = get_task(task)
    task_name = task_obj.name
    budget = budget_of(task_obj, profile, overrides)
    root, out = Path(root or project_root()).resolve(), Path(out).resolve()
    reference = reference_folder(root, task_name)
    teams, skipped = read_teams(Path(submissions).resolve())
    for entry in skipped:
        say(f"skipped {entry.path.name}: {entry.reason}")
    flags = {team.name: team.flags for team in teams if team.flags}
    for name, team_flags in flags.items():
        say(f"flagged {name}: {'; '.join(team_flags)}")
    groups, scoring, parts = task_plan(root, task_obj, budget) if profile is not None or overrides else ([], {}, [])
    out.mkdir(parents=True, exist_ok=True)
    if environments is not None:
        teams, unbuilt = with_environments(teams, entry_file(task_obj), environments,
                                           environments.cache or out / ENVIRONMENTS, say)
        skipped += unbuilt
    code = {team.name for team in teams if parts and is_code_submission(task_obj, team.submission, out)}
    if code and task_obj.code_entry is not None and task_obj.judge_plan().checked_import:
        failed = check_imports(find_layout(root, task_name), [team for team in teams if team.name in code], out,
                               import_time_limit, say)
        skipped += [Skipped(team.name, team.submission, failed[team.name]) for team in teams if team.name in failed]
        teams = [team for team in teams if team.name not in failed]
        parts = [dataclasses.replace(part, config={**part.config, **task_obj.judge_plan().checked_import})
                 for part in parts]
    store = Store(out)
    try:
        store.record_skipped(task_name, skipped)
        settle_folders(store, out)
        units = [unit for team in teams for unit in list_units(
            task_name, team.name, team.submission, time_limit, budget, groups, scoring,
            parts if team.name in code else None, team.python, team.environment)]
        todo = units_to_run(store, out, units, {team.name: team.sha256 for team in teams}, folder_sha256(reference))
        dashboard = run_on_cluster(store, out, root, todo, units, say,
                                   dict(workers=workers, scheduler=scheduler, cluster_file=cluster_file),
                                   retries)
        results = write_results(store, out, flags=flags)
        counts = store.counts(task_name)
    finally:
        store.close()
    return JudgeSummary(task_name, out, counts, len(todo), skipped, results, dashboard,
                        time.monotonic() - started)


def entry_file(task: Task) -> str | None:
    """The file a code submission of the task is imported from (its code entry), beside which a team declares
    its environment; None for a task whose code submissions are commands."""
    return task.code_entry.file if task.code_entry is not None else None


def budget_of(task: Task, profile: str | None, overrides: dict | None) -> dict:
    """The task's budget: its judging plan's profile with the overrides over it (JudgeError naming the known
    profiles or keys). A task without a plan takes a pipeline's keys only (time_limit, cores, memory)."""
    plan = task.judge_plan()
    try:
        if plan is not None:
            return plan.budget(profile, overrides)
    except ReferenceDataError as exc:
        raise JudgeError(str(exc)) from exc
    if profile is not None:
        raise JudgeError(f"budget profile {profile!r} has no entry for {task.name}: the task has no judging plan "
                         f"(its submissions run whole, with --time-limit and --set time_limit/cores/memory)")
    unknown = sorted(set(overrides or {}) - PIPELINE_KEYS)
    if unknown:
        raise JudgeError(f"unknown budget key(s) {unknown} for {task.name}; known: {', '.join(sorted(PIPELINE_KEYS))}")
    return dict(overrides or {})


def task_plan(root: Path, task: Task, budget: dict) -> tuple[list, dict, list]:
    """The groups, scoring settings and parts of the task's plan under the budget, from its input data below
    root (parts.plan_units); nothing when the task has no plan."""
    try:
        return plan_units(task, find_layout(root, task.name).input_data, budget)
    except (RunnerError, ReferenceDataError) as exc:
        raise JudgeError(str(exc)) from exc


def units_to_run(store: Store, out: Path, units: list[Unit], submission_sha: dict[str, str],
                 reference_sha: str) -> list[Unit]:
    """The units to run (Store.to_run), and with them every unit needing one of them (a score unit whose
    parts run again is scored again)."""
    run_dirs = {unit.name: run_folder(out, unit).relative_to(out).as_posix() for unit in units}
    first = [unit for unit in units if not unit.needs]
    todo = store.to_run(first, submission_sha, reference_sha, run_dirs)
    again = {unit.name for unit in todo}
    force = {unit.name for unit in units if any(unit.named(key) in again for key in unit.needs)}
    return todo + store.to_run([unit for unit in units if unit.needs], submission_sha, reference_sha, run_dirs,
                               force)


def reference_folder(root: Path, task: str) -> Path:
    """The task's reference data below root (as the runner finds it); JudgeError naming it when missing."""
    try:
        return find_layout(root, task).reference_data
    except RunnerError as exc:
        raise JudgeError(str(exc)) from exc


def run_on_cluster(store: Store, out: Path, root: Path, todo: list[Unit], units: list[Unit],
                   say: Callable[[str], None], where: dict, retries: int) -> str:
    """Run the units to do on the cluster asked for; the dashboard's address ("" when nothing ran)."""
    if not todo:
        say(f"all {len(units)} units already judged: nothing to run")
        return ""
    from .cluster import check_resources, open_client

    with open_client(**where) as client:
        dashboard = client.dashboard_link or ""
        say(f"{len(todo)} of {len(units)} units to run; Dask dashboard: {dashboard}")
        check_resources(client, [unit.resources for unit in todo])
        Scheduler(client, store, out, root, retries, Progress(len(units), len(units) - len(todo)), say,
                  units).run(todo)
    return dashboard


def status(out: Path) -> str:
    """The table of the units' states per task and team, and the totals, read from OUT/judge.sqlite (read
    only, also on read-only media) without running anything. JudgeError when OUT holds no judgement."""
    try:
        judgement = Judgement.open(Path(out))
    except ReferenceDataError as exc:
        raise JudgeError(str(exc)) from exc
    with judgement:
        return status_table(judgement)
