"""Deterministic zips of program and data folders, as the bundle holds them.

A program folder in the bundle is self-contained: the ``codascore`` library is copied into it, so that
``score.py`` imports it from beside itself on Codabench (which mounts nothing else), and ``vendor/`` holds
the pinned packages of ``wheels.lock`` that the stock image lacks (codascore.wheels). Entries are sorted
and carry a fixed timestamp, so the same sources and wheels always give the same bytes.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path, PurePosixPath
from typing import Iterable

import codascore

from .registry import GENERATION_MODULES
from . import wheels

LIBRARY_DIR = Path(codascore.__file__).resolve().parent
#: Fixed timestamp of every zip entry (the earliest a zip can store).
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
_SKIPPED_DIRS = {"__pycache__", ".pytest_cache", ".hypothesis", ".git", ".venv"}
_SKIPPED_SUFFIXES = {".pyc", ".pyo"}
_SKIPPED_NAMES = {".DS_Store"}


def project_root() -> Path:
    """The source tree the library was installed from (editable install or a checkout)."""
    return LIBRARY_DIR.parent


def folder_entries(folder: Path, prefix: str = "") -> list[tuple[str, Path]]:
    """(archive name, file) for every file below folder, sorted, caches left out. Links are refused."""
    folder = Path(folder)
    entries = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if any(part in _SKIPPED_DIRS for part in relative.parts):
            continue
        if path.is_symlink():
            raise ValueError(f"{path} is a symbolic link; bundles hold plain files only")
        if path.is_file() and path.suffix not in _SKIPPED_SUFFIXES and path.name not in _SKIPPED_NAMES:
            entries.append((prefix + relative.as_posix(), path))
    return entries


def library_entries() -> list[tuple[str, Path]]:
    """The library as a program folder holds it (``codascore/...``): every file but the generation modules."""
    return [(name, path) for name, path in folder_entries(LIBRARY_DIR, "codascore/")
            if name[len("codascore/"):] not in GENERATION_MODULES]


def program_entries(folder: Path) -> list[tuple[str, Path]]:
    """The files of a program folder as the bundle holds it: its own files plus the library."""
    entries = dict(folder_entries(folder))
    for name, path in library_entries():
        entries.setdefault(name, path)
    return sorted(entries.items())


def zip_bytes(entries: Iterable[tuple[str, Path | bytes]], compress: bool = True) -> bytes:
    """A deterministic zip: sorted names, fixed timestamps, mode 0644, deflate level 9 (or stored)."""
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method, compresslevel=9) as archive:
        for name, source in sorted(entries, key=lambda item: item[0]):
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
            info.external_attr = 0o100644 << 16
            info.compress_type = method
            data = source if isinstance(source, bytes) else Path(source).read_bytes()
            archive.writestr(info, data, compress_type=method, compresslevel=9)
    return buffer.getvalue()


# The runner's zips of a folder only carry it to the next step, as the worker's do: stored, since
# deflating a program with vendored packages took seconds per step (3.4 s for SRBench's).

def program_zip(folder: Path) -> bytes:
    return zip_bytes(program_entries(folder), compress=False)


def folder_zip(folder: Path) -> bytes:
    return zip_bytes(folder_entries(folder), compress=False)


# --------------------------------------------------------------------------- competition bundles

#: The image every competition YAML names: Codabench's stock Python 3.12 image (numpy 1.26.4, scipy 1.11.4,
#: scikit-learn 1.5.1, pandas 2.2.3, pyyaml 6.0.2, matplotlib 3.8.4, numba 0.61.2, psutil 7.0.0). What it
#: lacks travels in the program folders (WHEELS_LOCK). The checker accepts this one unless told another.
DOCKER_IMAGE = "codalab/codalab-legacy:py312"
#: The pinned wheels program folders carry, and the git-ignored cache the builder downloads them into.
WHEELS_LOCK = project_root() / wheels.LOCK_NAME
WHEELS_CACHE = project_root() / "build" / "wheels"
#: YAML keys of a task whose folder is a program: the library is copied into it.
PROGRAM_KEYS = ("scoring_program", "ingestion_program")
DATA_KEYS = ("reference_data", "input_data")
#: Top folders of generated data, one sub-folder per task: a bundle takes them from its data root (the
#: private data of codascore.bundle_data), not from the project tree (the public demo).
DATA_FOLDERS = ("reference_data", "input_data", "sample_submissions")


class BundleError(Exception):
    """The bundle cannot be built (unknown name, a referenced file missing)."""


def competition_files(root: Path) -> dict[str, Path]:
    """Bundle name -> competition YAML: ``suite`` is root/competition.yaml, a family's is
    competitions/<family>.yaml."""
    root = Path(root)
    found = {"suite": root / "competition.yaml"} if (root / "competition.yaml").is_file() else {}
    for path in sorted((root / "competitions").glob("*.yaml")):
        found[path.stem] = path
    return found


def referenced_paths(competition: dict) -> list[tuple[str, str, dict | None]]:
    """(YAML path, referenced path, task entry or None) for every file or folder the YAML names."""
    refs: list[tuple[str, str, dict | None]] = []
    for key in ("image", "terms"):
        if isinstance(competition.get(key), str):
            refs.append((key, competition[key], None))
    for i, page in enumerate(competition.get("pages") or []):
        if isinstance(page, dict) and isinstance(page.get("file"), str):
            refs.append((f"pages[{i}].file", page["file"], None))
    for i, task in enumerate(competition.get("tasks") or []):
        for key in PROGRAM_KEYS + DATA_KEYS:
            if isinstance(task, dict) and isinstance(task.get(key), str):
                refs.append((f"tasks[{i}].{key}", task[key], task))
    for i, phase in enumerate(competition.get("phases") or []):
        for key in ("starting_kit", "public_data"):
            if isinstance(phase, dict) and isinstance(phase.get(key), str):
                refs.append((f"phases[{i}].{key}", phase[key], None))
    for i, solution in enumerate(competition.get("solutions") or []):
        if isinstance(solution, dict) and isinstance(solution.get("path"), str):
            refs.append((f"solutions[{i}].path", solution["path"], None))
    return refs


def answer_sample(kit: str, inner: str) -> bool:
    """Whether the starting-kit file ``kit/inner`` belongs to a sample its task declares made from the
    answers (Task.answer_samples). A kit is ``sample_submissions/<task>`` (inner ``<sample>/...``) or holds
    one folder per task (inner ``<task>/<sample>/...``)."""
    from .registry import get_task
    from .task import ReferenceDataError

    parts = inner.split("/")
    kit_name = PurePosixPath(kit.strip("/")).name
    task, sample = (kit_name, parts[0]) if "." in kit_name else (parts[0], parts[1] if len(parts) > 2 else "")
    try:
        return sample in get_task(task).answer_samples
    except ReferenceDataError:
        return False


def bundle_entries(yaml_file: Path, root: Path, warn=print, *,
                   data_root: Path) -> list[tuple[str, Path | bytes]]:
    """Every entry of the bundle of one competition YAML: the YAML as ``competition.yaml`` at the zip root,
    and each referenced file or folder at the path the YAML gives (Codabench resolves paths from the zip
    root), program folders with the library inside. Paths below DATA_FOLDERS are taken from data_root;
    samples made from the answers are left out of every starting kit. A folder missing because its task is
    not in this build is left out with a warning; any other missing reference is a BundleError."""
    import yaml

    from .checker import _Checker

    root, data_root = Path(root), Path(data_root)
    competition = yaml.safe_load(Path(yaml_file).read_text()) or {}
    probe = _Checker(data_root, competition, from_zip=False, image=DOCKER_IMAGE)
    entries: dict[str, Path | bytes] = {"competition.yaml": Path(yaml_file).read_bytes()}
    left_out: dict[str, list[str]] = {}
    tasks = [task for task in competition.get("tasks") or [] if isinstance(task, dict)]
    programs = {value.rstrip("/") for task in tasks
                for key, value in task.items() if key in PROGRAM_KEYS and isinstance(value, str)}
    task_names = {probe.task_name(task) for task in tasks} - {None}
    try:
        vendored = wheels.vendored_files(task_names, WHEELS_LOCK, WHEELS_CACHE, progress=warn) if programs else []
    except wheels.WheelError as exc:
        raise BundleError(str(exc)) from None
    for where, value, task in referenced_paths(competition):
        name = value.strip("/")
        source = (data_root if name.split("/")[0] in DATA_FOLDERS else root) / name
        if not source.exists():
            reason = probe.missing_reason(value, where.rsplit(".", 1)[1], task)
            if reason:
                left_out.setdefault(f"task {reason[0]} {reason[1]}", []).append(value)
                continue
            hint = " (not generated in the bundle's data)" if name.split("/")[0] in DATA_FOLDERS else ""
            raise BundleError(f"{yaml_file.name}: {where} names {value!r}, which does not exist{hint}")
        if source.is_file():
            entries[name] = source
            continue
        listed = program_entries(source) if name in programs else folder_entries(source)
        if name in programs:
            clashes = sorted({inner for inner, _ in listed} & {inner for inner, _ in vendored})
            if clashes:
                raise BundleError(f"{yaml_file.name}: {where}: {name}/{clashes[0]} is also a vendored file")
            listed = listed + vendored
        if where.startswith("phases["):
            # A starting kit holding one folder per task (sample_submissions/) keeps only this
            # competition's tasks: the UAI bundle ships UAI samples, not every family's. No kit ships a
            # sample made from the answers: those stay in the demo.
            listed = [(inner, path) for inner, path in listed
                      if ("." not in inner.split("/")[0] or inner.split("/")[0] in task_names
                          or "/" not in inner) and not answer_sample(value, inner)]
            if not listed:
                warn(f"WARNING: {where}: {value} holds nothing for this competition's tasks; left out")
                continue
        entries.update((f"{name}/{inner}", path) for inner, path in listed)
    for why, values in left_out.items():
        warn(f"WARNING: {why}: left out of the bundle: {', '.join(values)}")
    return sorted(entries.items())


def build_bundle(name: str, root: Path | None = None, out_dir: Path = Path("dist"), warn=print, *,
                 data_root: Path) -> Path:
    """Write out_dir/NAME.zip for the suite or a family, its data from data_root (codascore.bundle_data);
    the same sources and data always give the same bytes."""
    root = Path(root) if root else project_root()
    files = competition_files(root)
    if name not in files:
        raise BundleError(f"no competition named {name!r} (known: {', '.join(files)})")
    data = zip_bytes(bundle_entries(files[name], root, warn=warn, data_root=data_root))
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{name}.zip"
    tmp = target.with_suffix(".zip.tmp")
    tmp.write_bytes(data)
    tmp.replace(target)
    return target
