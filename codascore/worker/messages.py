"""What the site sends a compute worker: the ``compute_worker_run`` task of Celery's message protocol, its
run arguments read into a :class:`Job` (apps/competitions/tasks.py's ``_send_to_compute_worker`` writes
them; compute_worker.py's ``Run.__init__`` reads them).

The queue is declared exactly as the site and compute_worker.py declare it (a priority queue: scoring jobs
go first), since RabbitMQ refuses a declaration whose arguments differ from the queue's.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kombu import Exchange, Queue

from ..errors import MessageError
from ..formats.run_folder import PREDICTION, SCORING

#: The task the site sends, and the queue and exchange it sends it to (on a queue's own virtual host).
TASK_NAME = "compute_worker_run"
QUEUE_NAME = "compute-worker"
COMPUTE_QUEUE = Queue(QUEUE_NAME, Exchange(QUEUE_NAME), routing_key=QUEUE_NAME,
                      queue_arguments={"x-max-priority": 10})
#: The log files of a step, by (step, program): the run argument holding the presigned address of each
#: (SubmissionDetails.DETAILED_OUTPUT_NAMES_*). A program is the runner's "program" (the submission's own
#: command, or the scoring program) or "ingestion".
LOG_NAMES = {(PREDICTION, "program"): ("prediction_stdout", "prediction_stderr"),
             (PREDICTION, "ingestion"): ("prediction_ingestion_stdout", "prediction_ingestion_stderr"),
             (SCORING, "program"): ("scoring_stdout", "scoring_stderr"),
             (SCORING, "ingestion"): ("scoring_ingestion_stdout", "scoring_ingestion_stderr")}


@dataclasses.dataclass(frozen=True)
class Job:
    """One job: a submission's prediction or scoring step. The secret and the presigned addresses (rights
    to the submission and its files) are left out of the job's repr, so no log line can hold them."""

    submission_id: int
    is_scoring: bool
    api_url: str
    image: str
    time_limit: float
    soft_time_limit: float | None
    redelivered: bool
    secret: str = dataclasses.field(repr=False)
    #: run argument name -> presigned address, as the site sent them (program_data, input_data, ...)
    urls: dict[str, str] = dataclasses.field(repr=False, default_factory=dict)
    ingestion_only_during_scoring: bool = False

    @property
    def step(self) -> str:
        """The step's name, which is also its folder in the run folder (formats.run_folder)."""
        return SCORING if self.is_scoring else PREDICTION

    @property
    def key(self) -> tuple[int, bool]:
        """What identifies a job among deliveries (the same job delivered again has the same key)."""
        return self.submission_id, self.is_scoring

    @property
    def name(self) -> str:
        return f"submission {self.submission_id} {self.step}"

    def url(self, name: str) -> str | None:
        return self.urls.get(name) or None


def run_args_of(body: Any, headers: dict | None) -> dict:
    """The run arguments of a compute_worker_run task message, decoded: protocol 2 names the task in its
    headers and carries ``[args, kwargs, embed]``; protocol 1 is one mapping with ``task`` and ``args``.
    MessageError for another task or a body that holds no run arguments."""
    headers = headers or {}
    if isinstance(body, dict):  # protocol 1
        task, args = body.get("task"), body.get("args")
    elif isinstance(body, (list, tuple)) and body:
        task, args = headers.get("task"), body[0]
    else:
        raise MessageError(f"not a Celery task message (a {type(body).__name__} body)")
    if task != TASK_NAME:
        raise MessageError(f"a task this worker does not run: {task!r} (it runs {TASK_NAME})")
    if not isinstance(args, (list, tuple)) or not args or not isinstance(args[0], dict):
        raise MessageError(f"{TASK_NAME} without its run arguments (a mapping as first argument)")
    return dict(args[0])


#: Run arguments every job holds, and those holding presigned addresses.
REQUIRED = ("id", "is_scoring", "secret", "submissions_api_url", "docker_image", "execution_time_limit",
            "program_data")
URL_ARGUMENTS = ("program_data", "ingestion_program", "input_data", "reference_data", "prediction_result",
                 "scoring_result", "detailed_results_url", *(name for pair in LOG_NAMES.values() for name in pair))


def read_job(run_args: dict, headers: dict | None = None, redelivered: bool = False) -> Job:
    """The job of a message's run arguments; its headers' ``timelimit`` (hard, soft: the phase's limit plus
    the site's padding) gives the soft time limit. MessageError naming a missing or wrong argument."""
    missing = [name for name in REQUIRED if run_args.get(name) in (None, "")]
    if missing:
        raise MessageError(f"{TASK_NAME} without {', '.join(missing)}")
    try:
        submission_id, limit = int(run_args["id"]), float(run_args["execution_time_limit"])
    except (TypeError, ValueError):
        raise MessageError(f"{TASK_NAME}: id {run_args['id']!r} or execution_time_limit "
                           f"{run_args['execution_time_limit']!r} is not a number") from None
    if limit <= 0:
        raise MessageError(f"{TASK_NAME}: execution_time_limit {limit:g} is not positive")
    soft = None
    timelimit = (headers or {}).get("timelimit")
    if isinstance(timelimit, (list, tuple)) and len(timelimit) == 2 and timelimit[1]:
        soft = float(timelimit[1])
    urls = {name: str(run_args[name]) for name in URL_ARGUMENTS if run_args.get(name)}
    return Job(submission_id, bool(run_args["is_scoring"]), str(run_args["submissions_api_url"]),
               str(run_args["docker_image"]), limit, soft, bool(redelivered), str(run_args["secret"]), urls,
               bool(run_args.get("ingestion_only_during_scoring")))
