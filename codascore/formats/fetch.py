"""The folder ``codascore fetch`` writes (docs/end_of_competition.md#the-folder-fetch-writes), and its
reader::

    OUT/manifest.json                      which site and phase the folder is the fetch of (``site``,
                                           ``phase``); every submission: ids, owner, date, status, scores,
                                           files (size, sha256), what was not available and why, late or
                                           not, a download under way (``partial``); the submissions the site
                                           no longer lists (``gone``)
    OUT/submissions/<team>/<id>/           one folder per team and submission: submission.zip,
                                           submission.json, prediction_result.zip, scoring_result.zip,
                                           details.json and scores.json (from scoring_result.zip),
                                           detailed_result.html, logs/<name>.txt
    OUT/submissions/.../<file>.part        a file being downloaded: its first bytes, resumed by the next
                                           fetch while its ``partial`` entry names the same object
    OUT/teams/<team>.zip                   the team's submission for the judge (one per team)
    OUT/teams/.codascore-fetch.json        what the judge shows beside it (a submission after the end)
    OUT/.codascore-fetch.lock              held (flock) by the fetch writing the folder, for as long as it runs

A competition's fetch (``--competition``) is a folder of phase fetches::

    OUT/competition.json                   which site and competition the folder is the fetch of
    OUT/phase-<id>/                        each phase's fetch, as above

A folder is the fetch of one site and one phase (or competition): :func:`identity_of` says which.

The platform client writes it (codascore/platform/); the judge reads ``teams/`` and its notes, the
leaderboard each team's chosen submission's details.json, both through this module.
"""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

MANIFEST = "manifest.json"
#: The manifest's ``format``: what tells a fetch folder from any other folder holding a manifest.json.
FORMAT = "codascore-fetch"
VERSION = 1
SUBMISSIONS = "submissions"
TEAMS = "teams"
#: The notes beside the teams' zips: {team: {submission, created_when, late, phase_end}}.
NOTES = ".codascore-fetch.json"
#: A submission's files in its folder, by the key of the platform's get_details that gives each.
SUBMISSION_ZIP = "submission.zip"
SUBMISSION_RECORD = "submission.json"
PLATFORM_FILES = (("data_file", SUBMISSION_ZIP), ("prediction_result", "prediction_result.zip"),
                  ("scoring_result", "scoring_result.zip"), ("detailed_result", "detailed_result.html"))
SCORING_RESULT = "scoring_result.zip"
#: The zips of a step's output, by step: one of 0 bytes is the platform's placeholder for a step that did
#: not run (or left nothing), never a zip; it is recorded as not available, with that reason.
STEP_RESULTS = {"prediction_result.zip": "prediction", SCORING_RESULT: "scoring"}
LOGS = "logs"
#: The lock of a folder a fetch is writing (fcntl.flock on it: the system releases it when the fetch ends,
#: however it ends); it holds the pid, host and start of the fetch holding it.
LOCK = ".codascore-fetch.lock"
#: A competition's fetch: this record in OUT, and each phase's fetch in OUT/phase-<id>/.
COMPETITION = "competition.json"
COMPETITION_FORMAT = "codascore-fetch-competition"


def new_manifest(site: str, phase: dict) -> dict:
    """A phase's manifest before its submissions. A submission's record may hold ``partial``: {file:
    {"etag", "size"}}, the object a file's ``.part`` holds the first bytes of; ``gone``: {id: {"team",
    "folder", "why"}}, the submissions an earlier fetch got that the site no longer lists (their folders
    kept, in no team)."""
    return {"format": FORMAT, "version": VERSION, "site": site,
            "phase": {key: phase.get(key) for key in ("id", "name", "start", "end")},
            "submissions": {}, "teams": {}, "gone": {}}


def new_competition_record(site: str, competition: dict) -> dict:
    """What OUT/competition.json says of a competition's fetch: its site, the competition, its phases."""
    return {"format": COMPETITION_FORMAT, "version": VERSION, "site": site,
            "competition": {"id": competition.get("id"), "title": competition.get("title")},
            "phases": {str(p["id"]): phase_folder(p["id"]) for p in competition.get("phases") or []}}


def phase_folder(phase_id: int) -> str:
    """The folder, relative to a competition's fetch, of one phase's fetch."""
    return f"phase-{phase_id}"


def part_path(path: Path) -> Path:
    """The name a file is downloaded under, beside its final name, until every byte has come."""
    return Path(path).with_name(Path(path).name + ".part")


def is_part(name: str) -> bool:
    """Whether a file name is a download's (or a placement's) under way, not a file of the fetch."""
    return name.endswith(".part")


@dataclass(frozen=True)
class Identity:
    """Which fetch a folder holds: a site (as :func:`site_key` writes it), and a phase or a competition."""

    site: str
    kind: str
    id: int | None

    def __str__(self) -> str:
        return f"the fetch of {self.kind} {self.id} of {self.site}"


def site_key(url: str) -> str:
    """A site's address as identities compare it: scheme and host in lower case, no trailing slash."""
    parts = urllib.parse.urlsplit(str(url).strip())
    return urllib.parse.urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), "", ""))


def identity_of(out: Path) -> Identity | None:
    """The fetch a folder holds (its manifest's site and phase, or its competition record's), or None."""
    manifest = load_manifest(out)
    if manifest is not None:
        return Identity(site_key(manifest.get("site") or ""), "phase", (manifest.get("phase") or {}).get("id"))
    record = read_json(Path(out) / COMPETITION)
    if isinstance(record, dict) and record.get("format") == COMPETITION_FORMAT:
        return Identity(site_key(record.get("site") or ""), "competition", (record.get("competition") or {}).get("id"))
    return None


def foreign_files(out: Path) -> list[str]:
    """The names in a folder that is no fetch's, its lock left out: what a fetch into it would mix with."""
    folder = Path(out)
    return sorted(p.name for p in folder.iterdir() if p.name != LOCK) if folder.is_dir() else []


def read_json(path: Path):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def load_manifest(out: Path) -> dict | None:
    """OUT/manifest.json as fetch wrote it, or None (absent, unreadable, or another program's)."""
    manifest = read_json(Path(out) / MANIFEST)
    return manifest if isinstance(manifest, dict) and manifest.get("format") == FORMAT else None


def is_fetch(path: Path) -> bool:
    """Whether path is a folder codascore fetch wrote."""
    return Path(path).is_dir() and load_manifest(Path(path)) is not None


def team_zip(team: str) -> str:
    """The path, relative to OUT, of a team's submission for the judge."""
    return f"{TEAMS}/{team}.zip"


def team_of(name: str) -> str | None:
    """The team whose zip a file of teams/ is (by its name), or None: not a team's zip."""
    return name[:-len(".zip")] if name.endswith(".zip") and not name.startswith(".") else None


def read_notes(teams_dir: Path) -> dict:
    """The notes fetch left beside the teams' zips ({} when there are none or they are broken)."""
    notes = read_json(Path(teams_dir) / NOTES)
    return notes if isinstance(notes, dict) else {}


def chosen_submissions(out: Path) -> list[tuple[str, Path | None, str]]:
    """(team, the folder of its chosen submission or None, why) of every team of a fetch folder, sorted by
    team: the one on the leaderboard, else as the manifest's ``teams`` says."""
    manifest = load_manifest(Path(out)) or {}
    submissions, found = manifest.get("submissions") or {}, []
    for team, entry in sorted((manifest.get("teams") or {}).items()):
        record = submissions.get(str(entry.get("submission")))
        if record is None:
            found.append((team, None, entry.get("why") or "no submission"))
        else:
            found.append((team, Path(out) / record.get("folder", ""),
                          f"submission {record.get('id')} ({record.get('status')})"))
    return found
