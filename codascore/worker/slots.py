"""Where the steps of the jobs a worker holds run, and how many may run at once: its slots.

- :class:`LocalSlots`: on this machine, ``--jobs N`` at a time (compute_worker.py runs one: its Celery
  concurrency is 1);
- :class:`ClusterSlots`: each step a unit on a Dask cluster (``--cluster FILE``, the judge's cluster files,
  e.g. SLURM through dask-jobqueue, or ``--scheduler ADDRESS``), asking the Dask resources the organiser
  gives the queue (``--cores``, ``--memory``). The slots are the units the cluster's workers can run at once
  with those resources, counted again each time the worker looks for jobs: a batch job still queued offers
  none, so the worker takes no job it could not start.

A unit the cluster loses (its worker killed, a node gone) is run again up to ``retries`` times, then the job
fails with the reason; its stop is asked through a Dask Event the unit watches (:mod:`.units`).
"""

from __future__ import annotations

import threading
import uuid
from typing import Callable

from ..outcomes import one_line
from .units import run_step_spec

#: Seconds a stopped unit has to say so before its future is cancelled.
STOP_GRACE = 30.0


class LocalSlots:
    """Steps run in this process (each in its job's thread), jobs at a time."""

    def __init__(self, jobs: int = 1):
        self.jobs = jobs

    def capacity(self) -> int:
        return self.jobs

    def describe(self) -> str:
        return f"{self.jobs} job{'s' if self.jobs > 1 else ''} at a time on this machine"

    def run(self, spec: dict, stop: threading.Event, name: str) -> dict:
        return run_step_spec(spec, stop.is_set)


def fitting_units(offers: list[dict], asked: dict[str, float]) -> int:
    """How many units asking asked (Dask resources) the workers offering offers can run at once."""
    return sum(min(int(offer.get(key, 0) // amount) for key, amount in asked.items()) for offer in offers)


class ClusterSlots:
    """Steps run as units on a Dask cluster (a client of it), each asking resources; a lost unit is run
    again up to retries times."""

    def __init__(self, client, resources: dict[str, float], retries: int = 2,
                 say: Callable[[str], None] = lambda line: None):
        self.client, self.resources, self.retries, self.say = client, dict(resources), retries, say

    def offers(self) -> list[dict]:
        info = self.client.scheduler_info(n_workers=-1)
        return [worker.get("resources") or {} for worker in info["workers"].values()]

    def capacity(self) -> int:
        """The units the cluster's workers can run at once, or those its planned jobs will (a cluster file's
        maximum_jobs: adaptive scaling starts them only once work is waiting)."""
        from ..judge.cluster import planned_offers

        return max(fitting_units(self.offers(), self.resources),
                   fitting_units(planned_offers(self.client), self.resources))

    def describe(self) -> str:
        asked = ", ".join(f"{key}={value:g}" for key, value in self.resources.items())
        return f"units of a Dask cluster asking {asked} (scheduler {self.client.scheduler.address})"

    def run(self, spec: dict, stop: threading.Event, name: str) -> dict:
        """Run a step's unit, again when the cluster loses it; stopped when stop is set."""
        from distributed import Event

        event = f"codascore-worker-stop-{uuid.uuid4().hex}"
        spec = {**spec, "stop_event": event}
        reason = ""
        for attempt in range(1, self.retries + 2):
            future = self.client.submit(run_step_spec, spec, key=f"codascore-worker-{name}-{event}-{attempt}",
                                        pure=False, resources=self.resources, retries=0)
            try:
                return self.wait(future, stop, Event(event, client=self.client))
            except Exception as exc:  # the cluster lost the unit: KilledWorker, a connection, a cancel
                reason = f"{type(exc).__name__}: {one_line(exc)}"
                self.say(f"{name}: attempt {attempt} lost to the cluster ({reason})")
            finally:
                future.release()
        return {"failed": f"the step was lost to the cluster {self.retries + 1} times ({reason})"}

    def wait(self, future, stop: threading.Event, event) -> dict:
        """The unit's result; once stop is set, the unit is asked to stop and given STOP_GRACE seconds."""
        while True:
            try:
                return future.result(timeout=1)
            except TimeoutError:
                if not stop.is_set():
                    continue
            event.set()
            try:
                return future.result(timeout=STOP_GRACE)
            except TimeoutError:
                future.cancel()
                return {"stopped": True}
