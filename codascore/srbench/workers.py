"""Run many small jobs in parallel worker processes, each job under a hard time limit.

Scoring one model can get stuck inside sympy (in C code, or in a loop that swallows the alarm). The
in-process SIGALRM limit of canonical_form.time_limit handles the common case; this pool is the backstop: a
worker still busy on one job past ``time_limit`` seconds is killed (SIGKILL, by its own pid) and replaced,
the job is reported as timed out, and the run carries on with the others.

With ``fresh_process=True`` (code submissions, docs/srbench.md#code-submissions) every job gets a process of
its own: the worker is killed with its process group once it has replied, and a new one, forked from the
parent, takes the next job; nothing one job imported or changed reaches the next.
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import signal
import time
import traceback
from multiprocessing.connection import wait
from typing import Any, Callable, Sequence

from ..progress import Counter

#: Address-space limit of a worker (bytes); a memory bomb fails the job instead of the machine.
WORKER_MEMORY_LIMIT = 4 * 1024**3
#: Largest reply a worker may send (bytes).
MAX_REPLY_BYTES = 64 * 1024**2


@dataclasses.dataclass
class Outcome:
    """What happened to one job: status "ok" (value holds the result, as plain JSON data), "error" or
    "timeout" (message)."""

    status: str
    value: Any = None
    message: str = ""
    seconds: float = 0.0


def default_workers() -> int:
    """All cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _worker_main(conn, func: Callable, memory_limit: int | None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when workers stop
    try:
        os.setsid()  # own process group: anything a job starts dies with the worker
    except OSError:
        pass
    if memory_limit:
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
        except (ImportError, ValueError, OSError):
            pass
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        index, args = job
        try:
            reply = [index, "ok", func(*args), ""]
        except BaseException as exc:  # report any failure of one job; the worker keeps serving
            reply = [index, "error", None, f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}"]
        try:
            data = json.dumps(reply)
        except (TypeError, ValueError) as exc:
            data = json.dumps([index, "error", None, f"the result is not plain data: {exc}"])
        conn.send_bytes(data.encode())


class _Worker:
    def __init__(self, context, func, memory_limit):
        self.conn, child = context.Pipe(duplex=True)
        self.process = context.Process(target=_worker_main, args=(child, func, memory_limit), daemon=True)
        self.process.start()
        child.close()
        self.job: int | None = None
        self.started = 0.0

    def kill(self) -> None:
        if self.process.is_alive():
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):  # not yet its own group leader
                try:
                    os.kill(self.process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self.process.join()
        self.conn.close()


class _Pool:
    """The worker processes of one :func:`run_jobs` call, the jobs not yet taken and the outcomes so far."""

    def __init__(self, func: Callable, jobs: Sequence[tuple], time_limit: float, n_workers: int | None,
                 progress: Counter | None, memory_limit: int | None, fresh_process: bool):
        self.func, self.jobs, self.time_limit, self.progress = func, jobs, time_limit, progress
        self.memory_limit, self.fresh_process = memory_limit, fresh_process
        self.outcomes: list[Outcome | None] = [None] * len(jobs)
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        self.context = multiprocessing.get_context(method)
        n_workers = max(1, min(n_workers or default_workers(), len(jobs)))
        self.pending = list(range(len(jobs)))[::-1]
        self.workers = [_Worker(self.context, func, memory_limit) for _ in range(n_workers)]
        self.done = self.failed = 0

    def finish(self, index: int, outcome: Outcome) -> None:
        self.outcomes[index] = outcome
        self.done += 1
        self.failed += outcome.status != "ok"
        if self.progress:
            self.progress.update(self.done, self.failed)

    def renew(self, worker: _Worker) -> None:
        """Kill worker (and whatever it started) and give its next job to a new process."""
        worker.kill()
        self.workers[self.workers.index(worker)] = replacement = _Worker(self.context, self.func,
                                                                         self.memory_limit)
        self.assign(replacement)

    def assign(self, worker: _Worker) -> None:
        if self.pending:
            worker.job = self.pending.pop()
            worker.started = time.monotonic()
            worker.conn.send((worker.job, self.jobs[worker.job]))
        else:
            worker.job = None

    def busy(self) -> list[_Worker]:
        return [worker for worker in self.workers if worker.job is not None]

    def wait_round(self) -> None:
        """Wait for a reply or the next deadline; then take every reply and stop every job past its limit."""
        busy = self.busy()
        now = time.monotonic()
        next_deadline = min(worker.started + self.time_limit for worker in busy)
        ready = wait([worker.conn for worker in busy], timeout=max(0.0, next_deadline - now))
        for worker in list(busy):
            elapsed = time.monotonic() - worker.started
            if worker.conn in ready:
                self.take_reply(worker, elapsed)
            elif elapsed >= self.time_limit:
                self.finish(worker.job, Outcome("timeout", message=f"stopped at the time limit of "
                                                                   f"{self.time_limit:g} s", seconds=elapsed))
                self.renew(worker)

    def take_reply(self, worker: _Worker, elapsed: float) -> None:
        """Record a worker's reply and give it (or, fresh_process, a new process) the next job."""
        try:
            # JSON, never pickle: a job may run participant code (ingestion), and the
            # parent must not unpickle what such a process sends.
            index, status, value, message = json.loads(worker.conn.recv_bytes(MAX_REPLY_BYTES))
            if index != worker.job:
                raise OSError("reply for another job")
        except (EOFError, OSError, ValueError, TypeError):
            code = worker.process.exitcode
            why = f"worker process died or sent an invalid reply (exit code {code})"
            self.finish(worker.job, Outcome("error", message=why, seconds=elapsed))
            self.renew(worker)
            return
        self.finish(index, Outcome(status, value, message, elapsed))
        if self.fresh_process and self.pending:
            self.renew(worker)
        else:
            self.assign(worker)

    def close(self) -> None:
        """Ask every live worker to stop, then kill it (and its process group) all the same."""
        for worker in self.workers:
            if worker.process.is_alive():
                try:
                    worker.conn.send(None)
                except OSError:
                    pass
                worker.process.join(1)
            worker.kill()


def run_jobs(func: Callable, jobs: Sequence[tuple], time_limit: float, n_workers: int | None = None,
             progress: Counter | None = None, memory_limit: int | None = WORKER_MEMORY_LIMIT,
             fresh_process: bool = False) -> list[Outcome]:
    """Call func(*job) for every job in worker processes; one Outcome per job, in order.

    ``func`` must be a module-level function (workers are forked, or spawned where fork is missing).
    Every job gets ``time_limit`` seconds of wall time from the moment a worker takes it. fresh_process:
    one process per job (at most n_workers at a time), each killed after its reply.
    """
    if time_limit <= 0:
        raise ValueError(f"time_limit must be positive, got {time_limit}")
    if not jobs:
        return []
    pool = _Pool(func, jobs, time_limit, n_workers, progress, memory_limit, fresh_process)
    try:
        for worker in pool.workers:
            pool.assign(worker)
        while pool.busy():
            pool.wait_round()
    finally:
        pool.close()
    if progress:
        progress.update(pool.done, pool.failed)
    return [outcome for outcome in pool.outcomes]  # every slot is filled by now
