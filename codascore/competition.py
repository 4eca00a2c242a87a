"""Reading what describes a competition, written once: the competition YAML, the paths it names, and each
task's ``task.yaml``. The bundle builder, the checker, the runner and the scoring program all read them
through here.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

import yaml

import codascore

from .errors import ReferenceDataError
from .registry import get_task
from .task import Task

#: YAML keys of a task whose folder is a program (the library is copied into it), and of its data.
PROGRAM_KEYS = ("scoring_program", "ingestion_program")
DATA_KEYS = ("reference_data", "input_data")
#: Top folders of generated data, one sub-folder per task: a bundle takes them from its data root (the
#: private data of codascore.bundle_data), not from the project tree (the public demo).
DATA_FOLDERS = ("reference_data", "input_data", "sample_submissions")
TASK_YAML = "task.yaml"


def project_root() -> Path:
    """The source tree the library was installed from (editable install or a checkout)."""
    return Path(codascore.__file__).resolve().parent.parent


# --------------------------------------------------------------------------- the competition YAML

class _DuplicateKeyLoader(yaml.SafeLoader):
    """SafeLoader that records duplicated mapping keys (PyYAML silently keeps the last one)."""

    def __init__(self, stream):
        super().__init__(stream)
        self.duplicates: list[tuple[Any, int]] = []

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                if key in seen:
                    self.duplicates.append((key, key_node.start_mark.line + 1))
                seen.add(key)
            except TypeError:
                pass
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str) -> tuple[Any, list[tuple[Any, int]]]:
    """(data, [(duplicated key, line)]) with a safe loader."""
    loader = _DuplicateKeyLoader(text)
    try:
        return loader.get_single_data(), loader.duplicates
    finally:
        loader.dispose()


def read_competition(yaml_file: Path) -> dict:
    """A competition YAML as a mapping ({} when it holds none); yaml.YAMLError when it is not YAML."""
    data, _ = load_yaml(Path(yaml_file).read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def competition_files(root: Path) -> dict[str, Path]:
    """Bundle name -> competition YAML: ``suite`` is root/competition.yaml, a family's is
    competitions/<family>.yaml."""
    root = Path(root)
    found = {"suite": root / "competition.yaml"} if (root / "competition.yaml").is_file() else {}
    for path in sorted((root / "competitions").glob("*.yaml")):
        found[path.stem] = path
    return found


def yaml_root_of(yaml_file: Path) -> Path:
    """Folder the paths of a competition YAML are relative to: its own folder, or the repository root for
    the standalone files in ``competitions/`` (their paths are written relative to the repository root)."""
    yaml_file = Path(yaml_file).resolve()
    if yaml_file.parent.name == "competitions" and yaml_file.name != "competition.yaml":
        return yaml_file.parent.parent
    return yaml_file.parent


def bundle_path(root: Path, value: Any) -> Path | None:
    """root/value for a usable relative path (no absolute path, no '..', no over-long name), else None."""
    if not isinstance(value, str) or not value or "\\" in value or len(value) > 1024:
        return None
    pure = PurePosixPath(value)
    if pure.is_absolute() or ".." in pure.parts or any(len(part) > 255 for part in pure.parts):
        return None
    return Path(root) / pure


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


# --------------------------------------------------------------------------- task.yaml

def task_yaml_name(folder: Path) -> str | None:
    """The `task:` that folder/task.yaml names, or None when the file is absent or not such a mapping."""
    path = Path(folder) / TASK_YAML
    if not path.is_file():
        return None
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, OSError, UnicodeDecodeError):
        return None
    name = data.get("task") if isinstance(data, dict) else None
    return str(name) if name else None


def task_name_of(root: Path, task: dict) -> str | None:
    """The codascore task a YAML task entry scores: its reference data's task.yaml, else the reference
    folder's name when it looks like one (``family.task``)."""
    ref = task.get("reference_data")
    folder = bundle_path(root, ref) if isinstance(ref, str) else None
    if folder is None:
        return None
    name = task_yaml_name(folder) or PurePosixPath(ref.rstrip("/")).name
    return name if "." in name else None


def missing_reason(root: Path, value: str, field: str, task: dict | None,
                   phase_tasks: list[dict] | None = None) -> tuple[str, str] | None:
    """(task name, why) when a path the YAML names is missing only because its task, or the task's
    ingestion, is not in this build; None when it is simply missing. The task is the YAML task entry's,
    else the one a path like sample_submissions/<task> names, else (a phase's starting kit) every task of
    the phase."""
    name = task_name_of(root, task) if task else PurePosixPath(value.rstrip("/")).name
    if (not name or "." not in name) and phase_tasks:
        reasons = [missing_reason(root, value, field, t) for t in phase_tasks]
        if all(r and r[1] == "not available in this build" for r in reasons):
            return reasons[0][0], "not available in this build"
        return None
    if not name or "." not in name:
        return None
    try:
        declared = get_task(name)
    except ReferenceDataError:
        return name, "not available in this build"
    if field in ("input_data", "ingestion_program") and not declared.has_ingestion:
        return name, "has no ingestion in this build"
    return None


def read_task_config(folder: Path, what: str) -> tuple[Task, dict]:
    """Read ``folder/task.yaml`` (``task: <name>`` plus parameters) and return the task and its config.

    Raises ReferenceDataError: an organiser's error, whatever is wrong."""
    folder = Path(folder)
    path = folder / TASK_YAML
    if not path.is_file():
        raise ReferenceDataError(f"{what} has no task.yaml ({path.name} missing in {folder.name}/)")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ReferenceDataError(f"{what}/task.yaml is not valid YAML: {exc}") from exc
    if not isinstance(raw, dict) or "task" not in raw:
        raise ReferenceDataError(f"{what}/task.yaml must be a mapping with a 'task' key")
    task = get_task(raw["task"])
    return task, task.load_config(raw)
