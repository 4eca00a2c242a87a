"""``codascore pack``: a code submission with what it needs beyond the stock image, ready to upload
(docs/srbench.md#dependencies).

The stock image (codalab/codalab-legacy:py312) has numpy, scipy, scikit-learn, pandas, ... and the program
folders carry sympy; nothing is installed for a submission. A method from PyPI therefore travels inside the
zip: ``pack`` asks pip for CPython 3.12 manylinux x86_64 wheels of the team's requirements, with every
package the image's interpreter already has pinned as a constraint (so that pip neither downloads another
version nor upgrades one), checks each wheel against its own RECORD and against ``vendor.lock`` (the
sha256 of every wheel, written by the first pack, checked by every later one), unpacks the wheels the
image lacks into ``vendor/`` beside the entry file, zips the folder deterministically, refuses a zip over
the size limit, and proves the import: the zip is extracted and its entry imported under the image's
Python exactly as the ingestion imports it (its folder, then its ``vendor/``, first on ``sys.path``).
"""

from __future__ import annotations

import base64
import csv
import dataclasses
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Callable, Iterable

import yaml

from . import wheels, zips
from .codabench import VENDOR_PYTHON
from .errors import PackError, UnsafeArchiveError, WheelError
from .outcomes import ExitCode
from .sandbox import PARTICIPANT_VENDOR_DIR, find_entry

VENDOR_LOCK = "vendor.lock"
#: The largest zip pack writes, in MB, unless --max-mb says otherwise. Codabench's competition YAML has
#: no per-phase submission size; this is codascore's own bound, far below the 2 GiB the runner extracts.
DEFAULT_MAX_MB = 100
#: The platform tags pip may take wheels for: the image's glibc runs every one of them.
PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64")
PIP_TIMEOUT = 900.0
PROOF_TIMEOUT = 120.0
#: Lines of a failing pip run or import shown in the error.
TAIL_LINES = 15
@dataclasses.dataclass(frozen=True)
class Wheel:
    """One downloaded wheel: what vendor.lock records of it."""

    name: str
    version: str
    file: str
    sha256: str
    size: int

    def line(self) -> str:
        return f"{self.name} {self.version}  {self.size / 1e6:.2f} MB  {self.file}"


@dataclasses.dataclass
class Packed:
    """What pack made: the zip, the wheels vendored, what the image had, the proof's report."""

    zip_path: Path
    zip_bytes: int
    vendored: list[Wheel]
    from_image: list[str]
    imported_from_vendor: list[str]


def entry_of(task_name: str) -> tuple[str, str, tuple[str, ...]]:
    """(entry file, loader, its arguments): how the task's ingestion imports a code submission
    (Task.code_entry); PackError for a task whose code submissions are commands, not imports."""
    from .registry import all_tasks, get_task

    entry = get_task(task_name).code_entry
    if entry is None:
        packed = sorted(name for name, task in all_tasks().items() if task.code_entry is not None)
        raise PackError(f"{task_name}: its code submission is not imported by the ingestion (a command, "
                        f"solver.py or run.sh, runs instead); pack handles {', '.join(packed)}")
    return entry.file, entry.loader, tuple(entry.arguments)


# --------------------------------------------------------------------------- the image's interpreter

_ENVIRONMENT = ("import importlib.metadata as m, json, sys, sysconfig; print(json.dumps({'version': "
                "list(sys.version_info[:2]), 'implementation': sys.implementation.name, 'platform': "
                "sysconfig.get_platform(), 'packages': {d.metadata['Name']: d.version for d in m.distributions()"
                " if d.metadata['Name']}}))")


def image_packages(python: str) -> dict[str, str]:
    """{distribution: version} of what the image's interpreter has; PackError unless it is a CPython 3.12."""
    try:
        done = subprocess.run([python, "-c", _ENVIRONMENT], capture_output=True, text=True, timeout=60,
                              env=_clean_environment())
        found = json.loads(done.stdout)
    except (OSError, subprocess.TimeoutExpired, ValueError) as exc:
        raise PackError(f"{python}: cannot be asked for its packages ({exc})") from None
    version = tuple(found["version"])
    if found["implementation"] != "cpython" or version != VENDOR_PYTHON:
        raise PackError(f"{python} is {found['implementation']} {version[0]}.{version[1]}, not the image's "
                        f"CPython {VENDOR_PYTHON[0]}.{VENDOR_PYTHON[1]}: the import could not be proved")
    return dict(found["packages"])


def _clean_environment() -> dict[str, str]:
    """This process's environment without what would let the child see another interpreter's packages."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")} | {
        "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1"}


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# --------------------------------------------------------------------------- downloading and checking

def download(requirements: Path, constraints: dict[str, str], dest: Path, pip_options: Iterable[str] = (),
             timeout: float = PIP_TIMEOUT) -> list[Path]:
    """pip download of the requirements' wheels for the image's interpreter into dest, with constraints
    pinning {name: version}; the wheel files. PackError with pip's last lines when it fails."""
    constraint_file = dest / "constraints.txt"
    constraint_file.write_text("".join(f"{name}=={version}\n" for name, version in sorted(constraints.items())))
    wheel_dir = dest / "wheels"
    argv = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--only-binary=:all:",
            *(f"--platform={tag}" for tag in PLATFORMS),
            "--python-version=%d.%d" % VENDOR_PYTHON, "--implementation=cp", "--abi=cp%d%d" % VENDOR_PYTHON,
            "-d", str(wheel_dir), "-r", str(requirements), "-c", str(constraint_file), *pip_options]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=_clean_environment())
    except subprocess.TimeoutExpired:
        raise PackError(f"pip download took longer than {timeout:g} s") from None
    if done.returncode != ExitCode.OK:
        tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-TAIL_LINES:]
        raise PackError(["pip download failed (the image's packages are pinned as constraints: a method "
                         "that needs other versions of them cannot run on the image):", *tail])
    return sorted(wheel_dir.glob("*.whl"))


def _record_problem(archive: zipfile.ZipFile) -> str:
    """Why a wheel's files do not match its RECORD (sha256 of each file), or ''."""
    records = [n for n in archive.namelist() if re.fullmatch(r"[^/]+\.dist-info/RECORD", n)]
    if len(records) != 1:
        return "it holds no single .dist-info/RECORD"
    listed = {}
    for row in csv.reader(io.StringIO(archive.read(records[0]).decode("utf-8"))):
        if row and row[0] != records[0]:
            listed[row[0]] = row[1] if len(row) > 1 else ""
    for info in archive.infolist():
        if info.is_dir() or info.filename == records[0] or info.filename.endswith((".jws", ".p7s")):
            continue
        recorded = listed.get(info.filename)
        if not recorded or not recorded.startswith("sha256="):
            return f"{info.filename} is not in its RECORD with a sha256"
        digest = base64.urlsafe_b64encode(hashlib.sha256(archive.read(info)).digest()).rstrip(b"=").decode()
        if digest != recorded[len("sha256="):]:
            return f"{info.filename} does not have the sha256 its RECORD gives"
    return ""


def read_wheel(path: Path) -> tuple[Wheel, bytes]:
    """A downloaded wheel and its bytes; PackError when its name is not a wheel's or its files are not
    those its RECORD lists."""
    match = wheels.WHEEL_NAME.fullmatch(path.name)
    if not match:
        raise PackError(f"{path.name}: not a wheel file name")
    data = path.read_bytes()
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            zips.check_archive(archive)
            problem = _record_problem(archive)
    except (zipfile.BadZipFile, UnsafeArchiveError, UnicodeDecodeError) as exc:
        problem = f"not a readable wheel ({exc})"
    if problem:
        raise PackError(f"{path.name}: refused: {problem}")
    wheel = Wheel(match["name"], match["version"], path.name, hashlib.sha256(data).hexdigest(), len(data))
    return wheel, data


def read_vendor_lock(path: Path) -> dict[str, str]:
    """{wheel file: sha256} of an earlier pack's vendor.lock; {} when there is none."""
    if not path.is_file():
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        return {str(w["file"]): str(w["sha256"]) for w in data.get("wheels") or []}
    except (yaml.YAMLError, AttributeError, KeyError, TypeError) as exc:
        raise PackError(f"{path.name}: not a lock pack wrote ({exc}); delete it to start afresh") from None


def check_lock(found: list[Wheel], locked: dict[str, str]) -> None:
    """PackError when a wheel vendor.lock already records has other bytes now."""
    changed = [w for w in found if w.file in locked and locked[w.file] != w.sha256]
    if changed:
        raise PackError([f"{w.file}: sha256 {w.sha256}, but {VENDOR_LOCK} records {locked[w.file]}; refused"
                         for w in changed] + [f"a wheel of the same name and version with other bytes was "
                                              f"tampered with or replaced: delete {VENDOR_LOCK} only if you "
                                              f"trust the new one"])


def lock_text(vendored: list[Wheel], from_image: list[str], requirements: list[str]) -> str:
    header = ("# Written by `codascore pack`: the wheels unpacked into vendor/ (CPython %d.%d, manylinux x86_64),\n"
              "# each with its sha256; packing again refuses a wheel whose bytes differ.\n" % VENDOR_PYTHON)
    body = {"requirements": requirements,
            "wheels": [dataclasses.asdict(w) for w in vendored],
            "from_image": from_image}
    return header + yaml.safe_dump(body, sort_keys=False)


# --------------------------------------------------------------------------- packing

def _vendor_files(vendored: list[tuple[Wheel, bytes]]) -> dict[str, bytes]:
    """{path below vendor/: bytes} of every wheel, unpacked as the bundle's are (codascore.wheels)."""
    files: dict[str, bytes] = {}
    for wheel, data in vendored:
        pinned = wheels.PinnedWheel(wheel.name, wheel.version, (), wheel.file, "", wheel.sha256)
        try:
            unpacked = wheels.unpacked(pinned, data)
        except WheelError as exc:
            raise PackError(str(exc)) from None
        for name, content in unpacked:
            if files.setdefault(name, content) != content:
                raise PackError(f"{wheel.file}: {name} is also in another wheel, with other bytes")
    return files


def write_vendor(root: Path, files: dict[str, bytes], lock: str) -> None:
    """Replace root/vendor/ (only one an earlier pack made, or none) with files, and write vendor.lock."""
    vendor = root / PARTICIPANT_VENDOR_DIR
    if vendor.exists():
        if not (root / VENDOR_LOCK).is_file():
            raise PackError(f"{vendor} exists and no {VENDOR_LOCK} says pack made it; move it away first")
        shutil.rmtree(vendor)
    for name, content in sorted(files.items()):
        target = vendor / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    (root / VENDOR_LOCK).write_text(lock, encoding="utf-8")


def zip_folder(root: Path, max_bytes: int) -> bytes:
    """The folder's files as a deterministic zip; PackError when it is over max_bytes, or would be refused
    by the runner's extraction (zips.MAX_ARCHIVE_BYTES expanded, MAX_ARCHIVE_MEMBERS entries)."""
    entries = zips.folder_entries(root)
    expanded = sum(path.stat().st_size for _, path in entries)
    if expanded > zips.MAX_ARCHIVE_BYTES or len(entries) >= zips.MAX_ARCHIVE_MEMBERS:
        raise PackError(f"{root.name}: {len(entries)} files, {expanded / 1e6:.1f} MB unpacked: over what a "
                        f"submission may expand to ({zips.MAX_ARCHIVE_MEMBERS} files, "
                        f"{zips.MAX_ARCHIVE_BYTES / 1e6:.0f} MB)")
    data = zips.zip_bytes(entries)
    if len(data) > max_bytes:
        raise PackError(f"the packed zip is {len(data) / 1e6:.1f} MB, over the limit of {max_bytes / 1e6:g} MB "
                        f"(--max-mb); leave out what the method does not need")
    return data


def pack(task_name: str, folder: Path, requirements: Path, python: str, *, out: Path | None = None,
         max_mb: float = DEFAULT_MAX_MB, pip_options: Iterable[str] = (), program_vendor: dict[str, str] | None = None,
         program_files: Iterable[tuple[str, bytes | Path]] = (), timeout: float = PROOF_TIMEOUT,
         say: Callable[[str], None] = print) -> Packed:
    """Pack folder (a code submission of task_name) with requirements' wheels; see the module's text.
    program_vendor: {name: version} the task's program folders carry (pinned, not vendored again);
    program_files: (path in a program folder, bytes) of those packages, below vendor/, as
    wheels.vendored_files gives them: the proof's program folder holds them beside the library."""
    entry_name = entry_of(task_name)[0]
    entry, _ = find_entry(Path(folder), (entry_name,))
    if entry is None:
        raise PackError(f"{folder}: no {entry_name} at its root")
    root = entry.parent
    image = image_packages(python)
    pinned = {**image, **(program_vendor or {})}
    lines = [line.strip() for line in Path(requirements).read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    with tempfile.TemporaryDirectory(prefix="codascore-pack-") as scratch:
        scratch = Path(scratch)
        say(f"pip download of {', '.join(lines) or 'nothing'} for CPython %d.%d manylinux x86_64" % VENDOR_PYTHON)
        found = [read_wheel(path) for path in download(Path(requirements), pinned, scratch, pip_options)]
        check_lock([w for w, _ in found], read_vendor_lock(root / VENDOR_LOCK))
        have = {_normalised(name): name for name in pinned}
        vendored = [(w, data) for w, data in found if _normalised(w.name) not in have]
        from_image = sorted(f"{have[_normalised(w.name)]} {w.version}" for w, _ in found
                            if _normalised(w.name) in have)
        write_vendor(root, _vendor_files(vendored), lock_text([w for w, _ in vendored], from_image, lines))
        data = zip_folder(root, int(max_mb * 1e6))
        zip_path = Path(out) if out else root.parent / f"{root.name}.zip"
        zip_path.write_bytes(data)
        imported = prove(task_name, zip_path, python, scratch / "proof", program_files, timeout)
    return Packed(zip_path, len(data), [w for w, _ in vendored], from_image, imported)


# --------------------------------------------------------------------------- proving the import

_PROOF = """
import importlib, json, os, sys
program, entry, vendor, loader, *arguments = sys.argv[1:]
sys.path.insert(0, program)  # as ingest.py does
from codascore.codabench import use_vendored_packages
use_vendored_packages(program)
module_name, _, function = loader.partition(":")
getattr(importlib.import_module(module_name), function)(entry, *arguments)
vendor = os.path.join(os.path.dirname(entry), vendor) + os.sep
names = sorted({name.split(".")[0] for name, module in list(sys.modules.items())
                if (getattr(module, "__file__", None) or "").startswith(vendor)})
print("codascore-pack-proof:" + json.dumps(names))
"""


def prove(task_name: str, zip_path: Path, python: str, scratch: Path,
          program_files: Iterable[tuple[str, bytes | Path]] = (), timeout: float = PROOF_TIMEOUT) -> list[str]:
    """Extract the zip and import its entry under python as the task's ingestion does, beside a program
    folder holding the library and program_files; the top-level modules imported from the submission's
    vendor/. PackError with the import's last lines when it fails."""
    from .bundle import library_entries

    entry_name, loader, arguments = entry_of(task_name)
    program, submission = scratch / "program", scratch / "submission"
    for name, source in [*library_entries(), *program_files]:
        target = program / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source if isinstance(source, bytes) else Path(source).read_bytes())
    zips.safe_extract(zip_path, submission)
    entry, _ = find_entry(submission, (entry_name,))
    if entry is None:
        raise PackError(f"{zip_path.name}: no {entry_name} in the packed zip")
    argv = [python, "-c", _PROOF, str(program), str(entry), PARTICIPANT_VENDOR_DIR, loader, *arguments]
    try:
        done = subprocess.run(argv, cwd=entry.parent, capture_output=True, text=True, timeout=timeout,
                              env=_clean_environment())
    except subprocess.TimeoutExpired:
        raise PackError(f"importing {entry_name} under {python} took longer than {timeout:g} s") from None
    marker = [line for line in done.stdout.splitlines() if line.startswith("codascore-pack-proof:")]
    if done.returncode != ExitCode.OK or not marker:
        tail = (done.stderr.strip() or done.stdout.strip() or "(no output)").splitlines()[-TAIL_LINES:]
        raise PackError([f"{zip_path.name}: importing {entry_name} as the ingestion does, under {python}, "
                         f"failed (exit code {done.returncode}):", *tail])
    return json.loads(marker[-1].partition(":")[2])
