"""The UAI 2022 final leaderboard's published numbers (tests/data/uai2022_final/), and what turns them into
the UAI board's evidence.

Run as ``python tests/uai2022_final.py GIT_DIR OUT_DIR`` to extract the data files again from a clone of
uaicompetition/uci-2022 (GIT_DIR: its git directory): the final table and the per-solver tables of
``_pages/root/results/final-leader-board/`` at commit 168ffbc, printed cells copied as text.

The per-solver tables print, per instance and time limit, the score and (PR, MPE, MMAP) the answer's log10
value, each to one decimal. MPE and MMAP answers are given to the board as log10 values on the scale their
printed scores fix, v = t + (s/100)(b - t), with t the baseline's printed value and b the highest printed
value of any solver under any time limit (any t and b - t > 0 give the same scores; see _scale), each
team's stored best = t and its recorded score 100 for any answer (what the scorer gives against a reference
knowing only the trivial answer): the board's fold has to find every best answer among the teams, under any
time limit, to give back the printed scores. The printed values
themselves (one decimal) cannot serve: on pomdp6-12_6_2_6_3.mmap, b - t prints as 0.1.
"""

from __future__ import annotations

import csv
import itertools
import re
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd

from board_evidence import unit_rows
from codascore.board import Evidence

DATA = Path(__file__).resolve().parent / "data" / "uai2022_final"
COMMIT = "168ffbc6195da0eff5d9c200d3d10f047dae24f3"
FOLDER = "_pages/root/results/final-leader-board"
LIMITS = ("20s", "1200s", "3600s")
TASKS = {"PR": "uai.pr", "MAR": "uai.mar", "MPE": "uai.mpe", "MMAP": "uai.mmap"}
BASELINE = "baseline"
#: A cell "96.9 (5494.2)": the score, then the log10 value ("nan" unanswered, "-inf" zero likelihood).
CELL = re.compile(r"^(?P<score>-?\d+(?:\.\d+)?)(?:\s*\((?P<value>[^)]*)\))?$")


# ----- extraction from the repository (run by hand; the tests read the CSV files)
def markdown_tables(text: str) -> list[tuple[str, list[list[str]]]]:
    """(the last '# ' heading above it, its body rows as cell lists) of each table of a markdown page."""
    tables, heading, rows = [], "", None
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if rows is None:
                rows = []  # the header row
            elif not all(set(cell) <= set("-: ") for cell in cells):
                rows.append(cells)
            continue
        if rows is not None:
            tables.append((heading, rows))
            rows = None
        if re.match(r"^# \S", line):
            heading = line[2:].strip()
    return tables


def extract(git_dir: Path, out: Path) -> None:
    """Write published.csv and instances.csv from the repository at COMMIT."""
    def show(path: str) -> str:
        return subprocess.run(["git", "-C", str(git_dir), "show", f"{COMMIT}:{path}"], check=True,
                              capture_output=True, text=True).stdout

    out.mkdir(parents=True, exist_ok=True)
    published = [[heading, re.match(r"\[([^\]]+)\]", row[0]).group(1), *row[1:]]
                 for heading, rows in markdown_tables(show(f"{FOLDER}/final-leader-board.md")) for row in rows]
    listing = subprocess.run(["git", "-C", str(git_dir), "ls-tree", "--name-only", f"{COMMIT}:{FOLDER}/solver-scores"],
                             check=True, capture_output=True, text=True).stdout.split()
    instances = []
    for name in sorted(n for n in listing if n.endswith("-scores.md")):
        solver = name.removesuffix("-scores.md")
        for heading, rows in markdown_tables(show(f"{FOLDER}/solver-scores/{name}")):
            for row in rows:
                cells = [CELL.match(cell) for cell in row[1:]]
                instances.append([heading, solver, row[0]] + [part for c in cells
                                                               for part in (c["score"], c["value"] or "")])
    _write(out / "published.csv", ["task", "solver", *LIMITS], published)
    value_columns = [f"{kind}_{limit}" for limit in LIMITS for kind in ("score", "value")]
    _write(out / "instances.csv", ["task", "solver", "instance", *value_columns], instances)


def _write(path: Path, header: list[str], rows: list[list[str]]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


# ----- the data as the tests read it
def published() -> pd.DataFrame:
    """The final table: task, solver, one column per time limit (text as printed), in the printed order."""
    return pd.read_csv(DATA / "published.csv", dtype=str)


def instances() -> pd.DataFrame:
    """One row per (task, solver, instance): the printed score and value of each time limit, as text."""
    return pd.read_csv(DATA / "instances.csv", dtype=str, keep_default_na=False)


def family_of(instance: str) -> str:
    """The instance's family as its name says (its leading letters; 'numbered' for names such as 1CKK)."""
    return re.match(r"[A-Za-z]*", instance).group(0) or "numbered"


def _value(text: str) -> float | None:
    """A printed log10 value; None for an answer the board gets none of ('nan': unanswered, '-inf')."""
    return None if text in ("", "nan", "-inf") else float(text)


def _scale(trivial: float | None, best: float | None) -> tuple[float | None, float]:
    """The trivial value t and the gap b - t the reconstructed values are laid on. The scores do not depend
    on them (any t and any positive gap give back the printed scores): where the baseline printed no value,
    or a gap that rounds to nothing, t = b - 1."""
    if best is None:
        return trivial, 0.0
    if trivial is None or best - trivial <= 0:
        return best - 1.0, 1.0
    return trivial, best - trivial


def details_of(task: str, rows: pd.DataFrame) -> dict[tuple[str, str], dict]:
    """(solver, time limit) -> a details.json of that solver's run of one task (module docstring): every
    solver but the baseline, whose values only give each instance its trivial value."""
    rows = rows[rows["task"] == task]
    base = rows[rows["solver"] == BASELINE].set_index("instance")
    solvers = rows[rows["solver"] != BASELINE]
    best = {}
    if task in ("MPE", "MMAP"):
        for instance, group in solvers.groupby("instance"):
            values = [_value(v) for limit in LIMITS for v in group[f"value_{limit}"]]
            best[instance] = max((v for v in values if v is not None), default=None)
    out = {}
    for solver, limit in itertools.product(solvers["solver"].unique(), LIMITS):
        records = []
        for _, row in solvers[solvers["solver"] == solver].iterrows():
            score, value = float(row[f"score_{limit}"]), _value(row[f"value_{limit}"])
            record = {"id": row["instance"], "family": family_of(row["instance"]), "score": score,
                      "status": "ok" if value is not None or task == "MAR" else "invalid"}
            if task in ("MPE", "MMAP"):
                trivial, gap = _scale(_value(base.loc[row["instance"], f"value_{limit}"]), best[row["instance"]])
                # scored alone against a reference knowing only the trivial answer, every answer is its own
                # best (100); the board's fold must bring back the printed score
                record.update(trivial_log10=trivial, best_log10=trivial, score=100.0 if value is not None else 0.0,
                              log10_value=None if value is None else trivial + score / 100.0 * gap)
            records.append(record)
        out[solver, limit] = {"task": TASKS[task], "status": "scored", "group": limit, "instances": records}
    return out


def stack(board, details: dict[str, list[dict]]) -> Evidence:
    """team -> its details.json files, as one Evidence (rows stacked by unit id; NaN where a team lacks one)."""
    rows = {team: [row for d in files for row in unit_rows(board, d)] for team, files in details.items()}
    metrics = board.metric_names()
    units = pd.DataFrame([{k: v for k, v in row.items() if k not in metrics}
                          for row in next(iter(rows.values()))]).drop_duplicates("unit").reset_index(drop=True)
    position = {unit: k for k, unit in enumerate(units["unit"])}
    values = np.full((len(rows), len(units), len(metrics)), np.nan)
    for t, team_rows in enumerate(rows.values()):
        for row in team_rows:
            values[t, position[row["unit"]]] = [row[m] for m in metrics]
    return Evidence(board.task, list(rows), units, metrics, values)


def decided(scores: list[str], answered: list[bool]) -> Fraction | None:
    """The one-decimal mean the printed scores force, or None when they leave it open: each printed score s
    stands for a true score in [s - 0.05, s + 0.05] within [0, 100], an unanswered one for 0 exactly."""
    low = high = Fraction(0)
    for text, given in zip(scores, answered):
        s = Fraction(text)
        low += max(Fraction(0), s - Fraction(1, 20)) if given else 0
        high += min(Fraction(100), s + Fraction(1, 20)) if given else 0
    n = len(scores)
    # the one-decimal values p whose rounding interval [p - 0.05, p + 0.05] meets [low/n, high/n]
    first = -(-(low / n - Fraction(1, 20)) * 10 // 1)
    last = (high / n + Fraction(1, 20)) * 10 // 1
    return Fraction(int(first), 10) if first == last else None


if __name__ == "__main__":
    extract(Path(sys.argv[1]), Path(sys.argv[2]))
