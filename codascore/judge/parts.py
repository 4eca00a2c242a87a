"""The parts of a code submission's judgement (docs/judge.md#units): which teams' submissions split into
the organisers' own jobs, and what a worker runs for a ``part`` unit and for a ``score`` unit.

A task splits a code submission's prediction into parts (Task.judge_parts: one UAI solver run per
instance and time limit). A part unit writes its part's input data (Task.write_part_input) into its run
folder and runs the prediction step on it exactly as ``codascore run`` does (:func:`codascore.runner.predict`:
the same sandbox, limits and output). A score unit merges its group's part outputs into one results
submission (Task.merge_part_outputs) and runs it through :func:`codascore.runner.run`, so that its scores
are those ``codascore run`` gives that results submission. Only the family's hooks know what a part is.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import time
from pathlib import Path

from .. import runner, zips
from ..codabench import INGESTION_ERROR_FILE
from ..competition import read_task_config
from ..errors import ReferenceDataError, RunnerError, SubmissionError
from ..outcomes import Outcome, exit_code_of
from ..runner.logs import log_warnings
from ..runner.worker import place_submission, read_command
from ..sandbox import locate_submission
from ..task import JudgePart, Task

#: Where, in a part unit's run folder, its input data and its prediction output are.
PART_INPUT = "part_input"
PART_OUTPUT = "prediction/output"
#: Where, in a score unit's run folder, the merged results submission is kept once the run is over.
MERGED = "merged_submission"
#: A part's outcome when its prediction step ended (whatever its programs' exit codes).
PART_DONE = "DONE"


def judge_parts(task: Task, input_data: Path | None, profile: dict) -> list[JudgePart] | None:
    """The task's parts under profile, read from its input data (None: no parts, or no input data)."""
    if input_data is None:
        return None
    try:
        _, config = read_task_config(input_data, "input data")
    except ReferenceDataError as exc:
        raise RunnerError(f"{task.name}: the input data cannot be split into parts: {exc}") from exc
    parts = task.judge_parts(input_data, config, dict(profile))
    keys = [part.key for part in parts or []]
    if len(set(keys)) != len(keys):
        raise RunnerError(f"{task.name}: judge_parts gave two parts the same key")
    return parts or None


def is_code_submission(task: Task, submission: Path, staging: Path) -> bool:
    """Whether the submission is code the prediction step runs (and so splits into parts), not results:
    extracted once into a temporary folder below staging (as the runner places it), it has a command of its
    own, or its result files are not where scoring looks for them. A submission that cannot be extracted is
    not split: its pipeline unit refuses it as ``codascore run`` does."""
    if not task.has_ingestion:
        return False
    staging.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=staging, prefix=".placed-") as folder:
        placed = Path(folder) / "submission"
        try:
            place_submission(submission, placed, zips.MAX_ARCHIVE_BYTES)
            if read_command(placed):
                return True
        except SubmissionError:
            return False
        try:
            locate_submission(placed, tuple(task.result_files))
        except SubmissionError:
            return any(placed.iterdir())
    return False


def result_dict(result: runner.RunResult) -> dict:
    """A runner.run result as the small plain dict a unit returns."""
    return {"outcome": result.outcome.name, "exit_code": int(exit_code_of(result.outcome)),
            "scoring_exit_code": result.exit_code, "scores": dict(result.scores),
            "violations": list(result.violations), "warnings": list(result.warnings),
            "error": result.error[-4000:] if not result.scored else "", "elapsed": result.elapsed,
            "run_dir": str(result.run_dir)}


def run_part(spec: dict) -> dict:
    """A part unit: the part's input data written into the run folder, then the prediction step run on it
    as runner.run runs it. Outcome DONE when the step ended (its programs' exit codes recorded; an
    ingestion that failed leaves its ingestion_error.txt in the output, as in a whole run), TIMED_OUT or
    INVALID when it stopped or was refused (then ingestion_error.txt says why)."""
    started = time.perf_counter()
    layout = runner.find_layout(Path(spec["root"]), spec["task"])
    if layout.input_data is None:
        raise RunnerError(f"{layout.task.name}: no input data to split into parts")
    part = JudgePart(**spec["part"])
    run_dir = runner.prepare_run_dir(Path(spec["run_dir"]))
    layout.task.write_part_input(layout.input_data, part, run_dir / PART_INPUT)
    layout = dataclasses.replace(layout, input_data=run_dir / PART_INPUT,
                                 time_limit=float(spec["time_limit"] or layout.time_limit))
    try:
        step, stop = runner.predict(layout, Path(spec["submission"]), run_dir, runner.choose_container(None, None))
    except SubmissionError as refused:
        return part_result(Outcome.INVALID.name, None, str(refused), [], run_dir, started, str(refused))
    codes = [code for code in step.exit_codes.values() if code is not None]
    outcome = Outcome.TIMED_OUT.name if step.timed_out else Outcome.INVALID.name if stop else PART_DONE
    return part_result(outcome, max(codes, default=None), stop, log_warnings(step.step.logs), run_dir, started,
                       step.stderr if stop else "")


def part_result(outcome: str, exit_code: int | None, stop: str, warnings: list[str], run_dir: Path,
                started: float, error: str) -> dict:
    """A part unit's result dict; a part that stopped says why in its output's ingestion_error.txt."""
    output = run_dir / PART_OUTPUT
    if stop and not (output / INGESTION_ERROR_FILE).exists():
        output.mkdir(parents=True, exist_ok=True)
        (output / INGESTION_ERROR_FILE).write_text(stop + "\n")
    return {"outcome": outcome, "exit_code": exit_code, "scores": {}, "violations": [stop] if stop else [],
            "warnings": warnings, "error": error[-4000:], "elapsed": time.perf_counter() - started,
            "run_dir": str(run_dir), "output": PART_OUTPUT}


def run_score(spec: dict) -> dict:
    """A score unit: the group's part outputs merged into a results submission, run through runner.run as
    ``codascore run`` runs one (the merged submission is kept in the run folder afterwards). A merge the
    parts cannot make (SubmissionError) is the submission's failure: INVALID, with the message."""
    started = time.perf_counter()
    layout = runner.find_layout(Path(spec["root"]), spec["task"])
    run_dir = Path(spec["run_dir"])
    merged = run_dir.with_name(f".{run_dir.name}.merged")
    if merged.exists():
        shutil.rmtree(merged)
    config = read_task_config(layout.input_data, "input data")[1] if layout.input_data else {}
    try:
        layout.task.merge_part_outputs({key: Path(folder) for key, folder in spec["outputs"].items()}, merged,
                                       config)
    except SubmissionError as refused:
        shutil.rmtree(merged, ignore_errors=True)
        runner.prepare_run_dir(run_dir)
        message = "\n".join(refused.problems)
        return {"outcome": Outcome.INVALID.name, "exit_code": int(exit_code_of(Outcome.INVALID)), "scores": {},
                "violations": [message], "warnings": [], "error": message,
                "elapsed": time.perf_counter() - started, "run_dir": str(run_dir)}
    result = result_dict(runner.run(layout.task, merged, run_dir, root=Path(spec["root"]),
                                    time_limit=spec["time_limit"], reference_config=spec.get("reference_config")))
    os.replace(merged, run_dir / MERGED)
    result["elapsed"] = time.perf_counter() - started
    return result
