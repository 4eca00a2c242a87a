"""Bundle checker: the invariants of a Codabench v2 bundle (spec codabench.md section 9).

``codascore check BUNDLE`` takes a bundle zip, a bundle folder or a competition YAML file. Invariants 1-21
and 28-29 are checked statically; with ``run=True`` (``--run``) every sample submission of the bundle's
starting kits also goes through the local runner (:mod:`codascore.runner`) for invariants 14, 22-27 and 30.

The rules are data: the schema of each YAML section (:data:`SCHEMAS`: required keys, types, length limits,
allowed values), the keys the platform ignores (:data:`IGNORED_KEYS`) and the text of every invariant
(:data:`RULES`). Each finding carries its invariant number and the YAML path it concerns, e.g.
``leaderboards[0].columns[3].key``; the platform's own error text is quoted where it has one, so a finding
reads like the upload error it prevents.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import re
import shlex
import tempfile
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterator

import yaml

from . import bundle, sandbox

#: The invariants of spec codabench.md section 9, by number.
RULES: dict[int, str] = {
    1: "the bundle is a zip with competition.yaml at its root, parsed safely, without duplicated keys",
    2: "version selects the v2 unpacker: str(version) is '2' (write the integer 2)",
    3: "title, image (PNG/JPG), terms and pages (non-empty files), tasks, phases and leaderboards are present",
    4: "docker_image names the stock image codalab/codalab-legacy:py312 (or the one given with --image)",
    5: "no ignored or misspelled keys",
    6: "task indexes are unique; each task has a name and a scoring_program",
    7: "every referenced path exists; a referenced zip has no wrapper folder",
    8: "every program has metadata with a command: interpreter first, no shell syntax, no $tokens",
    9: "ingestion_only_during_scoring needs an ingestion program",
    10: "each phase has a name, a start and a non-empty list of defined task indexes",
    11: "every phase but the last has an end, and the next phase starts strictly after it, compared as "
        "Codabench stores the dates (an unquoted timestamp keeps only its day: midnight UTC)",
    12: "dates are ISO: YYYY-MM-DD, or a quoted \"YYYY-MM-DD HH:MM:SS\" when the time of day matters; UTC",
    13: "auto_migrate_to_this_phase is not set on the first phase",
    14: "execution_time_limit is explicit; the scorer's worst case stays below half of min(limit, 600)",
    15: "leaderboards[0] is the only leaderboard, title <= 64, key <= 36, at least one column",
    16: "submission_rule is Force_Last or Force_Best",
    17: "column indexes are unique non-negative integers, keys unique, key and title <= 36 characters",
    18: "every column gives its sorting, asc or desc",
    19: "primary_index is the index of a column",
    20: "computation is avg/sum/min/max with non-empty computation_indexes of other existing columns",
    21: "each phase's scorers write every non-computed column key relevant to it, and no computed key",
    22: "a sample scores with exit 0 and a flat scores.json of finite numbers below 1e10",
    23: "the scoring program never writes output/metadata",
    24: "an invalid sample exits non-zero, writes no scores.json and says ERROR: on stderr",
    25: "with enable_detailed_results, detailed_results.html exists and is self-contained",
    26: "no reference value is echoed to stdout or stderr",
    27: "scoring the same submission twice gives byte-identical scores.json",
    28: "a path naming a folder ends with '/'",
    29: "nothing participants download holds the answers: no starting-kit sample its task declares made from "
        "them, no copy of a reference file in a starting kit, program folder or page, no generation module in "
        "a program folder",
    30: "no starting-kit sample reaches a score only the answers reach (the task's perfect submission's, or a "
        "documented bound)",
}

#: Rules whose findings Codabench itself would refuse at upload (its unpacker and serializers); the others are
#: this project's house rules or run-time failures. A finding may override this (Finding.platform).
PLATFORM_RULES = frozenset({1, 2, 3, 6, 7, 10, 11, 13, 15, 17, 20})
#: str(version) values that select Codabench's v1.5 parser (whose rules this checker does not model).
V15_VERSIONS = ("1", "1.5")

SUBMISSION_RULES = ("Add", "Add_And_Delete", "Add_And_Delete_Multiple", "Force_Last",
                    "Force_Latest_Multiple", "Force_Best")
PRODUCT_SUBMISSION_RULES = ("Force_Last", "Force_Best")
COMPUTATIONS = ("avg", "sum", "min", "max")
PUBLIC_QUEUE_LIMIT = 600
MAX_ABS_SCORE = 1e10
#: First word of a command that runs a script through an interpreter (unzipped files have no execute bit).
INTERPRETER = re.compile(r"^(python(\d+(\.\d+)?)?|bash|sh|Rscript|julia|node|perl|ruby|java)$")
LEGACY_TOKEN = re.compile(r"\$(input|output|tmp|program|ingestion_program|hidden|shared|submission_program|"
                          r"predictions)\b")
SHELL_SYNTAX = ("&&", "||", "|", ";", ">", "<", "$", "`", "~", "*")
ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2})?)?$")
UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
IMAGE_MAGIC = {b"\x89PNG\r\n\x1a\n": "PNG", b"\xff\xd8\xff": "JPEG", b"GIF8": "GIF"}


@dataclasses.dataclass(frozen=True)
class Field:
    """One key of a YAML mapping: whether it is required, its types, length limit and allowed values."""

    rule: int
    required: bool = False
    types: tuple[type, ...] = ()
    max_len: int | None = None
    choices: tuple | None = None
    missing: str = ""  # the platform's message when a required key is absent


_STR, _BOOL, _INT, _LIST = (str,), (bool,), (int,), (list,)
_NUM = (int, float)
_DATE = (dt.date, dt.datetime, str)

#: section name -> key -> Field. Keys not listed (and not in IGNORED_KEYS) are reported as unknown.
SCHEMAS: dict[str, dict[str, Field]] = {
    "competition": {
        "version": Field(2, True),
        "title": Field(3, True, _STR, 256),
        "image": Field(3, True, _STR, missing="An image for this competition could not be found in the yaml"),
        "terms": Field(3, True, _STR, missing="A file containing the terms of this competition has not been "
                                              "supplied"),
        "pages": Field(3, True, _LIST, missing="absent: the unpacker fails with \"'NoneType' object is not "
                                               "iterable\" (an empty list is allowed)"),
        "tasks": Field(6, True, _LIST, missing="No tasks listed in this competition"),
        "phases": Field(10, True, _LIST, missing="Unable to find any phases for this competition"),
        "leaderboards": Field(15, True, _LIST, missing="Could not find leaderboards in the competition yaml"),
        "docker_image": Field(4, False, _STR, 128),  # rule_docker_image says what is missing
        "solutions": Field(7, False, _LIST),
        "description": Field(3, False, _STR),
        "enable_detailed_results": Field(25, False, _BOOL),
        "show_detailed_results_in_submission_panel": Field(25, False, _BOOL),
        "show_detailed_results_in_leaderboard": Field(25, False, _BOOL),
        "registration_auto_approve": Field(5, False, _BOOL),
        "auto_run_submissions": Field(5, False, _BOOL),
        "can_participants_make_submissions_public": Field(5, False, _BOOL),
        "make_programs_available": Field(5, False, _BOOL),
        "make_input_data_available": Field(5, False, _BOOL),
        "competition_type": Field(5, False, _STR, choices=("competition", "benchmark")),
        "queue": Field(5, False, _STR),
        "fact_sheet": Field(5, False, (dict,)),
        "reward": Field(5, False, _STR),
        "contact_email": Field(5, False, _STR),
        "forum_enabled": Field(5, False, _BOOL),
    },
    "page": {"title": Field(3, True, _STR, 255), "file": Field(3, True, _STR)},
    "task": {
        "index": Field(6, True, _INT),
        "name": Field(6, True, _STR, 256),
        "description": Field(6, False, _STR),
        "scoring_program": Field(6, True, _STR),
        "ingestion_program": Field(7, False, _STR),
        "input_data": Field(7, False, _STR),
        "reference_data": Field(7, False, _STR),
        "ingestion_only_during_scoring": Field(9, False, _BOOL),
        "key": Field(6, False, _STR),
    },
    "solution": {
        "index": Field(7, True, _INT), "tasks": Field(7, True, _LIST), "path": Field(7, False, _STR),
        "name": Field(7, False, _STR), "description": Field(7, False, _STR), "key": Field(7, False, _STR),
    },
    "phase": {
        "name": Field(10, True, _STR, 256),
        "start": Field(10, True, _DATE),
        "end": Field(11, False, _DATE),
        "tasks": Field(10, True, _LIST),
        "index": Field(11, False, _INT),
        "description": Field(10, False, _STR),
        "max_submissions_per_day": Field(10, False, _INT + (type(None),)),
        "max_submissions": Field(10, False, _INT + (type(None),)),
        "execution_time_limit": Field(14, True, _NUM),
        "auto_migrate_to_this_phase": Field(13, False, _BOOL),
        "hide_output": Field(10, False, _BOOL),
        "hide_prediction_output": Field(10, False, _BOOL),
        "hide_score_output": Field(10, False, _BOOL),
        "starting_kit": Field(7, False, _STR),
        "public_data": Field(7, False, _STR),
    },
    "leaderboard": {
        "title": Field(15, True, _STR, 64),
        "key": Field(15, True, _STR, 36),
        "columns": Field(15, True, _LIST),
        "submission_rule": Field(16, True, _STR, choices=SUBMISSION_RULES),
        "primary_index": Field(19, False, _INT),
        "hidden": Field(15, False, _BOOL),
    },
    "column": {
        "title": Field(17, True, _STR, 36),
        "key": Field(17, True, _STR, 36),
        "index": Field(17, True, _INT),
        "sorting": Field(18, True, _STR, choices=("asc", "desc")),
        "precision": Field(17, False, _INT),
        "hidden": Field(17, False, _BOOL),
        "computation": Field(20, False, _STR + (type(None),), choices=COMPUTATIONS + (None,)),
        "computation_indexes": Field(20, False, _LIST + (type(None),)),
    },
}

#: Keys the v2 unpacker silently drops, with what to write instead (rule 5).
IGNORED_KEYS: dict[str, dict[str, str]] = {
    "competition": {
        "leaderboard": "the singular `leaderboard:` is v1.5 syntax, ignored by v2: write `leaderboards:` (a list)",
        "allow_robot_submissions": "ignored by the v2 unpacker",
        "published": "ignored by the v2 unpacker",
        "end_date": "ignored by the v2 unpacker: give the last phase an `end`",
    },
    "task": {"is_public": "ignored by the v2 unpacker"},
    "phase": {
        "max_submissions_per_person": "ignored: the unpacker reads `max_submissions`",
        "accepts_only_result_submissions": "documented but implemented nowhere",
        "solutions": "ignored on a phase: list solutions at the top level",
    },
    "leaderboard": {"index": "ignored: only leaderboards[0] is used"},
    "column": {},
    "page": {},
    "solution": {},
}


@dataclasses.dataclass(frozen=True)
class Finding:
    rule: int
    path: str
    message: str
    severity: str = "error"
    platform: bool = False  # Codabench itself would refuse the bundle for it (``check --platform-only``)

    def __str__(self) -> str:
        label = "ERROR" if self.severity == "error" else "WARNING"
        return f"{label} [rule {self.rule}] {self.path}: {self.message}"


@dataclasses.dataclass
class CheckReport:
    bundle: str
    findings: list[Finding]
    summary: str = ""

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def messages(self) -> list[str]:
        return [str(f) for f in self.findings]


def bundle_path(root: Path, value: Any) -> Path | None:
    """root/value for a usable relative path (no absolute path, no '..', no over-long name), else None."""
    if not isinstance(value, str) or not value or "\\" in value or len(value) > 1024:
        return None
    pure = PurePosixPath(value)
    if pure.is_absolute() or ".." in pure.parts or any(len(part) > 255 for part in pure.parts):
        return None
    return root / pure


def _task_yaml_name(path: Path) -> str | None:
    """The `task:` a task.yaml names, or None when the file is absent or not such a mapping."""
    if not path.is_file():
        return None
    try:
        data = yaml.safe_load(path.read_text())
    except (yaml.YAMLError, OSError, UnicodeDecodeError):
        return None
    name = data.get("task") if isinstance(data, dict) else None
    return str(name) if name else None


def platform_datetime(value: Any) -> dt.datetime | None:
    """A phase date as Codabench stores it (``get_datetime`` in its unpackers' utils.py): a YAML date or an
    unquoted YAML timestamp is a ``date`` (a datetime is one too), so it becomes midnight of its day; a string
    goes through dateutil (month-first: '1-2-2026' is 2 January); the time zone is replaced by UTC, not
    converted. None for an absent or empty value; ValueError when dateutil cannot read it."""
    if not value:
        return None
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day)
    if not isinstance(value, str):
        raise ValueError(f"a {type(value).__name__} is not a date")
    from dateutil import parser

    try:
        return parser.parse(value).replace(tzinfo=None)
    except (ValueError, OverflowError) as exc:
        raise ValueError(str(exc)) from None


def serializer_accepts(value: Any, types: tuple[type, ...]) -> bool:
    """Whether Codabench's serializers coerce a value of the wrong YAML type (DRF fields: a bool from 'true'/'yes'/
    0/1, an int from a string of digits, a string from a number), so that only this project's rule objects."""
    if bool in types and (value in (0, 1) or str(value).lower() in ("true", "false", "yes", "no", "on", "off")):
        return True
    if int in types and isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return True
    return str in types and isinstance(value, (int, float)) and not isinstance(value, bool)


def hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


# --------------------------------------------------------------------------- YAML loading

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


def yaml_root_of(yaml_file: Path) -> Path:
    """Folder the paths of a competition YAML are relative to: its own folder, or the repository root for
    the standalone files in ``competitions/`` (their paths are written relative to the repository root)."""
    yaml_file = Path(yaml_file).resolve()
    if yaml_file.parent.name == "competitions" and yaml_file.name != "competition.yaml":
        return yaml_file.parent.parent
    return yaml_file.parent


# --------------------------------------------------------------------------- the checker

class _Checker:
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
        """The codascore task a YAML task scores: ref/task.yaml's `task`, else the reference folder's name."""
        ref = task.get("reference_data")
        if not isinstance(ref, str):
            return None
        folder = bundle_path(self.root, ref)
        if folder is None:
            return None
        spec = folder / "task.yaml"
        name = _task_yaml_name(spec)
        if name:
            return name
        name = PurePosixPath(ref.rstrip("/")).name
        return name if "." in name else None

    def missing_reason(self, value: str, field: str, task: dict | None,
                       phase_tasks: list[dict] | None = None) -> tuple[str, str] | None:
        """(task name, why) when a missing path is only a warning: its task, or the task's ingestion, is not
        in this build. The task is the YAML task's, else the one a path like sample_submissions/<task> names,
        else (a phase's starting kit) every task of the phase."""
        from .registry import get_task
        from .task import ReferenceDataError

        name = self.task_name(task) if task else PurePosixPath(value.rstrip("/")).name
        if (not name or "." not in name) and phase_tasks:
            reasons = [self.missing_reason(value, field, t) for t in phase_tasks]
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

    def absent_ok(self, value: str, field: str, task: dict | None, at: str,
                  phase_tasks: list[dict] | None = None) -> bool:
        """True (and noted) when value is missing only because its task is not complete in this build."""
        path = bundle_path(self.root, value)
        if path is None or path.exists() or UUID.match(value):
            return False
        reason = self.missing_reason(value, field, task, phase_tasks)
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
        named = _task_yaml_name(spec)
        if named is None:
            self.error(7, at, f"{task[field]}/task.yaml does not name a task (`task: <family>.<task>`)",
                       platform=False)
            return
        reference = bundle_path(self.root, task.get("reference_data"))
        if field == "input_data" and reference and (reference / "task.yaml").is_file():
            expected = _task_yaml_name(reference / "task.yaml")
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
        from .registry import get_task
        from .task import ReferenceDataError

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
                named += [(f"tasks[{i}].{key}", task.get(key)) for key in bundle.PROGRAM_KEYS]
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
        from .registry import GENERATION_MODULES

        references: dict[str, str] = {}  # digest -> reference file; input data is given to code, so no secret
        public: set[str] = set()
        for _, task in self.items("tasks"):
            for key in bundle.DATA_KEYS:
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
        from .registry import get_task
        from .task import ReferenceDataError

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

    # ----- the whole static check
    def run_static(self) -> None:
        for rule in (self.rule_version, self.rule_top_level, self.rule_docker_image, self.rule_tasks,
                     self.rule_phases, self.rule_leaderboards, self.rule_keys, self.rule_answers):
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
    import hashlib

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


# --------------------------------------------------------------------------- rules 22-27: runs

def reference_strings(folder: Path, limit: int = 20000) -> set[str]:
    """Reference values at full precision (repr), for the rule-26 heuristic: a log line holding one of them
    echoes the ground truth. Only values with at least 6 significant digits count (no false alarms on 0.5).
    Read: .npy, HDF5 (when h5py is there) and numbers written with 5 or more decimals in text files."""
    import numpy as np

    values: list[float] = []
    for path in sorted(folder.rglob("*")):
        if len(values) >= limit or not path.is_file():
            continue
        try:
            if path.suffix == ".npy":
                values += _float_values(np.load(path, allow_pickle=False), limit)
            elif path.suffix in (".h5", ".hdf5"):
                values += _hdf5_values(path, limit)
            elif path.suffix in (".json", ".csv", ".txt", ".yaml", ".tsv") and path.stat().st_size < 20_000_000:
                values += [float(x) for x in re.findall(r"-?\d+\.\d{5,}(?:[eE][-+]?\d+)?", path.read_text())]
        except (OSError, ValueError, UnicodeDecodeError):
            continue
    found = set()
    for value in values[:limit]:
        if math.isfinite(value):
            text = repr(float(value))
            if len(text.lstrip("-").replace(".", "").lstrip("0").split("e")[0]) >= 6:
                found.add(text)
    return found


def _float_values(array, limit: int) -> list[float]:
    """Up to limit float entries of a numpy array (other dtypes hold no reference values to leak)."""
    if getattr(array, "dtype", None) is None or array.dtype.kind != "f":
        return []
    return array.ravel()[:limit].tolist()


def _hdf5_values(path: Path, limit: int) -> list[float]:
    try:
        import h5py
    except ImportError:
        return []
    values: list[float] = []
    with h5py.File(path, "r") as handle:
        def visit(_name, node):
            if isinstance(node, h5py.Dataset) and len(values) < limit:
                values.extend(_float_values(node[()], limit - len(values)))
        handle.visititems(visit)
    return values


def _log_text(run_dir: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in sorted((run_dir / "logs").glob("*.txt")))


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


def run_samples(checker: _Checker, work: Path, progress: Callable[[str], None]) -> None:
    from .demo import expected_to_fail
    from .runner import RunnerError, run

    detailed = bool(checker.yaml.get("enable_detailed_results"))
    done: set[tuple[Any, str]] = set()
    maxima: dict[Any, dict[str, tuple[float, str]]] = {}
    for p, phase in checker.items("phases"):
        if not isinstance(phase, dict) or not isinstance(phase.get("tasks"), list):
            continue
        limit = phase.get("execution_time_limit")
        limit = limit if isinstance(limit, (int, float)) and limit > 0 else PUBLIC_QUEUE_LIMIT
        budget = 0.5 * min(float(limit), PUBLIC_QUEUE_LIMIT)
        for index in phase["tasks"]:
            name = checker.task_names.get(index) if hashable(index) else None
            if name is None or index not in checker.task_keys or (index, str(phase.get("starting_kit"))) in done:
                continue
            done.add((index, str(phase.get("starting_kit"))))
            samples = samples_of(checker.root, phase, name)
            at = f"phases[{p}].starting_kit"
            if not samples:
                checker.warn(22, at, f"no sample submissions of {name} in the starting kit: rules 22-27 not run")
                continue
            folder = checker.references.get(index, checker.root / "reference_data" / name)
            reference = reference_strings(folder)
            repeated = False
            for sample in samples:
                progress(f"running {name} / {sample.name}")
                where = f"{at} ({name}/{sample.name})"
                try:
                    result = run(name, sample, work / name / sample.name, root=checker.root, quiet=True)
                except RunnerError as exc:
                    checker.error(22, where, f"the runner could not run it: {exc}")
                    continue
                output = result.run_dir / "scoring" / "output"
                for violation in result.violations:
                    rule = 23 if "metadata" in violation else 25 if "detailed_results" in violation else 22
                    checker.error(rule, where, violation)
                if expected_to_fail(sample.name):
                    if result.exit_code in (0, None):
                        checker.error(24, where, "an invalid sample must exit non-zero; exit code "
                                                 f"{result.exit_code}")
                    elif not any(line.startswith("ERROR:") for line in result.error.splitlines()):
                        checker.error(24, where, "stderr has no line starting with 'ERROR:'")
                else:
                    if result.exit_code != 0:
                        lines = result.error.splitlines()
                        first = next((line for line in lines if line.startswith("ERROR")), "")
                        checker.error(22, where, f"exit code {result.exit_code} on a valid sample {first}")
                        continue
                    if result.elapsed >= budget:
                        checker.error(14, where, f"took {result.elapsed:.1f} s, not below half of "
                                                 f"min(execution_time_limit, 600) = {budget:g} s")
                    if detailed and not (output / "detailed_results.html").is_file():
                        checker.error(25, where, "enable_detailed_results is true but no detailed_results.html")
                    if index not in maxima:
                        maxima[index] = answers_only_scores(checker, index, name, work, progress)
                    check_maximum(checker, where, name, sample.name, result.scores, maxima[index])
                    if not repeated:
                        repeated = True
                        again = run(name, sample, work / name / (sample.name + ".again"), root=checker.root,
                                    quiet=True)
                        first_bytes = (output / "scores.json").read_bytes()
                        second = again.run_dir / "scoring" / "output" / "scores.json"
                        if not second.is_file() or second.read_bytes() != first_bytes:
                            checker.error(27, where, "scoring it twice gave different scores.json")
                logged = set(re.findall(r"-?\d+\.\d+(?:e[-+]?\d+)?", _log_text(result.run_dir)))
                leaked = sorted(reference & logged)
                if leaked:
                    # The values themselves are not repeated: this report may be shared.
                    checker.error(26, where, f"the logs echo {len(leaked)} reference value(s) at full precision "
                                             f"(logs in {result.run_dir / 'logs'} with --runs)")


# --------------------------------------------------------------------------- rule 30: the maximum

def answers_only_scores(checker: _Checker, index: Any, name: str, work: Path,
                        progress: Callable[[str], None]) -> dict[str, tuple[float, str]]:
    """Score key -> (the value only the answers reach, where it comes from): the task's documented bounds
    (Task.max_scores), and for keys without one what its perfect submission, written from the bundle's
    reference data, scores through the runner."""
    from .registry import get_task
    from .runner import RunnerError, run
    from .task import ReferenceDataError

    task = get_task(name)
    found = {key: (float(top), "a documented bound") for key, top in task.max_scores.items() if top is not None}
    measured = [key for key, top in task.max_scores.items() if top is None]
    folder = checker.references.get(index, checker.root / "reference_data" / name)
    if not measured:
        return found
    at = f"tasks[{checker.task_positions().get(index)}].reference_data"
    try:
        raw = yaml.safe_load((folder / "task.yaml").read_text()) or {}
        perfect = work / ".perfect" / name / "submission"
        if not task.write_perfect_submission(folder, perfect, task.load_config(raw)):
            return found
        progress(f"running {name} / the perfect submission (rule 30)")
        result = run(name, perfect, work / ".perfect" / name / "run", root=checker.root, quiet=True)
    except (ReferenceDataError, RunnerError, OSError, yaml.YAMLError) as exc:
        checker.warn(30, at, f"{name}: the perfect submission could not be made ({exc}); only documented "
                             "bounds are checked")
        return found
    if not result.scored:
        checker.warn(30, at, f"{name}: the perfect submission did not score (exit {result.exit_code}); only "
                             "documented bounds are checked")
        return found
    found.update((key, (float(result.scores[key]), "the perfect submission's score")) for key in measured
                 if isinstance(result.scores.get(key), (int, float)))
    return found


def check_maximum(checker: _Checker, where: str, name: str, sample: str, scores: dict,
                  maxima: dict[str, tuple[float, str]]) -> None:
    """Rule 30 for one scored sample. In a source folder a sample its task declares made from the answers
    is skipped: `codascore bundle` leaves it out (rule 29 warns)."""
    from .registry import get_task

    if not checker.from_zip and sample in get_task(name).answer_samples:
        return
    for key, (top, origin) in sorted(maxima.items()):
        value = scores.get(key)
        if isinstance(value, (int, float)) and value >= top - 1e-9 * max(1.0, abs(top)):
            checker.error(30, where, f"{key} = {value:.10g} reaches {top:.10g} ({origin}), which only the answers "
                                     "reach: keep this sample out of the starting kit")


# --------------------------------------------------------------------------- entry point

def _refused(path: str, message: str) -> Finding:
    """A rule-1 finding: Codabench refuses the upload itself."""
    return Finding(1, path, message, "error", platform=True)


def check_bundle(bundle_path: Path, run: bool = False, image: str | None = None,
                 progress: Callable[[str], None] = lambda message: None,
                 runs_dir: Path | None = None, platform_only: bool = False) -> CheckReport:
    """Check a bundle zip, a bundle folder or a competition YAML file; findings cover every invariant.
    With run, the sample runs go to runs_dir (kept) or to a temporary folder. With platform_only, only what
    Codabench itself would refuse at upload is reported (no house rule, no run), for any organiser's bundle."""
    bundle_path = Path(bundle_path)
    image = image or bundle.DOCKER_IMAGE
    report = CheckReport(str(bundle_path), [])
    with tempfile.TemporaryDirectory(prefix="codascore-check-") as tmp:
        tmp = Path(tmp)
        from_zip = bundle_path.is_file() and bundle_path.suffix.lower() == ".zip"
        if from_zip:
            if not zipfile.is_zipfile(bundle_path):
                report.findings.append(_refused(bundle_path.name, "Bad zip file uploaded."))
                return report
            with zipfile.ZipFile(bundle_path) as archive:
                names = archive.namelist()
            if "competition.yaml" not in names:
                nested = [n for n in names if n.endswith("/competition.yaml")]
                hint = f" (it is at {nested[0]}: zip the folder's contents, not the folder)" if nested else ""
                report.findings.append(_refused("competition.yaml", "competition.yaml is missing from zip, "
                                               "check your folder structure to make sure it is in the root "
                                               "directory" + hint))
                return report
            root = tmp / "bundle"
            try:
                sandbox.safe_extract(bundle_path, root)
            except (sandbox.UnsafeArchiveError, zipfile.BadZipFile) as exc:
                report.findings.append(_refused(bundle_path.name, f"unsafe or broken archive: {exc}"))
                return report
            yaml_file = root / "competition.yaml"
        elif bundle_path.is_dir():
            root, yaml_file = bundle_path, bundle_path / "competition.yaml"
        elif bundle_path.is_file():
            root, yaml_file = yaml_root_of(bundle_path), bundle_path
        else:
            report.findings.append(_refused(str(bundle_path), "no such bundle (zip, folder or YAML file)"))
            return report
        if not yaml_file.is_file():
            report.findings.append(_refused("competition.yaml", f"competition.yaml is missing from "
                                                                  f"{bundle_path}"))
            return report
        try:
            competition, duplicates = load_yaml(yaml_file.read_text())
        except yaml.YAMLError as exc:
            report.findings.append(_refused("competition.yaml", f"not valid YAML: {exc}"))
            return report
        if not isinstance(competition, dict):
            report.findings.append(_refused("competition.yaml", "must be a YAML mapping"))
            return report
        checker = _Checker(root, competition, from_zip, image)
        if platform_only and checker.parser_version() == "1.5":
            report.findings = [Finding(2, "version", "Codabench reads this bundle with its v1.5 parser, whose "
                                                     "rules are not modelled here: nothing checked", "warning")]
            report.summary = "v1.5 bundle, not checked"
            return report
        for key, line in duplicates:
            checker.warn(1, f"line {line}", f"duplicated key {key!r}: PyYAML and Codabench silently keep the "
                                            "last one")
        checker.run_static()
        if run and not platform_only:
            run_samples(checker, Path(runs_dir) if runs_dir else tmp / "runs", progress)
        report.findings = [f for f in checker.findings if f.platform] if platform_only else checker.findings
        report.summary = checker.summary() + (" (Codabench's own rules only)" if platform_only else "")
    return report


def format_report(report: CheckReport) -> str:
    lines = report.messages()
    if report.ok:
        lines.append(f"OK {report.bundle}: {report.summary}; {len(report.warnings)} warning(s)")
    else:
        lines.append(f"FAILED {report.bundle}: {len(report.errors)} violation(s), {len(report.warnings)} "
                     "warning(s)")
    return "\n".join(lines)
