"""The pinned wheels a program folder carries: what Codabench's stock image lacks (``wheels.lock``).

The bundle builder asks for the files of a competition's program folders; this module reads the lock
file, takes each wheel from the cache (``build/wheels/``) or downloads it, refuses any file whose sha256
is not the recorded one, and unpacks it as pip would install it into ``vendor/`` (codabench.VENDOR_DIR),
leaving out test suites, wheel data such as man pages, and the RECORD of files (no longer true once the
tests are gone). METADATA stays, so ``importlib.metadata.version()`` works; licence files stay.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import re
import urllib.error
import urllib.request
import zipfile
from pathlib import Path, PurePosixPath
from typing import Callable, Iterable

import yaml

from .codabench import VENDOR_DIR, VENDOR_PYTHON
from .errors import WheelError

LOCK_NAME = "wheels.lock"
#: Folders of a wheel that are the package's own test suites, never run on Codabench.
SKIPPED_DIRS = frozenset({"tests", "benchmarks"})
SKIPPED_FILES = frozenset({"conftest.py"})
#: What a dist-info folder keeps: enough for importlib.metadata, and the licences.
KEPT_METADATA = re.compile(r"(METADATA|top_level\.txt|(LICEN[CS]E|COPYING|AUTHORS|NOTICE)[^/]*|licenses/.+)")
DOWNLOAD_TIMEOUT = 120.0
#: A wheel file name (PEP 427), its parts named; codascore pack reads the wheels pip downloads with it too.
WHEEL_NAME = re.compile(r"(?P<name>[^-]+)-(?P<version>[^-]+)(-\d[^-]*)?-(?P<python>[^-]+)-(?P<abi>[^-]+)"
                         r"-(?P<platform>[^-]+)\.whl")


@dataclasses.dataclass(frozen=True)
class PinnedWheel:
    name: str
    version: str
    families: tuple[str, ...]
    file: str
    url: str
    sha256: str


def read_lock(path: Path) -> list[PinnedWheel]:
    """The wheels of the lock file, each checked to be a CPython 3.12 manylinux x86_64 (or pure) wheel of
    the named version with a sha256 digest."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise WheelError(f"{path.name}: cannot be read ({exc.strerror}); bundles are built from a source "
                         "checkout, which holds it") from None
    except yaml.YAMLError as exc:
        raise WheelError(f"{path.name}: not valid YAML ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("wheels") or [], list):
        raise WheelError(f"{path.name}: must be a mapping whose `wheels` is a list")
    wheels = []
    for i, entry in enumerate(data.get("wheels") or []):
        where = f"{path.name}: wheels[{i}]"
        try:
            wheel = PinnedWheel(str(entry["name"]), str(entry["version"]), tuple(entry["families"]),
                                str(entry["file"]), str(entry["url"]), str(entry["sha256"]).lower())
        except (KeyError, TypeError) as exc:
            raise WheelError(f"{where}: needs name, version, families, file, url and sha256 ({exc})") from None
        problem = _target_problem(wheel)
        if problem:
            raise WheelError(f"{where}.file {wheel.file!r}: {problem}")
        wheels.append(wheel)
    return wheels


def _normalised(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _target_problem(wheel: PinnedWheel) -> str:
    """Why a wheel does not fit the image's interpreter, or ''."""
    match = WHEEL_NAME.fullmatch(wheel.file)
    if not match or not wheel.url.endswith("/" + wheel.file):
        return "not a wheel file name, or not the file the url names"
    if (_normalised(match["name"]), match["version"]) != (_normalised(wheel.name), wheel.version):
        return f"not {wheel.name} {wheel.version}"
    cpython = "cp%d%d" % VENDOR_PYTHON
    if not set(match["python"].split(".")) & {cpython, "py3"}:
        return f"not a wheel for {cpython}"
    platforms = match["platform"].split(".")
    if platforms != ["any"] and not any(p.startswith("manylinux") and p.endswith("_x86_64") for p in platforms):
        return "not a wheel for manylinux x86_64"
    if not re.fullmatch(r"[0-9a-f]{64}", wheel.sha256):
        return f"sha256 {wheel.sha256!r} is not a sha256 digest"
    return ""


def wheels_for(task_names: Iterable[str], path: Path) -> list[PinnedWheel]:
    """The wheels a competition with these tasks (``family.task``) needs, in lock-file order."""
    families = {name.split(".", 1)[0] for name in task_names}
    return [wheel for wheel in read_lock(path) if families & set(wheel.families)]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fetch(wheel: PinnedWheel, cache: Path,
          progress: Callable[[str], None] = lambda message: None) -> bytes:
    """The wheel's bytes, from the cache or downloaded into it; raises WheelError unless their sha256 is
    the recorded one. A cached file with other bytes is refused, not replaced: the cache is only ever
    written whole, after the check, so such a file was put there by hand."""
    cache = Path(cache)
    target = cache / wheel.file
    if target.is_file():
        data = target.read_bytes()
        if _sha256(data) != wheel.sha256:
            raise WheelError(f"{target}: sha256 {_sha256(data)}, but {LOCK_NAME} records {wheel.sha256} for "
                             f"{wheel.name} {wheel.version}; refused (delete the file to download it again)")
        return data
    progress(f"downloading {wheel.file} into {cache}")
    try:
        with urllib.request.urlopen(wheel.url, timeout=DOWNLOAD_TIMEOUT) as response:
            data = response.read()
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise WheelError(f"{wheel.file} is not in {cache} and cannot be downloaded from {wheel.url} ({reason}); "
                         f"put the file there by hand (sha256 {wheel.sha256})") from None
    if _sha256(data) != wheel.sha256:
        raise WheelError(f"{wheel.url}: the downloaded bytes have sha256 {_sha256(data)}, but {LOCK_NAME} records "
                         f"{wheel.sha256}; refused")
    cache.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.part")
    partial.write_bytes(data)
    partial.replace(target)
    return data


def unpacked(wheel: PinnedWheel, data: bytes) -> list[tuple[str, bytes]]:
    """(path below vendor/, bytes) of every file the wheel installs, as pip would lay it out, without test
    suites, wheel data other than purelib/platlib, and dist-info files other than metadata and licences."""
    files = []
    data_dir = f"{wheel.file.split('-')[0]}-{wheel.version}.data/"
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for info in archive.infolist():
            name = info.filename
            if info.is_dir():
                continue
            if name.startswith(data_dir):
                # A wheel's .data/purelib and .data/platlib install into site-packages; the rest (scripts,
                # headers, man pages) has no place in a program folder.
                scheme, _, rest = name[len(data_dir):].partition("/")
                if scheme not in ("purelib", "platlib"):
                    continue
                name = rest
            path = PurePosixPath(name)
            if path.is_absolute() or ".." in path.parts:
                raise WheelError(f"{wheel.file}: entry {info.filename!r} leaves its folder")
            top = path.parts[0]
            if top.endswith(".dist-info"):
                if not KEPT_METADATA.fullmatch("/".join(path.parts[1:])):
                    continue
            elif SKIPPED_DIRS & set(path.parts[:-1]) or path.name in SKIPPED_FILES:
                continue
            files.append((path.as_posix(), archive.read(info)))
    return files


def vendored_files(task_names: Iterable[str], lock: Path, cache: Path,
                   progress: Callable[[str], None] = lambda message: None) -> list[tuple[str, bytes]]:
    """(path in a program folder, bytes) of the pinned packages a competition with these tasks needs,
    below ``vendor/``; empty when it needs none. Raises WheelError (one line) when a wheel cannot be had."""
    files: dict[str, bytes] = {}
    for wheel in wheels_for(task_names, lock):
        for name, data in unpacked(wheel, fetch(wheel, cache, progress)):
            files.setdefault(f"{VENDOR_DIR}/{name}", data)
    return sorted(files.items())
