"""A job's step as a unit of work: the function that runs it where it runs (this process, or a Dask worker on
a cluster's node), taking and returning plain data, as the judge's units do (codascore/judge/units.py).

The run folder is already laid out (the worker downloaded into it: :mod:`.job`); the unit builds the step
from it with the runner's own step builders, checks that the step can be isolated and its image had there,
runs it under the job's time limit and returns how it ended. It never talks to the site or the broker.
"""

from __future__ import annotations

import dataclasses
import socket
import time
from pathlib import Path
from typing import Callable

from .. import containers
from ..errors import RunnerError, SubmissionError
from ..formats.run_folder import PREDICTION
from ..outcomes import one_line
from ..runner.steps import Observer, prediction_step, prediction_stop, run_step, scoring_step
from .environments import ImageRefused, ensure_image

#: Seconds between two looks at a unit's stop signal on a cluster (an Event of the Dask scheduler).
STOP_POLL = 1.0


class Stopped(Exception):
    """The worker asked the unit to stop (a graceful stop's end, or the job's soft time limit)."""


def step_spec(step: str, run_dir: Path, time_limit: float, container: containers.Container,
              stop_event: str | None = None) -> dict:
    """What a unit needs, as plain data: which step, its run folder and time limit, its container, and on a
    cluster the name of the Dask Event that asks it to stop."""
    return {"step": step, "run_dir": str(run_dir), "time_limit": float(time_limit),
            "container": dataclasses.asdict(container), "stop_event": stop_event}


class StopWatch(Observer):
    """Watches a running step for the worker's request to stop it: stop() true raises Stopped, which makes
    run_step kill the step's programs."""

    def __init__(self, stop: Callable[[], bool]):
        self.stop = stop

    def poll(self) -> None:
        if self.stop():
            raise Stopped()


def dask_stop(name: str) -> Callable[[], bool]:
    """Whether the Dask Event named has been set, looked at once a second at most."""
    from distributed import Event

    event, state = Event(name), {"last": 0.0, "set": False}

    def stop() -> bool:
        now = time.monotonic()
        if not state["set"] and now - state["last"] >= STOP_POLL:
            state["last"], state["set"] = now, event.is_set()
        return state["set"]

    return stop


def run_step_spec(spec: dict, stop: Callable[[], bool] | None = None) -> dict:
    """Run one step from its spec; how it ended as a small dict: ``exit_codes``, ``elapsed`` (seconds, by
    program), ``timed_out``, ``stop_reason`` (why a prediction stops the job: prediction_stop), ``logs``
    (each program's stdout and stderr files) and ``host``; or ``failed`` (the reason the job fails without
    its step having run: the step cannot be isolated here, its image cannot be had (``pull_failed``), its
    program folder or metadata is refused);
    or ``stopped`` when the worker asked it to stop. stop: the local worker's stop request (a cluster's
    unit watches the spec's Dask Event instead)."""
    host = socket.gethostname()
    container = containers.Container(**spec["container"])
    if container.kind == "bwrap" and not containers.bubblewrap_works():
        return {"failed": f"the step cannot be isolated on {host}: bubblewrap does not work there", "host": host}
    try:
        ensure_image(container)
    except ImageRefused as exc:
        return {"failed": str(exc), "pull_failed": True, "host": host}
    run_dir, limit = Path(spec["run_dir"]), spec["time_limit"]
    try:
        step = prediction_step(run_dir, limit) if spec["step"] == PREDICTION else scoring_step(run_dir, limit)
    except (SubmissionError, RunnerError) as exc:
        return {"failed": one_line(exc), "host": host}
    if stop is None and spec.get("stop_event"):
        stop = dask_stop(spec["stop_event"])
    try:
        ran = run_step(container, step, StopWatch(stop) if stop else Observer())
    except Stopped:
        return {"stopped": True, "host": host}
    return {"exit_codes": ran.exit_codes, "elapsed": ran.elapsed, "timed_out": ran.timed_out, "host": host,
            "stop_reason": prediction_stop(ran) if spec["step"] == PREDICTION else "",
            "logs": {program.name: [str(program.stdout), str(program.stderr)] for program in step.programs}}
