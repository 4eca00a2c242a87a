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
from ..formats.judgement import (DATABASE, DONE, FAILED, FINISHED, INFRASTRUCTURE, PENDING, RUNNING, SCHEMA,
                                 SCHEMA_VERSION, STATES, Judgement)
from .units import Unit

__all__ = ["DONE", "FAILED", "FINISHED", "INFRASTRUCTURE", "PENDING", "RUNNING", "STATES", "SUCCESSFUL", "Store"]

#: The outcomes of a unit that is done: scored (a pipeline or score unit), a part's prediction step ended.
SUCCESSFUL = ("SCORED", "DONE")


def now() -> str:
    """The time as recorded: ISO 8601, UTC, to the millisecond."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


class Store(Judgement):
    """The results database of one output folder, opened for writing (the judge's own process only)."""

    def __init__(self, out: Path, create: bool = True):
        path = Path(out) / DATABASE
        if not create and not path.is_file():
            raise JudgeError(f"no judgement in {out}: {DATABASE} not found")
        try:
            super().__init__(path, sqlite3.connect(path, isolation_level=None, timeout=30))
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            version = int(self.db.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise JudgeError(f"{path}: schema version {version}, written by a newer codascore (this one "
                                 f"writes {SCHEMA_VERSION})")
            self.db.executescript(SCHEMA)
            columns = {row["name"] for row in self.db.execute("PRAGMA table_info(units)")}
            if "part_group" not in columns:  # a judgement of a version without parts
                self.db.execute("ALTER TABLE units ADD COLUMN part_group TEXT NOT NULL DEFAULT ''")
            if "environment_sha256" not in columns:  # a judgement of a version without team environments
                self.db.execute("ALTER TABLE units ADD COLUMN environment_sha256 TEXT NOT NULL DEFAULT ''")
            self.db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            raise JudgeError(f"{path} is not a judgement's results database: {exc}") from exc

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

    def attempts(self, unit: Unit) -> list[sqlite3.Row]:
        return self.unit_attempts(unit.team, unit.task, unit.key)

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
        reference data, time limit or team environment (its digest) changed since, and those named in force
        (a score unit whose parts run
        again); each pending again, its old result cleared (its run folder stays until a new result
        replaces it)."""
        todo = []
        with self.transaction() as db:
            for unit in units:
                sha, row = submission_sha[unit.team], self.row(unit)
                same = row is not None and (row["submission_sha256"], row["reference_sha256"], row["time_limit"],
                                            row["environment_sha256"]) \
                    == (sha, reference_sha, unit.time_limit, unit.environment)
                if row is not None and same and row["state"] in FINISHED and unit.name not in force:
                    continue
                todo.append(unit)
                if row is None:
                    db.execute("INSERT INTO units (team, task, unit, kind, state, submission_sha256, "
                               "reference_sha256, time_limit, run_dir, part_group, environment_sha256) "
                               "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                               (unit.team, unit.task, unit.key, unit.kind, PENDING, sha, reference_sha,
                                unit.time_limit, run_dirs[unit.name], unit.group, unit.environment))
                else:
                    db.execute("UPDATE units SET state=?, outcome=NULL, exit_code=NULL, scores='{}', "
                               "messages='[]', wall_seconds=NULL, worker=NULL, started=NULL, ended=NULL, "
                               "submission_sha256=?, reference_sha256=?, time_limit=?, kind=?, part_group=?, "
                               "environment_sha256=? WHERE team=? AND task=? AND unit=?",
                               (PENDING, sha, reference_sha, unit.time_limit, unit.kind, unit.group,
                                unit.environment, unit.team, unit.task, unit.key))
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
