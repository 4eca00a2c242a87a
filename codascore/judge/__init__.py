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

import contextlib
import dataclasses
import os
import time
import uuid
from pathlib import Path
from typing import Callable, Iterator

from .. import containers
from ..competition import project_root
from ..environments import Settings
from ..errors import JudgeError, ReferenceDataError, RunnerError
from ..formats.environment import ENVIRONMENTS
from ..formats.judgement import SCORE, Judgement, status_table
from ..plan import PIPELINE_KEYS
from ..registry import get_task
from ..runner import find_layout
from ..task import Task
from .cluster import (DEFAULT_WORKER_TIMEOUT, check_units, open_client, read_cluster_file, resources_of,
                      wait_for_a_worker, worker_offer)
from .fingerprint import Sources, unit_inputs
from .parts import DEFAULT_IMPORT_TIME_LIMIT, check_imports, is_code_submission, plan_units
from .progress import Progress
from .results import write_results
from .scheduler import Scheduler, run_folder, settle_folders
from .staleness import stale_lines
from .store import FINISHED, Store
from .teams import Skipped, read_teams, with_environments
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
          profile: str | None = None, overrides: dict | None = None, unisolated: bool = False,
          worker_timeout: float | None = None, client=None, offers: list[dict] | None = None,
          environments: Settings | None = None, import_time_limit: float = DEFAULT_IMPORT_TIME_LIMIT) -> JudgeSummary:
    """Judge every team of the submissions folder on task and return how it ended.

    root: the project folder of the programs and the private data (default: the installed project's).
    workers: worker processes of the LocalCluster (default: one per core); scheduler: the address of a
    running Dask scheduler instead; cluster_file: a YAML file describing a batch system's cluster instead;
    client: a client of a cluster already open (judge_phase's), instead of all three, with offers, what one
    of its workers offers (cluster.worker_offer; None: its joined workers are checked). retries: attempts
    after the first for a unit the cluster lost after it started. time_limit: seconds per step (default:
    the phase's). progress: called with each line to show. profile: a budget profile's name (the task's
    JudgePlan.profiles); overrides: values set over it (docs/judge.md#profiles). With either, a code
    submission of a task that has a judging plan is judged as the organisers' jobs, and a results
    submission once per group of the plan (docs/judge.md#units). unisolated: run code submissions even
    where no sandbox can isolate their steps (refused otherwise, JudgeError naming what to install).
    worker_timeout: seconds without any worker before the judgement ends (default: the cluster file's, else
    10 minutes). environments: build each team's declared environment with uv and run its code there
    (docs/judge.md#environments), with the organiser's settings; a team whose environment cannot be had is
    skipped with the reason. import_time_limit: seconds the import check of a code submission judged in
    parts may take, once per team and environment (docs/judge.md#the-import-check).

    Everything that can be refused is refused before OUT is written or any job submitted: the task, the
    budget, the cluster file, the data, isolation, and each unit against what a worker can hold."""
    say = progress or (lambda line: None)
    started = time.monotonic()
    task_obj = get_task(task)
    task_name = task_obj.name
    budget = budget_of(task_obj, profile, overrides)
    root, out = Path(root or project_root()).resolve(), Path(out).resolve()
    where = Where(workers, scheduler, cluster_file, worker_timeout, client, offers)
    layout = task_layout(root, task_name)
    teams, skipped = read_teams(Path(submissions).resolve())
    groups, scoring, parts = task_plan(root, task_obj, budget) if profile is not None or overrides else ([], {}, [])
    code = {team.name for team in teams if is_code_submission(task_obj, team.submission)}

    def units_of(teams: list, parts: list) -> list[Unit]:
        return [unit for team in teams for unit in list_units(
            task_name, team.name, team.submission, time_limit, budget, groups, scoring,
            parts if parts and team.name in code else None, code=team.name in code, phase_limit=layout.time_limit,
            python=team.python, environment=team.environment)]

    units = units_of(teams, parts)
    code_units = {unit.name for unit in units if unit.team in code and unit.kind != SCORE}
    check_isolation(code_units, unisolated, say)
    for entry in skipped:
        say(f"skipped {entry.path.name}: {entry.reason}")
    flags = {team.name: team.flags for team in teams if team.flags}
    for name, team_flags in flags.items():
        say(f"flagged {name}: {'; '.join(team_flags)}")
    where.check_units(units)
    out.mkdir(parents=True, exist_ok=True)
    teams, skipped, parts = teams_code_ready(task_obj, layout, teams, skipped, parts, code, out, environments,
                                             import_time_limit, say)
    units = units_of(teams, parts)  # under the teams' environments, the import checked once
    sources = Sources.of(layout)
    shas = {team.name: team.sha256 for team in teams}
    inputs = {unit.name: unit_inputs(unit, shas[unit.team], sources) for unit in units}
    store = Store(out)
    try:
        store.record_skipped(task_name, skipped)
        store.record_context(task_name, {"submissions": str(Path(submissions).resolve()), "root": str(root)})
        settle_folders(store, out)
        todo = units_to_run(store, out, units, inputs)
        for unit in todo:
            row = store.row(unit)
            if row["stale"]:
                say(f"{unit.name}: judged again ({row['stale']} changed)")
        dashboard = run_on_cluster(store, out, root, todo, units, say, where, retries,
                                   dict(digests=sources.folders(layout), code=code_units, unisolated=unisolated))
    finally:
        results = write_results(store, out, flags=flags)
        counts = store.counts(task_name)
        store.close()
    return JudgeSummary(task_name, out, counts, len(todo), skipped, results, dashboard,
                        time.monotonic() - started)


def teams_code_ready(task: Task, layout, teams: list, skipped: list, parts: list, code: set[str], out: Path,
                     environments: Settings | None, import_time_limit: float,
                     say: Callable[[str], None]) -> tuple[list, list, list]:
    """The teams under their environments (a team whose environment cannot be had skipped with the reason)
    and, where the task's plan checks a code submission's import, each team judged in parts imported once
    (a team whose import fails skipped, and the parts told that it was checked): teams, skipped, parts."""
    if environments is not None:
        teams, unbuilt = with_environments(teams, entry_file(task), environments,
                                           environments.cache or out / ENVIRONMENTS, say)
        skipped = skipped + unbuilt
    parted = {team.name for team in teams if parts and team.name in code}
    if parted and task.code_entry is not None and task.judge_plan().checked_import:
        failed = check_imports(layout, [team for team in teams if team.name in parted], out, import_time_limit, say)
        skipped = skipped + [Skipped(team.name, team.submission, failed[team.name])
                             for team in teams if team.name in failed]
        teams = [team for team in teams if team.name not in failed]
        parts = [dataclasses.replace(part, config={**part.config, **task.judge_plan().checked_import})
                 for part in parts]
    return teams, skipped, parts


def entry_file(task: Task) -> str | None:
    """The file a code submission of the task is imported from (its code entry), beside which a team declares
    its environment; None for a task whose code submissions are commands."""
    return task.code_entry.file if task.code_entry is not None else None
class Where:
    """The cluster a judgement runs on, checked before anything is written: a LocalCluster, a running
    scheduler, a cluster file (read now: a wrong file is refused before OUT is made), or an open client."""

    def __init__(self, workers: int | None, scheduler: str | None, cluster_file: Path | None,
                 worker_timeout: float | None, client=None, offers: list[dict] | None = None):
        if sum(option is not None for option in (scheduler, cluster_file, client)) > 1:
            raise JudgeError("give a scheduler address or a cluster file, not both")
        if worker_timeout is not None and worker_timeout <= 0:
            raise JudgeError("the worker timeout must be above 0 seconds")
        self.workers, self.scheduler, self.cluster_file = workers, scheduler, cluster_file
        self.worker_timeout, self.client, self.given_offers = worker_timeout, client, offers
        self.config = read_cluster_file(cluster_file) if cluster_file is not None else None

    @property
    def name(self) -> str:
        if self.config is not None:
            return f"cluster file {self.cluster_file}"
        return f"the scheduler at {self.scheduler}" if self.scheduler else "the local cluster"

    def offers(self) -> list[dict] | None:
        """What one worker offers, before any starts (None: known once they join, a scheduler's)."""
        if self.client is not None:
            return self.given_offers
        if self.config is not None:
            return [worker_offer(self.config)]
        if self.scheduler is None:
            import psutil

            workers = self.workers or os.cpu_count() or 1
            return [{"cores": 1, "memory": psutil.virtual_memory().total // workers, "seconds": None}]
        return None

    def check_units(self, units: list[Unit], offered: list[dict] | None = None) -> None:
        """JudgeError naming the first unit no worker can hold (cluster.check_units)."""
        offered = offered if offered is not None else self.offers()
        if offered is not None and units:
            check_units(offered, [(unit.name, unit.resources, unit.seconds) for unit in units], self.name)

    @contextlib.contextmanager
    def open(self) -> Iterator:
        """A client of the cluster; a running scheduler's workers are waited for and checked first."""
        if self.client is not None:
            yield self.client
            return
        with open_client(self.workers, self.scheduler, self.cluster_file, self.worker_timeout) as client:
            yield client


def check_isolation(code_units: set[str], unisolated: bool, say: Callable[[str], None]) -> None:
    """Refuse to run code submissions where no sandbox can isolate a step (JudgeError naming what to
    install), unless the organiser says so (unisolated), which is then said."""
    if not code_units or containers.bubblewrap_works():
        return
    if not unisolated:
        raise JudgeError(f"{len(code_units)} units run the teams' code, and no sandbox can isolate a step here "
                         f"(bubblewrap is missing or cannot make its namespaces): install bubblewrap (apt-get "
                         f"install bubblewrap), or judge with --unisolated to run their code unisolated")
    say(f"warning: {len(code_units)} units run the teams' code UNISOLATED (--unisolated): it can read the "
        f"reference data and write outside its output; results.csv says so in its isolation column")


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


def units_to_run(store: Store, out: Path, units: list[Unit], inputs: dict[str, dict[str, str]]) -> list[Unit]:
    """The units to run (Store.to_run: without a result, or whose fingerprint changed), and with them every
    unit needing one of them (a score unit whose parts run again is scored again)."""
    run_dirs = {unit.name: run_folder(out, unit).relative_to(out).as_posix() for unit in units}
    first = [unit for unit in units if not unit.needs]
    todo = store.to_run(first, inputs, run_dirs)
    again = {unit.name for unit in todo}
    force = {unit.name for unit in units if any(unit.named(key) in again for key in unit.needs)}
    return todo + store.to_run([unit for unit in units if unit.needs], inputs, run_dirs, force)


def task_layout(root: Path, task: str):
    """The task's programs and data below root (as the runner finds them); JudgeError naming what is
    missing."""
    try:
        return find_layout(root, task)
    except RunnerError as exc:
        raise JudgeError(str(exc)) from exc


def run_on_cluster(store: Store, out: Path, root: Path, todo: list[Unit], units: list[Unit],
                   say: Callable[[str], None], where: Where, retries: int, options: dict) -> str:
    """Run the units to do on the cluster asked for; the dashboard's address ("" when nothing ran)."""
    if not todo:
        say(f"all {len(units)} units already judged: nothing to run")
        return ""
    with where.open() as client:
        dashboard = client.dashboard_link or ""
        say(f"{len(todo)} of {len(units)} units to run; Dask dashboard: {dashboard}")
        if where.offers() is None:  # a running scheduler: its workers, once one has joined
            wait_for_a_worker(client, where.worker_timeout or DEFAULT_WORKER_TIMEOUT)
            where.check_units(todo, resources_of(client))
        Scheduler(client, store, out, root, retries, Progress(len(units), len(units) - len(todo)), say,
                  units, topic=f"codascore-judge-{uuid.uuid4().hex[:12]}", **options).run(todo)
    return dashboard


def status(out: Path) -> str:
    """The table of the units' states per task and team, and the totals, read from OUT/judge.sqlite (read
    only, also on read-only media) without running anything. JudgeError when OUT holds no judgement."""
    try:
        judgement = Judgement.open(Path(out))
    except ReferenceDataError as exc:
        raise JudgeError(str(exc)) from exc
    with judgement:
        return "\n".join([status_table(judgement), *stale_lines(judgement)])
