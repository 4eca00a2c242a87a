"""Run one submission exactly as Codabench's compute worker would: the library entry of ``codascore run``,
of the demo, of ``codascore check --run`` and of the judge.

:func:`run` is the worker's lifecycle as a list of named calls (compute_worker.py's run_wrapper:
prepare, start, push output, collect): find the task's layout once, place the submission, prepare and run
the prediction step, push its output, prepare and run the scoring step, collect the outcome. It prints
nothing; an observer (the terminal view of :mod:`codascore.runner.view`) may watch the steps.

How it ends is a :class:`RunResult` whose ``outcome`` (:class:`codascore.outcomes.Outcome`) is SCORED,
INVALID (the submission refused, or what it did), TIMED_OUT or FAILED (the programs, the data or the
output contract). An error of the organiser's setup (a missing program, a run folder that is not one)
raises RunnerError instead: no run took place.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from .. import containers, zips
from ..codabench import IMPORT_CHECK_FAILED
from ..errors import SubmissionError
from ..outcomes import Outcome, scoring_outcome
from ..scores import output_problems
from ..task import Task
from .layout import DEFAULT_TIME_LIMIT, TaskLayout, find_layout
from .logs import log_warnings
from .steps import Observer, StepRun, prediction_stop, prepare_import_check, prepare_prediction, \
    prepare_scoring, push_prediction_output, run_step
from .worker import RUN_MARKER, default_run_dir, interpreter, materialise, prepare_run_dir

__all__ = ["DEFAULT_TIME_LIMIT", "RUN_MARKER", "Observer", "RunResult", "StepRun", "TaskLayout", "check_import",
           "choose_container", "find_layout", "format_run", "interpreter", "materialise", "predict",
           "prepare_run_dir", "run"]


@dataclasses.dataclass
class RunResult:
    """How one run ended. exit_code is the scoring program's (None when no scoring step ended on its own);
    violations say what broke Codabench's contract, or why the run stopped before scoring; error is the
    failing step's stderr; warnings the steps' WARNING lines, once each."""

    task: str
    submission: str
    run_dir: Path
    exit_code: int | None
    scores: dict
    violations: list[str]
    elapsed: float
    error: str = ""
    warnings: list[str] = dataclasses.field(default_factory=list)
    outcome: Outcome = Outcome.FAILED

    @property
    def scored(self) -> bool:
        return self.outcome is Outcome.SCORED


def run(task: Task | str, submission: Path, out_dir: Path | None = None, *, root: Path | None = None,
        time_limit: float | None = None, python: str | None = None,
        container: containers.Container | None = None, max_submission_bytes: int = zips.MAX_ARCHIVE_BYTES,
        observer: Observer | None = None, reference_config: dict | None = None) -> RunResult:
    """Run the prediction and scoring steps of one submission (zip or folder) and return how it ended.

    root: the project folder of the programs and data (default: the installed project's). out_dir: the run
    folder (default: a new one below runs/<task>/ in the working folder). time_limit: seconds per step
    (default: the phase's). container: where each step runs (default: containers.choose(), a bubblewrap
    sandbox when it works here); python: the interpreter that ``python3``/``python`` in the commands run.
    reference_config: task.yaml values the scoring step's ref/ gets over the reference data's (the judge's
    budget profile: SRBench's accuracy_source)."""
    layout = find_layout(root, task)
    if time_limit is not None:
        layout = dataclasses.replace(layout, time_limit=float(time_limit))
    if reference_config:
        layout = dataclasses.replace(layout, reference_config=dict(reference_config))
    container = choose_container(container, python)
    run_dir = prepare_run_dir(out_dir) if out_dir is not None else \
        default_run_dir(Path("runs"), layout.task.name, submission)
    observer = observer or Observer()
    started = time.perf_counter()
    try:
        prediction, stop = predict(layout, Path(submission), run_dir, container, max_submission_bytes, observer)
    except SubmissionError as refused:
        return collect(layout, submission, run_dir, [], started, refused=str(refused))
    steps = [prediction]
    if not stop:
        steps.append(run_step(container, prepare_scoring(layout, run_dir), observer))
    return collect(layout, submission, run_dir, steps, started)


def predict(layout: TaskLayout, submission: Path, run_dir: Path, container: containers.Container,
            max_submission_bytes: int = zips.MAX_ARCHIVE_BYTES,
            observer: Observer | None = None) -> tuple[StepRun, str]:
    """The prediction step alone, as :func:`run` runs it: the submission placed, the step run, and its
    output pushed (output/metadata) unless the run stops there. Returns the step and why the run stops
    after it ("" when it goes on to scoring: prediction_stop). The judge runs a part of a code submission
    with it, on the part's input data (layout.input_data). SubmissionError when the submission is refused
    before the step."""
    prediction = prepare_prediction(layout, Path(submission), run_dir, max_submission_bytes)
    step = run_step(container, prediction, observer or Observer())
    stop = prediction_stop(step)
    if not stop:
        push_prediction_output(step)
    return step, stop


def check_import(layout: TaskLayout, submission: Path, run_dir: Path, container: containers.Container,
                 time_limit: float) -> str:
    """Import a code submission's entry once, as the task's ingestion imports it, in the container (the
    step's sandbox, the team's interpreter) under time_limit, in run_dir (a run folder: its logs stay).
    Returns "" when it imported, else why not: the entry's error, the limit, a refused archive."""
    run_dir = prepare_run_dir(run_dir)
    try:
        step = prepare_import_check(layout, Path(submission), run_dir, time_limit)
    except SubmissionError as refused:
        return str(refused)
    ran = run_step(container, step, Observer())
    entry = layout.task.code_entry.file
    if ran.timed_out:
        return f"{entry}: importing it took longer than the import check's limit of {time_limit:g} s"
    if ran.exit_codes.get("ingestion") == 0:
        return ""
    said = [line.partition(IMPORT_CHECK_FAILED)[2] for line in ran.stderr.splitlines() if IMPORT_CHECK_FAILED in line]
    lines = [line for line in ran.stderr.splitlines() if line.strip()]
    return said[-1] if said else f"{entry}: the import check exited with code {ran.exit_codes.get('ingestion')}: " \
        + " | ".join(lines[-3:])[:600]


def choose_container(container: containers.Container | None, python: str | None) -> containers.Container:
    """The container given (its interpreter replaced by python's), or the best one this machine has."""
    if container is None:
        return containers.choose(python=interpreter(python) if python else None)
    return dataclasses.replace(container, python=interpreter(python)) if python else container


def collect(layout: TaskLayout, submission: Path, run_dir: Path, steps: list[StepRun], started: float,
            refused: str = "") -> RunResult:
    """How the run ended, read from what its steps left: a submission refused before any step, a
    prediction that stopped the run, or the scoring step's exit code and output held to the contract."""
    result = RunResult(layout.task.name, Path(submission).name, run_dir, None, {}, [], 0.0,
                       warnings=log_warnings(path for step in steps for path in step.step.logs))
    if refused:
        result.violations, result.error, result.outcome = [refused], refused, Outcome.INVALID
    elif len(steps) == 1:  # the prediction stopped the run
        stop = prediction_stop(steps[0])
        result.violations, result.error = [stop], steps[0].stderr if steps[0].timed_out else stop
        result.outcome = Outcome.TIMED_OUT if steps[0].timed_out else Outcome.INVALID
    else:
        scoring = steps[-1]
        result.exit_code = scoring.exit_codes["program"]
        result.scores, result.violations = output_problems(scoring.step.output, result.exit_code, layout.task,
                                                           layout.leaderboard_keys)
        finished = scoring_outcome(result.exit_code)
        result.error = "" if finished is Outcome.SCORED else scoring.stderr
        result.outcome = Outcome.FAILED if result.violations else finished
    result.elapsed = time.perf_counter() - started
    return result


def format_run(result: RunResult) -> str:
    """The outcome as printed: a run stopped before scoring (refused archive, time limit) says why on its
    first line, once; a scoring step that failed shows its exit code and its ERROR lines."""
    stopped = result.exit_code is None and not result.scored
    status = "scored" if result.scored else "FAILED" if stopped else f"FAILED (exit code {result.exit_code})"
    where = f"{result.elapsed:.2f} s, run folder {result.run_dir}"
    lines = [f"{result.task} / {result.submission}: "
             + (f"{status}: {'; '.join(result.violations)} (after {where})" if stopped and result.violations
                else f"{status} in {where}")]
    lines += [f"  {key:<24} {value:.6g}" for key, value in result.scores.items()]
    lines += [] if stopped else [f"  contract violation: {v}" for v in result.violations]
    if result.warnings:
        count = f"{len(result.warnings)} warning" + ("s" if len(result.warnings) > 1 else "")
        lines.append(f"  {count} (printed above; the scoring step's are also in details.json and on the page)")
    if result.error and not result.scored and result.error.strip() not in result.violations:
        errors = [line for line in result.error.splitlines() if line.startswith("ERROR")]
        lines += ["  " + line for line in (errors or result.error.splitlines()[-15:])[:25]]
    return "\n".join(lines)
