"""The results database of a judgement, OUT/judge.sqlite: one row per unit and one per attempt.

Only the judge's own process writes it, one short transaction per change of state, so that whatever moment
the judge is killed at, the file holds every result recorded before (SQLite's write-ahead log: a reader,
``status``, never waits for the judge, and a killed writer loses at most the transaction it was in).

A unit's states (docs/judge.md#states)::

    pending ──▶ running ──▶ done                  scored
                   │   └──▶ failed                the submission's own failure: invalid, timed out, failed
                   └──────▶ infrastructure error  every attempt lost to the cluster (worker died, ...)

done and failed are results: never run again while the submission, the reference data and the time limit
are those they were judged with. running and infrastructure error are not: a new judgement runs them again.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import sqlite3
from pathlib import Path
from typing import Iterator

from ..errors import JudgeError
from .units import Unit

PENDING, RUNNING, DONE, FAILED, INFRASTRUCTURE = "pending", "running", "done", "failed", "infrastructure error"
STATES = (PENDING, RUNNING, DONE, FAILED, INFRASTRUCTURE)
#: The outcomes of a unit that is done: scored (a pipeline or score unit), a part's prediction step ended.
SUCCESSFUL = ("SCORED", "DONE")
#: The states of a unit whose result stands.
FINISHED = (DONE, FAILED)
DATABASE = "judge.sqlite"

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS units (
    team TEXT NOT NULL, task TEXT NOT NULL, unit TEXT NOT NULL, kind TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ({", ".join(repr(state) for state in STATES)})),
    outcome TEXT, exit_code INTEGER, scores TEXT NOT NULL DEFAULT '{{}}', messages TEXT NOT NULL DEFAULT '[]',
    wall_seconds REAL, worker TEXT, attempt INTEGER NOT NULL DEFAULT 0, started TEXT, ended TEXT,
    submission_sha256 TEXT NOT NULL, reference_sha256 TEXT NOT NULL, time_limit REAL, run_dir TEXT NOT NULL,
    part_group TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (team, task, unit));
CREATE TABLE IF NOT EXISTS attempts (
    team TEXT NOT NULL, task TEXT NOT NULL, unit TEXT NOT NULL, attempt INTEGER NOT NULL,
    worker TEXT, started TEXT NOT NULL, ended TEXT, result TEXT, reason TEXT,
    PRIMARY KEY (team, task, unit, attempt));
CREATE TABLE IF NOT EXISTS skipped (
    task TEXT NOT NULL, name TEXT NOT NULL, path TEXT NOT NULL, reason TEXT NOT NULL,
    PRIMARY KEY (task, path));
"""


def now() -> str:
    """The time as recorded: ISO 8601, UTC, to the millisecond."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


class Store:
    """The results database of one output folder."""

    def __init__(self, out: Path, create: bool = True):
        self.path = Path(out) / DATABASE
        if not create and not self.path.is_file():
            raise JudgeError(f"no judgement in {out}: {DATABASE} not found")
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30)
            self.db.row_factory = sqlite3.Row
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.executescript(SCHEMA)
            columns = {row["name"] for row in self.db.execute("PRAGMA table_info(units)")}
            if "part_group" not in columns:  # a judgement of a version without parts
                self.db.execute("ALTER TABLE units ADD COLUMN part_group TEXT NOT NULL DEFAULT ''")
        except sqlite3.DatabaseError as exc:
            raise JudgeError(f"{self.path} is not a judgement's results database: {exc}") from exc

    def close(self) -> None:
        self.db.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One change of state: all of it recorded, or none."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def row(self, unit: Unit) -> sqlite3.Row | None:
        return self.db.execute("SELECT * FROM units WHERE team=? AND task=? AND unit=?",
                               (unit.team, unit.task, unit.key)).fetchone()

    def rows(self, task: str | None = None) -> list[sqlite3.Row]:
        query = "SELECT * FROM units" + (" WHERE task=?" if task else "") + " ORDER BY task, team, unit"
        return self.db.execute(query, (task,) if task else ()).fetchall()

    def attempts(self, unit: Unit) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM attempts WHERE team=? AND task=? AND unit=? ORDER BY attempt",
                               (unit.team, unit.task, unit.key)).fetchall()

    def skipped(self, task: str | None = None) -> list[sqlite3.Row]:
        query = "SELECT * FROM skipped" + (" WHERE task=?" if task else "") + " ORDER BY task, name, path"
        return self.db.execute(query, (task,) if task else ()).fetchall()

    def record_skipped(self, task: str, skipped: list) -> None:
        """The entries skipped by this judgement of task (those of an earlier one are forgotten: they were
        never judged)."""
        with self.transaction() as db:
            db.execute("DELETE FROM skipped WHERE task=?", (task,))
            db.executemany("INSERT INTO skipped VALUES (?, ?, ?, ?)",
                           [(task, entry.name, str(entry.path), entry.reason) for entry in skipped])

    def to_run(self, units: list[Unit], submission_sha: dict[str, str], reference_sha: str,
               run_dirs: dict[str, str], force: set[str] = frozenset()) -> list[Unit]:
        """Bring the rows up to date with this judgement's units and return those to run: new units, units
        not finished (running when a judge died, infrastructure errors), finished units whose submission,
        reference data or time limit changed since, and those named in force (a score unit whose parts run
        again); each pending again, its old result cleared (its run folder stays until a new result
        replaces it)."""
        todo = []
        with self.transaction() as db:
            for unit in units:
                sha, row = submission_sha[unit.team], self.row(unit)
                same = row is not None and (row["submission_sha256"], row["reference_sha256"], row["time_limit"]) \
                    == (sha, reference_sha, unit.time_limit)
                if row is not None and same and row["state"] in FINISHED and unit.name not in force:
                    continue
                todo.append(unit)
                if row is None:
                    db.execute("INSERT INTO units (team, task, unit, kind, state, submission_sha256, "
                               "reference_sha256, time_limit, run_dir, part_group) "
                               "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                               (unit.team, unit.task, unit.key, unit.kind, PENDING, sha, reference_sha,
                                unit.time_limit, run_dirs[unit.name], unit.group))
                else:
                    db.execute("UPDATE units SET state=?, outcome=NULL, exit_code=NULL, scores='{}', "
                               "messages='[]', wall_seconds=NULL, worker=NULL, started=NULL, ended=NULL, "
                               "submission_sha256=?, reference_sha256=?, time_limit=?, kind=?, part_group=? "
                               "WHERE team=? AND task=? AND unit=?",
                               (PENDING, sha, reference_sha, unit.time_limit, unit.kind, unit.group, unit.team,
                                unit.task, unit.key))
        return todo

    def start_attempt(self, unit: Unit) -> int:
        """The unit is submitted once more: running, its attempt number one more than the last recorded
        (so that a staging folder's name is never used twice, even across judges). Returns that number."""
        with self.transaction() as db:
            attempt = int(self.row(unit)["attempt"]) + 1
            stamp = now()
            db.execute("UPDATE units SET state=?, attempt=?, started=?, ended=NULL, worker=NULL "
                       "WHERE team=? AND task=? AND unit=?", (RUNNING, attempt, stamp, unit.team, unit.task, unit.key))
            db.execute("INSERT INTO attempts (team, task, unit, attempt, started) VALUES (?, ?, ?, ?, ?)",
                       (unit.team, unit.task, unit.key, attempt, stamp))
        return attempt

    def record_result(self, unit: Unit, attempt: int, result: dict) -> str:
        """The attempt's result, as the worker returned it: done when scored, failed otherwise. Returns the
        state recorded."""
        state = DONE if result["outcome"] in SUCCESSFUL else FAILED
        messages = list(result.get("violations") or []) + [f"warning: {w}" for w in result.get("warnings") or []]
        if result.get("error") and result["error"].strip() not in messages:
            messages.append(result["error"].strip())
        stamp = now()
        with self.transaction() as db:
            db.execute("UPDATE units SET state=?, outcome=?, exit_code=?, scores=?, messages=?, wall_seconds=?, "
                       "worker=?, ended=? WHERE team=? AND task=? AND unit=? AND attempt=?",
                       (state, result["outcome"], result["exit_code"], json.dumps(result["scores"]),
                        json.dumps(messages), result["elapsed"], result.get("worker"), stamp,
                        unit.team, unit.task, unit.key, attempt))
            self._end_attempt(db, unit, attempt, result.get("worker"), state, "")
        return state

    def record_lost(self, unit: Unit, attempt: int, reason: str, final: bool, worker: str | None = None) -> None:
        """An attempt lost to the infrastructure (a worker died, the connection broke, an exception outside
        the submission's run). When final (no retry left, or retrying cannot help) the unit becomes an
        infrastructure error with the reason."""
        with self.transaction() as db:
            self._end_attempt(db, unit, attempt, worker, INFRASTRUCTURE if final else "retried", reason)
            if final:
                db.execute("UPDATE units SET state=?, messages=?, worker=?, ended=? "
                           "WHERE team=? AND task=? AND unit=?",
                           (INFRASTRUCTURE, json.dumps([reason]), worker, now(), unit.team, unit.task, unit.key))

    def record_blocked(self, unit: Unit, reason: str) -> None:
        """A unit that cannot run in this judgement, a unit it needs lost to the cluster for good: an
        infrastructure error with the reason, run again by the next judgement (no attempt of it began)."""
        with self.transaction() as db:
            db.execute("UPDATE units SET state=?, messages=?, ended=? WHERE team=? AND task=? AND unit=?",
                       (INFRASTRUCTURE, json.dumps([reason]), now(), unit.team, unit.task, unit.key))

    @staticmethod
    def _end_attempt(db: sqlite3.Connection, unit: Unit, attempt: int, worker: str | None, result: str,
                     reason: str) -> None:
        db.execute("UPDATE attempts SET worker=?, ended=?, result=?, reason=? "
                   "WHERE team=? AND task=? AND unit=? AND attempt=?",
                   (worker, now(), result, reason, unit.team, unit.task, unit.key, attempt))

    def counts(self, task: str | None = None) -> dict[str, int]:
        """How many units are in each state."""
        counts = dict.fromkeys(STATES, 0)
        query = "SELECT state, COUNT(*) FROM units" + (" WHERE task=?" if task else "") + " GROUP BY state"
        for state, count in self.db.execute(query, (task,) if task else ()):
            counts[state] = count
        return counts
