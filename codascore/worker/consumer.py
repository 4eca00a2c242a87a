"""The worker's hold on the queue: jobs taken from the broker as slots free up, each run in a thread of its
own, each acknowledged only once it has ended (docs/worker.md#the-queue).

kombu speaks to the broker (the queue's address as the site's queue page gives it). A job is taken with
``basic.get``, one per free slot, so the worker never holds more jobs than it can start: a job it holds
stays unacknowledged until it has ended on the site, and a worker that dies (SIGKILL, a lost node) leaves
it to the broker, which delivers it again to whichever worker asks next. A lost connection (the broker
restarted) is opened again while the running jobs go on; the jobs of the old connection were handed back
by the broker when it closed, so their end is not acknowledged: their next delivery finds them done on the
site (:meth:`codascore.worker.job.JobRun.already_done`) and is acknowledged then.

A graceful stop (SIGTERM, or ``--max-jobs`` reached) takes no new job and lets the running ones finish
for ``grace`` seconds; then each is stopped and given back to the queue (rejected with requeue). A second
SIGTERM or SIGINT gives them back at once.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
from typing import Callable

from kombu import Connection
from kombu.exceptions import ContentDisallowed, SerializationError

from ..errors import MessageError, WorkerError
from ..outcomes import one_line
from .job import JobEnd, JobRun, Workplace
from .messages import COMPUTE_QUEUE, Job, read_job, run_args_of

#: Seconds between two looks for jobs when slots are free, and the broker's heartbeat and socket limits.
POLL = 0.5
HEARTBEAT = 30
SOCKET_TIMEOUT = 60
#: AMQP reply codes no reconnection helps: ACCESS_REFUSED (the user or password), NOT_FOUND, PRECONDITION_FAILED
#: (a queue of that name declared otherwise), NOT_ALLOWED (the virtual host).
REFUSALS = (403, 404, 406, 530)


class Stopping(Exception):
    """Raised inside a reconnection's wait when the worker is asked to stop."""


@dataclasses.dataclass
class Held:
    """A job the worker holds: its message (from connection number generation), its thread, its stop."""

    job: Job
    message: object
    generation: int
    stop: threading.Event = dataclasses.field(default_factory=threading.Event)
    thread: threading.Thread | None = None


@dataclasses.dataclass
class Summary:
    """What a worker did before it stopped: jobs ended (acknowledged), given back, and why it stopped."""

    ended: int = 0
    given_back: int = 0
    reason: str = ""


class Consumer:
    """Serve the compute-worker queue at broker_url with the workplace's slots; say: one line for a person
    (each job's end, the connection's state); max_jobs: stop after taking that many; grace: seconds the
    running jobs have to finish after a stop is asked."""

    def __init__(self, broker_url: str, place: Workplace, say: Callable[[str], None],
                 max_jobs: int | None = None, grace: float = 60.0, poll: float = POLL):
        self.connection = Connection(broker_url, heartbeat=HEARTBEAT, connect_timeout=SOCKET_TIMEOUT,
                                     transport_options={"read_timeout": SOCKET_TIMEOUT,
                                                        "write_timeout": SOCKET_TIMEOUT})
        self.place, self.say, self.max_jobs, self.grace, self.poll = place, say, max_jobs, grace, poll
        self.held: dict[int, Held] = {}  # by id(Held): a job delivered twice is held twice
        self.ended: queue.Queue[tuple[Held, JobEnd]] = queue.Queue()
        self.wake = threading.Event()
        self.stop_asked: float | None = None  # monotonic time of the first stop request
        self.deadline: float | None = None  # when the running jobs are given back (None: they finish)
        self.abort = False
        self.taken = 0
        self.generation = 0
        self.summary = Summary()

    @property
    def broker_errors(self) -> tuple[type[Exception], ...]:
        return (self.connection.recoverable_connection_errors + self.connection.connection_errors
                + self.connection.channel_errors)

    @property
    def address(self) -> str:
        """The broker's address without its password."""
        return self.connection.as_uri()

    # -- stopping -----------------------------------------------------------------------------------------
    def request_stop(self, reason: str, grace: bool = True) -> None:
        """A graceful stop (a first SIGTERM: the running jobs get the grace to finish; --max-jobs reached:
        they finish); asked again, the running jobs are given back at once."""
        if self.stop_asked is None:
            self.stop_asked, self.summary.reason = time.monotonic(), reason
            self.deadline = self.stop_asked + self.grace if grace else None
            limit = f"{self.grace:g} s" if grace else "until they end"
            self.say(f"stopping ({reason}): no new job; {len(self.held)} running may finish ({limit})")
        elif grace:
            self.abort = True
        self.wake.set()

    @property
    def stopping(self) -> bool:
        return self.stop_asked is not None

    def check_stop(self, *args) -> None:
        """Called while the broker is out of reach: the jobs that end meanwhile are settled (their deliveries
        were the lost connection's), and a stop with no job left running ends the wait."""
        self.settle()
        if self.stopping and not self.held:
            raise Stopping()

    # -- the loop -----------------------------------------------------------------------------------------
    def serve(self) -> Summary:
        """Take and run jobs until stopped (or max_jobs taken and ended); reconnect whenever the broker is
        lost. WorkerError when the broker refuses the user, the password or the virtual host."""
        while not (self.stopping and not self.held):
            try:
                self.connected()
            except Stopping:
                break
            except self.broker_errors as exc:
                if getattr(exc, "code", None) in REFUSALS:
                    raise WorkerError(f"the broker {self.address} refuses this worker: {one_line(exc)}") from None
                self.say(f"lost the broker ({type(exc).__name__}: {one_line(exc)}); connecting again")
                self.wait(2.0)
        self.place.log.info("stopped: %d jobs ended, %d given back", self.summary.ended, self.summary.given_back)
        return self.summary

    def connected(self) -> None:
        """One connection's life: connect (retrying), then take, settle and wait until stopped or lost."""
        with self.connection.clone() as conn:
            conn.ensure_connection(errback=self.connect_failed, max_retries=None, interval_start=1,
                                   interval_step=2, interval_max=30, callback=self.check_stop)
            self.generation += 1
            compute_queue = COMPUTE_QUEUE(conn.default_channel)
            compute_queue.declare()
            self.say(f"connected to {conn.as_uri()}, queue {compute_queue.name}")
            while not (self.stopping and not self.held):
                self.settle()
                for _ in range(self.free()):
                    message = compute_queue.get(no_ack=False, accept=["json"])
                    if message is None:
                        break
                    self.take(message)
                self.wait(self.poll)
                conn.heartbeat_check()
            self.settle()

    def connect_failed(self, exc: Exception, interval: float) -> None:
        self.say(f"cannot reach the broker {self.address} ({type(exc).__name__}: {one_line(exc)}); "
                 f"trying again in {interval:g} s")

    def wait(self, seconds: float) -> None:
        """Sleep until a job ends or a stop is asked, at most seconds."""
        self.wake.wait(seconds)
        self.wake.clear()
        self.settle()

    def free(self) -> int:
        """Jobs to take now: the slots not held, never past max_jobs; none when stopping."""
        if self.stopping:
            return 0
        try:
            capacity = self.place.slots.capacity()
        except Exception as exc:  # a scheduler gone away: take nothing until it answers again
            self.place.log.warning("cannot count the slots: %s", one_line(exc))
            return 0
        free = capacity - len(self.held)
        if self.max_jobs is not None:
            free = min(free, self.max_jobs - self.taken)
        return max(free, 0)

    # -- jobs ---------------------------------------------------------------------------------------------
    def take(self, message) -> None:
        """Read a message's job and start it (a copy of a job this worker runs waits for it to end); a
        message that is no job of ours is acknowledged and dropped, as a Celery worker drops it."""
        self.taken += 1
        if self.max_jobs is not None and self.taken >= self.max_jobs:
            self.request_stop(f"--max-jobs {self.max_jobs} taken", grace=False)
        try:
            headers = message.headers
            job = read_job(run_args_of(message.decode(), headers), headers, message.delivery_info.get("redelivered"))
        except (MessageError, SerializationError, ContentDisallowed, ValueError, TypeError) as exc:
            self.say(f"dropped a message that is no job of this worker: {one_line(exc)}")
            message.ack()
            return
        held = Held(job, message, self.generation)
        self.place.log.info("%s: taken from the queue", job.name)
        self.held[id(held)] = held
        if not self.running_copy(held):
            self.start(held)

    def running_copy(self, held: Held) -> bool:
        return any(other is not held and other.job.key == held.job.key and other.thread is not None
                   for other in self.held.values())

    def start(self, held: Held) -> None:
        held.thread = threading.Thread(target=self.run_job, args=(held,), daemon=True,
                                       name=f"job-{held.job.submission_id}-{held.job.step}")
        held.thread.start()

    def run_job(self, held: Held) -> None:
        end = JobRun(held.job, self.place, held.stop).run()
        self.ended.put((held, end))
        self.wake.set()

    def settle(self) -> None:
        """Acknowledge each ended job (give back each one not done), start the copies that waited for them,
        and stop the running jobs once a stop's grace is over."""
        while True:
            try:
                held, end = self.ended.get_nowait()
            except queue.Empty:
                break
            del self.held[id(held)]
            self.answer(held, end.done)
            if end.done:
                self.summary.ended += 1
            else:
                self.summary.given_back += 1
            self.say(end.line())
            if not any(other.job.secret == held.job.secret for other in self.held.values()):
                self.place.redactor.discard(held.job.secret)
            for waiting in self.held.values():
                if waiting.thread is None and not self.running_copy(waiting):
                    self.start(waiting)
                    break
        if self.stopping and (self.abort or (self.deadline is not None and time.monotonic() >= self.deadline)):
            for key, held in list(self.held.items()):
                if held.thread is None:  # a copy that waited: back to the queue, unstarted
                    del self.held[key]
                    self.answer(held, done=False)
                    self.summary.given_back += 1
                held.stop.set()

    def answer(self, held: Held, done: bool) -> None:
        """Acknowledge (done) or give back the job's message, on the connection that delivered it: the
        broker has already given back the jobs of a lost connection."""
        if held.generation != self.generation:
            self.place.log.info("%s: its delivery belonged to a lost connection (the broker delivers it again)",
                                held.job.name)
            return
        try:
            held.message.ack() if done else held.message.requeue()
        except self.broker_errors as exc:
            self.place.log.info("%s: the broker did not take the answer (%s); it delivers the job again",
                                held.job.name, one_line(exc))
