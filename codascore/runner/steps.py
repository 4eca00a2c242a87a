"""A step of the compute worker as a value: its programs, their mounts and commands, its time limit. The
named functions build the two steps (prepare_prediction, prepare_scoring); run_step runs either the same
way (docs/codabench.md#the-compute-worker).

prediction step   program/ (the submission's own command, or the ingestion program)  ingested_program/
                  (the submission, for the ingestion program)  input_data/  output/  data/ (read-only)
scoring step      program/ (scoring program)  input/ref/  input/res/ (= prediction output)  output/  shared/
                  data/ (read-only)

Every folder arrives as the worker gets it: zipped with its contents at the root and extracted with
``ZipFile.extractall`` (no permission bits). A results submission (no metadata in it) is copied into the
prediction output; the worker writes ``output/metadata`` after the prediction step, which becomes
``res/metadata``. Each command is split with shlex and run without a shell in the step's container, the
step's programs at the same time under one time limit.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import shutil
import threading
from pathlib import Path

import yaml

from .. import containers, zips
from ..containers import Mount
from ..formats.outputs import WORKER_METADATA
from ..errors import RunnerError
from ..formats.run_folder import IMPORT_CHECK, INPUT_DATA, LOGS, PREDICTION, PROGRAM, REFERENCE, RESULTS, \
    SCORING, SCORING_INPUT, SUBMISSION, prediction_output, scoring_output
from .layout import TaskLayout
from .worker import folder_archive, materialise, place_submission, program_command, read_command, worker_metadata


@dataclasses.dataclass(frozen=True)
class Program:
    """One container of a step: its name ("program" or "ingestion"), command, mounts, and where its logs go;
    announce is the line a terminal shows when it starts."""

    name: str
    command: str
    mounts: tuple[Mount, ...]
    log_prefix: Path
    announce: str

    @property
    def stdout(self) -> Path:
        return Path(f"{self.log_prefix}_stdout.txt")

    @property
    def stderr(self) -> Path:
        return Path(f"{self.log_prefix}_stderr.txt")


@dataclasses.dataclass(frozen=True)
class Step:
    """A step ready to run: its name ("prediction" or "scoring"), its folder, its programs (none for a results
    submission without ingestion), its time limit, and the folder its programs write."""

    name: str
    folder: Path
    programs: tuple[Program, ...]
    time_limit: float
    output: Path

    @property
    def logs(self) -> list[Path]:
        """The logs a person follows: each program's stderr."""
        return [program.stderr for program in self.programs]


@dataclasses.dataclass(frozen=True)
class StepRun:
    """A step that ran: each program's exit code (None when stopped at the limit) and elapsed seconds, their
    stderr, and whether the time limit stopped it."""

    step: Step
    exit_codes: dict[str, int | None]
    elapsed: dict[str, float]
    stderr: str
    timed_out: bool


class Observer:
    """What watches the steps of a run (the terminal view of ``codascore run``); this one watches nothing,
    so a run prints nothing."""

    def started(self, step: Step) -> None:
        """The step's programs have just started."""

    def poll(self) -> None:
        """Called often while the step runs."""

    def finished(self, step: Step) -> None:
        """The step's programs have all ended or been stopped."""


def prepare_prediction(layout: TaskLayout, submission: Path, run_dir: Path, max_submission_bytes: int) -> Step:
    """The prediction step of a local run: the submission placed first (SubmissionError when it cannot be: a
    refused archive, an unreadable metadata.yaml), the input data and ingestion program delivered as the
    worker gets them, then :func:`prediction_step`."""
    folder = run_dir / PREDICTION
    place_submission(submission, folder / SUBMISSION, max_submission_bytes)
    if layout.input_data:
        materialise(folder_archive(layout.input_data), folder / INPUT_DATA)
    if layout.ingestion_program is not None:
        materialise(folder_archive(layout.ingestion_program, program=True), folder / PROGRAM)
    return prediction_step(run_dir, layout.time_limit)


def prediction_step(run_dir: Path, time_limit: float) -> Step:
    """The prediction step of a run folder whose prediction/ holds what the worker received: the submission
    in ingested_program/, and when the task has them the ingestion program in program/ and the input data in
    input_data/. Mounts: /app/program, /app/output, /app/data (read-only), /app/input_data when there is
    input data, /app/ingested_program for the ingestion program; no /app/shared."""
    folder, logs = run_dir / PREDICTION, run_dir / LOGS
    submission_dir, output, data = folder / SUBMISSION, prediction_output(run_dir), folder / "data"
    for made in (output, data, logs):
        made.mkdir(parents=True, exist_ok=True)
    submission_command = read_command(submission_dir)
    common = (Mount(output, "/app/output"), Mount(data, "/app/data", read_only=True))
    if (folder / INPUT_DATA).is_dir():
        common += (Mount(folder / INPUT_DATA, "/app/input_data"),)
    programs = []
    if submission_command is None:  # a results submission: the worker copies it into the output (res/)
        shutil.copytree(submission_dir, output, dirs_exist_ok=True)
    elif submission_command:
        programs.append(Program("program", submission_command, (Mount(submission_dir, "/app/program"), *common),
                                logs / "prediction",
                                f"[prediction] running the submission's own command: {submission_command}"))
    if (folder / PROGRAM).is_dir():
        command = program_command(folder / PROGRAM, "ingestion program")
        mounts = (Mount(folder / PROGRAM, "/app/program"), Mount(submission_dir, "/app/ingested_program"))
        programs.append(Program("ingestion", command, (*mounts, *common), logs / "ingestion",
                                f"[prediction] ingestion program: {command}"))
    return Step(PREDICTION, folder, tuple(programs), time_limit, output)


def prepare_import_check(layout: TaskLayout, submission: Path, run_dir: Path, time_limit: float,
                         max_submission_bytes: int = zips.MAX_ARCHIVE_BYTES) -> Step:
    """The import check of a code submission (docs/judge.md#the-import-check): the ingestion program's folder
    at /app/program and the submission at /app/ingested_program, as in the prediction step, and one program
    that imports the submission's entry as the task's ingestion does (Task.code_entry;
    codabench.check_import_main), under time_limit. SubmissionError when the submission cannot be placed."""
    entry = layout.task.code_entry
    if entry is None or layout.ingestion_program is None:
        raise RunnerError(f"{layout.task.name}: no code entry or ingestion program: nothing to import")
    folder, logs = run_dir / IMPORT_CHECK, run_dir / LOGS
    logs.mkdir(parents=True, exist_ok=True)
    place_submission(submission, folder / SUBMISSION, max_submission_bytes)
    materialise(folder_archive(layout.ingestion_program, program=True), folder / PROGRAM)
    script = ("import sys; from codascore.codabench import check_import_main; "
              "sys.exit(check_import_main(sys.argv[1:]))")
    command = shlex.join(["python3", "-c", script, "/app/program", "/app/ingested_program", entry.file,
                          entry.loader, *entry.arguments])
    mounts = (Mount(folder / PROGRAM, "/app/program", read_only=True),
              Mount(folder / SUBMISSION, "/app/ingested_program"))
    program = Program("ingestion", command, mounts, logs / IMPORT_CHECK, f"[import check] {entry.file}")
    return Step(IMPORT_CHECK, folder, (program,), float(time_limit), folder)


def prediction_stop(prediction: StepRun) -> str:
    """Why the run stops after the prediction step ("" when it goes on to scoring): the time limit, or a
    prediction that wrote the worker's own file."""
    if prediction.timed_out:
        return f"prediction step exceeded the time limit of {prediction.step.time_limit:g} s"
    if (prediction.step.output / WORKER_METADATA).exists():
        return "the prediction step wrote output/metadata (the worker's file): Codabench fails the run"
    return ""


def push_prediction_output(prediction: StepRun) -> None:
    """What the worker does after the prediction step: output/metadata with the programs' exit codes and
    times, which the scoring step reads as res/metadata."""
    (prediction.step.output / WORKER_METADATA).write_text(worker_metadata(prediction.exit_codes, prediction.elapsed))


def prepare_scoring(layout: TaskLayout, run_dir: Path) -> Step:
    """The scoring step of a local run: the scoring program, the reference data (with the layout's task.yaml
    values over its own) and the prediction's output delivered as the worker gets them, then
    :func:`scoring_step`."""
    folder = run_dir / SCORING
    materialise(folder_archive(layout.scoring_program, program=True), folder / PROGRAM)
    materialise(folder_archive(layout.reference_data), folder / SCORING_INPUT / REFERENCE)
    if layout.reference_config:
        override_task_yaml(folder / SCORING_INPUT / REFERENCE / "task.yaml", layout.reference_config)
    materialise(zips.folder_zip(prediction_output(run_dir)), folder / SCORING_INPUT / RESULTS)
    return scoring_step(run_dir, layout.time_limit, f"scoring program {layout.scoring_program.name}")


def scoring_step(run_dir: Path, time_limit: float, what: str = "scoring program") -> Step:
    """The scoring step of a run folder whose scoring/ holds the scoring program in program/ and its input in
    input/ref and input/res. Mounts: /app/program, /app/input, /app/output, /app/shared, /app/data
    (read-only). RunnerError naming what when the program has no command."""
    folder = run_dir / SCORING
    for made in (scoring_output(run_dir), folder / "shared", folder / "data", run_dir / LOGS):
        made.mkdir(parents=True, exist_ok=True)
    command = program_command(folder / PROGRAM, what)
    mounts = (Mount(folder / PROGRAM, "/app/program"), Mount(folder / SCORING_INPUT, "/app/input"),
              Mount(scoring_output(run_dir), "/app/output"), Mount(folder / "shared", "/app/shared"),
              Mount(folder / "data", "/app/data", read_only=True))
    program = Program("program", command, mounts, run_dir / LOGS / SCORING, f"[scoring] {command}")
    return Step(SCORING, folder, (program,), time_limit, scoring_output(run_dir))


def override_task_yaml(path: Path, values: dict) -> None:
    """Set values in a copied task.yaml (the scorer checks them as it checks the organiser's own)."""
    config = yaml.safe_load(path.read_text()) or {}
    path.write_text(yaml.safe_dump({**config, **values}, sort_keys=False))


def run_step(container: containers.Container, step: Step, observer: Observer) -> StepRun:
    """Start a step's programs at the same time, as the worker does, and wait for them under the step's time
    limit, telling observer. A program still running when this is interrupted is stopped."""
    running, files = {}, []
    try:
        for program in step.programs:
            out, err = open(program.stdout, "wb"), open(program.stderr, "wb")
            files += [out, err]
            # the thread in the name: a worker runs several jobs' steps at once, each its own container
            name = f"codascore-{os.getpid()}-{threading.get_ident()}-{step.name}-{program.name}"
            running[program.name] = container.start(shlex.split(program.command), list(program.mounts), name,
                                                    out, err)
        observer.started(step)
        codes, elapsed, exceeded = containers.wait_all(container, running, step.time_limit, on_poll=observer.poll)
    except BaseException:
        for name, proc in running.items():
            container.stop(proc, name)
        raise
    finally:
        for file in files:
            file.close()
    observer.finished(step)
    stderr = "".join(program.stderr.read_text(errors="replace") for program in step.programs)
    if exceeded:
        stderr += f"\nExecution Time Limit exceeded. Limit was {step.time_limit:g} seconds\n"
    return StepRun(step, codes, elapsed, stderr, exceeded)
