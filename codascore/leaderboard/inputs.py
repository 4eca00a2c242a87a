"""What ``codascore leaderboard`` reads: the teams' ``details.json`` files, from the output folder of
``codascore judge`` (``results.csv`` names each team's run folders; ``judge.sqlite`` the reference data's
digest) or from folders and files of downloaded ``details.json``, one team each (docs/leaderboard.md#input).

Every file is checked before anything is computed: its JSON, its ``status`` (scored), its ``task`` (the one
asked for, or one task for all), and the teams' ``reference_sha256`` (one reference data for all). A wrong
file is a ReferenceDataError naming the file and the field (exit 2).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import sqlite3
from pathlib import Path

from ..errors import ReferenceDataError, UsageError

DETAILS = "details.json"
#: The files of a ``codascore judge`` output folder (docs/judge.md#outputs and #store).
JUDGE_RESULTS, JUDGE_DATABASE = "results.csv", "judge.sqlite"
#: Where a run folder keeps its scoring's details.json (what ``codascore run`` leaves).
SCORING_DETAILS = Path("scoring") / "output" / DETAILS


@dataclasses.dataclass
class TeamFiles:
    """One team's scored details.json files (several when it was scored in groups, e.g. one per UAI time
    limit) and the digest of the reference data they were scored on ("" when unknown)."""

    name: str
    files: list[tuple[Path, dict]]
    reference: str = ""


@dataclasses.dataclass
class Inputs:
    """The teams of one task; ``left_out``: team -> why it is not ranked (a judgement's failed runs)."""

    task: str
    teams: list[TeamFiles]
    left_out: dict[str, str] = dataclasses.field(default_factory=dict)


#: The manifest of a ``codascore fetch`` folder (docs/end_of_competition.md#the-folder-fetch-writes).
FETCH_MANIFEST, FETCH_FORMAT = "manifest.json", "codascore-fetch"


def is_fetch(path: Path) -> bool:
    if not (path.is_dir() and (path / FETCH_MANIFEST).is_file()):
        return False
    try:
        return json.loads((path / FETCH_MANIFEST).read_text(encoding="utf-8")).get("format") == FETCH_FORMAT
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return False


def is_judgement(path: Path) -> bool:
    return path.is_dir() and (path / JUDGE_RESULTS).is_file() and (path / JUDGE_DATABASE).is_file()


def read_inputs(paths: list[Path], names: list[str] | None = None, task: str | None = None) -> Inputs:
    """The teams of the INPUTs: one judgement's output folder, or details.json files and folders (one team
    each, named by --names or by the folder), checked for one task and one reference data."""
    paths = [Path(p) for p in paths]
    for path in paths:
        if not path.exists():
            raise UsageError(f"{path}: no such file or folder")
    if any(is_judgement(p) or is_fetch(p) for p in paths):
        if len(paths) != 1 or names:
            raise UsageError("a judgement's or a fetch's output folder is read alone, without --names (its teams "
                             "are named)")
        teams, left_out = judgement_teams(paths[0], task) if is_judgement(paths[0]) else fetched_teams(paths[0])
    else:
        teams, left_out = downloaded_teams(paths, names), {}
    if not teams:
        raise ReferenceDataError(f"no scored team to rank in {', '.join(str(p) for p in paths)}"
                                 + (f" ({len(left_out)} left out: not scored)" if left_out else ""))
    name = one_task(teams, task)
    one_reference(teams)
    return Inputs(name, teams, left_out)


def downloaded_teams(paths: list[Path], names: list[str] | None) -> list[TeamFiles]:
    """One team per path: a details.json file, or a folder holding one or more (every ``details.json``
    below it, in sorted order). Named by ``names`` or by the folder (a file's: its parent folder)."""
    if names is not None and len(names) != len(paths):
        raise UsageError(f"--names gives {len(names)} names for {len(paths)} inputs: one name per input")
    teams = []
    for k, path in enumerate(paths):
        files = sorted(path.rglob(DETAILS)) if path.is_dir() else [path]
        if not files:
            raise ReferenceDataError(f"{path}: no {DETAILS} in this folder")
        name = names[k] if names is not None else (path.name if path.is_dir() else path.resolve().parent.name)
        teams.append(TeamFiles(name, [(file, read_details(file)) for file in files]))
    duplicates = sorted({t.name for t in teams if [u.name for u in teams].count(t.name) > 1})
    if duplicates:
        raise UsageError(f"two inputs have the same team name {duplicates}: name them with --names")
    for team in teams:
        team.reference = details_reference(team)
    return teams


def read_details(path: Path) -> dict:
    """A scored details.json: a JSON object whose ``status`` is "scored" (ReferenceDataError naming the
    file and the field otherwise)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReferenceDataError(f"{path}: not a readable JSON file ({exc})") from exc
    if not isinstance(data, dict):
        raise ReferenceDataError(f"{path}: not a details.json (a JSON object is expected)")
    if data.get("status") != "scored":
        raise ReferenceDataError(f"{path}: field 'status' is {data.get('status')!r}, not 'scored': "
                                 "only a scored submission can be ranked")
    if not isinstance(data.get("task"), str):
        raise ReferenceDataError(f"{path}: field 'task' is missing (not a codascore details.json)")
    return data


def details_reference(team: TeamFiles) -> str:
    """The team's reference digest: every file's ``reference_sha256`` must agree; "" when none says."""
    found = {str(data["reference_sha256"]): path for path, data in team.files if data.get("reference_sha256")}
    if len(found) > 1:
        raise ReferenceDataError(f"team {team.name}: its files were scored on different reference data "
                                 f"(field 'reference_sha256'): {', '.join(str(p) for p in found.values())}")
    return next(iter(found), "")


def one_task(teams: list[TeamFiles], task: str | None) -> str:
    """The task every file names (field ``task``): the one asked for, else one for all."""
    if task is not None:
        for team in teams:
            for path, data in team.files:
                if data["task"] != task:
                    raise ReferenceDataError(f"{path}: field 'task' is {data['task']!r}, not {task!r}: "
                                             f"a details.json of another task")
        return task
    seen: dict[str, Path] = {}
    for team in teams:
        for path, data in team.files:
            seen.setdefault(data["task"], path)
    if len(seen) > 1:
        raise ReferenceDataError("a mix of tasks (field 'task'): " + "; ".join(
            f"{path} is {name!r}" for name, path in seen.items()) + "; rank one task at a time (--task)")
    return next(iter(seen))


def one_reference(teams: list[TeamFiles]) -> None:
    """Refuse teams scored on different reference data (field ``reference_sha256``), naming them."""
    by_digest: dict[str, list[str]] = {}
    for team in teams:
        if team.reference:
            by_digest.setdefault(team.reference, []).append(team.name)
    if len(by_digest) > 1:
        raise ReferenceDataError("the teams were scored on different reference data (field 'reference_sha256'): "
                                 + "; ".join(f"{digest[:12]}: {', '.join(names)}" for digest, names in by_digest.items()))


def judgement_teams(out: Path, task: str | None) -> tuple[list[TeamFiles], dict[str, str]]:
    """The teams of a judgement's output folder: the rows of results.csv (of ``task``, or of its only
    task) that were scored, each team's run folders' details.json. A team none of whose rows was scored is
    left out with its state; one with some groups unscored keeps the others (its missing units then count
    as the board's missing_policy says)."""
    rows = read_results(out)
    tasks = sorted({row["task"] for row in rows if row.get("task")})
    if task is None:
        if len(tasks) > 1:
            raise UsageError(f"{out / JUDGE_RESULTS} holds several tasks ({', '.join(tasks)}): choose one with --task")
        task = tasks[0] if tasks else None
    digests = store_references(out, task)
    files: dict[str, list[tuple[Path, dict]]] = {}
    unscored: dict[str, str] = {}
    for row in rows:
        if row.get("task") != task:
            continue
        team = row.get("team", "")
        if row.get("state") != "done" or row.get("outcome") != "scored":
            unscored.setdefault(team, f"{row.get('state')}: {row.get('outcome') or row.get('messages') or ''}".strip(": "))
            continue
        path = out / row.get("run_folder", "") / SCORING_DETAILS
        if not path.is_file():
            raise ReferenceDataError(f"{out / JUDGE_RESULTS}: team {team}'s run folder (field 'run_folder') "
                                     f"holds no {SCORING_DETAILS}")
        details = read_details(path)
        if row.get("group"):
            # the scoring of one group (a UAI time limit) does not know its group: the judge's row does
            details = {**details, "group": row["group"]}
        files.setdefault(team, []).append((path, details))
    teams = [TeamFiles(name, found) for name, found in files.items()]
    for team in teams:
        # the store's digest (of the one reference folder the judge ran with), else the files' own
        team.reference = digests.get(team.name) or details_reference(team)
    return teams, {name: why for name, why in unscored.items() if name not in files}


def fetched_teams(out: Path) -> tuple[list[TeamFiles], dict[str, str]]:
    """The teams of a ``codascore fetch`` folder: each team's chosen submission (the one on the leaderboard,
    else as the manifest's ``teams`` says) and its details.json; a team without a scored one is left out
    with the reason."""
    manifest = json.loads((out / FETCH_MANIFEST).read_text(encoding="utf-8"))
    submissions, teams, left_out = manifest.get("submissions") or {}, [], {}
    for name, entry in sorted((manifest.get("teams") or {}).items()):
        record = submissions.get(str(entry.get("submission")))
        if record is None:
            left_out[name] = entry.get("why") or "no submission"
            continue
        path = out / record.get("folder", "") / DETAILS
        if not path.is_file():
            left_out[name] = f"submission {record.get('id')} ({record.get('status')}): no {DETAILS} fetched"
            continue
        details = read_details_or_none(path)
        if details is None:
            left_out[name] = f"submission {record.get('id')}: not scored"
            continue
        teams.append(TeamFiles(name, [(path, details)]))
    for team in teams:
        team.reference = details_reference(team)
    return teams, left_out


def read_details_or_none(path: Path) -> dict | None:
    """read_details, or None for a details.json of a submission that was not scored."""
    try:
        return read_details(path)
    except ReferenceDataError as exc:
        if "field 'status'" in str(exc):
            return None
        raise


def read_results(out: Path) -> list[dict]:
    try:
        with open(out / JUDGE_RESULTS, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ReferenceDataError(f"{out / JUDGE_RESULTS}: unreadable ({exc})") from exc
    if rows and not {"team", "task", "state", "run_folder"} <= set(rows[0]):
        raise ReferenceDataError(f"{out / JUDGE_RESULTS}: not a judgement's results (columns team, task, state, "
                                 f"run_folder expected)")
    return rows


def store_references(out: Path, task: str | None) -> dict[str, str]:
    """team -> the reference data's digest its units were judged with (judge.sqlite's units table, read
    only); ReferenceDataError naming a team whose units disagree."""
    try:
        db = sqlite3.connect(f"file:{out / JUDGE_DATABASE}?mode=ro", uri=True)
        try:
            rows = db.execute("SELECT DISTINCT team, reference_sha256 FROM units WHERE task = ? AND kind != 'part'",
                              (task,)).fetchall()
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        raise ReferenceDataError(f"{out / JUDGE_DATABASE}: not a judgement's database ({exc})") from exc
    found: dict[str, str] = {}
    for team, digest in rows:
        if team in found and found[team] != digest:
            raise ReferenceDataError(f"{out / JUDGE_DATABASE}: team {team}'s units were judged on different "
                                     f"reference data (field 'reference_sha256')")
        found[team] = digest
    return found
