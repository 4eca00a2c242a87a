"""The folder ``codascore judge`` writes (docs/judge.md#outputs), and its reader::

    OUT/judge.sqlite      every unit and attempt (the judge's store; schema below, its version in
                          SQLite's user_version)
    OUT/results.csv       one row per team, task and group, written from the store after every judgement
    OUT/runs/<team>/<task>/<unit>/   each unit's run folder (codascore/formats/run_folder.py)

Only the judge writes it (codascore/judge/store.py, through :data:`SCHEMA`). Every other tool reads it
through :class:`Judgement` (``Judgement.open(out)``: read only, also on read-only media) and
:func:`read_results`, never with SQL of its own.
"""

from __future__ import annotations

import csv
import json
import shutil
import sqlite3
import tempfile
from pathlib import Path

from ..errors import ReferenceDataError

DATABASE = "judge.sqlite"
RESULTS = "results.csv"
RUNS = "runs"
#: The store's schema version (SQLite's user_version); a store of a newer version is refused by name. 0 is
#: a store of the versions before it was counted, which the judge brings up to date; 1 had no state
#: ``queued`` and no fingerprint, isolation or stale columns (its units are judged again: what their results
#: depended on was not recorded).
SCHEMA_VERSION = 2

PENDING, QUEUED, RUNNING = "pending", "queued", "running"
DONE, FAILED, INFRASTRUCTURE = "done", "failed", "infrastructure error"
#: A unit's states (docs/judge.md#states): pending (to run), queued (handed to the cluster, no worker has
#: started it), running (from when a worker started it), then a result (done, failed) or an infrastructure
#: error.
STATES = (PENDING, QUEUED, RUNNING, DONE, FAILED, INFRASTRUCTURE)
#: The states of a unit whose result stands.
FINISHED = (DONE, FAILED)
#: How a unit's steps were isolated (containers.Container.kind): a bubblewrap sandbox, Docker, or plain
#: processes (allowed only when the organiser said so: judge --unisolated).
ISOLATIONS = ("bwrap", "docker", "none")
#: The kinds of unit (docs/judge.md#units); parts have no row of results.csv.
PIPELINE, PART, SCORE = "pipeline", "part", "score"

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS units (
    team TEXT NOT NULL, task TEXT NOT NULL, unit TEXT NOT NULL, kind TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ({", ".join(repr(state) for state in STATES)})),
    outcome TEXT, exit_code INTEGER, scores TEXT NOT NULL DEFAULT '{{}}', messages TEXT NOT NULL DEFAULT '[]',
    wall_seconds REAL, worker TEXT, attempt INTEGER NOT NULL DEFAULT 0, started TEXT, ended TEXT,
    submission_sha256 TEXT NOT NULL, reference_sha256 TEXT NOT NULL, time_limit REAL, run_dir TEXT NOT NULL,
    part_group TEXT NOT NULL DEFAULT '', fingerprint TEXT, inputs TEXT NOT NULL DEFAULT '{{}}',
    stale TEXT NOT NULL DEFAULT '', isolation TEXT,
    PRIMARY KEY (team, task, unit));
CREATE TABLE IF NOT EXISTS attempts (
    team TEXT NOT NULL, task TEXT NOT NULL, unit TEXT NOT NULL, attempt INTEGER NOT NULL,
    worker TEXT, started TEXT NOT NULL, ended TEXT, result TEXT, reason TEXT,
    PRIMARY KEY (team, task, unit, attempt));
CREATE TABLE IF NOT EXISTS skipped (
    task TEXT NOT NULL, name TEXT NOT NULL, path TEXT NOT NULL, reason TEXT NOT NULL,
    PRIMARY KEY (task, path));
CREATE TABLE IF NOT EXISTS context (
    task TEXT NOT NULL PRIMARY KEY, context TEXT NOT NULL, recorded TEXT NOT NULL);
"""

#: results.csv's columns before the scores and after them; the score keys come in between, in the order
#: the scoring program wrote them (the first team's first).
RESULTS_LEADING = ["team", "task", "group", "state", "outcome", "exit_code"]
RESULTS_TRAILING = ["wall_seconds", "isolation", "run_folder", "messages"]
#: The state of a results.csv row of an entry the judgement skipped (not a unit's state).
SKIPPED = "skipped"


def is_judgement(path: Path) -> bool:
    """Whether path is a judgement's output folder (it holds the store and results.csv)."""
    path = Path(path)
    return path.is_dir() and (path / RESULTS).is_file() and (path / DATABASE).is_file()


class Judgement:
    """A judgement's store, read: its units, attempts and skipped entries. The judge's Store writes through
    the same queries (it is a Judgement opened for writing)."""

    def __init__(self, path: Path, db: sqlite3.Connection):
        self.path, self.db = Path(path), db
        self.db.row_factory = sqlite3.Row

    @classmethod
    def open(cls, out: Path) -> "Judgement":
        """The store of the judgement in out, read only (also on read-only media, where SQLite cannot make
        its write-ahead log's index: then opened as immutable). JudgeError-free: ReferenceDataError naming
        the file when out holds no judgement or not this schema."""
        path = Path(out) / DATABASE
        if not path.is_file():
            raise ReferenceDataError(f"no judgement in {out}: {DATABASE} not found")
        wal = path.with_name(f"{DATABASE}-wal")
        for mode in ("ro", "copy", "ro&immutable=1"):
            if mode == "copy" and not (wal.is_file() and wal.stat().st_size):
                continue
            copy = None
            try:
                if mode == "copy":  # a judge killed before its log's checkpoint, on read-only media: read a copy
                    copy = tempfile.TemporaryDirectory(prefix="codascore-judgement-")
                    for source in (path, wal):
                        shutil.copyfile(source, Path(copy.name) / source.name)
                    db = sqlite3.connect(Path(copy.name) / DATABASE)
                else:
                    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode={mode}", uri=True)
                found = cls(path, db)
                found.check_version()
                found._copy = copy
                return found
            except (sqlite3.OperationalError, OSError):
                if copy is not None:
                    copy.cleanup()
                continue  # read-only media: the WAL's -shm cannot be made; immutable reads the file as it is
            except sqlite3.DatabaseError as exc:
                raise ReferenceDataError(f"{path} is not a judgement's results database: {exc}") from exc
        raise ReferenceDataError(f"{path} cannot be opened for reading")

    def close(self) -> None:
        self.db.close()
        if getattr(self, "_copy", None) is not None:
            self._copy.cleanup()

    def __enter__(self) -> "Judgement":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def check_version(self) -> int:
        """The store's schema version; ReferenceDataError when a newer codascore wrote it."""
        version = int(self.db.execute("PRAGMA user_version").fetchone()[0])
        self.db.execute("SELECT 1 FROM units LIMIT 1")  # not a judgement's database: DatabaseError
        if version > SCHEMA_VERSION:
            raise ReferenceDataError(f"{self.path}: schema version {version}, written by a newer codascore "
                                     f"(this one reads up to {SCHEMA_VERSION})")
        return version

    def rows(self, task: str | None = None) -> list[sqlite3.Row]:
        query = "SELECT * FROM units" + (" WHERE task=?" if task else "") + " ORDER BY task, team, unit"
        return self.db.execute(query, (task,) if task else ()).fetchall()

    def unit_attempts(self, team: str, task: str, unit: str) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM attempts WHERE team=? AND task=? AND unit=? ORDER BY attempt",
                               (team, task, unit)).fetchall()

    def all_attempts(self, task: str | None = None) -> list[sqlite3.Row]:
        query = "SELECT * FROM attempts" + (" WHERE task=?" if task else "") + " ORDER BY task, team, unit, attempt"
        return self.db.execute(query, (task,) if task else ()).fetchall()

    def contexts(self) -> dict[str, dict]:
        """task -> where its last judgement read its teams and data (a store of schema 1 or older: none)."""
        try:
            rows = self.db.execute("SELECT task, context FROM context").fetchall()
        except sqlite3.OperationalError:
            return {}
        return {row["task"]: json.loads(row["context"]) for row in rows}

    def skipped(self, task: str | None = None) -> list[sqlite3.Row]:
        query = "SELECT * FROM skipped" + (" WHERE task=?" if task else "") + " ORDER BY task, name, path"
        return self.db.execute(query, (task,) if task else ()).fetchall()

    def counts(self, task: str | None = None) -> dict[str, int]:
        """How many units are in each state."""
        counts = dict.fromkeys(STATES, 0)
        query = "SELECT state, COUNT(*) FROM units" + (" WHERE task=?" if task else "") + " GROUP BY state"
        for state, count in self.db.execute(query, (task,) if task else ()):
            counts[state] = count
        return counts

    def reference_digests(self, task: str) -> dict[str, str]:
        """team -> the reference data's digest its scored units were judged with; ReferenceDataError naming
        a team whose units disagree."""
        found: dict[str, str] = {}
        for row in self.db.execute("SELECT DISTINCT team, reference_sha256 FROM units WHERE task=? AND kind!=?",
                                   (task, PART)):
            if row["team"] in found and found[row["team"]] != row["reference_sha256"]:
                raise ReferenceDataError(f"{self.path}: team {row['team']}'s units were judged on different "
                                         f"reference data (field 'reference_sha256')")
            found[row["team"]] = row["reference_sha256"]
        return found


def read_results(out: Path) -> list[dict]:
    """The rows of OUT/results.csv, its columns checked (ReferenceDataError naming the file)."""
    path = Path(out) / RESULTS
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ReferenceDataError(f"{path}: unreadable ({exc})") from exc
    needed = {"team", "task", "group", "state", "run_folder"}
    if rows and not needed <= set(rows[0]):
        raise ReferenceDataError(f"{path}: not a judgement's results (columns {', '.join(sorted(needed))} expected)")
    return rows


def status_table(judgement: Judgement) -> str:
    """Where a judgement stands, for a person (``codascore judge status``): the units per task and team in
    each state, the totals, and the entries skipped with their reasons."""
    rows = judgement.rows()
    if not rows:
        return "no units recorded yet"
    table: dict[tuple[str, str], dict[str, int]] = {}
    for row in rows:
        counts = table.setdefault((row["task"], row["team"]), dict.fromkeys(STATES, 0))
        counts[row["state"]] += 1
    width = max(len(f"{task} / {team}") for task, team in table) + 2
    header = f"{'task / team':<{width}}" + "".join(f"{state:>22}" for state in STATES)
    lines = [header]
    for (task, team), counts in sorted(table.items()):
        lines.append(f"{task + ' / ' + team:<{width}}" + "".join(f"{counts[s]:>22}" for s in STATES))
    totals = judgement.counts()
    lines.append(f"{'total':<{width}}" + "".join(f"{totals[s]:>22}" for s in STATES))
    unfinished = totals[PENDING] + totals[QUEUED] + totals[RUNNING] + totals[INFRASTRUCTURE]
    lines.append(f"{sum(totals.values())} units, {unfinished} to run by the next judgement")
    lines += [f"skipped {entry['task']} / {entry['name']}: {entry['reason']}" for entry in judgement.skipped()]
    return "\n".join(lines)
