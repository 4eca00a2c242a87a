"""Deterministic zips of program and data folders, as the bundle holds them.

A program folder in the bundle is self-contained: the ``codascore`` library is copied into it, so that
``score.py`` imports it from beside itself on Codabench (which mounts nothing else), and ``vendor/`` holds
the pinned packages of ``wheels.lock`` that the stock image lacks (codascore.wheels). Entries are sorted
and carry a fixed timestamp, so the same sources and wheels always give the same bytes.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import codascore

from . import wheels
from .competition import (
    DATA_FOLDERS,
    PROGRAM_KEYS,
    competition_files,
    missing_reason,
    project_root,
    read_competition,
    referenced_paths,
    task_name_of,
)
from .errors import BundleError, ReferenceDataError
from .registry import GENERATION_MODULES, get_task
from .zips import folder_entries, zip_bytes

LIBRARY_DIR = Path(codascore.__file__).resolve().parent
#: Packages of the library that no step runs: the organisers' judge (it needs Dask, which the image lacks)
#: and final leaderboard, the client of a Codabench site, and the compute worker serving its queue.
ORGANISER_PACKAGES = ("judge/", "leaderboard/", "platform/", "worker/")


def library_entries() -> list[tuple[str, Path]]:
    """The library as a program folder holds it (``codascore/...``): every file but the generation modules
    and the organisers' packages."""
    return [(name, path) for name, path in folder_entries(LIBRARY_DIR, "codascore/")
            if name[len("codascore/"):] not in GENERATION_MODULES
            and not name[len("codascore/"):].startswith(ORGANISER_PACKAGES)]


def program_entries(folder: Path) -> list[tuple[str, Path]]:
    """The files of a program folder as the bundle holds it: its own files plus the library."""
    entries = dict(folder_entries(folder))
    for name, path in library_entries():
        entries.setdefault(name, path)
    return sorted(entries.items())


# The runner's zips of a folder only carry it to the next step, as the worker's do: stored, since
# deflating a program with vendored packages took seconds per step (3.4 s for SRBench's).

def program_zip(folder: Path) -> bytes:
    return zip_bytes(program_entries(folder), compress=False)


# --------------------------------------------------------------------------- competition bundles

#: The image every competition YAML names: Codabench's stock Python 3.12 image (numpy 1.26.4, scipy 1.11.4,
#: scikit-learn 1.5.1, pandas 2.2.3, pyyaml 6.0.2, matplotlib 3.8.4, numba 0.61.2, psutil 7.0.0). What it
#: lacks travels in the program folders (WHEELS_LOCK). The checker accepts this one unless told another.
DOCKER_IMAGE = "codalab/codalab-legacy:py312"
#: The pinned wheels program folders carry, and the git-ignored cache the builder downloads them into.
WHEELS_LOCK = project_root() / wheels.LOCK_NAME
WHEELS_CACHE = project_root() / "build" / "wheels"
def answer_sample(kit: str, inner: str) -> bool:
    """Whether the starting-kit file ``kit/inner`` belongs to a sample its task declares made from the
    answers (Task.answer_samples). A kit is ``sample_submissions/<task>`` (inner ``<sample>/...``) or holds
    one folder per task (inner ``<task>/<sample>/...``)."""
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
    root, data_root = Path(root), Path(data_root)
    competition = read_competition(yaml_file)
    entries: dict[str, Path | bytes] = {"competition.yaml": Path(yaml_file).read_bytes()}
    left_out: dict[str, list[str]] = {}
    tasks = [task for task in competition.get("tasks") or [] if isinstance(task, dict)]
    programs = {value.rstrip("/") for task in tasks
                for key, value in task.items() if key in PROGRAM_KEYS and isinstance(value, str)}
    task_names = {task_name_of(data_root, task) for task in tasks} - {None}
    vendored = wheels.vendored_files(task_names, WHEELS_LOCK, WHEELS_CACHE, progress=warn) if programs else []
    for where, value, task in referenced_paths(competition):
        name = value.strip("/")
        source = (data_root if name.split("/")[0] in DATA_FOLDERS else root) / name
        if not source.exists():
            reason = missing_reason(data_root, value, where.rsplit(".", 1)[1], task)
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
