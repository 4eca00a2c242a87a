"""The teams of a judgement, read from the submissions folder: one sub-folder or zip per team, named after
it; what cannot be judged is listed with its reason and left out. And the fingerprints (sha256) that say
whether a submission or the reference data changed since a unit was judged.

A submissions folder written by ``codascore fetch`` (its ``teams/``) holds beside the zips a notes file
(codascore/formats/fetch.py), saying when each team's submission was made; one made after its phase's end is flagged in the
judge's listing and in results.csv (docs/end_of_competition.md#the-folder-fetch-writes)."""

from __future__ import annotations

import dataclasses
import re
import zipfile
from pathlib import Path

from ..digests import file_sha256, folder_sha256
from ..environments import Settings, team_environments
from ..formats.fetch import read_notes

#: Entries of the submissions folder that are nobody's submission (a file manager's or an editor's).
IGNORED_NAMES = {".DS_Store", "Thumbs.db", "__MACOSX"}
#: A team name, as it becomes a folder name below runs/: letters, digits and ``_ . - @ +``, not hidden.
TEAM_NAME = re.compile(r"[A-Za-z0-9_@+-][A-Za-z0-9_.@+-]{0,199}")


@dataclasses.dataclass(frozen=True)
class Team:
    """A team's submission: its name, its zip or folder, and the sha256 of what it holds."""

    name: str
    submission: Path
    sha256: str
    #: what the judge says of the submission beside its results (made after its phase's end)
    flags: tuple[str, ...] = ()
    #: the interpreter of the team's environment (docs/judge.md#environments), None: the judge's own
    python: str | None = None
    #: the digest of what that environment was built from ("" without one)
    environment: str = ""


@dataclasses.dataclass(frozen=True)
class Skipped:
    """An entry of the submissions folder left out of the judgement, and why."""

    name: str
    path: Path
    reason: str


def read_teams(submissions: Path) -> tuple[list[Team], list[Skipped]]:
    """The teams of a submissions folder, sorted by name, and the entries skipped with their reasons: an
    empty folder, a file that is not a readable zip, a name two entries share (``a/`` and ``a.zip``: both
    are skipped, since neither is more the team's than the other), a name that cannot be a folder name. A team
flagged by codascore fetch's notes (made after the phase's end) carries the flag."""
    entries: dict[str, list[Path]] = {}
    skipped: list[Skipped] = []
    notes = read_notes(submissions)
    for path in sorted(Path(submissions).iterdir()):
        if path.name in IGNORED_NAMES or path.name.startswith("."):
            continue
        name = path.stem if path.is_file() and path.suffix.lower() == ".zip" else path.name
        entries.setdefault(name, []).append(path)
    teams = []
    for name, paths in sorted(entries.items()):
        if len(paths) > 1:
            listed = " and ".join(path.name for path in paths)
            skipped += [Skipped(name, path, f"two submissions for team {name!r}: {listed}") for path in paths]
            continue
        path = paths[0]
        reason = problem_of(name, path)
        if reason:
            skipped.append(Skipped(name, path, reason))
        else:
            teams.append(Team(name, path, submission_sha256(path), flags_of(notes.get(name))))
    return teams, skipped


def flags_of(note) -> tuple[str, ...]:
    """The flags of a team's submission from its fetch note: made after its phase's end."""
    if isinstance(note, dict) and note.get("late"):
        return (f"submission {note.get('submission')} was made at {note.get('created_when')}, after the "
                f"phase's end ({note.get('phase_end')})",)
    return ()


def problem_of(name: str, path: Path) -> str:
    """Why an entry cannot be judged ("" when it can)."""
    if not TEAM_NAME.fullmatch(name):
        return f"the team name {name!r} is not a plain folder name (letters, digits, _ . - @ +)"
    if path.is_dir():
        if not any(entry.name not in IGNORED_NAMES for entry in path.iterdir()):
            return "the team's folder holds no submission (it is empty)"
        return ""
    if not path.is_file() or path.suffix.lower() != ".zip":
        return "neither a folder nor a .zip file"
    try:
        with zipfile.ZipFile(path) as archive:
            archive.infolist()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        return f"unreadable zip ({exc})"
    return ""


def submission_sha256(path: Path) -> str:
    """The sha256 of a zip's bytes, or of a folder's files (folder_sha256)."""
    path = Path(path)
    return folder_sha256(path) if path.is_dir() else file_sha256(path)


def with_environments(teams: list[Team], entry_file: str | None, settings: Settings, cache: Path,
                      say=lambda line: None) -> tuple[list[Team], list[Skipped]]:
    """Each team with its environment (codascore.environments: built, or reused from cache), before any unit
    runs; a team whose environment cannot be had is skipped with the reason (its Python, its file, the
    package)."""
    found, failed = team_environments([(team.name, team.submission) for team in teams], entry_file, settings,
                                      cache, say)
    kept = [dataclasses.replace(team, python=found[team.name].python, environment=found[team.name].digest)
            if team.name in found else team for team in teams if team.name not in failed]
    return kept, [Skipped(team.name, team.submission, failed[team.name]) for team in teams if team.name in failed]

