"""The static rules of a bundle (1-21, 28, 29, 31): one method per rule on the parsed YAML and the files it
names, each finding with its rule number and YAML path."""

from __future__ import annotations

import datetime as dt
import hashlib
import shlex
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any, Iterator

import yaml

from ..competition import (DATA_KEYS, PROGRAM_KEYS, bundle_path, missing_reason, read_task_config,
                           task_name_of, task_yaml_name)
from ..errors import ReferenceDataError
from ..registry import GENERATION_MODULES, get_task
from .schema import (
    IGNORED_KEYS,
    IMAGE_MAGIC,
    INTERPRETER,
    ISO_DATE,
    LEGACY_TOKEN,
    PLATFORM_RULES,
    PRODUCT_SUBMISSION_RULES,
    PUBLIC_QUEUE_LIMIT,
    SCHEMAS,
    SHELL_SYNTAX,
    SUBMISSION_RULES,
    UUID,
    V15_VERSIONS,
    Finding,
    hashable,
    platform_datetime,
    serializer_accepts,
)

# --------------------------------------------------------------------------- the checker

class BundleChecker:
    def __init__(self, root: Path, competition: dict, from_zip: bool, image: str):
        self.root = root
        self.yaml = competition
        self.from_zip = from_zip
        self.image = image
        self.findings: list[Finding] = []
        self.task_names: dict[Any, str | None] = {}      # task index -> codascore task name
        self.task_keys: dict[Any, tuple[str, ...]] = {}  # task index -> declared score keys
        self.unavailable: set[str] = set()
        self.absent: dict[str, list[str]] = {}          # unavailable task -> its paths missing here
        self.references: dict[Any, Path] = {}           # task index -> its reference data folder

    def error(self, rule: int, path: str, message: str, platform: bool | None = None) -> None:
        """An error; platform (default: the rule is in PLATFORM_RULES) says whether Codabench refuses it too."""
        platform = rule in PLATFORM_RULES if platform is None else platform
        self.findings.append(Finding(rule, path or "(top level)", message, "error", platform))

    def warn(self, rule: int, path: str, message: str) -> None:
        self.findings.append(Finding(rule, path or "(top level)", message, "warning"))

    # ----- generic schema rule
    def check_fields(self, section: str, data: Any, path: str) -> bool:
        """Required keys, types, length limits, allowed values, ignored and unknown keys of one mapping."""
        if not isinstance(data, dict):
            self.error(SCHEMAS[section][next(iter(SCHEMAS[section]))].rule, path,
                       f"must be a mapping, not {type(data).__name__}")
            return False
        schema, ignored = SCHEMAS[section], IGNORED_KEYS[section]
        for key, value in data.items():
            at = f"{path}.{key}" if path else str(key)
            if key in ignored:
                self.warn(5, at, ignored[key])
            elif key not in schema:
                self.warn(5, at, f"unknown key {key!r} in {section} (misspelled? Codabench ignores it)")
        for key, field in schema.items():
            at = f"{path}.{key}" if path else key
            if key not in data:
                if field.required and key != "version":
                    self.error(field.rule, at, field.missing or f"missing: {section} needs `{key}`")
                continue
            value = data[key]
            if field.types:
                bad_bool = isinstance(value, bool) and bool not in field.types
                if bad_bool or not isinstance(value, field.types):
                    names = "/".join("null" if t is type(None) else t.__name__ for t in field.types)
                    self.error(field.rule, at, f"must be {names}, not {type(value).__name__} ({value!r})",
                               platform=not serializer_accepts(value, field.types))
                    continue
            if field.max_len is not None and isinstance(value, str) and len(value) > field.max_len:
                self.error(field.rule, at, f"{len(value)} characters; Codabench allows at most {field.max_len}",
                           platform=True)
            if field.choices is not None and value not in field.choices:
                allowed = ", ".join(str(c) for c in field.choices if c is not None)
                self.error(field.rule, at, f"{value!r} is not one of {allowed}", platform=True)
        return True

    def items(self, key: str) -> Iterator[tuple[int, Any]]:
        value = self.yaml.get(key)
        return enumerate(value) if isinstance(value, list) else iter(())

    def task_positions(self) -> dict[Any, int]:
        """Task index -> position in `tasks`, for the tasks with a usable index."""
        return {t.get("index"): i for i, t in self.items("tasks")
                if isinstance(t, dict) and hashable(t.get("index"))}

    # ----- paths
    def resolve(self, value: str, at: str, rule: int = 7, quiet_missing: bool = False,
                hint: str = "") -> Path | None:
        """The bundle file a YAML path names, or None (with a finding) when it is not there."""
        path = bundle_path(self.root, value)
        if path is None:
            self.error(rule, at, f"{value[:80]!r} must be a relative path inside the bundle")
            return None
        if path.exists():
            return path
        if UUID.match(value):
            self.warn(rule, at, f"{value!r} names an existing dataset on the server by UUID (not checked)")
        elif not quiet_missing:
            self.error(rule, at, f'Cannot find dataset: "{value}" (not in the bundle; Codabench takes it '
                                 f"for a dataset UUID){hint}")
        return None

    def check_folder_slash(self, value: str, at: str) -> None:
        """A folder named without a trailing '/' is zipped by Codabench's zip_if_directory into the parent of
        the bundle's own temporary folder (dirname of dirname), which every upload shares: two uploads at
        once can swap their programs."""
        path = bundle_path(self.root, value)
        if path is not None and path.is_dir() and not value.endswith("/"):
            self.warn(28, at, f"{value!r} names a folder without a trailing '/': Codabench then zips it into "
                              f"its shared temporary folder, where two uploads at once can swap it; write "
                              f"'{value}/'")

    def zip_listing(self, path: Path, at: str) -> list[str] | None:
        if not zipfile.is_zipfile(path):
            self.error(7, at, f"{path.name} is neither a folder nor a zip file", platform=False)
            return None
        with zipfile.ZipFile(path) as archive:
            names = [n for n in archive.namelist() if not n.startswith("__MACOSX/")]
        tops = {n.split("/", 1)[0] for n in names}
        if len(tops) == 1 and all("/" in n for n in names if not n.endswith("/")) and names:
            self.error(7, at, f"{path.name} holds a single wrapper folder {next(iter(tops))!r}: Codabench uses "
                              "the zip root, so the program or data ends up one level too deep (issues #1697, "
                              "#1805); zip the folder's contents, or reference the folder itself", platform=False)
        return names

    # ----- rules
    def parser_version(self) -> str | None:
        """The unpacker Codabench chooses by ``str(yaml.get('version', '1'))``: '2', '1.5', or None (refused)."""
        version = str(self.yaml.get("version", "1"))
        return "2" if version == "2" else "1.5" if version in V15_VERSIONS else None

    def rule_version(self) -> None:
        chosen = self.parser_version()
        if chosen == "2":
            return
        if chosen == "1.5":
            given = f"version {self.yaml['version']!r}" if "version" in self.yaml else "no version"
            self.error(2, "version", f"{given}: Codabench uses its v1.5 parser, whose rules differ (\"HTML pages "
                                     "could not be found in the yaml file\", issue #1934); write `version: 2`",
                       platform=False)
            return
        version = self.yaml["version"]
        self.error(2, "version", f"{version!r}: str(version) is {str(version)!r}, and Codabench answers \"A "
                                 "suitable version could not be found for this competition\"; write `version: 2`")

    def rule_top_level(self) -> None:
        self.check_fields("competition", self.yaml, "")
        if isinstance(self.yaml.get("image"), str):
            image = self.resolve(self.yaml["image"], "image", rule=3, quiet_missing=True)
            if image is None:
                self.error(3, "image", f"Unable to find image: {self.yaml['image']}")
            elif not image.is_file():
                self.error(3, "image", f"{self.yaml['image']} is not a file")
            else:
                head = image.read_bytes()[:8]
                if not any(head.startswith(magic) for magic in IMAGE_MAGIC):
                    self.error(3, "image", f"{self.yaml['image']} is not a PNG or JPEG image")
        if isinstance(self.yaml.get("terms"), str):
            self.check_text_file(self.yaml["terms"], "terms", "terms")
        for i, page in self.items("pages"):
            at = f"pages[{i}]"
            if self.check_fields("page", page, at) and isinstance(page.get("file"), str):
                self.check_text_file(page["file"], f"{at}.file", "page")

    def check_text_file(self, value: str, at: str, what: str) -> None:
        path = self.resolve(value, at, rule=3, quiet_missing=True)
        if path is None:
            self.error(3, at, f"Unable to find {what}: {value}")
        elif not path.is_file():
            self.error(3, at, f"{value} is not a file")
        elif not path.read_text(errors="replace").strip():
            self.error(3, at, f"Page '{value}' is empty, it must contain content.")

    def rule_docker_image(self) -> None:
        image = self.yaml.get("docker_image")
        if image is None:
            self.error(4, "docker_image", f"missing: Codabench then uses codalab/codalab-legacy:py37 "
                                          f"(numpy 1.17); write `docker_image: {self.image}`")
        elif isinstance(image, str) and image != self.image:
            self.error(4, "docker_image", f"{image!r} is not the expected image {self.image!r} "
                                          "(see docs/bundles.md; `--image` accepts another)")

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

    def task_name(self, task: dict) -> str | None:
        """The codascore task a YAML task entry scores (competition.task_name_of)."""
        return task_name_of(self.root, task)

    def absent_ok(self, value: str, field: str, task: dict | None, at: str,
                  phase_tasks: list[dict] | None = None) -> bool:
        """True (and noted) when value is missing only because its task is not complete in this build."""
        path = bundle_path(self.root, value)
        if path is None or path.exists() or UUID.match(value):
            return False
        reason = missing_reason(self.root, value, field, task, phase_tasks)
        if reason is None:
            return False
        name, why = reason
        if why == "not available in this build":
            self.absent.setdefault(name, []).append(value)
        else:
            self.warn(7, at, f"task {name} {why}, so {value} is not generated here; code submissions need it")
        return True

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

    def check_program(self, task: dict, field: str, at: str, index: Any) -> None:
        value = task[field]
        if self.absent_ok(value, field, task, at):
            return
        path = self.resolve(value, at)
        if path is None:
            return
        if path.is_dir():
            names = [p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file()]
            read = lambda name: (path / name).read_bytes()  # noqa: E731
        else:
            names = self.zip_listing(path, at)
            if names is None:
                return
            def read(name: str, archive_path: Path = path) -> bytes:
                with zipfile.ZipFile(archive_path) as archive:
                    return archive.read(name)
        metadata = next((n for n in ("metadata.yaml", "metadata") if n in names), None)
        if metadata is None:
            self.error(8, at, f"{value} has no metadata.yaml (or metadata) at its root: Codabench runs "
                              "nothing (\"Program directory missing metadata\") and the submission fails")
            return
        try:
            data = yaml.safe_load(read(metadata)) or {}
        except yaml.YAMLError as exc:
            self.error(8, at, f"{value}/{metadata} is not valid YAML: {exc}")
            return
        command = data.get("command") if isinstance(data, dict) else None
        if not isinstance(command, str) or not command.strip():
            self.error(8, at, f"{value}/{metadata} has no `command`: nothing runs")
            return
        self.check_command(command, f"{at} ({value}/{metadata}: command)", names)
        if self.from_zip and "codascore/__init__.py" not in names and any(
                b"codascore" in read(n) for n in names if n.endswith(".py")):
            self.error(8, at, f"{value} imports codascore but does not hold the library: Codabench mounts "
                              "nothing else (build the bundle with `codascore bundle`)")

    def check_command(self, command: str, at: str, names: list[str]) -> None:
        tokens = LEGACY_TOKEN.findall(command)
        if tokens:
            self.error(8, at, f"legacy token(s) {', '.join('$' + t for t in tokens)}: write explicit /app/... "
                              "paths (the worker's string replacement differs between steps)")
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            self.error(8, at, f"shlex cannot split {command!r}: {exc}")
            return
        explicit_shell = len(argv) >= 2 and argv[0] in ("bash", "sh") and argv[1] == "-c"
        if not explicit_shell:
            stripped = LEGACY_TOKEN.sub("", command)
            found = [s for s in SHELL_SYNTAX if s in stripped]
            if found:
                self.error(8, at, f"shell syntax {' '.join(found)} in {command!r}: the command is split with "
                                  "shlex and run without a shell; use a script (or an explicit bash -c)")
        if argv and not INTERPRETER.match(PurePosixPath(argv[0]).name):
            self.error(8, at, f"{argv[0]!r} is not an interpreter: unzipped files have no execute bit, so "
                              "write e.g. `python3 score.py`")
        if argv and INTERPRETER.match(PurePosixPath(argv[0]).name) and len(argv) > 1 and not explicit_shell:
            script = argv[1]
            if script.startswith("/app/program/"):
                script = script[len("/app/program/"):]
            if not script.startswith(("/", "-")) and script not in names:
                self.error(8, at, f"the command runs {argv[1]!r}, which the program does not hold")

    def phases_in_platform_order(self) -> list[tuple[int, dict]]:
        phases = [(i, p) for i, p in self.items("phases") if isinstance(p, dict)]
        index = lambda item: item[1].get("index") if isinstance(item[1].get("index"), int) else 0  # noqa: E731
        return sorted(phases, key=index)

    def rule_phases(self) -> None:
        phases = self.yaml.get("phases")
        if isinstance(phases, list) and not phases:
            self.error(10, "phases", "Unable to find any phases for this competition")
        defined = set(self.task_positions())
        for i, phase in self.items("phases"):
            at = f"phases[{i}]"
            if not self.check_fields("phase", phase, at):
                continue
            tasks = phase.get("tasks")
            if isinstance(tasks, list) and not tasks:
                self.error(10, f"{at}.tasks", "an empty list: Codabench accepts the phase, but no task can be "
                                              "submitted to (\"Phases must contain at least one task to be "
                                              "valid\")", platform=False)
            for j, index in enumerate(tasks if isinstance(tasks, list) else []):
                if not hashable(index) or index not in defined:
                    self.error(10, f"{at}.tasks[{j}]", f"unknown task index {index!r} (tasks define "
                                                       f"{sorted(defined, key=str)}): \"Unpacking the bundle "
                                                       "failed\"")
            start, end = (self.stored_date(phase, key, f"{at}.{key}") for key in ("start", "end"))
            if start is not None and end is not None and end <= start:
                self.error(11, f"{at}.end", f"ends ({end}) before it starts ({start}), as Codabench stores the "
                                            "dates", platform=False)
            limit = phase.get("execution_time_limit")
            if isinstance(limit, (int, float)) and not isinstance(limit, bool):
                if limit <= 0:
                    self.error(14, f"{at}.execution_time_limit", f"{limit} is not a positive number of seconds")
                elif limit > PUBLIC_QUEUE_LIMIT and "queue" not in self.yaml:
                    self.warn(14, f"{at}.execution_time_limit",
                              f"{limit} s: the public queue caps every step at 600-1200 s")
            positions = self.task_positions()
            phase_tasks = [self.yaml["tasks"][positions[t]] for t in (tasks if isinstance(tasks, list) else [])
                           if hashable(t) and t in positions]
            for key in ("starting_kit", "public_data"):
                if isinstance(phase.get(key), str) and not self.absent_ok(phase[key], key, None, f"{at}.{key}",
                                                                          phase_tasks):
                    self.resolve(phase[key], f"{at}.{key}")
                    self.check_folder_slash(phase[key], f"{at}.{key}")
        ordered = self.phases_in_platform_order()
        if ordered and ordered[0][1].get("auto_migrate_to_this_phase"):
            self.error(13, f"phases[{ordered[0][0]}].auto_migrate_to_this_phase",
                       "You cannot auto migrate to the first phase of a competition")
        for (i, phase), (j, after) in zip(ordered, ordered[1:]):
            name = phase.get("name")
            end, next_start = self.stored_date(phase, "end"), self.stored_date(after, "start")
            if not phase.get("end"):
                self.error(11, f"phases[{i}].end", f"Phase: {name} must have an end time because it has a "
                                                   "phase after it.")
                continue
            if end is None or next_start is None:
                continue
            if next_start < end:
                self.error(11, f"phases[{j}].start", f"Phases must be sequential: {after.get('name')} starts "
                                                     f"({next_start}) before {name} ends ({end}), as Codabench "
                                                     "stores the dates")
            elif next_start == end:
                self.error(11, f"phases[{j}].start", f"Phases dates conflict: {after.get('name')} starts "
                                                     f"exactly when {name} ends ({end}); start it later")

    def stored_date(self, phase: dict, key: str, at: str | None = None) -> dt.datetime | None:
        """The phase's start or end as Codabench stores it (:func:`platform_datetime`), or None when it is
        absent or unreadable. With ``at``, the value's findings (rule 12) are recorded."""
        value = phase.get(key)
        try:
            stored = platform_datetime(value)
        except ValueError as exc:
            if at is not None:
                self.error(12, at, f"{value!r}: Codabench cannot read it as a date ({exc}); write YYYY-MM-DD "
                                   "or a quoted \"YYYY-MM-DD HH:MM:SS\"", platform=True)
            return None
        if at is None or stored is None:
            return stored
        if isinstance(value, str) and not ISO_DATE.match(value.strip()):
            self.error(12, at, f"{value!r} is not an ISO date: Codabench reads it with dateutil, month-first, "
                               f"as {stored}; write YYYY-MM-DD or a quoted \"YYYY-MM-DD HH:MM:SS\"")
        elif isinstance(value, dt.datetime) and value.time() != dt.time():
            self.warn(12, at, f"unquoted timestamp {value}: Codabench keeps only its day and stores {stored} "
                              f"(UTC); quote it to keep the time: {key}: \"{value}\"")
        elif key == "end" and not (isinstance(value, str) and ":" in value):
            self.warn(12, at, f"the phase closes at {stored} UTC, the very start of that day; to include the "
                              f"day, write {key}: \"{stored.date()} 23:59:59\"")
        return stored

    def indexed_columns(self) -> list[tuple[int, dict]]:
        """(position, column) for the columns of leaderboards[0] that are mappings with a usable key and index."""
        boards = self.yaml.get("leaderboards")
        if not isinstance(boards, list) or not boards or not isinstance(boards[0], dict):
            return []
        columns = boards[0].get("columns")
        return [(n, c) for n, c in enumerate(columns) if isinstance(c, dict) and hashable(c.get("key"))
                and hashable(c.get("index"))] if isinstance(columns, list) else []

    def columns(self) -> list[dict]:
        return [column for _, column in self.indexed_columns()]

    def rule_leaderboards(self) -> None:
        boards = self.yaml.get("leaderboards")
        if "leaderboards" in self.yaml and not boards:
            self.error(15, "leaderboards", "Could not find leaderboards in the competition yaml")
        if isinstance(boards, list) and len(boards) > 1:
            self.warn(15, "leaderboards[1]", f"{len(boards) - 1} further leaderboard(s) are created but never "
                                             "shown: only leaderboards[0] is used")
        for b, board in self.items("leaderboards"):
            at = f"leaderboards[{b}]"
            if not self.check_fields("leaderboard", board, at):
                continue
            rule = board.get("submission_rule")
            if rule in SUBMISSION_RULES and rule not in PRODUCT_SUBMISSION_RULES:
                self.error(16, f"{at}.submission_rule", f"{rule}: entries do not reach the leaderboard by "
                           "themselves (or pile up); this product uses Force_Last or Force_Best")
            columns = board.get("columns")
            if isinstance(columns, list) and not columns:
                self.error(15, f"{at}.columns", "Leaderboards require at least 1 column")
            self.check_columns(board, at)

    def check_columns(self, board: dict, at: str) -> None:
        indexes: dict[Any, int] = {}
        keys: dict[Any, int] = {}
        columns = board.get("columns") if isinstance(board.get("columns"), list) else []
        for c, column in enumerate(columns):
            cat = f"{at}.columns[{c}]"
            if not self.check_fields("column", column, cat):
                continue
            index, key = column.get("index"), column.get("key")
            if not hashable(key):
                continue
            if isinstance(index, int) and not isinstance(index, bool):
                if index < 0:
                    self.error(17, f"{cat}.index", f"{index} is negative")
                if index in indexes:
                    self.error(17, f"{cat}.index", f"Columns must have unique indexes! ({index} is also "
                                                   f"columns[{indexes[index]}])")
                indexes.setdefault(index, c)
            if key in keys:
                self.error(17, f"{cat}.key", f"Columns must have unique keys! ({key!r} is also "
                                             f"columns[{keys[key]}])")
            keys.setdefault(key, c)
        primary = board.get("primary_index", 0)
        if not hashable(primary):
            primary = None  # its type is already reported
        elif isinstance(primary, int) and columns and primary not in indexes:
            self.error(19, f"{at}.primary_index", f"{primary} is not the index of any column (indexes: "
                                                  f"{sorted(i for i in indexes if isinstance(i, int))}); the "
                                                  "leaderboard page would fail")
        elif primary in indexes and columns[indexes[primary]].get("hidden"):
            self.warn(19, f"{at}.primary_index", "the primary column is hidden")
        for c, column in enumerate(columns):
            if isinstance(column, dict):
                self.check_computation(column, f"{at}.columns[{c}]", indexes)

    def check_computation(self, column: dict, at: str, indexes: dict) -> None:
        has_function, has_indexes = "computation" in column, "computation_indexes" in column
        function, listed = column.get("computation"), column.get("computation_indexes")
        if has_function and function is None and not has_indexes:
            self.error(20, f"{at}.computation", "Column with computation must have at least 1 column selected: "
                       "`computation: null` without `computation_indexes` (omit both, or write both as null)")
            return
        if function is None and listed:
            self.error(20, f"{at}.computation_indexes", "Cannot add computation columns without a computation "
                                                        "function set")
            return
        if function is None:
            return
        if not listed:
            self.error(20, f"{at}.computation_indexes", "Column with computation must have at least 1 column "
                                                        f"selected: `computation: {function}` needs "
                                                        "`computation_indexes`")
            return
        if not isinstance(listed, list):
            return
        for k, index in enumerate(listed):
            if index == column.get("index"):
                self.error(20, f"{at}.computation_indexes[{k}]", f"Cannot self-reference: {index} is this "
                                                                 "column's own index")
            elif index not in indexes:
                self.error(20, f"{at}.computation_indexes[{k}]", f"{index!r} is not the index of any column")

    # ----- rule 21: the tasks' declared keys against the leaderboard, phase by phase
    def resolve_tasks(self) -> None:

        for i, task in self.items("tasks"):
            if not isinstance(task, dict) or "key" in task or not hashable(task.get("index")):
                continue
            index, name = task.get("index"), self.task_name(task)
            self.task_names[index] = name
            if name is None:
                self.warn(21, f"tasks[{i}].reference_data", "cannot tell which codascore task this is (no "
                                                            "task.yaml): its score keys are not cross-checked")
                continue
            try:
                self.task_keys[index] = tuple(get_task(name).score_keys)
            except ReferenceDataError:
                if name not in self.unavailable:
                    absent = self.absent.get(name)
                    self.warn(21, f"tasks[{i}]", f"task {name} not available in this build: its score keys "
                                                 "are not cross-checked" + (
                                                     f"; missing here: {', '.join(absent)}" if absent else ""))
                self.unavailable.add(name)

    def rule_keys(self) -> None:
        self.resolve_tasks()
        columns = self.columns()
        if not columns:
            return
        board = self.yaml["leaderboards"][0]
        primary_index = board.get("primary_index", 0)
        computed = {c.get("key") for c in columns if c.get("computation")}
        plain = [(n, c) for n, c in self.indexed_columns() if not c.get("computation")]
        primary = next((c.get("key") for c in columns if c.get("index") == primary_index), None)
        task_at = self.task_positions()
        for index, keys in self.task_keys.items():
            for key in sorted(set(keys) & computed):
                self.error(21, f"tasks[{task_at[index]}]", f"{self.task_names[index]} writes {key!r}, a "
                           "computed column: the scoring program must not write computed keys")
        written_anywhere: set[str] = set()
        all_known = True
        for p, phase in self.items("phases"):
            if not isinstance(phase, dict) or not isinstance(phase.get("tasks"), list):
                continue
            phase_tasks = [t for t in phase["tasks"] if hashable(t) and t in task_at]
            known = [t for t in phase_tasks if t in self.task_keys]
            all_known &= len(known) == len(phase_tasks)
            declared = set().union(*(self.task_keys[t] for t in known)) if known else set()
            written_anywhere |= declared
            relevant = {c.get("key") for _, c in plain if c.get("key") in declared}
            if primary is not None and primary not in computed:
                relevant.add(primary)
            for t in known:
                for n, column in plain:
                    key = column.get("key")
                    if key in relevant and key not in self.task_keys[t]:
                        self.error(21, f"leaderboards[0].columns[{n}].key",
                                   f"phase {phase.get('name')!r}: task {self.task_names[t]} never writes "
                                   f"{key!r} (it writes {', '.join(self.task_keys[t])}): its cells would show "
                                   "n/a" + (" and rank first (NULL primary)" if key == primary else ""))
        if all_known:
            for n, column in plain:
                if column.get("key") not in written_anywhere:
                    self.error(21, f"leaderboards[0].columns[{n}].key",
                               f"no task of any phase writes {column.get('key')!r}: the column would always "
                               "be n/a")

    # ----- rule 29: nothing participants download holds the answers
    def downloadable(self) -> list[tuple[str, str, Path]]:
        """(YAML path, value, bundle path) of what participants can download: starting kits and public data,
        program folders (make_programs_available), pages and terms; each bundle path once."""
        named: list[tuple[str, Any]] = []
        for p, phase in self.items("phases"):
            if isinstance(phase, dict):
                named += [(f"phases[{p}].{key}", phase.get(key)) for key in ("starting_kit", "public_data")]
        for i, task in self.items("tasks"):
            if isinstance(task, dict):
                named += [(f"tasks[{i}].{key}", task.get(key)) for key in PROGRAM_KEYS]
        named.append(("terms", self.yaml.get("terms")))
        named += [(f"pages[{i}].file", page.get("file")) for i, page in self.items("pages")
                  if isinstance(page, dict)]
        found: dict[Path, tuple[str, str, Path]] = {}
        for at, value in named:
            path = bundle_path(self.root, value)
            if path is not None and path.exists() and path.resolve() not in found:
                found[path.resolve()] = (at, value.rstrip("/"), path)
        return list(found.values())

    def rule_answers(self) -> None:

        references: dict[str, str] = {}  # digest -> reference file; input data is given to code, so no secret
        public: set[str] = set()
        for _, task in self.items("tasks"):
            for key in DATA_KEYS:
                path = bundle_path(self.root, task.get(key)) if isinstance(task, dict) else None
                for name, digest in _digests(path) if path is not None and path.exists() else ():
                    if key == "input_data":
                        public.add(digest)
                    else:
                        references.setdefault(digest, f"{task[key].rstrip('/')}/{name}")
        secret = {digest: name for digest, name in references.items() if digest not in public}
        generation = {f"codascore/{module}" for module in GENERATION_MODULES}
        for at, value, path in self.downloadable():
            held = []
            for name, digest in _digests(path):
                if digest in secret:
                    where = f"{value}/{name}" if path.is_dir() or zipfile.is_zipfile(path) else value
                    self.error(29, at, f"{where} is a copy of the reference file {secret[digest]}: participants "
                                       "can download it")
                if name in generation:
                    held.append(name)
            if held:
                self.error(29, at, f"{value} holds the library's generation modules ({', '.join(sorted(held))}): "
                                   "participants who download it can rebuild the data; build the bundle with "
                                   "`codascore bundle`, which leaves them out")
        self.check_answer_samples()

    def check_answer_samples(self) -> None:
        """A starting-kit sample that its task declares made from the answers (Task.answer_samples) is an
        error in a zip; in a source folder it is a warning, since `codascore bundle` leaves it out."""

        positions = self.task_positions()
        for p, phase in self.items("phases"):
            listed = phase.get("tasks") if isinstance(phase, dict) else None
            found = []
            for index in listed if isinstance(listed, list) else []:
                task = self.yaml["tasks"][positions[index]] if hashable(index) and index in positions else None
                name = self.task_name(task) if isinstance(task, dict) else None
                try:
                    declared = get_task(name).answer_samples if name else ()
                except ReferenceDataError:
                    declared = ()
                found += [f"{name}/{sample.name}" for sample in samples_of(self.root, phase, name) if declared
                          and sample.name in declared]
            if not found:
                continue
            message = (f"{', '.join(found)}: made from the answers (their tasks declare them), so they belong "
                       "to the demo, never to a starting kit")
            if self.from_zip:
                self.error(29, f"phases[{p}].starting_kit", message)
            else:
                self.warn(29, f"phases[{p}].starting_kit", message + "; `codascore bundle` leaves them out")

    # ----- rule 31: reference data, input data and starting kit agree
    def rule_data_agreement(self) -> None:
        """Each task's items (Task.data_inventory) as its reference data, its input data and each valid
        result sample of its starting kits list them: an item the input data lacks or adds, a shape that
        differs, or a sample answering an item the reference does not hold is an error (the scorer would
        silently ignore it)."""
        positions = self.task_positions()
        for index, ref in self.references.items():
            if index not in positions or self.task_names.get(index) in self.unavailable:
                continue  # rule 21 already warns that the task is not in this build
            task_entry = self.yaml["tasks"][positions[index]]
            at = f"tasks[{positions[index]}]"
            try:
                task, config = read_task_config(ref, task_entry["reference_data"])
                reference = task.data_inventory(ref, "reference", config)
            except ReferenceDataError as exc:
                # the scorer stops on it too (exit 2), which `check --run` reports under rule 22
                self.warn(31, f"{at}.reference_data", f"cannot list its items, so nothing is compared: {exc}")
                continue
            if reference is None:
                continue
            inputs = bundle_path(self.root, task_entry.get("input_data"))
            if inputs is not None and inputs.is_dir():
                try:
                    listed = task.data_inventory(inputs, "input", config)
                except ReferenceDataError as exc:
                    self.error(31, f"{at}.input_data", f"cannot list its items: {exc}")
                    listed = None
                if listed is not None:
                    self.compare_items(reference, listed, f"{at}.input_data", task_entry["input_data"],
                                       task_entry["reference_data"], extra_ok=False)
            for p, phase in self.items("phases"):
                if not isinstance(phase, dict) or index not in (phase.get("tasks") or []):
                    continue
                for sample in samples_of(self.root, phase, task.name):
                    if task.expected_to_fail(sample.name):
                        continue
                    try:
                        answered = task.data_inventory(sample, "sample", config)
                    except ReferenceDataError as exc:
                        self.error(31, f"phases[{p}].starting_kit", f"{sample.name}: {exc}")
                        continue
                    if answered is not None:
                        self.compare_items(reference, answered, f"phases[{p}].starting_kit",
                                           f"{task.name}/{sample.name}", task_entry["reference_data"],
                                           extra_ok=True)

    def compare_items(self, reference: dict, other: dict, at: str, other_name: str, reference_name: str,
                      extra_ok: bool) -> None:
        """One finding per kind of disagreement, naming up to 5 items of each."""
        def some(items) -> str:
            items = sorted(items)
            return ", ".join(items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5 else "")

        added = set(other) - set(reference)
        if added:
            self.error(31, at, f"{other_name} holds {len(added)} item(s) the reference data "
                               f"{reference_name} does not ({some(added)}): the scorer would ignore them")
        lacking = set(reference) - set(other)
        if lacking and not extra_ok:
            self.error(31, at, f"{other_name} lacks {len(lacking)} of the {len(reference)} item(s) of the "
                               f"reference data {reference_name} ({some(lacking)})")
        differ = sorted(k for k in set(reference) & set(other) if tuple(reference[k]) != tuple(other[k]))
        for key in differ[:5]:
            self.error(31, at, f"{other_name}: {key} has shape {tuple(other[key])}, the reference data "
                               f"{reference_name} shape {tuple(reference[key])}")

    # ----- the whole static check
    def run_static(self) -> None:
        for rule in (self.rule_version, self.rule_top_level, self.rule_docker_image, self.rule_tasks,
                     self.rule_phases, self.rule_leaderboards, self.rule_keys, self.rule_answers,
                     self.rule_data_agreement):
            rule()

    def summary(self) -> str:
        columns = self.columns()
        boards = self.yaml.get("leaderboards")
        board = boards[0] if isinstance(boards, list) and boards and isinstance(boards[0], dict) else {}
        primary = next((c.get("key") for c in columns if c.get("index") == board.get("primary_index", 0)), None)
        names = [n or "?" for n in self.task_names.values()]
        return (f"version {self.yaml.get('version')}, {len(list(self.items('tasks')))} task(s) "
                f"({', '.join(names)}), {len(list(self.items('phases')))} phase(s), leaderboard "
                f"{board.get('key')!r} with {len(columns)} column(s), primary {primary!r}, "
                f"{board.get('submission_rule')}, image {self.yaml.get('docker_image')}")


def _digests(path: Path) -> Iterator[tuple[str, str]]:
    """(name, sha256) of every non-empty file of a bundle folder, of a zip's members, or of one file."""
    def digest(handle) -> str | None:
        hasher, size = hashlib.sha256(), 0
        for block in iter(lambda: handle.read(1 << 20), b""):
            hasher.update(block)
            size += len(block)
        return hasher.hexdigest() if size else None

    if path.is_dir():
        members = [(p.relative_to(path).as_posix(), p) for p in sorted(path.rglob("*")) if p.is_file()]
        for name, file in members:
            with open(file, "rb") as handle:
                value = digest(handle)
            if value:
                yield name, value
    elif zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                if not info.is_dir():
                    with archive.open(info) as handle:
                        value = digest(handle)
                    if value:
                        yield info.filename, value
    elif path.is_file():
        with open(path, "rb") as handle:
            value = digest(handle)
        if value:
            yield path.name, value


def samples_of(root: Path, phase: dict, task_name: str) -> list[Path]:
    """Sample submissions of a task in the phase's starting kit (kit/<task>/<sample>/, or kit/<sample>/)."""
    kit = phase.get("starting_kit")
    if not isinstance(kit, str):
        return []
    folder = bundle_path(root, kit)
    if folder is None:
        return []
    if (folder / task_name).is_dir():
        folder = folder / task_name
    elif len(phase.get("tasks") or []) != 1 or not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_dir())
