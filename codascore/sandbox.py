"""Running untrusted things safely: zip extraction, commands and Python calls under a time limit.

Everything a participant controls goes through here: their zip is extracted with no path escaping its
folder, their code runs in a child process that is killed (with its whole process group) at the limit.
"""

from __future__ import annotations

import io
import os
import pickle
import signal
import stat
import subprocess
import traceback
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Sequence

#: Default limits for a submission archive (Codabench's own upload limit is in the hundreds of MB).
MAX_ARCHIVE_BYTES = 2 * 1024**3
MAX_ARCHIVE_MEMBERS = 100_000


class UnsafeArchiveError(ValueError):
    """A zip member would escape the destination, is a link or device, or the archive is too large."""


class TimeLimitExceeded(RuntimeError):
    """The child was killed at its time limit."""


class ParticipantCodeError(RuntimeError):
    """Participant code raised; the message holds its traceback."""


def check_archive(archive: zipfile.ZipFile, max_bytes: int = MAX_ARCHIVE_BYTES,
                  max_members: int = MAX_ARCHIVE_MEMBERS) -> list[zipfile.ZipInfo]:
    """Validate every member of a zip before anything is written; return the members.

    Refused: absolute paths, drive letters, ``..`` components, backslashes used as separators, symbolic
    links and other non-regular entries (Unix mode in external_attr), more than max_members entries, or a
    total uncompressed size over max_bytes (zip bombs).
    """
    members = archive.infolist()
    if len(members) > max_members:
        raise UnsafeArchiveError(f"archive has {len(members)} entries, more than the limit {max_members}")
    total = 0
    for info in members:
        name = info.filename
        path = PurePosixPath(name)
        if "\\" in name or name.startswith("/") or (len(name) > 1 and name[1] == ":"):
            raise UnsafeArchiveError(f"archive entry {name!r} has an absolute or non-POSIX path")
        if any(part == ".." for part in path.parts):
            raise UnsafeArchiveError(f"archive entry {name!r} escapes the destination folder ('..')")
        file_type = stat.S_IFMT(info.external_attr >> 16)  # 0 when the zip tool stored no type
        if file_type not in (0, stat.S_IFREG, stat.S_IFDIR):
            kind = "symbolic link" if file_type == stat.S_IFLNK else "special file"
            raise UnsafeArchiveError(f"archive entry {name!r} is a {kind}; only files and folders are allowed")
        total += info.file_size
        if total > max_bytes:
            raise UnsafeArchiveError(f"archive expands to more than {max_bytes} bytes")
    return members


def safe_extract(zip_path: Path, dest: Path, max_bytes: int = MAX_ARCHIVE_BYTES,
                 max_members: int = MAX_ARCHIVE_MEMBERS) -> None:
    """Extract zip_path into dest like Codabench's worker (ZipFile.extractall: no permission bits), after
    check_archive. The resolved path of every member is verified to stay inside dest."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    root = dest.resolve()
    with zipfile.ZipFile(zip_path) as archive:
        members = check_archive(archive, max_bytes, max_members)
        for info in members:
            target = (root / info.filename).resolve()
            if target != root and root not in target.parents:
                raise UnsafeArchiveError(f"archive entry {info.filename!r} escapes the destination folder")
        written = 0
        for info in members:
            target = root / info.filename
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(info) as src, open(target, "wb") as out:
                # Count real bytes too: file_size in the header can lie.
                while chunk := src.read(1 << 20):
                    written += len(chunk)
                    if written > max_bytes:
                        raise UnsafeArchiveError(f"archive expands to more than {max_bytes} bytes")
                    out.write(chunk)


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
