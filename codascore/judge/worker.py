"""What the judge does on a Dask worker around the units it runs (docs/judge.md#workers).

:class:`UnitGuard`, a worker plugin the judge registers on every worker of its cluster (those that join
later too), makes three promises hold:

- **A step dies with its worker.** The worker process asks the kernel to be killed when its nanny (or the
  judge that started it) dies (``PR_SET_PDEATHSIG``); each step's programs die with the worker
  (codascore.containers); and when the worker closes, the plugin stops every program it still runs, so that
  no attempt writes after its worker is gone.
- **A job retires between units, not inside one.** A worker of a batch job has a deadline: its Dask
  lifetime (``--lifetime``, staggered: cluster.py sets it below the job's walltime) and the walltime itself
  counted from the job's start. A unit that could not end before it is not started there
  (:func:`take_or_pass`): the worker stops taking units (status closing_gracefully, so the scheduler sends
  it none), the unit goes back to the scheduler (``distributed.Reschedule``) for another worker, and once
  the units it runs have ended the worker retires (the scheduler's retire_workers, then close): its job
  ends, and the cluster's adaptive scaling submits a new one. Dask's own lifetime alone would close the
  worker while a unit runs and run that unit again elsewhere.
- **A unit is charged an attempt only if it started.** :func:`claim` makes the attempt's folder (the
  start, on the shared filesystem: a folder that exists is an attempt that started) and tells the judge
  (an event on the judgement's topic, ``Worker.log_event``) with the worker and the time.
"""

from __future__ import annotations

import ctypes
import datetime
import logging
import os
import signal
import time
from pathlib import Path

from distributed import Reschedule, WorkerPlugin, get_worker

from .. import containers
from ..formats.atomic import write_json_atomic
from ..formats.run_folder import UNIT_START

#: Below distributed's logger, so that a worker's log (a job's .err file) shows what the plugin does.
logger = logging.getLogger("distributed.codascore_judge")

#: The plugin's name on a worker (registering it again replaces it).
PLUGIN_NAME = "codascore-judge"
#: Seconds between two looks of a retiring worker at whether its units have ended.
RETIRE_POLL = 0.5


class AttemptClaimed(Exception):
    """The attempt's folder exists: this attempt already started on a worker that left while running it
    (the scheduler then runs the same task again). The judge records that attempt as lost and submits a
    new one, in a folder of its own."""


class UnitGuard(WorkerPlugin):
    """The judge's plugin on each worker (module docstring). walltime: seconds of the worker's batch job
    (None: no job, a LocalCluster's or a scheduler's worker); margin: seconds kept free before it."""

    idempotent = False

    def __init__(self, walltime: float | None = None, margin: float = 0.0):
        self.walltime, self.margin = walltime, margin
        self.worker = None
        self.deadline: float | None = None
        self.retiring = False

    def setup(self, worker) -> None:
        self.worker = worker
        if worker.nanny:  # its parent is its nanny (or the judge holding a LocalCluster's nannies)
            die_with_parent()
        self.deadline = deadline_of(worker, self.walltime, self.margin)
        self.retiring = False

    def teardown(self, worker) -> None:
        stopped = containers.stop_all()
        if stopped:
            logger.warning("codascore judge: stopped %d step program(s) of units still running as the worker closed",
                           stopped)

    def fits(self, seconds: float) -> bool:
        """Whether a unit that may take this many seconds ends before this worker's deadline."""
        return self.deadline is None or time.time() + seconds <= self.deadline

    def stop_taking_units(self) -> None:
        """From a unit's thread: the scheduler sends this worker no more units (its status is no longer
        running), and the worker retires once the units it runs have ended."""
        from distributed.core import Status
        from distributed.utils import sync

        worker = self.worker

        async def closing() -> None:
            if worker.status == Status.running:
                worker.status = Status.closing_gracefully  # tells the scheduler; stops starting queued tasks
            if not self.retiring:
                self.retiring = True
                worker.loop.add_callback(self.retire)

        sync(worker.loop, closing)

    async def retire(self) -> None:
        """Wait until the worker runs no unit, then retire it: the scheduler moves what it holds and the
        units queued on it elsewhere, and the worker (and its nanny: the job) closes."""
        import asyncio

        worker = self.worker
        while worker.state.executing_count or worker.state.long_running:
            await asyncio.sleep(RETIRE_POLL)
        logger.info("codascore judge: the worker retires before its deadline, between units")
        try:
            await worker.scheduler.retire_workers(workers=[worker.address], close_workers=False, remove=True,
                                                  stimulus_id=f"codascore-retire-{time.time()}")
        finally:
            await worker.close(nanny=True, reason="codascore-judge: deadline near, retired between units")


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent dies; leave at once if it is already gone."""
    parent = os.getppid()
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)  # what the kernel would have sent


def deadline_of(worker, walltime: float | None, margin: float) -> float | None:
    """The time (time.time()) by which a unit on this worker must end: its Dask lifetime counted from the
    worker process's start, and its job's walltime less the margin counted from the job's start (the
    nanny's start); None without either."""
    import psutil

    deadlines = []
    me = psutil.Process()
    if getattr(worker, "lifetime", None):
        deadlines.append(me.create_time() + float(worker.lifetime))
    if walltime:
        job = psutil.Process(os.getppid()) if worker.nanny else me
        deadlines.append(job.create_time() + float(walltime) - float(margin))
    return min(deadlines) if deadlines else None


def guard() -> UnitGuard | None:
    """This worker's UnitGuard (None off a worker, or where the judge registered none)."""
    try:
        worker = get_worker()
    except ValueError:
        return None
    plugin = worker.plugins.get(PLUGIN_NAME)
    return plugin if isinstance(plugin, UnitGuard) else None


def take_or_pass(seconds: float) -> None:
    """Start a unit that may take this many seconds here, or, when it could not end before this worker's
    deadline, stop taking units and hand it back to the scheduler (Reschedule) for another worker."""
    plugin = guard()
    if plugin is not None and not plugin.fits(seconds):
        plugin.stop_taking_units()
        raise Reschedule()


def now() -> str:
    """The time as the store records it (store.now, which this module cannot import: the store needs the
    units, which start here): ISO 8601, UTC, to the millisecond."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


def claim(staging: Path, topic: str, key: str, attempt: int, where: str) -> str:
    """Start an attempt: make its folder (AttemptClaimed when it exists: the attempt started before, on a
    worker that left), then tell the judge on its topic. Returns the start's time."""
    try:
        os.mkdir(staging)
    except FileExistsError:
        raise AttemptClaimed(f"attempt {attempt} already started (its folder {staging.name} exists): its worker "
                             f"left while running it") from None
    started = now()
    write_json_atomic(staging / UNIT_START, {"worker": where, "started": started})
    try:
        get_worker().log_event(topic, {"key": key, "attempt": attempt, "worker": where, "started": started})
    except ValueError:  # not on a worker (run_unit called directly)
        pass
    return started
