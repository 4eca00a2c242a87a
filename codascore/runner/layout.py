"""Where a task's programs and data are, and its phase settings: found once per run.

By convention below a project folder (``scoring_program/``, ``ingestion_program/``, ``reference_data/TASK``,
``input_data/TASK``); a ``competition.yaml`` there that names the task's reference data overrides the
folders and gives the phase's time limit and the leaderboard's columns.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ..competition import bundle_path, project_root, read_competition, task_yaml_name
from ..errors import RunnerError
from ..registry import get_task
from ..task import Task

#: Seconds a step may run when no competition YAML gives the phase's execution_time_limit.
DEFAULT_TIME_LIMIT = 600.0


@dataclasses.dataclass
class TaskLayout:
    """The resolved task, where its programs and data are, and its phase settings."""

    task: Task
    scoring_program: Path
    reference_data: Path
    ingestion_program: Path | None = None
    input_data: Path | None = None
    time_limit: float = DEFAULT_TIME_LIMIT
    leaderboard_keys: tuple[str, ...] | None = None  # non-computed column keys, if a competition.yaml says
    #: task.yaml values the scoring step's ref/ gets over the reference data's (a judge's budget profile)
    reference_config: dict = dataclasses.field(default_factory=dict)


def find_layout(root: Path | None, task: Task | str) -> TaskLayout:
    """The task's folders below root (default: the installed project's folder), by convention, with the
    phase limit and leaderboard keys from root/competition.yaml when that file references the task's
    reference data. RunnerError naming --root when a program or the reference data is missing."""
    root = Path(root) if root is not None else project_root()
    task = get_task(task) if isinstance(task, str) else task
    layout = TaskLayout(task=task, scoring_program=root / "scoring_program",
                        reference_data=root / "reference_data" / task.name)
    if task.has_ingestion and (root / "ingestion_program").is_dir():
        layout.ingestion_program = root / "ingestion_program"
        if (root / "input_data" / task.name).is_dir():
            layout.input_data = root / "input_data" / task.name
    _apply_competition_yaml(root / "competition.yaml", layout)
    for what, path in (("scoring program", layout.scoring_program), ("reference data", layout.reference_data)):
        if not path.is_dir():
            hint = "run `make data` first, or " if what == "reference data" else ""
            raise RunnerError(f"{what} for {task.name} not found: {path} ({hint}name the project folder that "
                              f"holds it with --root)")
    return layout


def _apply_competition_yaml(path: Path, layout: TaskLayout) -> None:
    """Take the task's folders, phase time limit and leaderboard keys from the competition YAML: the task
    entry is the one whose reference data is the task's (by its task.yaml, else by the folder's name)."""
    if not path.is_file():
        return
    root = path.parent
    competition = read_competition(path)
    entries = [t for t in competition.get("tasks") or [] if isinstance(t, dict)
               and _names_task(root, t.get("reference_data"), layout.task.name)]
    if not entries:
        return
    entry = entries[0]
    fields = ["scoring_program", "reference_data"]
    fields += ["ingestion_program", "input_data"] if layout.ingestion_program is not None else []
    for field in fields:
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
