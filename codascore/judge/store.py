"""The results database of a judgement, OUT/judge.sqlite: one row per unit and one per attempt.

Only the judge's own process writes it, one short transaction per change of state, so that whatever moment
the judge is killed at, the file holds every result recorded before (SQLite's write-ahead log: a reader,
``status``, never waits for the judge, and a killed writer loses at most the transaction it was in).

A unit's states (docs/judge.md#states)::

    pending ──▶ queued ──▶ running ──▶ done                  scored
                  ▲   │       │   └──▶ failed                the submission's own failure
                  └───┘       └──────▶ infrastructure error  every attempt lost to the cluster
             lost before it started:
             queued again, no attempt

queued: handed to the cluster, no worker has started it; running: from when a worker started it (the
worker's own time), which is also when an attempt is counted. done and failed are results, never run again
while the unit's fingerprint (codascore/judge/fingerprint.py: its submission, data, programs, codascore,
spec) is the one they were judged with. queued, running and infrastructure error are not results: a new
judgement runs them again.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import sqlite3
from pathlib import Path
from typing import Iterator

from ..errors import JudgeError
from ..formats.judgement import (DATABASE, DONE, FAILED, FINISHED, INFRASTRUCTURE, PENDING, QUEUED, RUNNING,
                                 SCHEMA, SCHEMA_VERSION, STATES, Judgement)
from .fingerprint import changed, fingerprint
from .units import Unit

__all__ = ["DONE", "FAILED", "FINISHED", "INFRASTRUCTURE", "PENDING", "QUEUED", "RUNNING", "STATES", "SUCCESSFUL",
           "Store"]

#: The outcomes of a unit that is done: scored (a pipeline or score unit), a part's prediction step ended.
SUCCESSFUL = ("SCORED", "DONE")
#: The columns of the units table of schema version 2, in order (a migration copies what older ones hold).
UNIT_COLUMNS = ("team", "task", "unit", "kind", "state", "outcome", "exit_code", "scores", "messages", "wall_seconds",
                "worker", "attempt", "started", "ended", "submission_sha256", "reference_sha256", "time_limit",
                "run_dir", "part_group", "fingerprint", "inputs", "stale", "isolation")


def now(at: float | None = None) -> str:
    """The time as recorded (at: seconds since the epoch, default now): ISO 8601, UTC, to the millisecond."""
    moment = datetime.datetime.now(datetime.timezone.utc) if at is None else \
        datetime.datetime.fromtimestamp(at, datetime.timezone.utc)
    return moment.isoformat(timespec="milliseconds")


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
            tables = {row[0] for row in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if "units" in tables and version < SCHEMA_VERSION:
                self.migrate()
            self.db.executescript(SCHEMA)
            self.db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            raise JudgeError(f"{path} is not a judgement's results database: {exc}") from exc

    def migrate(self) -> None:
        """Bring a store of an older schema up to this one, in one transaction: the units table made again
        (its states' CHECK changed) with what the old one holds; the new columns empty (no fingerprint: the
        next judgement judges those units again, since what they depended on was not recorded)."""
        old = {row["name"] for row in self.db.execute("PRAGMA table_info(units)")}
        kept = [column for column in UNIT_COLUMNS if column in old]
        with self.transaction() as db:
            db.execute("ALTER TABLE units RENAME TO units_old")
            db.executescript(SCHEMA.split("CREATE TABLE IF NOT EXISTS attempts")[0])
            db.execute(f"INSERT INTO units ({', '.join(kept)}) SELECT {', '.join(kept)} FROM units_old")
            db.execute("DROP TABLE units_old")

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

    def record_context(self, task: str, context: dict) -> None:
        """Where this judgement of task read its teams and data (what ``status`` checks for staleness)."""
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO context VALUES (?, ?, ?)", (task, json.dumps(context), now()))

    def to_run(self, units: list[Unit], inputs: dict[str, dict[str, str]], run_dirs: dict[str, str],
               force: set[str] = frozenset()) -> list[Unit]:
        """Bring the rows up to date with this judgement's units and return those to run: new units, units
        without a result (pending, queued or running when a judge died, infrastructure errors), finished
        units whose fingerprint changed since (inputs: each unit's, by name; the row records why it runs
        again: the inputs that changed), and those named in force (a score unit whose parts run again).
        Each is pending with its new inputs, its old result cleared (its run folder stays until a new result
        replaces it)."""
        todo = []
        with self.transaction() as db:
            for unit in units:
                row, current = self.row(unit), inputs[unit.name]
                print_ = fingerprint(current)
                if row is not None and row["state"] in FINISHED and row["fingerprint"] == print_ \
                        and unit.name not in force:
                    continue
                todo.append(unit)
                stale = ""
                if row is not None and row["state"] in FINISHED:
                    why = changed(json.loads(row["inputs"] or "{}"), current) if row["fingerprint"] != print_ \
                        else ["a unit it needs runs again"]
                    stale = ", ".join(why)
                values = (unit.kind, PENDING, current.get("submission", ""), current.get("reference data", ""),
                          unit.time_limit, run_dirs[unit.name], unit.group, print_, json.dumps(current), stale)
                if row is None:
                    db.execute("INSERT INTO units (kind, state, submission_sha256, reference_sha256, time_limit, "
                               "run_dir, part_group, fingerprint, inputs, stale, team, task, unit) "
                               "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                               (*values, unit.team, unit.task, unit.key))
                else:
                    db.execute("UPDATE units SET kind=?, state=?, submission_sha256=?, reference_sha256=?, "
                               "time_limit=?, run_dir=?, part_group=?, fingerprint=?, inputs=?, "
                               "stale=CASE WHEN ?='' THEN stale ELSE ? END, outcome=NULL, exit_code=NULL, "
                               "scores='{}', messages='[]', wall_seconds=NULL, worker=NULL, started=NULL, "
                               "ended=NULL, isolation=NULL WHERE team=? AND task=? AND unit=?",
                               (*values[:-1], stale, stale, unit.team, unit.task, unit.key))
        return todo

    def next_attempt(self, unit: Unit, at_least: int = 1) -> int:
        """The number the unit's next attempt takes: above every attempt recorded (and at least at_least),
        so that a staging folder's name is never used twice, even across judges."""
        row = self.row(unit)
        recorded = self.db.execute("SELECT MAX(attempt) FROM attempts WHERE team=? AND task=? AND unit=?",
                                   (unit.team, unit.task, unit.key)).fetchone()[0] or 0
        return max(int(row["attempt"] or 0) + 1, recorded + 1, at_least)

    def queue(self, unit: Unit, attempt: int) -> None:
        """The unit is handed to the cluster as this attempt: queued, no worker yet (no attempt counted)."""
        with self.transaction() as db:
            db.execute("UPDATE units SET state=?, attempt=?, started=NULL, ended=NULL, worker=NULL "
                       "WHERE team=? AND task=? AND unit=?", (QUEUED, attempt, unit.team, unit.task, unit.key))

    def start(self, unit: Unit, attempt: int, worker: str, started: str) -> bool:
        """A worker started the attempt (its time): the unit is running and the attempt counted. Whether the
        row changed (False for a start heard after the attempt's end, or of an attempt no longer current)."""
        with self.transaction() as db:
            db.execute("INSERT OR IGNORE INTO attempts (team, task, unit, attempt, worker, started) "
                       "VALUES (?, ?, ?, ?, ?, ?)", (unit.team, unit.task, unit.key, attempt, worker, started))
            return db.execute("UPDATE units SET state=?, worker=?, started=? WHERE team=? AND task=? AND unit=? "
                              "AND attempt=? AND state=?", (RUNNING, worker, started, unit.team, unit.task,
                                                            unit.key, attempt, QUEUED)).rowcount > 0

    def record_result(self, unit: Unit, attempt: int, result: dict) -> str:
        """The attempt's result, as the worker returned it: done when scored, failed otherwise. Returns the
        state recorded."""
        state = DONE if result["outcome"] in SUCCESSFUL else FAILED
        messages = list(result.get("violations") or []) + [f"warning: {w}" for w in result.get("warnings") or []]
        if result.get("error") and result["error"].strip() not in messages:
            messages.append(result["error"].strip())
        stamp = now()
        with self.transaction() as db:
            self._start_attempt(db, unit, attempt, result)
            db.execute("UPDATE units SET state=?, outcome=?, exit_code=?, scores=?, messages=?, wall_seconds=?, "
                       "worker=?, started=COALESCE(?, started), ended=?, isolation=?, stale='' "
                       "WHERE team=? AND task=? AND unit=? AND attempt=?",
                       (state, result["outcome"], result["exit_code"], json.dumps(result["scores"]),
                        json.dumps(messages), result["elapsed"], result.get("worker"), result.get("started"), stamp,
                        result.get("isolation"), unit.team, unit.task, unit.key, attempt))
            self._end_attempt(db, unit, attempt, result.get("worker"), state, "")
        return state

    def record_lost(self, unit: Unit, attempt: int, reason: str, final: bool, worker: str | None = None,
                    started: str | None = None) -> None:
        """An attempt that started and was lost to the infrastructure (its worker died, the connection broke,
        an exception outside the submission's run). When final (no retry left, or retrying cannot help) the
        unit becomes an infrastructure error with the reason."""
        with self.transaction() as db:
            self._start_attempt(db, unit, attempt, {"worker": worker, "started": started})
            self._end_attempt(db, unit, attempt, worker, INFRASTRUCTURE if final else "retried", reason)
            if final:
                db.execute("UPDATE units SET state=?, messages=?, worker=COALESCE(?, worker), ended=? "
                           "WHERE team=? AND task=? AND unit=?",
                           (INFRASTRUCTURE, json.dumps([reason]), worker, now(), unit.team, unit.task, unit.key))

    def record_blocked(self, unit: Unit, reason: str) -> None:
        """A unit that cannot run in this judgement, a unit it needs lost to the cluster for good: an
        infrastructure error with the reason, run again by the next judgement (no attempt of it began)."""
        with self.transaction() as db:
            db.execute("UPDATE units SET state=?, messages=?, ended=? WHERE team=? AND task=? AND unit=?",
                       (INFRASTRUCTURE, json.dumps([reason]), now(), unit.team, unit.task, unit.key))

    def release(self, task: str) -> int:
        """The task's queued units back to pending (a judgement that stops before a worker took them); how
        many."""
        with self.transaction() as db:
            return db.execute("UPDATE units SET state=? WHERE task=? AND state=?", (PENDING, task, QUEUED)).rowcount

    @staticmethod
    def _start_attempt(db: sqlite3.Connection, unit: Unit, attempt: int, result: dict) -> None:
        """The attempt's row, when the worker's start was not heard before its end."""
        db.execute("INSERT OR IGNORE INTO attempts (team, task, unit, attempt, worker, started) VALUES (?, ?, ?, ?, "
                   "?, ?)", (unit.team, unit.task, unit.key, attempt, result.get("worker"), result.get("started") or now()))

    @staticmethod
    def _end_attempt(db: sqlite3.Connection, unit: Unit, attempt: int, worker: str | None, result: str,
                     reason: str) -> None:
        db.execute("UPDATE attempts SET worker=COALESCE(?, worker), ended=?, result=?, reason=? "
                   "WHERE team=? AND task=? AND unit=? AND attempt=?",
                   (worker, now(), result, reason, unit.team, unit.task, unit.key, attempt))
