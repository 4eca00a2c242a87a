"""Every team's per-unit rows stacked into one :class:`~codascore.board.Evidence`: the units table (the
union of the teams' units, in the order first seen) and the values array (teams x units x metrics, NaN where
a team lacks a unit), with the missing units named and handled as the board's ``missing_policy`` says."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ..board import Board, Evidence
from ..errors import ReferenceDataError, SubmissionError
from .inputs import Inputs, TeamFiles

#: How many missing units a refusal names before it counts the rest.
NAMED_UNITS = 5


def team_rows(board: Board, team: TeamFiles) -> list[dict[str, Any]]:
    """The team's per-unit rows from all its files, each unit named once for every tool
    (formats.details.unit_id: the item within its file's group); a unit given twice is refused, naming file
    and unit."""
    rows: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for details in team.files:
        path = details.path
        try:
            found = board.unit_rows(details)
        except SubmissionError as exc:
            raise ReferenceDataError(f"{path} (team {team.name}): {'; '.join(exc.problems)}") from exc
        except ReferenceDataError as exc:
            raise ReferenceDataError(f"{path} (team {team.name}): {exc}") from exc
        for row in found:
            item = str(row.get("unit", ""))
            if not item:
                raise ReferenceDataError(f"{path} (team {team.name}): a row without its field 'unit'")
            unit = details.unit(item)
            if unit in seen:
                raise ReferenceDataError(f"{path} (team {team.name}): unit {unit!r} given twice (also in {seen[unit]})")
            seen[unit] = str(path)
            rows.append({**row, "unit": unit})
    return rows


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def split_columns(board: Board, rows: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(unit columns, metrics): ``unit``, the design's columns and every non-numeric key describe a unit;
    the board's metric_names(), else every other numeric key, are its metrics (in the order first seen)."""
    design = ["unit", *board.design.strata, *([board.design.cluster] if board.design.cluster else [])]
    keys = list(dict.fromkeys(key for row in rows for key in row))
    metrics = list(board.metric_names()) or [k for k in keys if k not in design and
                                              all(is_number(r[k]) or r[k] is None for r in rows if k in r)]
    return [k for k in keys if k not in metrics], metrics


def stack(board: Board, inputs: Inputs) -> Evidence:
    """The Evidence of every team (Board.unit_rows of each), before Board.prepare and Board.check."""
    rows_of = {team.name: team_rows(board, team) for team in inputs.teams}
    everything = [row for rows in rows_of.values() for row in rows]
    unit_columns, metrics = split_columns(board, everything)
    units, order, first_team = [], {}, {}
    for team, rows in rows_of.items():
        for row in rows:
            described = {column: row.get(column) for column in unit_columns}
            if row["unit"] not in order:
                order[row["unit"]], first_team[row["unit"]] = len(units), team
                units.append(described)
            elif units[order[row["unit"]]] != described:
                differs = [c for c in unit_columns if units[order[row["unit"]]][c] != described[c]]
                raise ReferenceDataError(f"unit {row['unit']!r}: teams {first_team[row['unit']]} and {team} give it "
                                         f"different {', '.join(differs)}: not the same reference data")
    for column in [*board.design.strata, *([board.design.cluster] if board.design.cluster else [])]:
        if column not in unit_columns:
            raise ReferenceDataError(f"{inputs.task}: the board's design names column {column!r}, which no row has")
    values = np.full((len(rows_of), len(units), len(metrics)), np.nan)
    missing: dict[str, list[str]] = {}
    for t, (team, rows) in enumerate(rows_of.items()):
        for row in rows:
            values[t, order[row["unit"]]] = [as_float(row.get(metric)) for metric in metrics]
        have = {row["unit"] for row in rows}
        if len(have) < len(units):
            missing[team] = [u["unit"] for u in units if u["unit"] not in have]
    evidence = Evidence(inputs.task, list(rows_of), pd.DataFrame(units, columns=unit_columns), metrics, values,
                        missing, reference=next((t.reference for t in inputs.teams if t.reference), ""))
    apply_missing_policy(board, evidence)
    return evidence


def as_float(value: Any) -> float:
    """A metric's value; NaN for None (details.json's strict JSON writes a non-finite value as null)."""
    return float(value) if is_number(value) else math.nan


def apply_missing_policy(board: Board, evidence: Evidence) -> None:
    """Refuse the teams that lack units when the official rule says so (naming them and the units); the
    other policies keep the NaN for Board.scores and count them (ranking.csv's missing_units)."""
    if board.missing_policy not in ("refuse", "worst", "skip"):
        raise ReferenceDataError(f"{evidence.task}: unknown missing_policy {board.missing_policy!r}")
    if board.missing_policy == "refuse" and evidence.missing:
        raise ReferenceDataError("teams lack units the official rule needs (every team must have every unit): " +
                                 "; ".join(f"team {team} lacks {len(units)}: {', '.join(units[:NAMED_UNITS])}"
                                           + (" ..." if len(units) > NAMED_UNITS else "")
                                           for team, units in evidence.missing.items()))
