"""OUT/results.csv (codascore/formats/judgement.py declares it): one row per team, task and group (a pipeline
unit's, or a score unit's: its group of parts, e.g. a UAI time limit; parts have no row of their own), read
from the results database and written atomically, so that a reader never sees half a file and a judge
killed while writing it leaves the previous one."""

from __future__ import annotations

import json
from pathlib import Path

from ..formats.atomic import write_csv_atomic
from ..formats.judgement import PART, RESULTS, RESULTS_LEADING, RESULTS_TRAILING, SKIPPED
from .store import Store


def results_rows(store: Store, task: str | None = None,
                 flags: dict[str, tuple[str, ...]] | None = None) -> tuple[list[str], list[dict]]:
    """The columns and rows of results.csv: every pipeline and score unit recorded (a score unit's row has
    its group), then the entries skipped, state "skipped" and the reason. flags: what is said of a team's
    submission (codascore fetch's notes: made after the phase's end), first among its rows' messages."""
    flags = flags or {}
    rows, keys = [], {}
    for unit in store.rows(task):
        if unit["kind"] == PART:
            continue
        scores = json.loads(unit["scores"])
        keys.update(dict.fromkeys(scores))
        rows.append({"team": unit["team"], "task": unit["task"], "group": unit["part_group"], "state": unit["state"],
                     "outcome": (unit["outcome"] or "").lower().replace("_", " "),
                     "exit_code": "" if unit["exit_code"] is None else unit["exit_code"], **scores,
                     "wall_seconds": "" if unit["wall_seconds"] is None else round(unit["wall_seconds"], 3),
                     "run_folder": unit["run_dir"],
                     "messages": one_line_messages([*flags.get(unit["team"], ()), *json.loads(unit["messages"])])})
    for entry in store.skipped(task):
        rows.append({"team": entry["name"], "task": entry["task"], "state": SKIPPED, "messages": entry["reason"]})
    return RESULTS_LEADING + list(keys) + RESULTS_TRAILING, rows


def one_line_messages(messages: list[str], limit: int = 2000) -> str:
    """A unit's messages on one line (a spreadsheet row stays one line): each folded, joined by " | "."""
    return " | ".join(" ".join(message.split()) for message in messages)[:limit]


def write_results(store: Store, out: Path, task: str | None = None,
                  flags: dict[str, tuple[str, ...]] | None = None) -> Path:
    """Write OUT/results.csv (atomically)."""
    columns, rows = results_rows(store, task, flags)
    path = Path(out) / RESULTS
    write_csv_atomic(path, columns, rows)
    return path
