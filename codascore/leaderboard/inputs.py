"""What ``codascore leaderboard`` reads: the teams' ``details.json`` files, from the output folder of
``codascore judge`` (its results.csv names each team's run folders; its store the reference data's
digest), from a ``codascore fetch`` folder (each team's chosen submission), or from folders and files of
downloaded ``details.json``, one team each (docs/leaderboard.md#input). Every folder is read through the
module that declares its format (codascore/formats/).

Every file is checked before anything is computed (formats.details.read_details: its JSON, ``status``
scored, ``task``), then across teams: one task, one reference data (``reference_sha256``), the board
settings the teams were scored with (``board_settings``, against the leaderboard's configuration), and in
a judgement, each file's group against its row's. A wrong file is a ReferenceDataError naming the file and
the field (exit 2).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ..errors import ReferenceDataError, UsageError
from ..formats import fetch, judgement
from ..formats.details import Details, NotScored, read_details
from ..formats.outputs import DETAILS
from ..formats.run_folder import scoring_output


@dataclasses.dataclass
class TeamFiles:
    """One team's scored details.json files (several when it was scored in groups, e.g. one per UAI time
    limit) and the digest of the reference data they were scored on ("" when unknown)."""

    name: str
    files: list[Details]
    reference: str = ""


@dataclasses.dataclass
class Inputs:
    """The teams of one task; ``left_out``: team -> why it is not ranked (a judgement's failed runs)."""

    task: str
    teams: list[TeamFiles]
    left_out: dict[str, str] = dataclasses.field(default_factory=dict)


def read_inputs(paths: list[Path], names: list[str] | None = None, task: str | None = None) -> Inputs:
    """The teams of the INPUTs: one judgement's or fetch's output folder, or details.json files and folders
    (one team each, named by --names or by the folder), checked for one task and one reference data."""
    paths = [Path(p) for p in paths]
    for path in paths:
        if not path.exists():
            raise UsageError(f"{path}: no such file or folder")
    if any(judgement.is_judgement(p) or fetch.is_fetch(p) for p in paths):
        if len(paths) != 1 or names:
            raise UsageError("a judgement's or a fetch's output folder is read alone, without --names (its teams "
                             "are named)")
        teams, left_out = judgement_teams(paths[0], task) if judgement.is_judgement(paths[0]) \
            else fetched_teams(paths[0])
    else:
        teams, left_out = downloaded_teams(paths, names), {}
    if not teams:
        raise ReferenceDataError(f"no scored team to rank in {', '.join(str(p) for p in paths)}"
                                 + (f" ({len(left_out)} left out: not scored)" if left_out else ""))
    name = one_task(teams, task)
    one_reference(teams)
    same_grouping(teams)
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
        teams.append(TeamFiles(name, [read_details(file) for file in files]))
    duplicates = sorted({t.name for t in teams if [u.name for u in teams].count(t.name) > 1})
    if duplicates:
        raise UsageError(f"two inputs have the same team name {duplicates}: name them with --names")
    for team in teams:
        team.reference = details_reference(team)
    return teams


def details_reference(team: TeamFiles) -> str:
    """The team's reference digest: every file's ``reference_sha256`` must agree; "" when none says."""
    found = {details.reference_sha256: details.path for details in team.files if details.reference_sha256}
    if len(found) > 1:
        raise ReferenceDataError(f"team {team.name}: its files were scored on different reference data "
                                 f"(field 'reference_sha256'): {', '.join(str(p) for p in found.values())}")
    return next(iter(found), "")


def one_task(teams: list[TeamFiles], task: str | None) -> str:
    """The task every file names (field ``task``): the one asked for, else one for all."""
    if task is not None:
        for team in teams:
            for details in team.files:
                if details.task != task:
                    raise ReferenceDataError(f"{details.path}: field 'task' is {details.task!r}, not {task!r}: "
                                             f"a details.json of another task")
        return task
    seen: dict[str, Path] = {}
    for team in teams:
        for details in team.files:
            seen.setdefault(details.task, details.path)
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


def same_grouping(teams: list[TeamFiles]) -> None:
    """Refuse teams of which some were scored as a whole (no group) and others in groups (field ``group``):
    their units are named apart (formats.details.unit_id) and would not line up, each team then lacking the
    others' units. (Teams scored in different sets of groups, one lacking a group its scoring failed, are
    the board's missing_policy's to rank.)"""
    whole = sorted(team.name for team in teams if any(not details.group for details in team.files))
    grouped = {team.name: sorted({details.group for details in team.files if details.group}) for team in teams}
    grouped = {name: groups for name, groups in grouped.items() if groups}
    if whole and grouped:
        shown = "; ".join(f"{name}: {', '.join(groups)}" for name, groups in list(grouped.items())[:5])
        raise ReferenceDataError(f"teams {', '.join(whole[:5])} were scored as a whole (details.json's field 'group' "
                                 f"empty), teams {shown} in groups: the units would not line up. Score every team "
                                 f"the same way (codascore judge with the same --profile for all)")


def check_board_settings(inputs: Inputs, keys: tuple[str, ...], config: dict) -> None:
    """Refuse a file scored with another value of a setting the board depends on (its ``board_settings``)
    than the leaderboard's configuration (the reference data's task.yaml, or the task's defaults), naming
    the file, the field and both values. A file that records no such setting is not checked."""
    for team in inputs.teams:
        for details in team.files:
            for key in keys:
                if key in details.board_settings and not same_value(details.board_settings[key], config.get(key)):
                    raise ReferenceDataError(
                        f"{details.path} (team {team.name}): field 'board_settings.{key}' is "
                        f"{details.board_settings[key]!r}, the leaderboard's (its reference data's task.yaml) is "
                        f"{config.get(key)!r}: scored under another rule")


def same_value(found, expected) -> bool:
    """Two settings' values alike (numbers compared as floats: 1000 and 1000.0 are one value)."""
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (found, expected))
    return float(found) == float(expected) if numbers else found == expected


def judgement_teams(out: Path, task: str | None) -> tuple[list[TeamFiles], dict[str, str]]:
    """The teams of a judgement's output folder: the rows of results.csv (of ``task``, or of its only
    task) that were scored, each team's run folders' details.json, whose group must be its row's. A team
    none of whose rows was scored is left out with its state; one with some groups unscored keeps the
    others (its missing units then count as the board's missing_policy says)."""
    rows = judgement.read_results(out)
    tasks = sorted({row["task"] for row in rows if row.get("task")})
    if task is None:
        if len(tasks) > 1:
            raise UsageError(f"{out / judgement.RESULTS} holds several tasks ({', '.join(tasks)}): choose one "
                             f"with --task")
        task = tasks[0] if tasks else None
    with judgement.Judgement.open(out) as store:
        digests = store.reference_digests(task) if task else {}
    files: dict[str, list[Details]] = {}
    unscored: dict[str, str] = {}
    for row in rows:
        if row.get("task") != task:
            continue
        team = row.get("team", "")
        if row.get("state") != judgement.DONE or row.get("outcome") != "scored":
            unscored.setdefault(team, f"{row.get('state')}: {row.get('outcome') or row.get('messages') or ''}".strip(": "))
            continue
        path = scoring_output(out / row.get("run_folder", "")) / DETAILS
        if not path.is_file():
            raise ReferenceDataError(f"{out / judgement.RESULTS}: team {team}'s run folder (field 'run_folder') "
                                     f"holds no {path.relative_to(out / row.get('run_folder', ''))}")
        details = read_details(path, task)
        if details.group != row.get("group", ""):
            raise ReferenceDataError(f"{path}: field 'group' is {details.group!r}, its row of "
                                     f"{judgement.RESULTS} says {row.get('group')!r}: the units would not line up")
        files.setdefault(team, []).append(details)
    teams = [TeamFiles(name, found) for name, found in files.items()]
    for team in teams:
        # the store's digest (of the one reference folder the judge ran with), else the files' own
        team.reference = digests.get(team.name) or details_reference(team)
    return teams, {name: why for name, why in unscored.items() if name not in files}


def fetched_teams(out: Path) -> tuple[list[TeamFiles], dict[str, str]]:
    """The teams of a ``codascore fetch`` folder: each team's chosen submission and its details.json; a team
    without a scored one is left out with the reason."""
    teams, left_out = [], {}
    for name, folder, why in fetch.chosen_submissions(out):
        if folder is None:
            left_out[name] = why
            continue
        path = folder / DETAILS
        if not path.is_file():
            left_out[name] = f"{why}: no {DETAILS} fetched"
            continue
        try:
            teams.append(TeamFiles(name, [read_details(path)]))
        except NotScored:
            left_out[name] = f"{why}: not scored"
    for team in teams:
        team.reference = details_reference(team)
    return teams, left_out
