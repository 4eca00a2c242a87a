"""What the compute worker does around a step, done the same way here: run folders, folders delivered as
zips and extracted, the submission placed, a program's command read, res/metadata written
(docs/codabench.md#the-compute-worker)."""

from __future__ import annotations

import collections
import contextlib
import contextvars
import os
import re
import shlex
import shutil
import threading
import zipfile
from pathlib import Path
from typing import Iterator

import yaml

from .. import bundle, validate, zips
from ..competition import project_root
from ..errors import CodascoreError, RunnerError, SubmissionError, UnsafeArchiveError
from ..formats.run_folder import RUN_MARKER, RUNNER_FOLDERS, UNIT_START
from ..outcomes import one_line



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
    """The run folder, empty but for its marker (and a judge's UNIT_START). An existing folder is emptied only
    when it is a run folder (it holds RUN_MARKER, or nothing but the runner's logs/, prediction/ and scoring/,
    and a judge's record of the attempt's start) and used when empty;
    any other folder is refused, so that nothing outside a run folder is ever deleted."""
    run_dir = Path(out_dir).resolve()
    if run_dir.exists() and not run_dir.is_dir():
        raise RunnerError(f"run folder {run_dir} is a file")
    if run_dir.is_dir() and any(run_dir.iterdir()):
        names = {entry.name for entry in run_dir.iterdir()}
        # A run folder of an earlier version has no marker but holds only the runner's own folders.
        if not (run_dir / RUN_MARKER).is_file() and not names - {UNIT_START} <= RUNNER_FOLDERS:
            raise RunnerError(f"{run_dir} is not empty and is not a run folder (no {RUN_MARKER}): "
                              f"choose another --out")
        for entry in run_dir.iterdir():
            if entry.name == UNIT_START:  # the judge's record of the attempt's start
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / RUN_MARKER).touch()
    return run_dir


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
    What cannot be extracted is the submission's fault: SubmissionError with a one-line reason."""
    submission = Path(submission)
    if submission.is_file():
        if not zipfile.is_zipfile(submission):
            raise SubmissionError(f"{submission.name} is not a zip file")
        try:
            zips.safe_extract(submission, dest, max_bytes=max_bytes)
        except (UnsafeArchiveError, zipfile.BadZipFile, OSError, RuntimeError, EOFError) as exc:
            raise SubmissionError(f"submission {submission.name} refused: {one_line(exc)}") from exc
    elif submission.is_dir():
        try:
            materialise(folder_archive(submission), dest)
        except (ValueError, OSError) as exc:
            raise SubmissionError(f"submission folder refused: {one_line(exc)}") from exc
    else:
        raise RunnerError(f"submission not found: {submission}")


def read_command(program_dir: Path, error: type[CodascoreError] = SubmissionError) -> str | None:
    """The ``command`` of metadata.yaml (or metadata) at the program root; None when there is none, ""
    when the file names no command. The file is read with validate.read_participant_yaml's bounds; what is
    wrong with it raises error (a submission's by default, RunnerError for an organiser's program)."""
    for name in ("metadata.yaml", "metadata"):
        path = program_dir / name
        if path.is_file():
            try:
                data = validate.read_participant_yaml(path) or {}
            except SubmissionError as exc:
                raise error(one_line(exc)) from None
            command = data.get("command") if isinstance(data, dict) else None
            try:
                shlex.split(str(command or ""))
            except ValueError as exc:
                raise error(f"{name}: the command cannot be split as a shell would: {exc}") from None
            return str(command) if command else ""
    return None


def program_command(program_dir: Path, what: str) -> str:
    """The command of an organiser's program folder; RunnerError when it names none."""
    command = read_command(program_dir, RunnerError)
    if not command:
        raise RunnerError(f"the {what} has no metadata.yaml command")
    return command


def interpreter(python: str) -> str:
    """The absolute path of an interpreter given as a path or a command name (symbolic links kept: a
    virtual environment's python is one). RunnerError when there is no such executable."""
    found = shutil.which(python)
    if not found:
        raise RunnerError(f"python interpreter {python!r} not found or not executable")
    return os.path.abspath(found)


#: The environment variable bounding the archives a process keeps (bytes; 0 keeps none), and its default.
ARCHIVE_CACHE_VARIABLE, ARCHIVE_CACHE_BYTES = "CODASCORE_ARCHIVE_CACHE_BYTES", 512 * 1024**2
#: Folders whose digest the caller knows (their resolved path -> sha256), for the unit this thread runs:
#: archives are kept by digest. Per thread (a context variable), so one unit's block never vouches for another's.
_DIGESTS: contextvars.ContextVar[dict[str, str]] = contextvars.ContextVar("codascore_known_digests", default={})
#: (program or not, digest) -> the archive, least recently used first; its lock.
_ARCHIVES: collections.OrderedDict[tuple[bool, str], bytes] = collections.OrderedDict()
_LOCK = threading.Lock()


@contextlib.contextmanager
def known_digests(digests: dict[str, str]) -> Iterator[None]:
    """Within the block, the folders named (path -> sha256, as digests.folder_sha256 gives it) arrive as
    archives made once per process and kept by their digest: a judge's worker zips the programs, the
    reference data and a team's submission once, not once per unit. The caller vouches for the digests,
    for the block only: after it, a folder edited in place is zipped again."""
    token = _DIGESTS.set({**_DIGESTS.get(), **{str(Path(path).resolve()): digest for path, digest in digests.items()}})
    try:
        yield
    finally:
        _DIGESTS.reset(token)


def folder_archive(folder: Path, program: bool = False) -> bytes:
    """A folder as the worker receives it, zipped (program_folder_zip for a program's folder); kept by its
    digest when known_digests named it, within ARCHIVE_CACHE_BYTES (the environment variable) in all."""
    make = program_folder_zip if program else zips.folder_zip
    digest = _DIGESTS.get().get(str(Path(folder).resolve()))
    limit = int(os.environ.get(ARCHIVE_CACHE_VARIABLE, ARCHIVE_CACHE_BYTES))
    if digest is None or limit <= 0:
        return make(folder)
    key = (program, digest)
    with _LOCK:
        if key in _ARCHIVES:
            _ARCHIVES.move_to_end(key)
            return _ARCHIVES[key]
    data = make(folder)
    with _LOCK:
        _ARCHIVES[key] = data
        while sum(map(len, _ARCHIVES.values())) > limit and len(_ARCHIVES) > 1:
            _ARCHIVES.popitem(last=False)
    return data


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


def worker_metadata(codes: dict[str, int | None], elapsed: dict[str, float]) -> str:
    """res/metadata as the worker writes it after the prediction step: yaml.dump's sorted keys, and
    elapsedTime the submission's own command's time, else the ingestion's (docs/codabench.md#the-compute-worker)."""
    status = {"exitCode": codes.get("program"),
              "elapsedTime": elapsed.get("program") or elapsed.get("ingestion"),
              "ingestionExitCode": codes.get("ingestion"),
              "ingestionElapsedTime": elapsed.get("ingestion")}
    return yaml.dump(status, default_flow_style=False)
