"""The judge's loop: submit each unit to the cluster, record what comes back, retry what the cluster lost,
and move each result's run folder into place only once the result is recorded.

A unit's attempt N runs in the staging folder ``runs/<team>/<task>/<unit>.attempt-N``. When it returns, the
result is recorded first, then the folder renamed to ``runs/<team>/<task>/<unit>`` (an older run folder there
is moved aside first and deleted last). So a run folder at its final name always holds a recorded result,
and a judge killed between the two leaves what :func:`settle_folders` finishes at the next start.

A unit that needs others (a score unit, its group's parts) is submitted once they are all recorded and
their folders in place; when one of them is lost to the cluster for good, the unit is an infrastructure
error too ("a part was lost"), run again by the next judgement with it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import shutil
from pathlib import Path
from typing import Callable

from ..outcomes import one_line
from .progress import Progress
from .store import FINISHED, INFRASTRUCTURE, Store
from .units import Unit, part_record, run_unit, unit_spec

#: What a future raises when the cluster, not the submission, lost the unit: KilledWorker, a broken
#: connection, a cancelled future; any other exception raised by run_unit itself (a full disk on the worker).
LOST = (Exception, asyncio.CancelledError, concurrent.futures.CancelledError)


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


class Scheduler:
    """Runs units on a Dask client and records each attempt; at most retries+1 attempts per unit in this
    judgement."""

    def __init__(self, client, store: Store, out: Path, root: Path, retries: int, progress: Progress,
                 say: Callable[[str], None], units: list[Unit] = ()):
        self.client, self.store, self.out, self.root = client, store, Path(out), Path(root)
        self.units = {unit.name: unit for unit in units}  # every unit of the judgement, run now or not
        self.retries, self.progress, self.say = retries, progress, say
        self.running: dict = {}  # future -> (unit, attempt, tries in this judgement)
        self.waiting: dict[str, tuple[Unit, set[str]]] = {}  # name -> (unit, the names it still waits for)

    def run(self, units: list[Unit]) -> None:
        """Run the units: those needing nothing unfinished at once, the others as their needs finish (a need
        not among units is finished already: the judge runs a unit again with whatever it needs)."""
        from distributed import as_completed

        self.completed = as_completed()
        names = {unit.name for unit in units}
        for unit in units:
            needs = {unit.named(key) for key in unit.needs} & names
            if needs:
                self.waiting[unit.name] = (unit, needs)
            else:
                self.submit(unit, tries=1)
        self.say(self.progress.line())
        for future in self.completed:
            unit, attempt, tries = self.running.pop(future)
            self.progress.running -= 1
            try:
                result = future.result()
            except LOST as exc:
                self.lost(unit, attempt, tries, f"attempt {attempt}: {type(exc).__name__}: {one_line(exc)}")
            else:
                self.returned(unit, attempt, tries, result)
            finally:
                future.release()

    def submit(self, unit: Unit, tries: int) -> None:
        """Record a new attempt, then submit it under a key of its own (the unit's name and the attempt)."""
        attempt = self.store.start_attempt(unit)
        spec = unit_spec(unit, staging_folder(self.out, unit, attempt), self.root, self.needed_parts(unit))
        staging_folder(self.out, unit, attempt).parent.mkdir(parents=True, exist_ok=True)
        future = self.client.submit(run_unit, spec, key=f"judge-{unit.name}-attempt-{attempt}", pure=False,
                                    resources=dict(unit.resources), retries=0)
        self.running[future] = (unit, attempt, tries)
        self.progress.running += 1
        self.completed.add(future)

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
                                   result.get("worker"))
            self.progress.finish(INFRASTRUCTURE)
            self.say(f"{unit.name}: {result['organiser_error']}")
            self.need_ended(unit.name, lost=True)
            return
        state = self.store.record_result(unit, attempt, result)
        place_run_folder(staging_folder(self.out, unit, attempt), run_folder(self.out, unit))
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

    def lost(self, unit: Unit, attempt: int, tries: int, reason: str) -> None:
        """The cluster lost the attempt: try again while retries are left, else an infrastructure error."""
        final = tries > self.retries
        self.store.record_lost(unit, attempt, reason, final)
        if final:
            self.progress.finish(INFRASTRUCTURE)
            self.say(f"{unit.name}: infrastructure error after {tries} attempts: {reason}")
            self.need_ended(unit.name, lost=True)
        else:
            self.say(f"{unit.name}: {reason}; retrying")
            self.submit(unit, tries + 1)
