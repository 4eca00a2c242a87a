"""Helpers of the families' final-board tests: score a sample through the scoring program's library entry,
and stack teams' per-unit rows into an Evidence as codascore/board.py describes it (one row per unit, its
columns; values (teams, units, metrics))."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from codascore import codabench
from codascore.board import Board, Evidence
from codascore.formats.details import checked


def score_sample(reference: Path, submission: Path, work: Path) -> tuple[dict, dict]:
    """(details.json, scores.json) of ``submission`` scored on ``reference`` by the scoring program."""
    (work / "input").mkdir(parents=True)
    (work / "input" / "ref").symlink_to(Path(reference).resolve())
    (work / "input" / "res").symlink_to(Path(submission).resolve())
    code = codabench.score_main([str(work / "input"), str(work / "output")])
    assert code == 0, f"{submission} was not scored (exit {code})"
    return (json.loads((work / "output" / "details.json").read_text()),
            json.loads((work / "output" / "scores.json").read_text()))


def unit_rows(board: Board, details: dict) -> list[dict]:
    """A details.json's document as the leaderboard reads it: checked (formats.details.checked), its rows
    from the board, each unit named within its group (Details.unit)."""
    found = checked(details)
    return [{**row, "unit": found.unit(str(row["unit"]))} for row in board.unit_rows(found)]


def stack(board: Board, task: str, teams: dict[str, list[dict]]) -> Evidence:
    """Every team's rows (team -> unit_rows) as one Evidence; the units are the first team's, in its order."""
    metrics = board.metric_names()
    first = next(iter(teams.values()))
    units = pd.DataFrame([{k: v for k, v in row.items() if k not in metrics} for row in first])
    index = {unit: k for k, unit in enumerate(units["unit"])}
    values = np.full((len(teams), len(units), len(metrics)), np.nan)
    for t, rows in enumerate(teams.values()):
        for row in rows:
            values[t, index[row["unit"]]] = [row[m] for m in metrics]
    return Evidence(task=task, teams=list(teams), units=units, metrics=metrics, values=values)
