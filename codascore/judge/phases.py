"""A bundle's phase as what a judgement judges: its tasks, in turn, into one OUT, with its
execution_time_limit, the bundle's folder as the project root (docs/judge.md#a-bundles-phase).

The bundle is what ``codascore check`` reads: a competition YAML file (its paths relative to
:func:`codascore.competition.yaml_root_of`), a bundle folder holding competition.yaml, or a bundle zip
(extracted safely, as Codabench's worker does, into a folder the caller names). A phase is named by its
index in the YAML's ``phases`` (0 for the first) or by its ``name``.
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Callable

import yaml

from .. import zips
from ..competition import read_competition, task_name_of, yaml_root_of
from ..errors import JudgeError, ReferenceDataError, UnsafeArchiveError
from ..registry import get_task

__all__ = ["judge_phase", "phase_tasks"]


def phase_tasks(bundle: Path, phase: int | str, extract_to: Path | None = None) -> tuple[Path, list[str],
                                                                                       float | None]:
    """(root, the phase's tasks in its order, its execution_time_limit in seconds or None). A zip is
    extracted into extract_to (emptied first; default a new temporary folder, the caller's to remove).
    JudgeError on an unreadable bundle, an unknown phase (listing the bundle's phases) or a phase task
    whose reference data names no task of this installation."""
    root, yaml_file = bundle_root(Path(bundle), extract_to)
    try:
        competition = read_competition(yaml_file)
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise JudgeError(f"{yaml_file}: cannot be read: {exc}") from exc
    chosen = find_phase(competition, phase, bundle)
    entries = {entry.get("index"): entry for entry in competition.get("tasks") or [] if isinstance(entry, dict)}
    tasks: list[str] = []
    for index in chosen.get("tasks") or []:
        entry = entries.get(index)
        name = task_name_of(root, entry) if entry else None
        if name is None:
            raise JudgeError(f"{bundle}: phase {chosen.get('name')!r} lists task {index!r}, which has no task "
                             f"entry whose reference_data names a task")
        try:
            name = get_task(name).name
        except ReferenceDataError as exc:
            raise JudgeError(f"{bundle}: phase {chosen.get('name')!r}, task {index!r}: {exc}") from exc
        if name not in tasks:
            tasks.append(name)
    if not tasks:
        raise JudgeError(f"{bundle}: phase {chosen.get('name')!r} lists no task")
    limit = chosen.get("execution_time_limit")
    return root, tasks, float(limit) if limit is not None else None


def bundle_root(bundle: Path, extract_to: Path | None) -> tuple[Path, Path]:
    """(the folder the YAML's paths are relative to, the competition YAML) of a YAML file, folder or zip."""
    if not bundle.exists():
        raise JudgeError(f"{bundle}: no such bundle (a competition YAML, a bundle folder or zip)")
    if bundle.is_file() and bundle.suffix.lower() != ".zip":
        return yaml_root_of(bundle), bundle
    root = bundle
    if bundle.is_file():
        root = Path(extract_to) if extract_to is not None else Path(tempfile.mkdtemp(prefix="codascore-bundle-"))
        if extract_to is not None and root.exists():
            shutil.rmtree(root)
        try:
            zips.safe_extract(bundle, root)
        except (UnsafeArchiveError, zipfile.BadZipFile, OSError) as exc:
            raise JudgeError(f"{bundle}: unsafe or broken bundle zip: {exc}") from exc
    if not (root / "competition.yaml").is_file():
        raise JudgeError(f"{bundle}: no competition.yaml at the bundle's root")
    return root.resolve(), root / "competition.yaml"


def find_phase(competition: dict, phase: int | str, bundle: Path) -> dict:
    """The phase named by its name or its index (an int, or a str of digits no phase is named)."""
    phases = [entry for entry in competition.get("phases") or [] if isinstance(entry, dict)]
    for entry in phases:
        if isinstance(phase, str) and str(entry.get("name")) == phase:
            return entry
    text = str(phase).strip()
    if text.lstrip("-").isdigit() and 0 <= int(text) < len(phases):
        return phases[int(text)]
    listed = ", ".join(f"{i} {entry.get('name')!r}" for i, entry in enumerate(phases)) or "none"
    raise JudgeError(f"{bundle}: no phase {phase!r} (its phases: {listed})")


def judge_phase(bundle: Path, phase: int | str, submissions: Path, out: Path, *, workers: int | None = None,
                scheduler: str | None = None, cluster_file: Path | None = None,
                time_limit: float | None = None, progress: Callable[[str], None] | None = None,
                worker_timeout: float | None = None, **options) -> list:
    """Judge every team on each task of the bundle's phase in turn into out (one judge.sqlite, one
    results.csv for all), on one cluster; time_limit overrides the phase's. A zip is extracted into
    out/bundle. The JudgeSummary of each task."""
    from . import Where, judge

    bundle, out = Path(bundle), Path(out)
    where = Where(workers, scheduler, cluster_file, worker_timeout)  # a wrong cluster file refused first
    extract_to = out / "bundle" if bundle.is_file() and bundle.suffix.lower() == ".zip" else None
    root, tasks, limit = phase_tasks(bundle, phase, extract_to)
    say = progress or (lambda line: None)
    say(f"phase {phase!r} of {bundle.name}: {', '.join(tasks)}")
    with where.open() as client:
        return [judge(submissions, task, out, root=root, client=client, offers=where.offers(),
                      worker_timeout=worker_timeout, time_limit=time_limit if time_limit is not None else limit,
                      progress=progress, **options)
                for task in tasks]
