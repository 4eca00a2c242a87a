"""``codascore worker``: a drop-in for Codabench's compute worker (compute_worker.py) that serves a
competition's queue without Docker, on this machine or a batch cluster (docs/worker.md).

:func:`serve` takes the queue's broker address as the site's queue page gives it and runs every
``compute_worker_run`` job it takes as compute_worker.py does (:mod:`.job`): its step isolated in a
bubblewrap sandbox under the environment standing for the competition's image, or in the image with Docker
or Podman (:mod:`.environments`); on this machine or as a unit of a Dask cluster (:mod:`.slots`,
:mod:`.units`); each job acknowledged only when it has ended, so that a worker that dies leaves it to
another (:mod:`.consumer`); the broker's password and the jobs' secrets never written (:mod:`.log`).

The package sits above the runner (the steps), the platform (the site) and the judge (its cluster helpers);
nothing below imports it, and no bundle carries it.
"""

from __future__ import annotations

import contextlib
import signal
import urllib.parse
from pathlib import Path
from typing import Callable, Iterator

from ..errors import JudgeError, WorkerError
from .consumer import Consumer, Summary
from .environments import STOCK_IMAGE, Environments, parse_images, serving_environments
from .job import Workplace
from .log import Redactor, terminal, worker_log
from .slots import ClusterSlots, LocalSlots

__all__ = ["STOCK_IMAGE", "Environments", "Summary", "parse_images", "serve", "serving_environments"]


def serve(broker_url: str, folder: Path, environment: Environments, *, jobs: int = 1, scheduler: str | None = None,
          cluster_file: Path | None = None, cores: float = 1, memory: int | None = None, retries: int = 2,
          max_jobs: int | None = None, grace: float = 60.0, keep: bool = False,
          show: Callable[[str], None] = print, signals: bool = True) -> Summary:
    """Serve the compute-worker queue at broker_url until stopped (SIGTERM, Ctrl-C, or max_jobs taken and
    ended); how it went.

    folder: the worker's folder (worker.log, the jobs' run folders, the data cache); on a cluster, a folder
    the nodes see too. environment: where steps run (:func:`serving_environments`). jobs: steps at once on this
    machine; or scheduler (a Dask scheduler's address) or cluster_file (the judge's cluster files) to run each
    step as a unit asking cores and memory (bytes), retried retries times when the cluster loses it.
    grace: seconds the running jobs have to finish once a stop is asked, before they are given back. keep:
    keep the jobs' run folders. show: where the terminal's lines go. signals: SIGTERM and SIGINT ask a stop
    (only from the main thread)."""
    folder = Path(folder).resolve()
    redactor = Redactor(urllib.parse.urlsplit(broker_url).password or "")
    log = worker_log(folder / "worker.log", redactor)
    say = terminal(log, redactor, show)
    with open_slots(jobs, scheduler, cluster_file, cores, memory, retries, say) as slots:
        place = Workplace(slots, environment, folder, log, redactor, keep)
        consumer = Consumer(broker_url, place, say, max_jobs, grace)
        say(f"codascore worker: queue {consumer.address}; steps: {environment.describe()}; "
            f"{slots.describe()}; folder {folder}")
        previous = {}
        if signals:
            for number in (signal.SIGTERM, signal.SIGINT):
                previous[number] = signal.signal(number, lambda signum, frame: consumer.request_stop(
                    signal.Signals(signum).name))
        try:
            summary = consumer.serve()
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)
    say(f"stopped ({summary.reason or 'done'}): {summary.ended} jobs ended, {summary.given_back} given back")
    return summary


@contextlib.contextmanager
def open_slots(jobs: int, scheduler: str | None, cluster_file: Path | None, cores: float, memory: int | None,
               retries: int, say: Callable[[str], None]) -> Iterator[LocalSlots | ClusterSlots]:
    """This machine's slots, or a Dask cluster's (the judge's: its scheduler address or cluster file)
    whose workers must offer the resources a step asks."""
    if scheduler is None and cluster_file is None:
        yield LocalSlots(jobs)
        return
    from ..judge.cluster import check_resources, open_client

    resources = {"cores": float(cores), **({"memory": float(memory)} if memory else {})}
    try:
        with open_client(scheduler=scheduler, cluster_file=cluster_file) as client:
            check_resources(client, [resources])
            yield ClusterSlots(client, resources, retries, say)
    except JudgeError as exc:
        raise WorkerError(str(exc)) from None
