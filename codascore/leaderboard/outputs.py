"""The files of a leaderboard: ``ranking.csv`` (one row per team, by rank), ``pairwise.csv`` (one row per
ordered pair of teams) and ``leaderboard.html`` (:mod:`.page`), each written atomically, each naming the
seed and the number of replicates (docs/leaderboard.md#the-files). The same inputs and seed give the same
bytes: numbers are written with Python's shortest round-trip repr, rows in a fixed order."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np

from ..formats.atomic import write_atomic
from .statistics import team_order

RANKING, PAIRWISE, PAGE = "ranking.csv", "pairwise.csv", "leaderboard.html"
RANKING_COLUMNS = ["team", "score", "ci_low", "ci_high", "rank", "rank_low", "rank_high", "median_rank", "p_win",
                   "p_top3", "tied_with_winner", "missing_units", "seed", "replicates"]
PAIRWISE_COLUMNS = ["team_a", "team_b", "p_a_beats_b", "wilcoxon_statistic", "p", "p_holm", "significant",
                    "units", "seed", "replicates"]


def cell(value) -> str:
    """A CSV cell: integers as such, floats by repr (shortest round trip), booleans true/false."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return repr(value) if math.isfinite(value) else ""
    return str(value)


def csv_text(columns: list[str], rows: list[list]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([[cell(v) for v in row] for row in rows])
    return buffer.getvalue()


def ranking_rows(analysis) -> list[list]:
    r, teams = analysis.rankings[analysis.official], analysis.evidence.teams
    seed, count = analysis.replicates.seed, analysis.replicates.count
    return [[teams[t], r.score[t], r.ci_low[t], r.ci_high[t], r.rank[t], r.rank_low[t], r.rank_high[t],
             r.median_rank[t], r.p_win[t], r.p_top3[t], r.tied_with_winner[t],
             len(analysis.evidence.missing.get(teams[t], [])), seed, count] for t in team_order(analysis)]


def pairwise_rows(analysis) -> list[list]:
    r, teams, tests = analysis.rankings[analysis.official], analysis.evidence.teams, analysis.pairwise
    by_pair = {pair: n for n, pair in enumerate(tests.pairs)}
    significant = tests.significant()
    rows = []
    for a in team_order(analysis):
        for b in team_order(analysis):
            if a != b:
                n = by_pair[(min(a, b), max(a, b))]
                rows.append([teams[a], teams[b], r.beats[a, b], tests.statistic[n], tests.p[n], tests.p_holm[n],
                             significant[n], tests.units[n], analysis.replicates.seed, analysis.replicates.count])
    return rows


def write_outputs(analysis, out: Path) -> list[Path]:
    """Write the three files into out (made if needed); their paths."""
    from .page import render

    out.mkdir(parents=True, exist_ok=True)
    paths = [out / RANKING, out / PAIRWISE, out / PAGE]
    write_atomic(paths[0], csv_text(RANKING_COLUMNS, ranking_rows(analysis)))
    write_atomic(paths[1], csv_text(PAIRWISE_COLUMNS, pairwise_rows(analysis)))
    write_atomic(paths[2], render(analysis))
    return paths
