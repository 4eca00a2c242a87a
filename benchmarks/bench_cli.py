"""The command line's own time (docs/architecture.md#commands): ``codascore --help`` and ``codascore judge
status OUT`` as whole processes, beside ``python -c pass`` (the interpreter's start) and the import of every
family (what the help cost before it loaded verbs when used), with the machine's load average: on a shared
machine a process's wall time is mostly the others' work, its CPU time much less so.

The judgement read is a real one: two teams of uai.pr's trivial sample judged on a local cluster of one
worker (the judge extra), else a judgement's store without units.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

from common import median_process_times, print_table

from codascore import competition

ROOT = competition.project_root()
CODASCORE = [sys.executable, "-m", "codascore"]
ALL_FAMILIES = "from codascore.registry import all_tasks; all_tasks()"


def judgement(tmp: Path) -> tuple[Path, str]:
    """A judgement's folder to read, and what it holds."""
    out = tmp / "judgement"
    try:
        from codascore.judge import judge
    except ImportError:  # no Dask here: the store the judge starts with
        from codascore.formats.judgement import DATABASE, RESULTS, SCHEMA

        out.mkdir()
        with sqlite3.connect(out / DATABASE) as db:
            db.executescript(SCHEMA)
        (out / RESULTS).write_text("")
        return out, "a store without units"
    for team in ("alice", "bob"):
        shutil.copytree(ROOT / "sample_submissions" / "uai.pr" / "trivial", tmp / "teams" / team)
    summary = judge(tmp / "teams", "uai.pr", out, root=ROOT, workers=1)
    return out, f"{summary.total} units of uai.pr"


def main(repeat: int = 9) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out, holding = judgement(Path(tmp))
        load = " / ".join(f"{value:.1f}" for value in os.getloadavg())
        timed = [("python -c pass", [sys.executable, "-c", "pass"]),
                 ("codascore --help", CODASCORE + ["--help"]),
                 (f"codascore judge status OUT ({holding})", CODASCORE + ["judge", "status", str(out)]),
                 ("every family imported (what --help did before)", [sys.executable, "-c", ALL_FAMILIES])]
        rows, started = [], None
        for label, argv in timed:
            wall, cpu = median_process_times(argv, repeat=repeat)
            started = started or (wall, cpu)
            rows.append((label, f"{wall:.3f} s", f"{cpu:.3f} s", f"{wall - started[0]:.3f} s",
                         f"{cpu - started[1]:.3f} s"))
        print(f"load average (1, 5, 15 min) before timing: {load}; {os.cpu_count()} cores")
        print_table(rows, ("command line", "wall (median)", "CPU (median)", "wall beyond python -c pass",
                           "CPU beyond python -c pass"))
