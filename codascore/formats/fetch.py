"""The folder ``codascore fetch`` writes (docs/end_of_competition.md#the-folder-fetch-writes), and its
reader::

    OUT/manifest.json                      every submission: ids, owner, date, status, scores, files
                                           (size, sha256), what was not available and why, late or not
    OUT/submissions/<team>/<id>/           one folder per team and submission: submission.zip,
                                           submission.json, prediction_result.zip, scoring_result.zip,
                                           details.json and scores.json (from scoring_result.zip),
                                           detailed_result.html, logs/<name>.txt
    OUT/teams/<team>.zip                   the team's submission for the judge (one per team)
    OUT/teams/.codascore-fetch.json        what the judge shows beside it (a submission after the end)

The platform client writes it (codascore/platform/); the judge reads ``teams/`` and its notes, the
leaderboard each team's chosen submission's details.json, both through this module.
"""

from __future__ import annotations

import json
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
LOGS = "logs"


def new_manifest(site: str, phase: dict) -> dict:
    return {"format": FORMAT, "version": VERSION, "site": site,
            "phase": {key: phase.get(key) for key in ("id", "name", "start", "end")},
            "submissions": {}, "teams": {}}


def load_manifest(out: Path) -> dict | None:
    """OUT/manifest.json as fetch wrote it, or None (absent, unreadable, or another program's)."""
    try:
        manifest = json.loads((Path(out) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) and manifest.get("format") == FORMAT else None


def is_fetch(path: Path) -> bool:
    """Whether path is a folder codascore fetch wrote."""
    return Path(path).is_dir() and load_manifest(Path(path)) is not None


def team_zip(team: str) -> str:
    """The path, relative to OUT, of a team's submission for the judge."""
    return f"{TEAMS}/{team}.zip"


def read_notes(teams_dir: Path) -> dict:
    """The notes fetch left beside the teams' zips ({} when there are none or they are broken)."""
    try:
        notes = json.loads((Path(teams_dir) / NOTES).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
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
