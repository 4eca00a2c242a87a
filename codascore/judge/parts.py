"""The parts of a code submission's judgement (docs/judge.md#units): which teams' submissions split into
the organisers' own jobs, and what a worker runs for a ``part`` unit and for a ``score`` unit.

A task's judging plan (codascore.plan.JudgePlan) splits a code submission's prediction into parts. A part
unit writes its part's input data (JudgePlan.write_part_input) into its run folder and runs the prediction
step on it exactly as ``codascore run`` does (:func:`codascore.runner.predict`: the same sandbox, limits and
output). A score unit hands its group's part outcomes, as values, to JudgePlan.merge, which writes one
results submission, and runs it through :func:`codascore.runner.run`, so that its scores are those
``codascore run`` gives that results submission. Only the family's plan knows what a part is.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from .. import runner, zips
from ..competition import read_task_config
from ..errors import ReferenceDataError, RunnerError, SubmissionError
from ..formats.outputs import INGESTION_ERROR
from ..formats.atomic import write_json_atomic
from ..formats.run_folder import IMPORT_CHECK_RECORD, IMPORT_CHECKS, MERGED_SUBMISSION, PART_INPUT, prediction_output
from ..outcomes import Outcome, exit_code_of
from ..plan import PART_DONE, PART_FAILED, PART_REFUSED, PART_TIMED_OUT, Group, Part, PartOutcome
from ..runner.logs import log_warnings
from ..runner.worker import place_submission, read_command
from ..sandbox import locate_submission
from ..task import Task

#: A part's recorded outcome when its prediction step ended (whatever its programs' exit codes).
PART_STEP_ENDED = "DONE"
#: Seconds the import check of a team's code submission may take (docs/judge.md#the-import-check): its own
#: limit, not a fit's, and generous: it stops an import that hangs, not one slowed by a loaded machine.
DEFAULT_IMPORT_TIME_LIMIT = 600.0


def plan_units(task: Task, input_data: Path | None, budget: dict) -> tuple[list[Group], dict, list[Part]]:
    """(the groups, the budget's scoring settings, a code submission's parts) of the task's plan under
    budget, from its input data; RunnerError naming the task when the input data cannot make them."""
    plan = task.judge_plan()
    if plan is None:
        return [], {}, []
    try:
        config = read_task_config(input_data, "input data")[1] if input_data is not None else task.load_config({})
        groups = plan.groups(config, budget)
        parts = plan.parts(input_data, config, budget) if input_data is not None else []
    except ReferenceDataError as exc:
        raise RunnerError(f"{task.name}: the input data cannot be split into parts: {exc}") from exc
    keys = [part.key for part in parts]
    if len(set(keys)) != len(keys):
        raise RunnerError(f"{task.name}: the judging plan gave two parts the same key")
    return groups, plan.scoring_config(budget), parts


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


def check_imports(layout: runner.TaskLayout, teams: list, out: Path, time_limit: float,
                  say=lambda line: None) -> dict[str, str]:
    """Import each team's code submission once, as the task's ingestion does (runner.check_import: the step's
    sandbox, the team's interpreter, a limit of its own), before any of its parts runs, so that its parts do
    not check it again (JudgePlan.checked_import). A check that passed is kept in
    OUT/import_checks/<team>/<task>/check.json and not run again while the submission, the environment and the
    limit are the same. Returns {team: reason} of the teams whose import failed."""
    failed = {}
    for team in teams:
        folder = Path(out) / IMPORT_CHECKS / team.name / layout.task.name
        inputs = {"submission_sha256": team.sha256, "environment": team.environment, "python": team.python or "",
                  "time_limit": float(time_limit)}
        try:
            earlier = json.loads((folder / IMPORT_CHECK_RECORD).read_text())
        except (OSError, ValueError):
            earlier = None
        passed = isinstance(earlier, dict) and earlier.get("reason") == ""
        if passed and all(earlier.get(key) == value for key, value in inputs.items()):
            continue
        started = time.perf_counter()
        reason = runner.check_import(layout, team.submission, folder, runner.choose_container(None, team.python),
                                     time_limit)
        seconds = round(time.perf_counter() - started, 2)
        write_json_atomic(folder / IMPORT_CHECK_RECORD, {**inputs, "reason": reason, "seconds": seconds})
        say(f"import check of {team.name}: {reason or 'imported'} ({seconds:g} s)")
        if reason:
            failed[team.name] = f"import check: {reason}"
    return failed


def result_dict(result: runner.RunResult) -> dict:
    """A runner.run result as the small plain dict a unit returns."""
    return {"outcome": result.outcome.name, "exit_code": int(exit_code_of(result.outcome)),
            "scoring_exit_code": result.exit_code, "scores": dict(result.scores),
            "violations": list(result.violations), "warnings": list(result.warnings),
            "error": result.error[-4000:] if not result.scored else "", "elapsed": result.elapsed,
            "run_dir": str(result.run_dir)}


def run_part(spec: dict) -> dict:
    """A part unit: the part's input data written into the run folder, then the prediction step run on it
    as runner.run runs it (under the team's environment's interpreter when it has one). Outcome DONE when the step ended (its programs' exit codes recorded; an
    ingestion that failed leaves its ingestion_error.txt in the output, as in a whole run), TIMED_OUT or
    INVALID when it stopped or was refused (then ingestion_error.txt says why)."""
    started = time.perf_counter()
    layout = runner.find_layout(Path(spec["root"]), spec["task"])
    plan = layout.task.judge_plan()
    if layout.input_data is None or plan is None:
        raise RunnerError(f"{layout.task.name}: no input data or judging plan to split into parts")
    part = Part(**spec["part"])
    run_dir = runner.prepare_run_dir(Path(spec["run_dir"]))
    plan.write_part_input(layout.input_data, part, run_dir / PART_INPUT)
    layout = dataclasses.replace(layout, input_data=run_dir / PART_INPUT,
                                 time_limit=float(spec["time_limit"] or layout.time_limit))
    try:
        step, stop = runner.predict(layout, Path(spec["submission"]), run_dir,
                                    runner.choose_container(None, spec.get("python")))
    except SubmissionError as refused:
        return part_result(Outcome.INVALID.name, None, str(refused), [], run_dir, started, str(refused))
    codes = [code for code in step.exit_codes.values() if code is not None]
    outcome = Outcome.TIMED_OUT.name if step.timed_out else Outcome.INVALID.name if stop else PART_STEP_ENDED
    return part_result(outcome, max(codes, default=None), stop, log_warnings(step.step.logs), run_dir, started,
                       step.stderr if stop else "")


def part_result(outcome: str, exit_code: int | None, stop: str, warnings: list[str], run_dir: Path,
                started: float, error: str) -> dict:
    """A part unit's result dict; a part that stopped says why in its output's ingestion_error.txt."""
    output = prediction_output(run_dir)
    if stop and not (output / INGESTION_ERROR).exists():
        output.mkdir(parents=True, exist_ok=True)
        (output / INGESTION_ERROR).write_text(stop + "\n")
    return {"outcome": outcome, "exit_code": exit_code, "scores": {}, "violations": [stop] if stop else [],
            "warnings": warnings, "error": error[-4000:], "elapsed": time.perf_counter() - started,
            "run_dir": str(run_dir)}


def part_outcome(record: dict) -> PartOutcome:
    """A part's outcome as its plan's merge receives it, from what the judge recorded of it (part_record):
    done when its step ended and the participant's code succeeded; failed, timed out or refused otherwise,
    with the reason its output's ingestion_error.txt (or the judge's messages) gives."""
    output = Path(record["output"])
    error = output / INGESTION_ERROR
    reason = error.read_text(encoding="utf-8", errors="replace") if error.is_file() else ""
    reason = reason or "\n".join(record.get("messages") or [])
    if record["outcome"] == Outcome.TIMED_OUT.name:
        status = PART_TIMED_OUT
    elif record["outcome"] != PART_STEP_ENDED:
        status = PART_REFUSED
    elif error.is_file() or record.get("exit_code") not in (0, None):
        status = PART_FAILED
        reason = reason or f"the ingestion exited with code {record.get('exit_code')}"
    else:
        status, reason = PART_DONE, ""
    return PartOutcome(Part(**record["part"]), output, status, reason)


def run_score(spec: dict) -> dict:
    """A score unit: the group's part outcomes merged by the task's plan into a results submission, run
    through runner.run as ``codascore run`` runs one (the merged submission is kept in the run folder
    afterwards). A merge the parts cannot make (SubmissionError) is the submission's failure: INVALID, with
    the message."""
    started = time.perf_counter()
    layout = runner.find_layout(Path(spec["root"]), spec["task"])
    run_dir = Path(spec["run_dir"])
    merged = run_dir.with_name(f".{run_dir.name}.merged")
    if merged.exists():
        shutil.rmtree(merged)
    config = read_task_config(layout.input_data, "input data")[1] if layout.input_data else {}
    try:
        layout.task.judge_plan().merge([part_outcome(record) for record in spec["parts"]], merged,
                                       {**config, **spec.get("reference_config", {})})
    except SubmissionError as refused:
        shutil.rmtree(merged, ignore_errors=True)
        runner.prepare_run_dir(run_dir)
        message = "\n".join(refused.problems)
        return {"outcome": Outcome.INVALID.name, "exit_code": int(exit_code_of(Outcome.INVALID)), "scores": {},
                "violations": [message], "warnings": [], "error": message,
                "elapsed": time.perf_counter() - started, "run_dir": str(run_dir)}
    result = result_dict(runner.run(layout.task, merged, run_dir, root=Path(spec["root"]),
                                    time_limit=spec["time_limit"], reference_config=spec.get("reference_config")))
    os.replace(merged, run_dir / MERGED_SUBMISSION)
    result["elapsed"] = time.perf_counter() - started
    return result
