"""Local runner: score a submission exactly as Codabench's compute worker would.

For each step the worker lays out a folder mounted at ``/app`` (docs/codabench.md#the-compute-worker):

prediction step   program/ (ingestion program)  ingested_program/ (submission)  input_data/  output/  shared/
scoring step      program/ (scoring program)    input/ref/  input/res/ (= prediction output)  output/  shared/

Every folder arrives as the worker gets it: zipped with its contents at the root and extracted with
``ZipFile.extractall`` (no permission bits). A results submission (no metadata in it) is copied into the
prediction output; the worker writes ``output/metadata`` after the prediction step, which becomes
``res/metadata``. Each command from ``metadata.yaml`` is split with shlex and run without a shell, with
``/app/...`` mapped onto the step folder and ``python3`` onto this interpreter (or the one given as
``python``, standing in for the image's), under the phase's ``execution_time_limit``. Afterwards the
scores.json contract is checked.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shlex
import shutil
import sys
import time
import zipfile
from pathlib import Path

import yaml

from . import bundle, sandbox, zips
from .codabench import MAX_ABS_SCORE
from .competition import bundle_path, project_root, read_competition, task_yaml_name
from .errors import RunnerError, TimeLimitExceeded, UnsafeArchiveError
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
    """A submission zip is extracted safely; a folder is zipped and extracted (as an upload would be)."""
    submission = Path(submission)
    if submission.is_file():
        if not zipfile.is_zipfile(submission):
            raise RunnerError(f"{submission.name} is not a zip file")
        try:
            zips.safe_extract(submission, dest, max_bytes=max_bytes)
        except (UnsafeArchiveError, zipfile.BadZipFile) as exc:
            raise RunnerError(f"submission {submission.name} refused: {exc}") from exc
    elif submission.is_dir():
        try:
            materialise(zips.folder_zip(submission), dest)
        except ValueError as exc:
            raise RunnerError(f"submission folder refused: {exc}") from exc
    else:
        raise RunnerError(f"submission not found: {submission}")


def read_command(program_dir: Path) -> str | None:
    """The ``command`` of metadata.yaml (or metadata) at the program root; None when there is none."""
    for name in ("metadata.yaml", "metadata"):
        path = program_dir / name
        if path.is_file():
            data = yaml.safe_load(path.read_text()) or {}
            command = data.get("command") if isinstance(data, dict) else None
            return str(command) if command else ""
    return None


def interpreter(python: str) -> str:
    """The absolute path of an interpreter given as a path or a command name (symbolic links kept: a
    virtual environment's python is one). RunnerError when there is no such executable."""
    found = shutil.which(python)
    if not found:
        raise RunnerError(f"python interpreter {python!r} not found or not executable")
    return os.path.abspath(found)


def container_argv(command: str, mounts: dict[str, Path], python: str | None = None) -> list[str]:
    """shlex-split the command (as docker-py does) and map container paths onto host folders.

    mounts maps container paths (``/app/program``...) to folders; the longest prefix wins. ``python3`` and
    ``python`` become the interpreter python (default: this one), standing in for the image's."""
    argv = shlex.split(command)
    if argv and argv[0] in ("python3", "python"):
        argv[0] = python or sys.executable
    ordered = sorted(mounts.items(), key=lambda item: -len(item[0]))
    mapped = []
    for arg in argv:
        for container, host in ordered:
            if arg == container or arg.startswith(container + "/"):
                arg = str(host) + arg[len(container):]
                break
        mapped.append(arg)
    return mapped


def _run_container(command: str, mounts: dict[str, Path], cwd: Path, timeout: float, log_prefix: Path,
                   python: str | None = None) -> tuple[int | None, float, str]:
    """Run one 'container': returns (exit code or None on time-out, elapsed seconds, stderr text)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    argv = container_argv(command, mounts, python)
    started = time.perf_counter()
    with open(f"{log_prefix}_stdout.txt", "wb") as out, open(f"{log_prefix}_stderr.txt", "wb") as err:
        try:
            code = sandbox.run_command(argv, cwd=cwd, timeout=timeout, env=env, stdout=out, stderr=err)
        except TimeLimitExceeded:
            code = None
    elapsed = time.perf_counter() - started
    stderr = Path(f"{log_prefix}_stderr.txt").read_text(errors="replace")
    if code is None:
        stderr += f"\nExecution Time Limit exceeded. Limit was {timeout:g} seconds\n"
    return code, elapsed, stderr


def run(task_name: str, submission: Path, out_dir: Path, root: Path | None = None,
        time_limit: float | None = None, max_submission_bytes: int = zips.MAX_ARCHIVE_BYTES,
        quiet: bool = False, python: str | None = None) -> RunResult:
    """Run the prediction and scoring steps for one submission; return the outcome and scores. python is
    the interpreter that ``python3``/``python`` in the metadata commands run (default: this one)."""
    root = Path(root) if root else project_root()
    python = interpreter(python) if python else None
    layout = find_layout(root, task_name)
    limit = float(time_limit if time_limit is not None else layout.time_limit)
    run_dir = Path(out_dir).resolve()
    if run_dir.exists():
        shutil.rmtree(run_dir)
    logs = run_dir / "logs"
    logs.mkdir(parents=True)
    say = (lambda message: None) if quiet else (lambda message: print(message, file=sys.stderr, flush=True))
    started = time.perf_counter()

    # ---- prediction step
    step = run_dir / "prediction"
    submission_dir, output = step / "ingested_program", step / "output"
    for folder in (output, step / "shared"):
        folder.mkdir(parents=True)
    try:
        place_submission(submission, submission_dir, max_submission_bytes)
    except RunnerError as exc:
        return RunResult(task_name, Path(submission).name, run_dir, None, {}, [str(exc)],
                         time.perf_counter() - started, error=str(exc))
    metadata = {"exitCode": None, "elapsedTime": None, "ingestionExitCode": None, "ingestionElapsedTime": None}
    submission_command = read_command(submission_dir)
    if submission_command is None:
        # A results submission: the worker copies it into the output (which becomes res/).
        shutil.copytree(submission_dir, output, dirs_exist_ok=True)
    elif submission_command:
        say(f"[prediction] running the submission's own command: {submission_command}")
        mounts = {"/app/program": submission_dir, "/app/output": output, "/app/shared": step / "shared"}
        if layout.input_data:
            mounts["/app/input_data"] = step / "input_data"
        code, elapsed, _ = _run_container(submission_command, mounts, submission_dir, limit, logs / "prediction",
                                        python)
        metadata.update(exitCode=code, elapsedTime=elapsed)
    if layout.ingestion_program is not None:
        materialise(bundle.program_zip(layout.ingestion_program), step / "program")
        if layout.input_data:
            materialise(zips.folder_zip(layout.input_data), step / "input_data")
        command = read_command(step / "program")
        if not command:
            raise RunnerError("the ingestion program has no metadata.yaml command")
        say(f"[prediction] ingestion program: {command}")
        mounts = {"/app/program": step / "program", "/app/ingested_program": submission_dir,
                  "/app/input_data": step / "input_data", "/app/output": output, "/app/shared": step / "shared"}
        code, elapsed, stderr = _run_container(command, mounts, step / "program", limit, logs / "ingestion", python)
        metadata.update(ingestionExitCode=code, ingestionElapsedTime=elapsed)
        if code is None:
            return RunResult(task_name, Path(submission).name, run_dir, None, {},
                             [f"prediction step exceeded the time limit of {limit:g} s"],
                             time.perf_counter() - started, error=stderr)
    (output / "metadata").write_text(yaml.safe_dump(metadata, sort_keys=False))

    # ---- scoring step
    step = run_dir / "scoring"
    materialise(bundle.program_zip(layout.scoring_program), step / "program")
    materialise(zips.folder_zip(layout.reference_data), step / "input" / "ref")
    materialise(zips.folder_zip(run_dir / "prediction" / "output"), step / "input" / "res")
    (step / "output").mkdir()
    (step / "shared").mkdir()
    command = read_command(step / "program")
    if not command:
        raise RunnerError(f"{layout.scoring_program.name} has no metadata.yaml command")
    say(f"[scoring] {command}")
    code, elapsed, stderr = _run_container(command, {"/app": step}, step / "program", limit, logs / "scoring",
                                           python)
    scores, violations = check_outputs(step / "output", code, layout)
    return RunResult(task_name, Path(submission).name, run_dir, code, scores, violations,
                     time.perf_counter() - started, error=stderr if code != 0 else "")


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
    if not scores_path.is_file():
        return {}, violations + ["exit code 0 but no scores.json: Codabench fails the run"]
    try:
        scores = json.loads(scores_path.read_text(), parse_constant=lambda c: float(c))
    except json.JSONDecodeError as exc:
        return {}, violations + [f"scores.json is not valid JSON: {exc}"]
    if not isinstance(scores, dict):
        return {}, violations + ["scores.json is not a flat JSON object"]
    for key, value in scores.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            violations.append(f"scores.json: {key!r} is not a number ({type(value).__name__})")
        elif not math.isfinite(value) or abs(value) >= MAX_ABS_SCORE:
            violations.append(f"scores.json: {key!r} = {value} is not a finite number below 1e10")
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
        violations.append(f"scores.json lacks the column key {key!r}")
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
    if result.error and not result.scored and result.error.strip() not in result.violations:
        errors = [line for line in result.error.splitlines() if line.startswith("ERROR")]
        lines += ["  " + line for line in (errors or result.error.splitlines()[-15:])[:25]]
    return "\n".join(lines)
