"""The judge's loop: submit each unit to the cluster, record when a worker starts it and what comes back,
retry what the cluster lost, and move each result's run folder into place only once the result is recorded.

Units are submitted longest first (Dask's priority: its time limit times its steps), with the resources
they ask for, and only as many as twice the cores the cluster has or may come to have
(cluster.cores_for_units): Dask hands such a unit to a worker at once, where it waits its turn, and a worker
that dies sends back all it held. The rest wait here, pending. A unit is **queued** until a worker starts
it: the worker makes the attempt's folder and tells the judge (an event on the judgement's topic), and from
then on the unit is **running** and the attempt counted. A unit lost before it started (its worker died
while it waited there, a job retired) is queued again, for nothing; one lost after it started is an
attempt lost, retried while retries are left. A worker keeps each result in the attempt's folder too
(formats.run_folder.UNIT_RESULT): a result lost with its worker before the judge had it is read there, not
charged again.

A unit's attempt N runs in the staging folder ``runs/<team>/<task>/<unit>.attempt-N``. When it returns, the
result is recorded first, then the folder renamed to ``runs/<team>/<task>/<unit>`` (an older run folder there
is moved aside first and deleted last). So a run folder at its final name always holds a recorded result,
and a judge killed between the two leaves what :func:`settle_folders` finishes at the next start.

A unit that needs others (a score unit, its group's parts) is submitted once they are all recorded and
their folders in place; when one of them is lost to the cluster for good, the unit is an infrastructure
error too ("a part was lost"), run again by the next judgement with it.

Nothing waits forever: between two events the loop asks the cluster (cluster.check_cluster) whether it can
go on (a batch system refusing jobs, no worker for the worker timeout), and a unit Dask could find no worker
for within that time ends the judgement too; the units not yet started are left pending.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import heapq
import itertools
import os
import queue
import re
import shutil
from pathlib import Path
from typing import Callable

from ..errors import JudgeError
from ..formats.run_folder import UNIT_START
from ..outcomes import one_line
from .cluster import check_cluster, cores_for_units, want_workers
from .progress import Progress
from .store import FINISHED, INFRASTRUCTURE, Store, now
from .units import Unit, kept_record, part_record, run_unit, unit_spec

#: What a future raises when the cluster, not the submission, lost the unit: KilledWorker, a broken
#: connection, a cancelled future; any other exception raised by run_unit itself (a full disk on the worker).
LOST = (Exception, asyncio.CancelledError, concurrent.futures.CancelledError)
#: The errors of a unit Dask found no worker for within the scheduler's no-workers-timeout.
NO_WORKER_ERRORS = ("NoWorkerError", "NoValidWorkerError")
#: Seconds between two looks at the cluster while no event comes.
POLL = 1.0
#: The errors of a unit whose worker left (died, retired) while it held it: lost before it started, such a
#: unit is queued again for nothing; any other error costs an attempt, started or not.
WORKER_LEFT = ("KilledWorker", "CancelledError", "FutureCancelledError")
#: How often a unit may be queued again for nothing (a guard against a unit that kills every worker before
#: it can tell the judge it started): past this, each loss costs an attempt.
FREE_REQUEUES = 50


def run_folder(out: Path, unit: Unit) -> Path:
    """Where a unit's run folder ends up."""
    return Path(out) / "runs" / unit.team / unit.task / unit.key


def staging_folder(out: Path, unit: Unit, attempt: int) -> Path:
    """Where attempt N of a unit runs before its result is recorded."""
    return run_folder(out, unit).with_name(f"{unit.key}.attempt-{attempt}")


def place_run_folder(staging: Path, final: Path) -> None:
    """Rename the recorded attempt's folder to the unit's run folder; an older one is moved aside first
    and deleted only once the new one is in place."""
    if not staging.is_dir():
        return
    aside = final.with_name(f"{final.name}.replaced")
    if final.exists():
        if aside.exists():
            shutil.rmtree(aside)
        os.replace(final, aside)
    os.replace(staging, final)
    if aside.exists():
        shutil.rmtree(aside)


def settle_folders(store: Store, out: Path) -> None:
    """Finish what a judge killed between recording a result and moving its folder left: the recorded
    attempt's staging folder renamed into place, a folder moved aside and not yet deleted removed."""
    for row in store.rows():
        final = Path(out) / row["run_dir"]
        if row["state"] in FINISHED:
            place_run_folder(final.with_name(f"{final.name}.attempt-{row['attempt']}"), final)
        aside = final.with_name(f"{final.name}.replaced")
        if aside.is_dir() and final.is_dir():
            shutil.rmtree(aside)
        elif aside.is_dir():  # killed between the two renames and the attempt folder gone: keep the old one
            os.replace(aside, final)


def attempt_folders(out: Path, units: list[Unit]) -> dict[str, int]:
    """unit name -> the highest attempt number among its staging folders on disk (one listing per team and
    task), so that a new attempt never takes the folder of one a killed judge did not record."""
    found: dict[str, int] = {}
    by_folder: dict[Path, list[Unit]] = {}
    for unit in units:
        by_folder.setdefault(run_folder(out, unit).parent, []).append(unit)
    for folder, listed in by_folder.items():
        numbers: dict[str, int] = {}
        if folder.is_dir():
            for entry in os.listdir(folder):
                match = re.fullmatch(r"(.+)\.attempt-(\d+)", entry)
                if match:
                    numbers[match[1]] = max(numbers.get(match[1], 0), int(match[2]))
        for unit in listed:
            found[unit.name] = numbers.get(unit.key, 0)
    return found


class Scheduler:
    """Runs units on a Dask client and records each attempt; at most retries+1 attempts per unit in this
    judgement. topic: the judgement's event topic (workers tell the judge there when they start a unit);
    digests: the folders the units read, by path (the workers keep their archives); code: the names of the
    units that run a participant's code; unisolated: whether the organiser allowed that unisolated."""

    def __init__(self, client, store: Store, out: Path, root: Path, retries: int, progress: Progress,
                 say: Callable[[str], None], units: list[Unit] = (), topic: str = "codascore-judge",
                 digests: dict[str, str] | None = None, code: set[str] = frozenset(), unisolated: bool = False):
        self.client, self.store, self.out, self.root = client, store, Path(out), Path(root)
        self.units = {unit.name: unit for unit in units}  # every unit of the judgement, run now or not
        self.retries, self.progress, self.say = retries, progress, say
        self.topic, self.digests, self.code, self.unisolated = topic, dict(digests or {}), set(code), unisolated
        self.running: dict = {}  # future -> (unit, attempt, tries in this judgement)
        self.current: dict[str, int] = {}  # unit name -> its attempt now queued or running
        self.waiting: dict[str, tuple[Unit, set[str]]] = {}  # name -> (unit, the names it still waits for)
        self.events: queue.Queue = queue.Queue()
        self.submitted = 0
        self.folders: dict[str, int] = {}
        self.requeues: dict[str, int] = {}
        self.ready: list = []  # a heap of (-seconds, order, unit, tries, attempt): held back until pumped
        self.order = itertools.count()

    def run(self, units: list[Unit]) -> None:
        """Run the units: those needing nothing unfinished at once, the others as their needs finish (a need
        not among units is finished already: the judge runs a unit again with whatever it needs). On any
        way out before the end, the units no worker started are left pending."""
        self.folders = attempt_folders(self.out, units)
        names = {unit.name for unit in units}
        self.client.subscribe_topic(self.topic, lambda event: self.events.put(("start", event[1])))
        try:
            for unit in sorted(units, key=lambda unit: -unit.seconds):
                needs = {unit.named(key) for key in unit.needs} & names
                if needs:
                    self.waiting[unit.name] = (unit, needs)
                else:
                    self.submit(unit, tries=1)
            self.pump()
            self.say(self.progress.line())
            while self.running or self.ready:
                try:
                    what, payload = self.events.get(timeout=POLL)
                except queue.Empty:
                    check_cluster(self.client)
                else:
                    if what == "start":
                        self.heard_start(payload)
                    else:
                        self.ended(payload)
                self.pump()
        finally:
            self.client.unsubscribe_topic(self.topic)
            if self.running:
                self.client.cancel(list(self.running))
                released = self.store.release(next(iter(self.units.values())).task) if self.units else 0
                if released:
                    self.say(f"{released} units no worker had started are pending again")

    def submit(self, unit: Unit, tries: int, attempt: int | None = None) -> None:
        """Hold an attempt of the unit (attempt: one lost before it started, else a new one) until
        :meth:`pump` sends it."""
        heapq.heappush(self.ready, (-unit.seconds, next(self.order), unit, tries, attempt))

    def pump(self) -> None:
        """Send the held units, longest first, while the cores they ask stay within twice what the cluster
        has or may come to have; one at least while none is out."""
        want_workers(self.client, [unit.resources for unit, _, _ in self.running.values()]
                     + [unit.resources for _, _, unit, _, _ in self.ready]
                     + [unit.resources for unit, _ in self.waiting.values()])
        if not self.ready:
            return
        limit = cores_for_units(self.client)
        out = sum(unit.resources.get("cores", 1) for unit, _, _ in self.running.values())
        while self.ready and (not self.running or out + self.ready[0][2].resources.get("cores", 1) <= limit):
            _, _, unit, tries, attempt = heapq.heappop(self.ready)
            self.send(unit, tries, attempt)
            out += unit.resources.get("cores", 1)

    def send(self, unit: Unit, tries: int, attempt: int | None) -> None:
        """Queue the attempt (a new number unless given) and submit it under a key of its own."""
        if attempt is None:
            attempt = self.store.next_attempt(unit, self.folders.get(unit.name, 0) + 1)
        self.store.queue(unit, attempt)
        staging = staging_folder(self.out, unit, attempt)
        staging.parent.mkdir(parents=True, exist_ok=True)
        spec = unit_spec(unit, staging, self.root, self.needed_parts(unit), attempt, self.topic,
                         {**self.digests, **{str(Path(unit.submission).resolve()): unit_sha(self.store, unit)}},
                         unit.name in self.code, self.unisolated)
        self.submitted += 1
        future = self.client.submit(run_unit, spec, key=f"judge-{self.topic}-{unit.name}-attempt-{attempt}"
                                    f"-{self.submitted}", pure=False, resources=dict(unit.resources), retries=0,
                                    priority=int(unit.seconds))
        self.running[future] = (unit, attempt, tries)
        self.current[unit.name] = attempt
        self.progress.queued += 1
        future.add_done_callback(lambda done: self.events.put(("end", done)))

    def heard_start(self, event: dict) -> None:
        """A worker started an attempt: the unit is running from the worker's time."""
        unit = self.units.get(event.get("key"))
        if unit is None:
            return
        if self.store.start(unit, int(event["attempt"]), str(event.get("worker")), str(event.get("started"))):
            self.progress.queued -= 1
            self.progress.running += 1

    def ended(self, future) -> None:
        """A future ended: its result recorded, or its loss."""
        if future not in self.running:
            return
        unit, attempt, tries = self.running.pop(future)
        started = self.store.row(unit)["state"] != "queued"
        self.progress.running -= started
        self.progress.queued -= not started
        try:
            result = future.result()
        except LOST as exc:
            if type(exc).__name__ in NO_WORKER_ERRORS:
                raise JudgeError(f"{unit.name}: no worker of the cluster could take it within the worker timeout "
                                 f"({one_line(exc).split(':')[0]}); the units not started are pending for the next "
                                 f"judgement") from None
            self.lost(unit, attempt, tries, exc)
        else:
            self.returned(unit, attempt, tries, result)
        finally:
            future.release()

    def needed_parts(self, unit: Unit) -> list[dict]:
        """What each part a score unit needs left, as recorded (units.part_record), in the order of its needs."""
        records = []
        for key in unit.needs:
            part = self.units[unit.named(key)]
            row = self.store.row(part)
            records.append(part_record(part.part or {}, row, Path(self.out) / row["run_dir"]))
        return records

    def returned(self, unit: Unit, attempt: int, tries: int, result: dict) -> None:
        """A worker's answer: an organiser's error is final (no retry changes it); a result is recorded, then
        its folder moved into place."""
        if "organiser_error" in result:
            self.store.record_lost(unit, attempt, f"organiser's error: {result['organiser_error']}", True,
                                   result.get("worker"), result.get("started"))
            self.progress.finish(INFRASTRUCTURE)
            self.say(f"{unit.name}: {result['organiser_error']}")
            self.need_ended(unit.name, lost=True)
            return
        state = self.store.record_result(unit, attempt, result)
        place_run_folder(staging_folder(self.out, unit, attempt), run_folder(self.out, unit))
        if attempt > 1:  # an earlier attempt lost inside a score unit's merge leaves its temporary folder
            for left in run_folder(self.out, unit).parent.glob(f".{unit.key}.attempt-*.merged"):
                shutil.rmtree(left, ignore_errors=True)
        self.progress.finish(state)
        self.say(f"{unit.name}: {state} ({result['outcome'].lower()}, {result['elapsed']:.1f} s); "
                 f"{self.progress.line()}")
        self.need_ended(unit.name, lost=False)

    def need_ended(self, name: str, lost: bool) -> None:
        """A unit has ended: submit each unit waiting for it whose needs are now all finished; when it was
        lost for good, its dependants (and theirs) are infrastructure errors instead."""
        for waiting_name, (unit, needs) in list(self.waiting.items()):
            if name not in needs:
                continue
            needs.discard(name)
            if lost:
                del self.waiting[waiting_name]
                self.store.record_blocked(unit, f"a part was lost: {name} (lost to the cluster or the setup)")
                self.progress.finish(INFRASTRUCTURE)
                self.say(f"{unit.name}: infrastructure error: a part was lost ({name})")
                self.need_ended(waiting_name, lost=True)
            elif not needs:
                del self.waiting[waiting_name]
                self.submit(unit, tries=1)

    def lost(self, unit: Unit, attempt: int, tries: int, exc: BaseException) -> None:
        """The cluster lost the attempt. One that never started (no folder made, no start heard) is queued
        again as the same attempt, for nothing; one that started is retried while retries are left, else an
        infrastructure error."""
        kept = kept_record(staging_folder(self.out, unit, attempt))
        if kept is not None:  # it ended; its worker died before the judge had the result
            self.returned(unit, attempt, tries, kept)
            return
        started = any(entry["attempt"] == attempt for entry in self.store.attempts(unit)) \
            or staging_folder(self.out, unit, attempt).is_dir()
        free = type(exc).__name__ in WORKER_LEFT and self.requeues.get(unit.name, 0) < FREE_REQUEUES
        if not started and free:
            self.requeues[unit.name] = self.requeues.get(unit.name, 0) + 1
            self.progress.requeued += 1
            self.submit(unit, tries, attempt)
            return
        reason = f"attempt {attempt}: {type(exc).__name__}: {one_line(exc)}"
        final = tries > self.retries
        self.store.record_lost(unit, attempt, reason, final, *lost_start(staging_folder(self.out, unit, attempt), exc))
        if final:
            self.progress.finish(INFRASTRUCTURE)
            self.say(f"{unit.name}: infrastructure error after {tries} attempts: {reason}")
            self.need_ended(unit.name, lost=True)
        else:
            self.say(f"{unit.name}: {reason}; retrying")
            self.submit(unit, tries + 1)


def lost_start(staging: Path, exc: BaseException) -> tuple[str | None, str | None]:
    """Where and when a lost attempt started: its start record, else (its worker died between making the
    attempt's folder and recording the start) the worker Dask last gave it to and the folder's time."""
    start = kept_record(staging, UNIT_START) or {}
    worker, started = start.get("worker"), start.get("started")
    if worker is None:
        worker = getattr(getattr(exc, "last_worker", None), "address", None)  # KilledWorker's
    if started is None:
        with contextlib.suppress(OSError):
            started = now(staging.stat().st_mtime)
    return worker, started


def unit_sha(store: Store, unit: Unit) -> str:
    """The digest of the unit's submission as recorded for this judgement."""
    row = store.row(unit)
    return row["submission_sha256"] if row is not None else ""
