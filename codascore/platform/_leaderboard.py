"""A phase's leaderboard as rows of a CSV, from one of the platform's two views of it
(docs/end_of_competition.md#the-leaderboard):

- **exact**: the competition's results export, ``GET /api/competitions/<id>/results/?phase=<id>`` (JSON),
  which only the competition's organisers, collaborators and the site's admins may read: every score as the
  platform stores it (a decimal with 10 places);
- **rounded**: the public ``GET /api/phases/<id>/get_leaderboard/``, which anyone may read: every score
  rounded to its column's ``precision``, hidden columns left out.

Both list the submissions on the leaderboard, in its order (the primary column, then the others, then
the date). Columns are named as the export names them: ``<task name>(<task id>)-<column title>``.
"""

from __future__ import annotations

import dataclasses

from ..errors import PlatformAuthError, PlatformRequestError
from ._http import Http

EXACT, ROUNDED = "exact", "rounded"


@dataclasses.dataclass
class Leaderboard:
    """The leaderboard's columns (scores only), its rows in order (owner, submission and each column's
    value as a string) and which values they are (EXACT or ROUNDED), with why."""

    phase_id: int
    columns: list[str]
    rows: list[dict]
    values: str
    why: str

    def csv_rows(self) -> tuple[list[str], list[dict]]:
        """The CSV's header and rows: rank, owner, submission, the score columns, values."""
        header = ["rank", "owner", "submission", *self.columns, "values"]
        return header, [{"rank": rank, **row, "values": self.values} for rank, row in enumerate(self.rows, 1)]


def phase_competition(http: Http, phase_id: int) -> int | None:
    """The competition holding a phase among those the caller organises (``GET
    /api/competitions/?mine=true``, then each one's phases), None when it is none of theirs."""
    mine = http.json("GET", "api/competitions/", "listing the competitions you organise",
                     params={"mine": "true", "type": "any"})
    for competition in mine if isinstance(mine, list) else mine.get("results", []):
        detail = http.json("GET", f"api/competitions/{competition['id']}/", "reading a competition's phases")
        if any(int(phase["id"]) == int(phase_id) for phase in detail.get("phases") or []):
            return int(competition["id"])
    return None


def read_leaderboard(http: Http, phase_id: int, competition_id: int | None = None) -> Leaderboard:
    """The exact values when the caller may read the results export, else the rounded public view."""
    if http.token:
        competition_id = competition_id or phase_competition(http, phase_id)
        if competition_id is None:
            why = "you organise no competition holding this phase, so the results export is closed to you"
        else:
            try:
                return exact_leaderboard(http, competition_id, phase_id)
            except PlatformAuthError as exc:
                why = f"the results export refused you ({exc.message})"
    else:
        why = "no token given: the results export is for the competition's organisers"
    board = rounded_leaderboard(http, phase_id)
    board.why = why
    return board


def exact_leaderboard(http: Http, competition_id: int, phase_id: int) -> Leaderboard:
    """The organisers' results export of a phase: {title: {"<owner>-<submission>": {column: score}}}."""
    export = http.json("GET", f"api/competitions/{competition_id}/results/",
                       f"reading the results export of competition {competition_id}", params={"phase": phase_id})
    if not isinstance(export, dict) or len(export) != 1:
        raise PlatformRequestError(f"the results export holds {len(export or {})} leaderboards for one phase",
                                   http.url(f"api/competitions/{competition_id}/results/"))
    entries = next(iter(export.values()))
    columns: dict[str, None] = {}
    rows = []
    for key, values in entries.items():
        owner, _, submission = key.rpartition("-")
        scores = {column: value for column, value in values.items() if column != "fact_sheet_answers"}
        columns.update(dict.fromkeys(scores))
        rows.append({"owner": owner, "submission": submission, **{c: str(v) for c, v in scores.items()}})
    return Leaderboard(int(phase_id), list(columns), rows, EXACT,
                       f"the results export of competition {competition_id}, which you organise")


def rounded_leaderboard(http: Http, phase_id: int) -> Leaderboard:
    """The public leaderboard of a phase: each score rounded to its column's precision."""
    board = http.json("GET", f"api/phases/{phase_id}/get_leaderboard/", f"reading the leaderboard of phase {phase_id}")
    names = {}
    for task in board.get("tasks") or []:
        for column in task.get("columns") or []:
            if not column.get("hidden"):
                names[(task["id"], column["index"])] = f"{task['name']}({task['id']})-{column['title']}"
    rows = []
    for submission in board.get("submissions") or []:
        row = {"owner": submission.get("owner"), "submission": submission.get("id")}
        for score in submission.get("scores") or []:
            name = names.get((score.get("task_id"), score.get("index")))
            if name:
                row[name] = str(score.get("score"))
        rows.append(row)
    return Leaderboard(int(phase_id), list(names.values()), rows, ROUNDED, "")
