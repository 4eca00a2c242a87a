"""Local runner: score a submission exactly as Codabench's compute worker would.

For each step the worker lays out folders that its container mounts at ``/app/...``
(docs/codabench.md#the-compute-worker):

prediction step   program/ (the submission's own command, or the ingestion program)  ingested_program/
                  (the submission, for the ingestion program)  input_data/  output/  data/ (read-only)
scoring step      program/ (scoring program)  input/ref/  input/res/ (= prediction output)  output/  shared/
                  data/ (read-only)

Every folder arrives as the worker gets it: zipped with its contents at the root and extracted with
``ZipFile.extractall`` (no permission bits). A results submission (no metadata in it) is copied into the
prediction output; the worker writes ``output/metadata`` after the prediction step, which becomes
``res/metadata``. Each command from ``metadata.yaml`` is split with shlex and run without a shell, in the
step's container (codascore.containers: a bubblewrap sandbox with real ``/app/...`` mounts, Docker, or no
isolation at all, with a warning), the step's programs at the same time under the phase's
``execution_time_limit``. Afterwards the scores.json contract is checked.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import shlex
import shutil
import sys
import time
import zipfile
from pathlib import Path

import yaml

from . import bundle, containers, validate, zips
from .codabench import MAX_ABS_SCORE
from .competition import bundle_path, project_root, read_competition, task_yaml_name
from .errors import RunnerError, SubmissionError, UnsafeArchiveError
from .registry import get_task

DEFAULT_TIME_LIMIT = 600.0


@dataclasses.dataclass
class TaskLayout:
    """Where a task's programs and data are, and its phase settings."""

    task: str
    scoring_program: Path
    reference_data: Path
    ingestion_program: Path | None = None
    input_data: Path | None = None
    time_limit: float = DEFAULT_TIME_LIMIT
    leaderboard_keys: tuple[str, ...] | None = None  # non-computed column keys, if a competition.yaml says


@dataclasses.dataclass
class RunResult:
    task: str
    submission: str
    run_dir: Path
    exit_code: int | None
    scores: dict
    violations: list[str]
    elapsed: float
    error: str = ""
    warnings: list[str] = dataclasses.field(default_factory=list)  # the steps' WARNING lines, once each

    @property
    def scored(self) -> bool:
        return self.exit_code == 0 and not self.violations


# --------------------------------------------------------------------------- layout

def find_layout(root: Path, task_name: str) -> TaskLayout:
    """The task's folders below root, by convention, with the phase limit and leaderboard keys from
    root/competition.yaml when that file references the task's reference data."""
    root = Path(root)
    task = get_task(task_name)
    layout = TaskLayout(task=task_name, scoring_program=root / "scoring_program",
                        reference_data=root / "reference_data" / task_name)
    if task.has_ingestion and (root / "ingestion_program").is_dir():
        layout.ingestion_program = root / "ingestion_program"
        if (root / "input_data" / task_name).is_dir():
            layout.input_data = root / "input_data" / task_name
    _apply_competition_yaml(root / "competition.yaml", layout)
    for what, path in (("scoring program", layout.scoring_program), ("reference data", layout.reference_data)):
        if not path.is_dir():
            hint = " (run `make data` first)" if what == "reference data" else ""
            raise RunnerError(f"{what} for {task_name} not found: {path}{hint}")
    return layout


def _apply_competition_yaml(path: Path, layout: TaskLayout) -> None:
    """Take the task's folders, phase time limit and leaderboard keys from the competition YAML: the task
    entry is the one whose reference data is the task's (by its task.yaml, else by the folder's name)."""
    if not path.is_file():
        return
    root = path.parent
    competition = read_competition(path)
    entries = [t for t in competition.get("tasks") or [] if isinstance(t, dict)
               and _names_task(root, t.get("reference_data"), layout.task)]
    if not entries:
        return
    entry = entries[0]
    for field in ("scoring_program", "reference_data"):
        folder = root / str(entry.get(field, "")).strip("/")
        if entry.get(field) and folder.is_dir():
            setattr(layout, field, folder)
    if layout.ingestion_program is not None:
        for field in ("ingestion_program", "input_data"):
            folder = root / str(entry.get(field, "")).strip("/")
            if entry.get(field) and folder.is_dir():
                setattr(layout, field, folder)
    for phase in competition.get("phases") or []:
        if isinstance(phase, dict) and entry.get("index") in (phase.get("tasks") or []):
            layout.time_limit = float(phase.get("execution_time_limit", DEFAULT_TIME_LIMIT))
            break
    boards = competition.get("leaderboards") or []
    if boards:
        layout.leaderboard_keys = tuple(c["key"] for c in boards[0].get("columns", [])
                                        if not c.get("computation"))


def _names_task(root: Path, reference: object, task_name: str) -> bool:
    """Whether a YAML reference_data path holds the reference data of task_name (by its task.yaml, else
    by the folder's name)."""
    folder = bundle_path(root, reference)
    return folder is not None and (task_yaml_name(folder) or folder.name) == task_name


# --------------------------------------------------------------------------- worker emulation

#: The marker file of a run folder: the runner empties a folder only when this file is in it.
RUN_MARKER = ".codascore-run"


def materialise(zip_data: bytes, dest: Path) -> None:
    """Extract a zip like the worker does (extractall, so no permission bits), safely."""
    dest.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".{dest.name}.zip"
    tmp.write_bytes(zip_data)
    try:
        zips.safe_extract(tmp, dest)
    finally:
        tmp.unlink()


def place_submission(submission: Path, dest: Path, max_bytes: int) -> None:
    """A submission zip is extracted safely; a folder is zipped and extracted (as an upload would be).
    Whatever cannot be extracted is a RunnerError with a one-line reason."""
    submission = Path(submission)
    if submission.is_file():
        if not zipfile.is_zipfile(submission):
            raise RunnerError(f"{submission.name} is not a zip file")
        try:
            zips.safe_extract(submission, dest, max_bytes=max_bytes)
        except (UnsafeArchiveError, zipfile.BadZipFile, OSError, RuntimeError, EOFError) as exc:
            raise RunnerError(f"submission {submission.name} refused: {_one_line(exc)}") from exc
    elif submission.is_dir():
        try:
            materialise(zips.folder_zip(submission), dest)
        except (ValueError, OSError) as exc:
            raise RunnerError(f"submission folder refused: {_one_line(exc)}") from exc
    else:
        raise RunnerError(f"submission not found: {submission}")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def read_participant_yaml(path: Path) -> object:
    """A YAML file a participant wrote, read with validate.read_participant_yaml's bounds; RunnerError naming
    the file otherwise."""
    try:
        return validate.read_participant_yaml(path)
    except SubmissionError as exc:
        raise RunnerError(_one_line(exc)) from None


def read_command(program_dir: Path) -> str | None:
    """The ``command`` of metadata.yaml (or metadata) at the program root; None when there is none, ""
    when the file names no command. A participant's file is read with read_participant_yaml's bounds."""
    for name in ("metadata.yaml", "metadata"):
        path = program_dir / name
        if path.is_file():
            data = read_participant_yaml(path) or {}
            command = data.get("command") if isinstance(data, dict) else None
            try:
                shlex.split(str(command or ""))
            except ValueError as exc:
                raise RunnerError(f"{name}: the command cannot be split as a shell would: {exc}") from None
            return str(command) if command else ""
    return None


def interpreter(python: str) -> str:
    """The absolute path of an interpreter given as a path or a command name (symbolic links kept: a
    virtual environment's python is one). RunnerError when there is no such executable."""
    found = shutil.which(python)
    if not found:
        raise RunnerError(f"python interpreter {python!r} not found or not executable")
    return os.path.abspath(found)


def default_run_dir(runs: Path, task_name: str, submission: Path) -> Path:
    """A new folder below runs/<task>/, named after the submission (only its safe characters) and
    numbered when that name is taken: never an existing folder, whatever the zip is called."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", Path(submission).stem).lstrip(".") or "submission"
    parent = Path(runs) / task_name
    parent.mkdir(parents=True, exist_ok=True)
    for number in range(1, 100_000):
        folder = parent / (name if number == 1 else f"{name}-{number}")
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        (folder / RUN_MARKER).touch()
        return folder.resolve()
    raise RunnerError(f"no free run folder name below {parent}")


def prepare_run_dir(out_dir: Path) -> Path:
    """The run folder, empty but for its marker. An existing folder is emptied only when it is a run folder
    (it holds RUN_MARKER, or nothing but the runner's logs/, prediction/ and scoring/) and used when empty;
    any other folder is refused, so that nothing outside a run folder is ever deleted."""
    run_dir = Path(out_dir).resolve()
    if run_dir.exists() and not run_dir.is_dir():
        raise RunnerError(f"run folder {run_dir} is a file")
    if run_dir.is_dir() and any(run_dir.iterdir()):
        names = {entry.name for entry in run_dir.iterdir()}
        # A run folder of an earlier version has no marker but holds only the runner's own folders.
        if not (run_dir / RUN_MARKER).is_file() and not names <= {"logs", "prediction", "scoring"}:
            raise RunnerError(f"{run_dir} is not empty and is not a run folder (no {RUN_MARKER}): "
                              f"choose another --out")
        for entry in run_dir.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / RUN_MARKER).touch()
    return run_dir


def program_folder_zip(folder: Path) -> bytes:
    """A program folder as the worker receives it. This project's own programs (their files are those of
    its scoring_program/ or ingestion_program/) travel with the library beside them, as `codascore bundle`
    zips them; any other folder is taken exactly as given, without the library."""
    own = {name: path.read_bytes() for name, path in zips.folder_entries(folder)
           if not name.startswith(("codascore/", "vendor/"))}
    for source in ("scoring_program", "ingestion_program"):
        project = project_root() / source
        if project.is_dir() and own == {name: path.read_bytes() for name, path in zips.folder_entries(project)}:
            return bundle.program_zip(folder)
    return zips.folder_zip(folder)


@dataclasses.dataclass
class _Program:
    """One container of a step: its command, its mounts, where its logs go."""

    name: str
    command: str
    mounts: list[containers.Mount]
    log_prefix: Path


#: A progress line of a step's log (docs/codabench.md#progress-lines): what, done, total, and the rest.
PROGRESS_LINE = re.compile(r"^progress: (?P<what>.*?) (?P<done>\d+)/(?P<total>\d+)(?P<rest>.*)$")
#: Seconds a step runs before the terminal shows a counter, and between two plain lines off a terminal.
QUIET_SECONDS = 2.0
PLAIN_LINE_SECONDS = 5.0
POLL_SECONDS = 0.2
#: Bounds on what is read of a log a participant's code may flood: the newest bytes only when it grew more
#: between two polls, a line cut at this length, and a number of warnings echoed.
MAX_READ_BYTES = 1 << 20
MAX_LINE_CHARS = 500
MAX_SHOWN_WARNINGS = 50


def printable(line: str) -> str:
    """A log line as the terminal may show it: control characters (a participant's escape sequences
    could rewrite the terminal) become '?', and the line is cut at MAX_LINE_CHARS."""
    text = "".join(c if c.isprintable() else "?" for c in line[:MAX_LINE_CHARS])
    return text + (" ..." if len(line) > MAX_LINE_CHARS else "")


class StepView:
    """What the terminal shows of a running step (docs/codabench.md#what-the-terminal-shows): it follows the
    step's stderr logs, echoes each new WARNING line once, and shows the latest progress line as a bar, or
    the seconds elapsed when the step has run QUIET_SECONDS without one. On a terminal one line is redrawn in
    place; elsewhere a plain line is written at most every PLAIN_LINE_SECONDS, and the last one at the end.
    shown_warnings is shared by the steps of a run, so that a warning both steps log is echoed once."""

    def __init__(self, label: str, logs: list[Path], stream=None, quiet: bool = False,
                 shown_warnings: list[str] | None = None, clock=time.monotonic):
        self.label, self.logs, self.quiet, self.clock = label, logs, quiet, clock
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.warnings = shown_warnings if shown_warnings is not None else []
        self.offsets = {path: 0 for path in logs}
        self.partial = {path: b"" for path in logs}
        self.latest: re.Match | None = None
        self.started = clock()
        self.shown_at: float | None = None
        self.drawn = False  # a TTY line is on screen, without its newline
        self.drawn_status = ""
        self.flooded = False  # more than MAX_SHOWN_WARNINGS warnings came
        self.polled_at: float | None = None

    # ----- reading the logs
    def read_new_lines(self) -> list[str]:
        """The complete lines added to the logs since the last call."""
        lines = []
        for path in self.logs:
            try:
                with open(path, "rb") as handle:
                    size = handle.seek(0, os.SEEK_END)
                    if size - self.offsets[path] > MAX_READ_BYTES:  # skip a flood: only the newest counts
                        self.offsets[path], self.partial[path] = size - MAX_READ_BYTES, b""
                    handle.seek(self.offsets[path])
                    chunk = handle.read(MAX_READ_BYTES)
            except OSError:
                continue
            self.offsets[path] += len(chunk)
            *complete, rest = (self.partial[path] + chunk).split(b"\n")
            self.partial[path] = rest[:4 * MAX_LINE_CHARS]
            lines += [line.decode(errors="replace").rstrip("\r") for line in complete]
        return lines

    def take(self, line: str) -> None:
        """Note a log line: a progress line becomes the latest count, a new WARNING line is echoed."""
        line = printable(line.rsplit("\r", 1)[-1])
        if (match := PROGRESS_LINE.match(line)) is not None:
            self.latest = match
        elif line.startswith("WARNING") and line not in self.warnings:
            if len(self.warnings) < MAX_SHOWN_WARNINGS:
                self.warnings.append(line)
                self.write_line(line)
            elif not self.flooded:
                self.flooded = True
                self.write_line(f"(more than {MAX_SHOWN_WARNINGS} warnings: the rest are in the logs)")

    # ----- the terminal
    def status(self, finished: bool = False) -> str:
        seconds = self.clock() - self.started
        time_taken = f"finished in {seconds:.1f} s" if finished else f"{seconds:.0f} s"
        if self.latest is None:
            return f"[{self.label}] {time_taken if finished else 'running, ' + time_taken}"
        done, total = int(self.latest["done"]), int(self.latest["total"])
        filled = min(20, round(20 * done / total)) if total else 20
        return (f"[{self.label}] {self.latest['what']} [{'#' * filled}{'.' * (20 - filled)}] "
                f"{done}/{total}{self.latest['rest']}, {time_taken}")

    def write_line(self, text: str) -> None:
        if self.quiet:
            return
        if self.drawn:
            self.stream.write("\r\x1b[K")  # clear the redrawn line before a line that stays
            self.drawn = False
        self.stream.write(text + "\n")
        self.stream.flush()

    def show_status(self) -> None:
        now = self.clock()
        if self.quiet or (now - self.started < QUIET_SECONDS):
            return
        if self.tty:
            status = self.status()
            if not self.drawn or status != self.drawn_status:  # redraw what changed only
                self.stream.write("\r\x1b[K" + status)
                self.stream.flush()
            self.drawn, self.drawn_status = True, status
        elif self.shown_at is not None and now - self.shown_at < PLAIN_LINE_SECONDS:
            return
        else:
            self.write_line(self.status())
        self.shown_at = now

    def poll(self) -> None:
        """Read what the step logged since the last poll and update the terminal (a few times a second:
        wait_all looks at the programs far more often)."""
        now = self.clock()
        if self.polled_at is not None and now - self.polled_at < POLL_SECONDS:
            return
        self.polled_at = now
        for line in self.read_new_lines():
            self.take(line)
        self.show_status()

    def finish(self) -> None:
        """After the step: the lines still unread, and the final status when a counter was shown."""
        lines = self.read_new_lines()
        lines += [part.decode(errors="replace") for part in self.partial.values() if part]  # no final newline
        self.partial = {path: b"" for path in self.logs}
        for line in lines:
            self.take(line)
        if self.shown_at is not None:
            self.write_line(self.status(finished=True))
        self.drawn = False


def run_step(container: containers.Container, programs: list[_Program], timeout: float, label: str,
             view: StepView | None = None) -> tuple[dict[str, int | None], dict[str, float], str]:
    """Start a step's programs at the same time, as the worker does, and wait for them under one time limit,
    showing their progress and warnings through view. Returns each program's exit code (None when stopped
    at the limit) and elapsed seconds, and stderr."""
    running, files = {}, []
    view = view or StepView(label, [], quiet=True)
    try:
        for program in programs:
            out = open(f"{program.log_prefix}_stdout.txt", "wb")
            err = open(f"{program.log_prefix}_stderr.txt", "wb")
            files += [out, err]
            running[program.name] = container.start(shlex.split(program.command), program.mounts,
                                                    f"codascore-{os.getpid()}-{label}-{program.name}", out, err)
        codes, elapsed, exceeded = containers.wait_all(container, running, timeout, on_poll=view.poll)
    except BaseException:
        for name, proc in running.items():
            container.stop(proc, name)
        raise
    finally:
        for file in files:
            file.close()
        view.finish()
    stderr = "".join(Path(f"{p.log_prefix}_stderr.txt").read_text(errors="replace") for p in programs)
    if exceeded:
        stderr += f"\nExecution Time Limit exceeded. Limit was {timeout:g} seconds\n"
    return codes, elapsed, stderr


def step_view(label: str, programs: list[_Program], quiet: bool, shown_warnings: list[str]) -> StepView:
    """The StepView of a step following its programs' stderr logs."""
    return StepView(label, [Path(f"{p.log_prefix}_stderr.txt") for p in programs], quiet=quiet,
                    shown_warnings=shown_warnings)


def worker_metadata(codes: dict[str, int | None], elapsed: dict[str, float]) -> str:
    """res/metadata as the worker writes it after the prediction step: yaml.dump's sorted keys, and
    elapsedTime the submission's own command's time, else the ingestion's (docs/codabench.md#the-compute-worker)."""
    status = {"exitCode": codes.get("program"),
              "elapsedTime": elapsed.get("program") or elapsed.get("ingestion"),
              "ingestionExitCode": codes.get("ingestion"),
              "ingestionElapsedTime": elapsed.get("ingestion")}
    return yaml.dump(status, default_flow_style=False)


def run(task_name: str, submission: Path, out_dir: Path | None = None, root: Path | None = None,
        time_limit: float | None = None, max_submission_bytes: int = zips.MAX_ARCHIVE_BYTES,
        quiet: bool = False, python: str | None = None, container: containers.Container | None = None
        ) -> RunResult:
    """Run the prediction and scoring steps for one submission; return the outcome and scores.

    out_dir is the run folder (default: a new one below runs/<task>/ in the working folder); container is where each step
    runs (default: containers.choose(), a bubblewrap sandbox when it works here). python is the interpreter
    that ``python3``/``python`` in the metadata commands run (default: this one)."""
    root = Path(root) if root else project_root()
    if container is None:
        container = containers.choose(python=interpreter(python) if python else None)
    elif python:
        container = dataclasses.replace(container, python=interpreter(python))
    layout = find_layout(root, task_name)
    limit = float(time_limit if time_limit is not None else layout.time_limit)
    run_dir = prepare_run_dir(out_dir) if out_dir is not None else default_run_dir(Path("runs"), task_name, submission)
    logs = run_dir / "logs"
    logs.mkdir()
    say = (lambda message: None) if quiet else (lambda message: print(message, file=sys.stderr, flush=True))
    shown_warnings: list[str] = []
    if not container.isolated:
        print(containers.UNISOLATED_WARNING, file=sys.stderr, flush=True)
    started = time.perf_counter()

    def failed(reason: str, error: str = "") -> RunResult:
        return RunResult(task_name, Path(submission).name, run_dir, None, {}, [reason],
                         time.perf_counter() - started, error=error or reason, warnings=shown_warnings)

    # ---- prediction step: /app/program, /app/output, /app/data (read-only), /app/input_data when the task
    # has input data, /app/ingested_program for the ingestion program; no /app/shared.
    step = run_dir / "prediction"
    submission_dir, output, data = step / "ingested_program", step / "output", step / "data"
    for folder in (output, data):
        folder.mkdir(parents=True)
    try:
        place_submission(submission, submission_dir, max_submission_bytes)
        submission_command = read_command(submission_dir)
    except RunnerError as exc:
        return failed(str(exc))
    common = [containers.Mount(output, "/app/output"), containers.Mount(data, "/app/data", read_only=True)]
    if layout.input_data:
        materialise(zips.folder_zip(layout.input_data), step / "input_data")
        common.append(containers.Mount(step / "input_data", "/app/input_data"))
    programs = []
    if submission_command is None:
        # A results submission: the worker copies it into the output (which becomes res/).
        shutil.copytree(submission_dir, output, dirs_exist_ok=True)
    elif submission_command:
        say(f"[prediction] running the submission's own command: {submission_command}")
        programs.append(_Program("program", submission_command,
                                 [containers.Mount(submission_dir, "/app/program"), *common], logs / "prediction"))
    if layout.ingestion_program is not None:
        materialise(program_folder_zip(layout.ingestion_program), step / "program")
        command = read_command(step / "program")
        if not command:
            raise RunnerError("the ingestion program has no metadata.yaml command")
        say(f"[prediction] ingestion program: {command}")
        programs.append(_Program("ingestion", command,
                                 [containers.Mount(step / "program", "/app/program"),
                                  containers.Mount(submission_dir, "/app/ingested_program"), *common],
                                 logs / "ingestion"))
    codes, elapsed, stderr = run_step(container, programs, limit, "prediction",
                                      step_view("prediction", programs, quiet, shown_warnings))
    if any(code is None for name, code in codes.items()):
        return failed(f"prediction step exceeded the time limit of {limit:g} s", stderr)
    if (output / "metadata").exists():
        return failed("the prediction step wrote output/metadata (the worker's file): Codabench fails the run")
    (output / "metadata").write_text(worker_metadata(codes, elapsed))

    # ---- scoring step: /app/program, /app/input (ref/ and res/), /app/output, /app/shared, /app/data
    step = run_dir / "scoring"
    materialise(program_folder_zip(layout.scoring_program), step / "program")
    materialise(zips.folder_zip(layout.reference_data), step / "input" / "ref")
    materialise(zips.folder_zip(run_dir / "prediction" / "output"), step / "input" / "res")
    for folder in ("output", "shared", "data"):
        (step / folder).mkdir()
    command = read_command(step / "program")
    if not command:
        raise RunnerError(f"{layout.scoring_program.name} has no metadata.yaml command")
    say(f"[scoring] {command}")
    mounts = [containers.Mount(step / "program", "/app/program"), containers.Mount(step / "input", "/app/input"),
              containers.Mount(step / "output", "/app/output"), containers.Mount(step / "shared", "/app/shared"),
              containers.Mount(step / "data", "/app/data", read_only=True)]
    scoring = [_Program("program", command, mounts, logs / "scoring")]
    codes, _, stderr = run_step(container, scoring, limit, "scoring",
                                step_view("scoring", scoring, quiet, shown_warnings))
    code = codes["program"]
    scores, violations = check_outputs(step / "output", code, layout)
    return RunResult(task_name, Path(submission).name, run_dir, code, scores, violations,
                     time.perf_counter() - started, error=stderr if code != 0 else "", warnings=shown_warnings)


def check_outputs(output: Path, exit_code: int | None, layout: TaskLayout) -> tuple[dict, list[str]]:
    """The Codabench contract on a scoring step's output: returns (scores, violations)."""
    violations = []
    if (output / "metadata").exists():
        violations.append("the scoring program wrote output/metadata (the worker's file): Codabench fails the run")
    scores_path = output / "scores.json"
    if exit_code != 0:
        if scores_path.exists():
            violations.append(f"exit code {exit_code} but scores.json was written")
        return {}, violations
    if not scores_path.is_file() and (output / "scores.txt").is_file():
        # The worker's fallback: scores.txt, read as YAML, when there is no scores.json.
        try:
            scores = read_participant_yaml(output / "scores.txt")
        except (RunnerError, OSError) as exc:
            return {}, violations + [str(exc)]
        scores_path = output / "scores.txt"
    elif not scores_path.is_file():
        return {}, violations + ["exit code 0 but no scores.json (nor scores.txt): Codabench fails the run"]
    else:
        try:
            scores = json.loads(scores_path.read_text(), parse_constant=lambda c: float(c))
        except json.JSONDecodeError as exc:
            return {}, violations + [f"scores.json is not valid JSON: {exc}"]
    if not isinstance(scores, dict):
        return {}, violations + [f"{scores_path.name} is not a flat mapping of scores"]
    for key, value in scores.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            violations.append(f"{scores_path.name}: {key!r} is not a number ({type(value).__name__})")
        elif not math.isfinite(value) or abs(value) >= MAX_ABS_SCORE:
            violations.append(f"{scores_path.name}: {key!r} = {value} is not a finite number below 1e10")
    task = get_task(layout.task)
    required = set(task.score_keys)
    if layout.leaderboard_keys is not None:
        required &= set(layout.leaderboard_keys)
    required.add("score")
    try:
        omitted = set(json.loads((output / "details.json").read_text()).get("omitted_scores", []))
    except (OSError, ValueError):
        omitted = set()
    for key in sorted(required - set(scores) - (omitted - {"score"})):
        violations.append(f"{scores_path.name} lacks the column key {key!r}")
    page = output / "detailed_results.html"
    if page.is_file():
        import re

        text = page.read_text(errors="replace")
        for match in re.finditer(r"""(?:src|href)\s*=\s*["']?([^"'\s>]+)""", text):
            if not match.group(1).startswith(("data:", "#")):
                violations.append(f"detailed_results.html links to {match.group(1)[:60]!r}: not self-contained")
                break
    return scores, violations


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
