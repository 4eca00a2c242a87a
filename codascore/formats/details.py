"""``details.json``: the scoring program's full record of one scoring, and how every tool reads it.

Written by the Codabench layer (:mod:`codascore.codabench`) beside ``scores.json``; read by
``codascore leaderboard`` (a board's per-unit rows), by the judge's runs and by ``codascore fetch`` users.
Its fields:

====================  ==================================================================================
``task``              the task's name (``uai.pr``)
``status``            ``scored`` or ``invalid`` (then ``problems`` lists why; no scores)
``codascore_version``  the scorer's version
``reference_sha256``  the digest of the reference data (``ref/``) it was scored on; "" when unknown
``group``             the group of units this scoring covers ("" for the whole task; UAI: its time limit,
                      ``20s``): what the task's judging plan names it (JudgePlan.group_of)
``board_settings``    the task.yaml parameters the task's final board depends on (Task.board_settings)
``scores``            what scores.json holds; ``omitted_scores``, ``clipped_scores``, ``warnings``
``instances``         one record per item scored, each with its ``id``
(the task's own)      Result.details
====================  ==================================================================================

A unit of evidence is named once for every tool by :func:`unit_id`: an item's id within its group, so that
a results submission and a code submission of the same task and group name the same units.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from ..errors import ReferenceDataError
from .outputs import DETAILS as DETAILS_NAME

SCORED, INVALID = "scored", "invalid"


def unit_id(group: str, item: str) -> str:
    """The name of one unit of evidence: ``<group>/<item>``, or the item alone outside any group."""
    return f"{group}/{item}" if group else str(item)


def scored_document(task: str, version: str, reference: str, group: str, settings: dict, scores: dict,
                    omitted: list[str], clipped: dict, warnings: list[str], details: dict,
                    instances: list[dict]) -> dict:
    """The fields of a scored submission's details.json, in the order they are written (the task's own
    details between the warnings and the instances)."""
    return {"task": task, "status": SCORED, "codascore_version": version, "reference_sha256": reference,
            "group": group, "board_settings": dict(settings), "scores": scores, "omitted_scores": omitted,
            "clipped_scores": clipped, "warnings": warnings, **details, "instances": instances}


def invalid_document(task: str, version: str, problems: list[str], warnings: list[str]) -> dict:
    """The fields of an invalid submission's details.json: why it was refused, and no score."""
    return {"task": task, "status": INVALID, "codascore_version": version, "problems": problems,
            "warnings": warnings, "scores": {}, "instances": []}


class NotScored(ReferenceDataError):
    """A details.json of a submission that was not scored (its ``status`` says why): nothing to rank."""

    def __init__(self, path: Path, status: Any):
        self.path, self.status = Path(path), status
        super().__init__(f"{path}: field 'status' is {status!r}, not {SCORED!r}: only a scored submission "
                         f"can be ranked")


@dataclasses.dataclass(frozen=True)
class Details:
    """One scored details.json, checked: where it is, its task, reference digest, group and board settings,
    and the whole document (``data``) for the task's board to read its records from."""

    path: Path
    task: str
    reference_sha256: str
    group: str
    board_settings: dict
    data: dict

    @property
    def instances(self) -> Any:
        """The per-item records (a list when the scorer wrote them; the board checks each)."""
        return self.data.get("instances")

    def unit(self, item: str) -> str:
        """unit_id of an item of this scoring."""
        return unit_id(self.group, item)


def read_details(path: Path, task: str | None = None) -> Details:
    """A scored details.json read from path and checked (:func:`checked`)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReferenceDataError(f"{path}: not a readable JSON file ({exc})") from exc
    return checked(data, path, task)


def checked(data: Any, path: Path | str = DETAILS_NAME, task: str | None = None) -> Details:
    """A details.json's document, checked once for every reader: a JSON object, ``task`` a name (the one
    asked for, when given), ``status`` scored (:class:`NotScored` otherwise), ``reference_sha256`` and
    ``group`` strings, ``board_settings`` an object. ReferenceDataError naming the file and the field."""
    path = Path(path)
    if not isinstance(data, dict):
        raise ReferenceDataError(f"{path}: not a details.json (a JSON object is expected)")
    if not isinstance(data.get("task"), str):
        raise ReferenceDataError(f"{path}: field 'task' is missing (not a codascore details.json)")
    if task is not None and data["task"] != task:
        raise ReferenceDataError(f"{path}: field 'task' is {data['task']!r}, not {task!r}: a details.json of "
                                 f"another task")
    if data.get("status") != SCORED:
        raise NotScored(path, data.get("status"))
    for field, kind, default in (("reference_sha256", str, ""), ("group", str, ""), ("board_settings", dict, {})):
        if not isinstance(data.get(field, default), kind):
            raise ReferenceDataError(f"{path}: field {field!r} is {data[field]!r}, not a{'n object' if kind is dict else ' string'}")
    return Details(path, data["task"], data.get("reference_sha256", ""), data.get("group", ""),
                   dict(data.get("board_settings", {})), data)
