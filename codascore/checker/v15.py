"""Rule 32: what Codabench's v1.5 parser refuses. A bundle whose ``version`` is missing, 1 or 1.5 is read by
``V15Unpacker`` (``unpackers/v1.py``), not by the v2 rules of this checker; ``check --platform-only`` must
refuse what that parser refuses and pass what it passes.

The parser, in its order: ``html`` (a mapping of page title to file, with ``terms``; each file opened as
text), ``image`` (the file, which the competition serializer wants as an image), ``phases`` (a mapping of
phases with ``phasenumber``, ``label`` and ``start_date``; v1.8's parent phase dropped; each phase ends the
day before the next starts, so the order never fails), then ``leaderboard`` (with ``leaderboards``, each with
a ``label``, and ``columns``, each naming its leaderboard's label). On save, each file a phase names
(programs, data, starting kit, public data) must be in the bundle or be a dataset UUID, and the leaderboard
and column serializers apply their length limits and want at least one column per leaderboard. A
``KeyError`` or ``TypeError`` inside the parser reaches the organiser as "Unpacking the bundle failed".
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from ..competition import bundle_path
from .schema import IMAGE_MAGIC, SCHEMAS, UUID, Finding, platform_datetime

RULE = 32
CRASH = "Unpacking the bundle failed. Here is the error log: "
PHASE_FILES = ("public_data", "starting_kit", "ingestion_program", "input_data", "scoring_program",
               "reference_data")


def refused(path: str, message: str) -> Finding:
    return Finding(RULE, path, message, "error", platform=True)


def v15_refusals(root: Path, competition: dict) -> list[Finding]:
    """Every refusal of Codabench's v1.5 parser this bundle meets, in the parser's order (the platform
    reports the first)."""
    findings = pages_refusals(root, competition)
    findings += image_refusals(root, competition)
    findings += phases_refusals(root, competition)
    findings += leaderboard_refusals(competition)
    if not isinstance(competition.get("title"), str) or not competition["title"]:
        findings.append(refused("title", "title: This field may not be null (the v1.5 parser reads `title`)"))
    return findings


def text_file_problem(root: Path, value: Any) -> str | None:
    """Why open(path).read() fails on a bundle file (None when it reads): missing, a folder, not UTF-8."""
    if not isinstance(value, str):
        return "missing"
    path = bundle_path(root, value)
    if path is None or not path.exists():
        return "missing"
    if path.is_dir():
        return f"{CRASH}[Errno 21] Is a directory"
    try:
        path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        return f"{CRASH}{exc}"
    return None


def pages_refusals(root: Path, competition: dict) -> list[Finding]:
    pages = competition.get("html")
    if "html" not in competition:
        return [refused("html", "HTML pages could not be found in the yaml file (the v1.5 parser's pages; "
                                "write `version: 2` for a v2 bundle)")]
    if not isinstance(pages, dict):
        return [refused("html", f"{CRASH}'{type(pages).__name__}' object has no attribute 'items'")]
    findings = []
    if "terms" not in pages:
        findings.append(refused("html.terms", "A file containing the terms of the competition could not be "
                                              "located for this competition"))
    for title, value in pages.items():
        problem = text_file_problem(root, value)
        if problem == "missing":
            findings.append(refused(f"html.{title}", f"Could not find file for page: {title}"))
        elif problem:
            findings.append(refused(f"html.{title}", problem))
    return findings


def image_refusals(root: Path, competition: dict) -> list[Finding]:
    if "image" not in competition:
        return [refused("image", "An image for this competition could not be found in the yaml")]
    value = competition["image"]
    path = bundle_path(root, value) if isinstance(value, str) else None
    if path is None or not path.is_file():
        return [refused("image", f"Unable to find image: {value}")]
    head = path.read_bytes()[:8]
    if not any(head.startswith(magic) for magic in IMAGE_MAGIC):
        return [refused("image", f"{value} is not a PNG or JPEG image (the competition's logo)")]
    return []


def phase_list(phases: dict) -> list[Any]:
    """The phases as the parser orders them (by phasenumber; v1.8's parent phase dropped)."""
    ordered = sorted(phases.values(), key=lambda p: p["phasenumber"])
    if any(p.get("is_parallel_parent") or p.get("parent_phasenumber") for p in ordered):
        ordered = ordered[1:]
    return ordered


def phases_refusals(root: Path, competition: dict) -> list[Finding]:
    phases = competition.get("phases")
    if "phases" not in competition:
        return [refused("phases", "No phases could be found for this competition")]
    if not isinstance(phases, dict) or not all(isinstance(p, dict) for p in phases.values()):
        return [refused("phases", f"{CRASH}the v1.5 parser wants a mapping of phases (phases.values())")]
    try:
        ordered = phase_list(phases)
    except KeyError:
        return [refused("phases", f"{CRASH}'phasenumber' (every v1.5 phase needs a phasenumber)")]
    except TypeError as exc:
        return [refused("phases", f"{CRASH}{exc} (phasenumbers must be comparable numbers)")]
    findings = []
    for phase in ordered:
        at = f"phases[{phase.get('phasenumber')}]"
        for key in ("label", "start_date"):
            if key not in phase:
                findings.append(refused(f"{at}.{key}", f"{CRASH}'{key}'"))
        start = phase.get("start_date")
        try:
            stored = platform_datetime(start)
        except ValueError as exc:
            findings.append(refused(f"{at}.start_date", f"{CRASH}{exc}"))
            continue
        if "start_date" in phase and not isinstance(stored, dt.datetime):
            findings.append(refused(f"{at}.start_date", f"{CRASH}an empty start_date cannot be compared"))
        for key in PHASE_FILES:
            value = phase.get(key)
            if value is None:
                continue
            path = bundle_path(root, str(value))
            if (path is None or not path.exists()) and not UUID.match(str(value)):
                findings.append(refused(f"{at}.{key}", f'Cannot find dataset: "{value}"'))
    return findings


def leaderboard_refusals(competition: dict) -> list[Finding]:
    board = competition.get("leaderboard")
    if "leaderboard" not in competition:
        return [refused("leaderboard", "Could not find leaderboard in the competition yaml")]
    if not isinstance(board, dict):
        return [refused("leaderboard", f"{CRASH}the v1.5 leaderboard must be a mapping")]
    if "leaderboards" not in board:
        return [refused("leaderboard.leaderboards", "Could not find leaderboards declared on the competition "
                                                    "leaderboard")]
    if "columns" not in board:
        return [refused("leaderboard.columns", "Could not find columns declared on the competition leaderboard")]
    boards, columns = board["leaderboards"], board["columns"]
    if not isinstance(boards, dict) or not isinstance(columns, dict) or \
            not all(isinstance(v, dict) for v in list(boards.values()) + list(columns.values())):
        return [refused("leaderboard", f"{CRASH}leaderboards and columns must be mappings of mappings")]
    findings = []
    labels = {}
    for key, entry in boards.items():
        if "label" not in entry:
            findings.append(refused(f"leaderboard.leaderboards.{key}", f"{CRASH}'label'"))
            continue
        labels[str(entry["label"]).lower()] = key
        findings += length_refusals("leaderboard", {"title": key, "key": key}, f"leaderboard.leaderboards.{key}")
    used = set()
    for key, column in columns.items():
        at = f"leaderboard.columns.{key}"
        owner = column.get("leaderboard")
        if not isinstance(owner, dict) or "label" not in owner:
            findings.append(refused(f"{at}.leaderboard", f"{CRASH}'leaderboard' (each column names its "
                                                         "leaderboard, with its label)"))
            continue
        used.add(labels.get(str(owner["label"]).lower()))
        findings += length_refusals("column", {"title": column.get("label", key), "key": key}, at)
    for key in boards:
        if key in labels.values() and key not in used:
            findings.append(refused(f"leaderboard.leaderboards.{key}", "columns: Leaderboards require at least "
                                                                       "1 column"))
    return findings


def length_refusals(section: str, values: dict, at: str) -> list[Finding]:
    """The serializer's length limits (the v2 schema's, the same model fields) on what the parser made."""
    findings = []
    for key, value in values.items():
        limit = SCHEMAS[section][key].max_len
        if limit is not None and len(str(value)) > limit:
            findings.append(refused(f"{at}.{key}", f"{len(str(value))} characters; Codabench allows at most "
                                                   f"{limit}"))
    return findings
