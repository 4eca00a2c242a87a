"""The rules of a Codabench v2 bundle as data: the text of every invariant (RULES), the schema of each YAML
section (SCHEMAS: required keys, types, length limits, allowed values), the keys the platform ignores
(IGNORED_KEYS), what Codabench itself refuses (PLATFORM_RULES), and the finding and report types.

Sources: docs/bundles.md, "The checker", and Codabench's unpacker and serializers as that page cites them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from typing import Any

from .refusals import rule_id_of

#: The invariants of a bundle, by number (docs/bundles.md#the-checker, from docs/codabench.md).
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
    31: "each task's reference data, input data and starting-kit result samples agree: the same instance ids, "
        "counts and shapes (Task.data_inventory)",
    32: "a bundle without `version: 2` (missing, 1 or 1.5) meets Codabench's v1.5 parser: `html` pages with "
        "`terms`, an image, `phases` with phasenumber, label and start_date and their files, a `leaderboard` "
        "with `leaderboards` and `columns`",
}

#: Rules whose findings Codabench itself would refuse at upload (its unpacker and serializers); the others are
#: this project's house rules or run-time failures. A finding may override this (Finding.platform).
PLATFORM_RULES = frozenset({1, 2, 3, 6, 7, 10, 11, 13, 15, 17, 20, 32})
#: str(version) values that select Codabench's v1.5 parser (its rules: rule 32, :mod:`.v15`).
V15_VERSIONS = ("1", "1.5")

SUBMISSION_RULES = ("Add", "Add_And_Delete", "Add_And_Delete_Multiple", "Force_Last",
                    "Force_Latest_Multiple", "Force_Best")
PRODUCT_SUBMISSION_RULES = ("Force_Last", "Force_Best")
COMPUTATIONS = ("avg", "sum", "min", "max")
PUBLIC_QUEUE_LIMIT = 600
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
        "pages": Field(3, True, _LIST, missing="absent: \"Unpacking the bundle failed. Here is the error log: "
                                               "'NoneType' object is not iterable\" (an empty list is allowed)"),
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
        "start": Field(10, True, _DATE, missing="missing: phase needs `start` (\"Unpacking the bundle failed\": "
                                                "the unpacker reads phase['start'])"),
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

    @property
    def rule_id(self) -> str:
        """A stable id: for a finding Codabench refuses, the id of the platform's refusal it predicts
        (:mod:`.refusals`, the ids an upload's failure text maps to), else ``rule-N``."""
        found = rule_id_of(self.message) if self.platform and self.severity == "error" else None
        return found or f"rule-{self.rule}"

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
