"""Running untrusted things safely: where a participant's files are, their code, and commands under a time
limit.

Everything a participant controls goes through here. Their files are found at the submission's root or in
its single wrapper folder (locate_submission, find_entry); their code is imported in a child process
(import_participant_module) that is killed, with its whole process group, at the limit
(call_with_time_limit); what it returns is unpickled as plain data only.
"""

from __future__ import annotations

import fnmatch
import io
import os
import pickle
import signal
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any, Callable, Sequence

from .errors import ParticipantCodeError, SubmissionError, TimeLimitExceeded

# --------------------------------------------------------------------------- where a participant's files are

#: Files the worker itself puts into res/ (never part of a submission).
WORKER_FILES = frozenset({"metadata"})
#: The folder beside a code submission's entry file whose packages import after the entry's own folder.
PARTICIPANT_VENDOR_DIR = "vendor"


def _matches(folder: Path, patterns: tuple[str, ...]) -> bool:
    names = [p.name for p in folder.iterdir()]
    return any(fnmatch.filter(names, pattern) for pattern in patterns)


def locate_submission(res_dir: Path, result_files: tuple[str, ...]) -> tuple[Path, list[str]]:
    """The folder holding the result files: res/ itself, or its single subfolder when the participant
    zipped a wrapper folder (descend once, with a warning). Anything else is a SubmissionError."""
    res_dir = Path(res_dir)
    if not res_dir.is_dir():
        raise SubmissionError("the submission folder res/ is missing")
    if not result_files or _matches(res_dir, result_files):
        return res_dir, []
    entries = [p for p in res_dir.iterdir() if p.name not in WORKER_FILES and not p.name.startswith(".")]
    folders = [p for p in entries if p.is_dir()]
    if len(entries) == 1 and len(folders) == 1 and _matches(folders[0], result_files):
        warning = (f"the submission zip holds a wrapper folder '{folders[0].name}/'; it was used, but zip "
                   f"the files themselves (not their folder) next time")
        return folders[0], [warning]
    expected = ", ".join(result_files)
    found = ", ".join(sorted(p.name + ("/" if p.is_dir() else "") for p in entries)) or "nothing"
    # The hint only where it helps: the files are there, but inside a folder.
    nested = any(fnmatch.filter([p.name for p in folder.rglob("*")], pattern)
                 for folder in folders for pattern in result_files)
    hint = " Zip the files themselves, not a folder holding them." if nested else ""
    raise SubmissionError(f"no result file found: expected {expected} at the root of the submission zip, "
                          f"found {found}.{hint}")


def check_submission_format(task, submission: Path) -> tuple[str, list[str]]:
    """``codascore validate``: the submission (zip, extracted safely into a temporary folder, or folder) found
    as scoring finds it, then task.validate_format on it with the task's default parameters: no reference
    data. Returns (summary, warnings); SubmissionError lists the problems, an unreadable zip included.
    docs/participants.md#checking-a-submission"""
    import tempfile
    import zipfile

    from .errors import UnsafeArchiveError
    from .zips import safe_extract

    submission = Path(submission)
    with tempfile.TemporaryDirectory(prefix="codascore-validate-") as scratch:
        if submission.is_file():
            if not zipfile.is_zipfile(submission):
                raise SubmissionError(f"{submission.name}: not a zip file (submit a zip of the result files, or "
                                      f"name the folder holding them)")
            try:
                safe_extract(submission, Path(scratch))
            except (UnsafeArchiveError, zipfile.BadZipFile, OSError, RuntimeError, EOFError) as exc:
                raise SubmissionError(f"{submission.name}: cannot be extracted ({exc})") from None
            submission = Path(scratch)
        code_hint = [f"a code submission is checked by running it: codascore run {task.name} SUBMISSION"]
        try:
            root, warnings = locate_submission(submission, tuple(task.result_files))
        except SubmissionError as exc:
            raise SubmissionError(exc.problems + code_hint * task.has_ingestion) from None
        try:
            return task.validate_format(root, task.load_config({})), warnings
        except SubmissionError as exc:  # result files beside code (Ariel's *.npz, say): perhaps code after all
            code = task.has_ingestion and (any(root.glob("*.py")) or (root / "run.sh").is_file())
            raise SubmissionError(exc.problems + code_hint * code, total=exc.total + code) from None


def find_entry(submission_dir: Path, entry_names: tuple[str, ...]) -> tuple[Path | None, list[str]]:
    """The code submission's entry file (the first of entry_names that exists) at the submission's root, or
    in its single wrapper folder (with a warning), and the warnings; (None, []) for a results submission,
    which holds none of them. Every family decides "is this a code submission" here."""
    try:
        root, warnings = locate_submission(submission_dir, entry_names)
    except SubmissionError:
        return None, []
    for name in entry_names:
        if (root / name).is_file():
            return root / name, warnings
    return None, []


def import_participant_module(entry: Path, module_name: str):
    """Import the participant's entry file as module_name, in this (child) process: its folder becomes the
    working directory and comes first on sys.path, so that helper modules beside it import as they would
    in the participant's own folder; its ``vendor/`` folder, when there is one, comes right after it (the
    wheels ``codascore pack`` unpacked there, docs/srbench.md#dependencies). Whatever the import raises is
    the participant's error."""
    import importlib.util

    folder = str(Path(entry).parent)
    os.chdir(folder)
    sys.path.insert(0, folder)
    vendor = os.path.join(folder, PARTICIPANT_VENDOR_DIR)
    if os.path.isdir(vendor):
        sys.path.insert(1, vendor)
    spec = importlib.util.spec_from_file_location(module_name, entry)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def run_command(argv: Sequence[str], cwd: Path, timeout: float, env: dict | None = None,
                stdout=None, stderr=None) -> int:
    """Run argv without a shell in its own process group; kill the group at the time limit.

    Returns the exit code; raises TimeLimitExceeded after killing."""
    proc = subprocess.Popen(list(argv), cwd=cwd, env=env, stdout=stdout, stderr=stderr,
                            start_new_session=True, shell=False)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        raise TimeLimitExceeded(f"{argv[0]} exceeded the time limit of {timeout:g} s and was stopped")
    except BaseException:
        kill_group(proc)
        raise


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


class _PlainDataUnpickler(pickle.Unpickler):
    """Loads only plain data: builtin containers and scalars, numpy arrays, dtypes and scalars.

    The child runs participant code, which could write any bytes to the pipe; a plain pickle.loads in
    the parent would let those bytes call any function, outside the time limit."""

    _ALLOWED = {
        ("builtins", "complex"), ("builtins", "set"), ("builtins", "frozenset"), ("builtins", "slice"),
        ("builtins", "bytearray"), ("builtins", "range"),
        *((module, name) for module in ("numpy.core.multiarray", "numpy._core.multiarray")
          for name in ("_reconstruct", "scalar")),
        *((module, "_frombuffer") for module in ("numpy.core.numeric", "numpy._core.numeric")),
        ("numpy", "ndarray"), ("numpy", "dtype"),
    }

    def find_class(self, module: str, name: str):
        if (module, name) in self._ALLOWED or (module == "numpy" and name.endswith("DType")) or (
                module == "numpy.dtypes" and name.endswith("DType")):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"the child process sent a {module}.{name}; only plain data "
                                     f"(numbers, strings, lists, dicts, numpy arrays) may be returned")


def load_plain_data(data: bytes):
    """Unpickle bytes from an untrusted process, allowing plain data only (see _PlainDataUnpickler)."""
    return _PlainDataUnpickler(io.BytesIO(data)).load()


def _child(conn, func, args, kwargs):
    os.setsid()  # own process group, so that grandchildren die with it
    try:
        message = ("ok", func(*args, **kwargs))
    except BaseException as exc:  # report every failure of participant code, SystemExit included
        message = ("error", f"{type(exc).__name__}: {exc}", traceback.format_exc())
    try:
        conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))
    except Exception as exc:  # the result itself cannot be pickled
        conn.send_bytes(pickle.dumps(("error", f"the result could not be returned: {exc}", "")))
    finally:
        conn.close()


def call_with_time_limit(func: Callable, args: tuple = (), kwargs: dict | None = None,
                         timeout: float = 60.0, label: str = "participant code") -> Any:
    """Call func(*args, **kwargs) in a forked child process and return its result, which must be plain
    data (numbers, strings, lists, dicts, numpy arrays): the parent unpickles nothing else.

    The child and anything it started are killed at ``timeout`` seconds (TimeLimitExceeded). An exception
    in the child becomes ParticipantCodeError carrying the child's traceback. Uses fork where available so
    that func may be a closure over already-imported modules.
    """
    import multiprocessing

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(sender, func, args, kwargs or {}), daemon=True)
    process.start()
    sender.close()
    try:
        if not receiver.poll(timeout):
            raise TimeLimitExceeded(f"{label} exceeded the time limit of {timeout:g} s and was stopped")
        try:
            message = load_plain_data(receiver.recv_bytes())
        except EOFError:
            process.join(5)
            raise ParticipantCodeError(f"{label} died without an answer (exit code {process.exitcode})")
        except (pickle.UnpicklingError, ValueError, TypeError, AttributeError, IndexError) as exc:
            raise ParticipantCodeError(f"{label} returned something other than plain data: {exc}")
    finally:
        if process.is_alive():
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):  # killed before its setsid()
                process.kill()
        process.join()
        receiver.close()
    if message[0] == "ok":
        return message[1]
    raise ParticipantCodeError(f"{label} raised {message[1]}\n{message[2]}")
