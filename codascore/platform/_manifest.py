"""The manifest of a fetched phase (OUT/manifest.json) and what makes a fetch resumable: a file the manifest
records whose bytes on disk still have its size and sha256 is not downloaded again, provided its submission
had already reached a final state (a running submission's logs and results may still change). Every file is
written under a temporary name and renamed, the manifest too, after each file: a fetch killed at any moment
leaves only complete files under their own names, and the next one takes up from there
(docs/end_of_competition.md#the-folder-fetch-writes)."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from ..digests import file_sha256
from ..formats.fetch import SUBMISSION_ZIP

#: The states after which the platform changes nothing of a submission (its model's FINISHED, FAILED,
#: CANCELLED).
FINAL_STATES = frozenset({"Finished", "Failed", "Cancelled"})
_UNSAFE = re.compile(r"[^A-Za-z0-9_.@+-]")


def is_intact(path: Path, record: dict | None) -> bool:
    """Whether path holds the bytes record describes (its size, then its sha256)."""
    if not record or "sha256" not in record or not Path(path).is_file():
        return False
    if Path(path).stat().st_size != record.get("size"):
        return False
    return file_sha256(Path(path)) == record["sha256"]


def reusable(old: dict | None, status: str, name: str, folder: Path) -> dict | None:
    """The manifest's record of file name in a submission's folder when the file may be kept as it is: the
    submission was already in the same final state when it was fetched, and the bytes are intact."""
    if not old or old.get("status") != status or status not in FINAL_STATES:
        return None
    record = old.get("files", {}).get(name)
    return record if is_intact(Path(folder) / name, record) else None


def safe_name(text: str, fallback: str = "unnamed") -> str:
    """text as one plain folder or file name: letters, digits and ``_ . @ + -``, never hidden."""
    name = _UNSAFE.sub("_", str(text)).lstrip(".")[:200]
    return name or fallback


def parse_time(text: str | None) -> dt.datetime | None:
    """A date of the API (ISO 8601, 'Z' or an offset; a naive one is UTC, as the platform stores them)."""
    if not text:
        return None
    moment = dt.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)


def is_late(created_when: str | None, phase_end: str | None) -> bool:
    """Whether a submission was made after its phase's end (a phase without an end never closes)."""
    created, end = parse_time(created_when), parse_time(phase_end)
    return created is not None and end is not None and created > end


def choose_team_submission(records: list[dict]) -> tuple[dict | None, str]:
    """The one submission of a team the judge gets, and why: the one on the leaderboard, else the latest
    made before the phase's end, else the latest; only a top-level submission whose file was fetched."""
    candidates = [r for r in records if r.get("parent") is None and SUBMISSION_ZIP in r.get("files", {})]
    if not candidates:
        return None, "no submission file was fetched for this team"
    on_board = [r for r in candidates if r.get("on_leaderboard")]
    if on_board:
        return max(on_board, key=lambda r: r["created_when"] or ""), "the team's submission on the leaderboard"
    in_time = [r for r in candidates if not r.get("late")]
    if in_time:
        return max(in_time, key=lambda r: r["created_when"] or ""), "the team's latest submission before the end"
    return max(candidates, key=lambda r: r["created_when"] or ""), \
        "the team's latest submission (every one came after the phase's end)"
