"""Rules 6, 7 and 9: the tasks and solutions, the data they name and its task.yaml (their programs: rule 8,
:mod:`.programs`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..competition import bundle_path, task_yaml_name
from .programs import ProgramRules
from .schema import UUID, hashable


class TaskRules(ProgramRules):
    def rule_tasks(self) -> None:
        tasks = self.yaml.get("tasks")
        if isinstance(tasks, list) and not tasks:
            self.error(6, "tasks", "No tasks listed in this competition")
        seen: dict[Any, int] = {}
        for i, task in self.items("tasks"):
            at = f"tasks[{i}]"
            if isinstance(task, dict) and "key" in task:
                # An existing task on the server, by UUID: Codabench ignores every other field.
                if not isinstance(task["key"], str) or not UUID.match(task["key"]):
                    self.error(6, f"{at}.key", f"{task['key']!r} is not a task UUID")
                if hashable(task.get("index")):
                    seen.setdefault(task.get("index"), i)
                continue
            if not self.check_fields("task", task, at):
                continue
            index = task.get("index")
            if not hashable(index):
                continue
            if index in seen:
                self.error(6, f"{at}.index", f"ERROR: Duplicate task indexes. Index: {index} "
                                             f"(also tasks[{seen[index]}])")
            elif index is not None:
                seen[index] = i
            for field in ("scoring_program", "ingestion_program"):
                if isinstance(task.get(field), str):
                    self.check_program(task, field, f"{at}.{field}", index)
                    self.check_folder_slash(task[field], f"{at}.{field}")
            for field in ("reference_data", "input_data"):
                if isinstance(task.get(field), str):
                    self.check_data(task, field, f"{at}.{field}", index)
                    self.check_folder_slash(task[field], f"{at}.{field}")
            if task.get("ingestion_only_during_scoring") and not task.get("ingestion_program"):
                self.error(9, f"{at}.ingestion_only_during_scoring",
                           "set, but the task has no ingestion_program")
        for i, solution in self.items("solutions"):
            at = f"solutions[{i}]"
            if not self.check_fields("solution", solution, at):
                continue
            listed = solution.get("tasks")
            for j, index in enumerate(listed if isinstance(listed, list) else []):
                if not hashable(index) or index not in seen:
                    self.error(7, f"{at}.tasks[{j}]", f"unknown task index {index!r}")
            if isinstance(solution.get("path"), str):
                self.resolve(solution["path"], f"{at}.path")
                self.check_folder_slash(solution["path"], f"{at}.path")

    def check_data(self, task: dict, field: str, at: str, index: Any) -> None:
        value = task[field]
        if self.absent_ok(value, field, task, at):
            return
        path = self.resolve(value, at, hint="; run `make data` first" if field == "reference_data" else "")
        if path is not None and path.is_dir():
            self.check_task_yaml(task, field, path, at)
        elif path is not None:
            self.zip_listing(path, at)

    def check_task_yaml(self, task: dict, field: str, folder: Path, at: str) -> None:
        """codascore's programs choose the task by ref/task.yaml (scoring) and input_data/task.yaml
        (ingestion): each must be there, and both must name the same task."""
        if field == "reference_data":
            self.references[task.get("index")] = folder
        spec = folder / "task.yaml"
        if not spec.is_file():
            self.error(7, at, f"{task[field]} has no task.yaml: the scoring program cannot tell which task "
                              "to score (it exits 2, an organiser error)", platform=False)
            return
        named = task_yaml_name(spec.parent)
        if named is None:
            self.error(7, at, f"{task[field]}/task.yaml does not name a task (`task: <family>.<task>`)",
                       platform=False)
            return
        reference = bundle_path(self.root, task.get("reference_data"))
        if field == "input_data" and reference and (reference / "task.yaml").is_file():
            expected = task_yaml_name(reference)
            if named != expected:
                self.error(7, at, f"{task[field]}/task.yaml names task {named!r} but the reference data "
                                  f"names {expected!r}", platform=False)
