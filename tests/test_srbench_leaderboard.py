"""The SRBench boards of ``codascore leaderboard`` (srbench/leaderboard.py): the official formula on the full
evidence equals ``codascore srbench rank`` and the scorers, the 2022 notebooks' own outputs (golden tables, and
per-run tables with failed runs and tied representative runs), a cluster drawn twice counts twice, the
pairwise tests compare what the rule ranks, and bad input is refused naming it."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from board_evidence import unit_rows
from codascore.board import Evidence
from codascore.cli import main as cli_main
from codascore.errors import ReferenceDataError
from codascore.formats.details import NotScored, checked
from codascore.leaderboard import analyse
from codascore.leaderboard.outputs import write_outputs
from codascore.leaderboard.statistics import wilcoxon_pairs
from codascore.registry import get_task
from codascore.srbench import files
from codascore.srbench.cli import load_results
from codascore.srbench.evaluation import DatasetSpec
from codascore.srbench.leaderboard import (RealworldBoard, SyntheticBoard, nan_median, points_from_ranks)
from codascore.srbench.metrics import HARNESS_SEEDS, rank_methods
from codascore.srbench.tasks import SyntheticTask, run_instances

SYNTHETIC = "srbench.synthetic"
REALWORLD = "srbench.realworld"


def stack(board, details: dict[str, dict], task: str) -> Evidence:
    """The evidence ``codascore leaderboard`` builds (codascore/board.py): every team's unit rows on the union
    of the units, NaN where a team has none; the units table holds the id and the design's column only."""
    rows = {team: unit_rows(board, d) for team, d in details.items()}
    table = {r["unit"]: {"unit": r["unit"], "dataset": r["dataset"]}
             for team_rows in rows.values() for r in team_rows}
    position = {unit: index for index, unit in enumerate(table)}
    metrics = board.metric_names()
    values = np.full((len(rows), len(table), len(metrics)), np.nan)
    for index, team_rows in enumerate(rows.values()):
        for r in team_rows:
            values[index, position[r["unit"]]] = [r[m] for m in metrics]
    missing = {team: sorted(set(table) - {r["unit"] for r in team_rows}) for team, team_rows in rows.items()}
    return board.prepare(Evidence(task, list(rows), pd.DataFrame(list(table.values())), metrics, values,
                                  missing))


def details_of(records: list[dict], task: str = SYNTHETIC) -> dict:
    """A details.json as the scorer writes it (tasks.run_instances), from per-run records."""
    return {"task": task, "status": "scored", "instances": run_instances(records)}


def pool_records(rows: list[dict]) -> dict[str, list[dict]]:
    """A reference pool's per-run rows as each pool method's scored records (a NaN R² is a failed run)."""
    methods: dict[str, list[dict]] = {}
    for row in rows:
        record = {"dataset": row["dataset"], "seed": row["seed"], "r2_test": row["r2_test"],
                  "simplicity": row["simplicity"],
                  "property": None if math.isnan(row["property"]) else row["property"]}
        if math.isnan(row["r2_test"]):
            record = {"dataset": row["dataset"], "seed": row["seed"], "failed": "no value"}
        methods.setdefault(row["algorithm"], []).append(record)
    return methods


# --------------------------------------------------------------------------- random teams

R2_VALUES = [k / 16 for k in range(-16, 17)]  # exact in binary: every mean is the same whatever the order


@st.composite
def run_record(draw, dataset: str, seed: int) -> dict:
    kind = draw(st.sampled_from(["ok", "ok", "ok", "ok", "failed", "nonfinite"]))
    if kind == "failed":
        return {"dataset": dataset, "seed": seed, "failed": "invalid model"}
    nodes = draw(st.integers(1, 40))
    record = {"dataset": dataset, "seed": seed, "simplicity": float(-np.round(np.log(nodes) / np.log(5), 1)),
              "r2_test": draw(st.sampled_from(R2_VALUES)), "property": draw(st.sampled_from([0.0, 0.5, 1.0]))}
    if kind == "nonfinite":
        record.update(r2_test=None, property=None, reason="non-finite predictions")
    return record


@st.composite
def teams_records(draw) -> dict[str, list[dict]]:
    """2–5 teams on up to 4 datasets of up to 4 seeds; a team may lack a whole dataset."""
    n_teams = draw(st.integers(2, 5))
    datasets = [f"d{j}" for j in range(draw(st.integers(1, 4)))]
    seeds = list(range(10, 10 + draw(st.integers(1, 4))))
    teams = {}
    for index in range(n_teams):
        kept = [d for d in datasets if draw(st.integers(0, 5)) > 0] or datasets[:1]
        teams[f"team{index}"] = [draw(run_record(d, s)) for d in kept for s in seeds]
    return teams


def rank_command_scores(teams: dict[str, list[dict]], folder: Path, aggregate: str) -> pd.Series:
    """What ``codascore srbench rank`` reads from these teams' details.json files (load_results) ranked as it
    ranks them."""
    paths = []
    for team, records in teams.items():
        (folder / team).mkdir()
        (folder / team / "details.json").write_text(json.dumps(details_of(records)))
        paths.append(str(folder / team / "details.json"))
    return rank_methods(load_results(paths, None), aggregate=aggregate)["score"]


@settings(max_examples=60, deadline=None)
@given(teams_records())
def test_synthetic_rules_equal_the_rank_command_on_random_teams(teams):
    board = SyntheticBoard({})
    evidence = stack(board, {team: details_of(records) for team, records in teams.items()}, SYNTHETIC)
    assert list(board.rules) == ["median", "mean"]
    for rule in board.rules:
        with tempfile.TemporaryDirectory() as folder:
            expected = rank_command_scores(teams, Path(folder), aggregate=rule)
        got = board.scores(evidence, rule)
        np.testing.assert_allclose(got, expected.loc[evidence.teams].to_numpy(), rtol=1e-12, atol=1e-12)


def test_synthetic_board_equals_the_rank_command_line(tmp_path):
    rng = np.random.default_rng(7)
    teams = {}
    for team in ("alice", "bob", "carol", "dave"):
        teams[team] = [{"dataset": d, "seed": s, "r2_test": float(rng.random()),
                        "simplicity": float(-rng.integers(0, 30) / 10), "property": float(rng.integers(0, 2))}
                       for d in ("d1", "d2", "d3") for s in (1, 2, 3)]
    teams["bob"][4] = {"dataset": "d2", "seed": 2, "failed": "no model submitted"}
    paths = []
    for team, records in teams.items():
        (tmp_path / team).mkdir()
        paths.append(str(tmp_path / team / "details.json"))
        Path(paths[-1]).write_text(json.dumps(details_of(records)))
    evidence = stack(SyntheticBoard({}), {t: details_of(r) for t, r in teams.items()}, SYNTHETIC)
    for aggregate in ("median", "mean"):
        out = tmp_path / f"{aggregate}.csv"
        assert cli_main(["srbench", "rank", *paths, "--aggregate", aggregate, "--out", str(out)]) == 0
        expected = pd.read_csv(out, index_col="algorithm")["score"]
        got = SyntheticBoard({"aggregate": aggregate}).scores(evidence, aggregate)
        np.testing.assert_allclose(got, expected.loc[evidence.teams].to_numpy(), rtol=1e-12)


@pytest.mark.golden("srbench_ranking_visible.json", "tables")
def test_mean_rule_reproduces_the_2022_notebook_golden_tables(golden):
    """The 2022 notebook's own output on these per-run rows (null: NaN; a run with every value null: failed)."""
    teams: dict[str, list[dict]] = {}
    for row in golden["rows"]:
        values = {k: row[k] for k in ("r2_test", "simplicity", "property")}
        record = {"dataset": row["dataset"], "seed": row["run"], **values}
        if all(v is None for v in values.values()):
            record = {"dataset": row["dataset"], "seed": row["run"], "failed": "no run"}
        teams.setdefault(row["algorithm"], []).append(record)
    board = SyntheticBoard({"aggregate": "mean", "nonfinite_predictions": "missing"})
    evidence = stack(board, {team: details_of(records) for team, records in teams.items()}, SYNTHETIC)
    got = dict(zip(evidence.teams, board.scores(evidence, "mean")))
    for team, expected in golden["final"].items():
        assert math.isclose(got[team], expected, rel_tol=1e-9, abs_tol=1e-12)


# --------------------------------------------------------------------------- the 2022 notebooks' own numbers
#
# Per-run tables (team, dataset, seed, R², raw simplicity, property) and the runs that failed. The final
# scores are what stage1.ipynb's cells 2, 4, 8, 10, 12, 14 and 16 (cavalab/srbench, branch srcomp, commit
# c2ddb27; pandas 1.5.3, scipy 1.9.3) printed when run on them, each finished run written as the result file
# evaluate_model.py writes and a failed run as none (2022's runs wrote their file at the end). Values are
# exact in binary, so that no summation order moves a rank.

NOTEBOOK_SYNTHETIC = {
    "a team failing every run of one of two datasets": {
        "runs": [("A", "exact_formula_easy", 2082, 0.875, -1.5, 1), ("A", "exact_formula_easy", 3946, 0.75, -1.5, 1),
                 ("B", "exact_formula_easy", 2082, 0.9375, -1.8, 0), ("B", "exact_formula_easy", 3946, 0.9375, -1.8, 1),
                 ("C", "exact_formula_easy", 2082, 0.5, -2.2, 0), ("C", "exact_formula_easy", 3946, 0.625, -2.0, 0),
                 ("A", "featureselection_easy", 2082, 0.75, -1.2, 0.9),
                 ("A", "featureselection_easy", 3946, 0.8125, -1.3, 0.9),
                 ("B", "featureselection_easy", 2082, 0.6875, -1.0, 0.8),
                 ("B", "featureselection_easy", 3946, 0.625, -1.1, 1.0)],
        "failed": [("C", "featureselection_easy", 2082), ("C", "featureselection_easy", 3946)],
        # the notebook: C's second dataset has no row, its score is its first dataset's, 0; before this
        # version the board ranked that dataset n_algs and C tied first with 1.5
        "final": {"A": 1.5, "B": 1.35, "C": 0.0},
    },
    "failures of every kind on three datasets": {
        "runs": [
            ("A", "exact_formula_medium", 2082, 0.9375, -1.9, 1), ("A", "exact_formula_medium", 3946, 0.875, -1.9, 1),
            ("A", "exact_formula_medium", 5847, 0.9375, -2.1, 0), ("B", "exact_formula_medium", 2082, 0.96875, -2.4, 1),
            ("B", "exact_formula_medium", 5847, 0.90625, -2.2, 1), ("C", "exact_formula_medium", 2082, 0.5, -0.7, 0),
            ("C", "exact_formula_medium", 3946, 0.5625, -0.9, 0), ("C", "exact_formula_medium", 5847, 0.4375, -0.7, 0),
            ("D", "exact_formula_medium", 2082, 0.8125, -1.6, 0), ("D", "exact_formula_medium", 3946, 0.75, -1.4, 1),
            ("D", "exact_formula_medium", 5847, 0.78125, -1.5, 0),
            ("A", "noise_hard", 2082, 0.8125, -2.0, 0.8125), ("A", "noise_hard", 3946, 0.84375, -2.0, 0.84375),
            ("A", "noise_hard", 5847, 0.78125, -2.2, 0.78125), ("B", "noise_hard", 2082, 0.875, -2.6, 0.875),
            ("B", "noise_hard", 3946, 0.90625, -2.6, 0.90625), ("B", "noise_hard", 5847, 0.875, -2.5, 0.875),
            ("C", "noise_hard", 2082, 0.25, -0.4, 0.25), ("C", "noise_hard", 3946, 0.375, -0.4, 0.375),
            ("C", "noise_hard", 5847, 0.3125, -0.5, 0.3125),
            ("A", "localopt_easy", 2082, 0.96875, -1.7, 1.0), ("A", "localopt_easy", 3946, 0.9375, -1.8, 0.5),
            ("A", "localopt_easy", 5847, 1.0, -1.7, 1.0), ("B", "localopt_easy", 2082, 0.984375, -2.3, 0.5),
            ("B", "localopt_easy", 3946, 0.953125, -2.4, 0.5), ("B", "localopt_easy", 5847, 0.96875, -2.3, 1.0),
            ("C", "localopt_easy", 2082, 0.625, -1.0, 1.0), ("C", "localopt_easy", 3946, 0.6875, -1.0, 1.0),
            ("C", "localopt_easy", 5847, 0.5625, -1.1, 0.5), ("D", "localopt_easy", 2082, 0.875, -1.3, 0.5),
            ("D", "localopt_easy", 3946, 0.90625, -1.2, 1.0)],
        "failed": [("B", "exact_formula_medium", 3946), *[("D", "noise_hard", s) for s in (2082, 3946, 5847)],
                   ("D", "localopt_easy", 5847),
                   *[("E", d, s) for d in ("exact_formula_medium", "noise_hard", "localopt_easy")
                     for s in (2082, 3946, 5847)]],
        # the notebook's n_algs is 4: E, with no finished run, is no algorithm of its table (unranked; here 0);
        # before this version the board ranked E first (5.0) and D second (3.42)
        "final": {"A": 1.7666666666666668, "D": 1.6, "C": 1.0285714285714287, "B": 0.6000000000000001},
    },
}


def notebook_teams(case: dict) -> dict[str, list[dict]]:
    """A case's teams as the scorer's per-run records, every run of a dataset, a failed one included."""
    teams: dict[str, list[dict]] = {}
    for team, dataset, seed, r2, simplicity, prop in case["runs"]:
        teams.setdefault(team, []).append({"dataset": dataset, "seed": seed, "r2_test": r2, "simplicity": simplicity,
                                           "property": prop})
    for team, dataset, seed in case["failed"]:
        teams.setdefault(team, []).append({"dataset": dataset, "seed": seed, "failed": "no model submitted"})
    return {team: sorted(records, key=lambda r: (r["dataset"], r["seed"])) for team, records in teams.items()}


@pytest.mark.parametrize("name", sorted(NOTEBOOK_SYNTHETIC))
def test_a_dataset_without_a_finished_run_counts_as_the_2022_notebook_counted_it(name, tmp_path):
    """The mean rule (official2022) and ``srbench rank --aggregate mean`` give the notebook's final scores and
    order; a team with no finished run at all, which the notebook does not list, scores 0 and comes last."""
    case = NOTEBOOK_SYNTHETIC[name]
    teams = notebook_teams(case)
    board = SyntheticBoard({"aggregate": "mean"})
    evidence = stack(board, {team: details_of(records) for team, records in teams.items()}, SYNTHETIC)
    got = dict(zip(evidence.teams, board.scores(evidence, "mean")))
    unranked = set(teams) - set(case["final"])
    assert all(got[team] == 0.0 for team in unranked)
    for team, expected in case["final"].items():
        assert math.isclose(got[team], expected, rel_tol=1e-12, abs_tol=1e-15), team
    assert sorted(got, key=lambda t: -got[t])[:len(case["final"])] == list(case["final"])
    command = rank_command_scores(teams, tmp_path, aggregate="mean")
    assert list(command.index) == [*case["final"], *sorted(unranked)]
    np.testing.assert_allclose(command.loc[list(case["final"])], list(case["final"].values()), rtol=1e-12)


NOTEBOOK_REALWORLD = {
    # (team, target): the R² and the simplicity of the runs in the order the 2022 harness launched their seeds
    # (HARNESS_SEEDS); the two middle R² tie exactly: 0.5 (seed 8356, launched second) and 0.75 (seed 2804,
    # launched fifth, the smallest seed)
    ("alice", "value_cases"): ([0.25, 0.5, 0.875, 0.125, 0.75, 0.9375, 0.375, 0.8125, 0.0625, 1.0],
                               [-1.0, -1.2, -1.5, -1.1, -2.0, -1.0, -1.3, -1.4, -1.0, -1.6]),
    ("bob", "value_cases"): ([0.6875, 0.625, 0.875, 0.125, 0.8125, 0.9375, 0.375, 0.25, 0.0625, 1.0],
                             [-1.4, -0.9, -1.5, -1.1, -1.9, -1.0, -1.3, -1.4, -1.0, -1.6]),
    ("carol", "value_cases"): ([0.5, 0.3125, 0.375, 0.625, 0.25, 0.75, 0.4375, 0.5625, 0.125, 0.6875], [-0.7] * 10),
    ("alice", "value_hosp"): ([0.4375, 0.5625, 0.875, 0.25, 0.6875, 0.9375, 0.375, 0.8125, 0.125, 1.0],
                              [-1.0, -1.3, -1.5, -1.1, -0.8, -1.0, -1.3, -1.4, -1.0, -1.6]),
    ("bob", "value_hosp"): ([0.5, 0.75, 0.875, 0.125, 0.625, 0.9375, 0.375, 0.25, 0.0625, 1.0],
                            [-1.4, -1.7, -1.5, -1.1, -1.2, -1.0, -1.3, -1.4, -1.0, -1.6]),
    ("carol", "value_hosp"): ([0.5, 0.3125, 0.375, 0.625, 0.25, 0.8125, 0.4375, 0.5625, 0.125, 0.6875], [-0.7] * 10),
    ("alice", "value_deaths"): ([0.5, 0.625, 0.875, 0.25, 0.75, 0.9375, 0.375, 0.8125, 0.125, 1.0],
                                [-1.0, -1.5, -1.5, -1.1, -1.2, -1.0, -1.3, -1.4, -1.0, -1.6]),
    ("bob", "value_deaths"): ([0.5625, 0.375, 0.875, 0.125, 0.6875, 0.9375, 0.4375, 0.25, 0.0625, 1.0],
                              [-1.4, -1.1, -1.5, -1.1, -1.6, -1.0, -1.3, -1.4, -1.0, -1.6]),
    ("carol", "value_deaths"): ([0.5, 0.3125, 0.375, 0.625, 0.25, 0.75, 0.4375, 0.5625, 0.125, 0.6875], [-0.7] * 10),
}
NOTEBOOK_TRUST = {("value_cases", "alice"): 4, ("value_cases", "bob"): 3, ("value_cases", "carol"): 2,
                  ("value_hosp", "alice"): 3, ("value_hosp", "bob"): 4, ("value_hosp", "carol"): 2,
                  ("value_deaths", "alice"): 4, ("value_deaths", "bob"): 4, ("value_deaths", "carol"): 1}
#: stage2_final_ratings.ipynb's cells 14, 23 and 25 (branch srcomp, commit c2ddb27; pandas 1.5.3) on these
#: runs, listed in launch order, with the given simplicity (cell 17 recomputes it from the model; its min-max
#: normalisation moves no rank) and these trust ratings: the runs cell 14's idxmin chose, and the scores.
#: Listed by seed instead, it chooses alice's 2804 on every target and bob's 8356 and 2804, and scores
#: alice 0.9, bob 0.3333333333333333, carol 0.0.
NOTEBOOK_REPRESENTATIVE = {("alice", "value_cases"): 8356, ("bob", "value_cases"): 24305,
                           ("carol", "value_cases"): 24305, ("alice", "value_deaths"): 8356,
                           ("bob", "value_deaths"): 24305, ("carol", "value_deaths"): 24305,
                           ("alice", "value_hosp"): 8356, ("bob", "value_hosp"): 24305, ("carol", "value_hosp"): 24305}
NOTEBOOK_REALWORLD_FINAL = {"alice": 0.7999999999999999, "bob": 0.39999999999999997, "carol": 0.0}


def realworld_teams() -> dict[str, list[dict]]:
    teams: dict[str, list[dict]] = {}
    for (team, target), (r2, simplicity) in NOTEBOOK_REALWORLD.items():
        teams.setdefault(team, []).extend({"dataset": target, "seed": seed, "r2_test": r, "simplicity": s,
                                           "property": None} for seed, r, s in zip(HARNESS_SEEDS, r2, simplicity))
    return {team: sorted(records, key=lambda r: (r["dataset"], r["seed"])) for team, records in teams.items()}


def realworld_evidence(tmp_path, teams: dict[str, list[dict]] | None = None) -> tuple[RealworldBoard, Evidence]:
    """The real-world board with NOTEBOOK_TRUST's ratings, and the evidence of ``teams`` (realworld_teams)."""
    ratings = tmp_path / "trust.csv"
    ratings.write_text("task,method,trust\n" + "".join(f"{t},{m},{v}\n" for (t, m), v in NOTEBOOK_TRUST.items()))
    board = RealworldBoard({"trust_ratings": str(ratings)})
    teams = realworld_teams() if teams is None else teams
    return board, stack(board, {t: details_of(r, REALWORLD) for t, r in teams.items()}, REALWORLD)


def test_tied_representative_runs_are_chosen_in_the_2022_harness_launch_order(tmp_path):
    """Two middle runs of ten tie exactly on |R² − median|: the notebook's idxmin keeps the first in its
    table's order, here the launch order; the board (whatever the order of the units) and the scorer's
    metrics.representative choose those runs and give the notebook's scores."""
    from codascore.srbench.metrics import representative

    for team, records in realworld_teams().items():
        for target in ("value_cases", "value_hosp", "value_deaths"):
            chosen = representative([r for r in records if r["dataset"] == target])
            assert chosen["seed"] == NOTEBOOK_REPRESENTATIVE[(team, target)], (team, target)
    board, evidence = realworld_evidence(tmp_path)
    reversed_units = evidence.take(np.arange(len(evidence.units))[::-1])
    for replicate in (evidence, reversed_units):
        got = dict(zip(replicate.teams, board.scores(replicate, "official")))
        assert got == pytest.approx(NOTEBOOK_REALWORLD_FINAL, rel=1e-12, abs=1e-15)


def test_a_realworld_target_without_a_representative_run_is_left_out_of_the_teams_mean(tmp_path):
    """As cell 14 skips a method whose median R² is NaN: every run of bob's on value_hosp failed, so bob is
    ranked on the two other targets, and n_algs still counts bob."""
    teams = realworld_teams()
    teams["bob"] = [r if r["dataset"] != "value_hosp" else {"dataset": "value_hosp", "seed": r["seed"],
                                                            "failed": "time limit"} for r in teams["bob"]]
    board, evidence = realworld_evidence(tmp_path, teams)
    per_target = board.target_scores(evidence, "official")
    bob = evidence.teams.index("bob")
    targets = list(dict.fromkeys(evidence.units["dataset"]))
    assert np.isnan(per_target[bob, targets.index("value_hosp")])
    assert board.scores(evidence, "official")[bob] == pytest.approx(np.nanmean(per_target[bob]))
    assert np.nanmax(per_target) <= 2  # n_algs = 3 teams: the best rank is 2


# --------------------------------------------------------------------------- the pairwise tests

def test_the_significance_map_tests_the_per_dataset_score_not_the_per_run_r2():
    """On every run A's R² beats B's, yet B ranks first on every dataset (simpler models, the property): the
    per-run R² would make A significantly better; the map compares the datasets' harmonic means, and B is
    significantly better."""
    datasets = [f"d{k:02d}" for k in range(16)]
    def team(r2: float, simplicity: float, prop: float):
        return [{"dataset": d, "seed": s, "r2_test": r2 - s / 64, "simplicity": simplicity, "property": prop}
                for d in datasets for s in (1, 2)]
    teams = {"A": team(0.9375, -2.5, 0.0), "B": team(0.875, -1.0, 1.0), "C": team(0.5, -1.8, 0.5)}
    board = SyntheticBoard({})
    evidence = stack(board, {t: details_of(r) for t, r in teams.items()}, SYNTHETIC)
    analysis = analyse(board, evidence, replicates=50, seed=0)
    a, b = evidence.teams.index("A"), evidence.teams.index("B")
    per_run = wilcoxon_pairs(evidence.values[:, :, evidence.metrics.index("r2_test")])
    pair = per_run.pairs.index((a, b))
    assert per_run.significant()[pair] and np.all(evidence.values[a, :, 0] > evidence.values[b, :, 0])
    assert analysis.paired.unit == "dataset" and analysis.paired.values.shape == (3, 16)
    assert analysis.pairwise.units[pair] == 16 and analysis.pairwise.significant()[pair]
    assert analysis.pairwise.p[pair] == pytest.approx(
        scipy.stats.wilcoxon(analysis.paired.values[a], analysis.paired.values[b]).pvalue)
    official = analysis.rankings[analysis.official]
    assert official.score[b] > official.score[a]
    from codascore.leaderboard.page import better_matrix

    order = [b, a, evidence.teams.index("C")]
    assert better_matrix(analysis, order)[0, 1] == 1  # the row B is significantly better than the column A


def test_three_targets_make_crude_intervals_and_no_pair_significant(tmp_path):
    """The real-world track's three targets: ranking.csv and the page say the intervals are crude, and the
    page says that no pair can be significant (the smallest p of 3 paired targets is 2/2³ = 0.25)."""
    board, evidence = realworld_evidence(tmp_path)
    analysis = analyse(board, evidence, replicates=40, seed=1)
    assert (analysis.resampled_units, analysis.crude) == (3, True)
    assert not analysis.pairwise.significant().any()
    write_outputs(analysis, tmp_path / "board")
    ranking = pd.read_csv(tmp_path / "board" / "ranking.csv")
    assert set(ranking["resampled_units"]) == {3} and set(ranking["crude_intervals"]) == {True}
    pairwise = pd.read_csv(tmp_path / "board" / "pairwise.csv")
    assert set(pairwise["units"]) == {3} and pairwise["tested"].str.startswith("target: ").all()
    page = (tmp_path / "board" / "leaderboard.html").read_text()
    assert "crude intervals: each replicate draws only 3 independent datasets" in page
    assert "no pair can be significant" in page


def test_a_dataset_drawn_twice_counts_twice():
    """A replicate's relabelled copy of a dataset (codascore/board.py, Design) ranks as a second dataset."""
    rng = np.random.default_rng(3)
    teams = {team: [{"dataset": d, "seed": s, "r2_test": float(rng.integers(0, 16) / 16),
                     "simplicity": float(-rng.integers(0, 20) / 10), "property": float(rng.integers(0, 2))}
                    for d in ("d1", "d2") for s in (1, 2, 3)] for team in ("a", "b", "c")}
    board = SyntheticBoard({})
    evidence = stack(board, {t: details_of(r) for t, r in teams.items()}, SYNTHETIC)
    index = np.concatenate([np.flatnonzero(evidence.units["dataset"] == d) for d in ("d1", "d1", "d2")])
    units = evidence.units.iloc[index].reset_index(drop=True)
    units["dataset"] = ["d1#0"] * 3 + ["d1#1"] * 3 + ["d2#0"] * 3
    replicate = evidence.take(index, units)
    doubled = {t: r + [{**x, "dataset": "d1 copy"} for x in r if x["dataset"] == "d1"] for t, r in teams.items()}
    with tempfile.TemporaryDirectory() as folder:
        expected = rank_command_scores(doubled, Path(folder), "median")
    np.testing.assert_allclose(board.scores(replicate, "median"), expected.loc[evidence.teams], rtol=1e-12)
    assert not np.allclose(board.scores(replicate, "median"), board.scores(evidence, "median"))


@settings(max_examples=40, deadline=None)
@given(teams_records(), st.randoms(use_true_random=False))
def test_a_replicate_ranks_as_the_rank_command_on_the_drawn_table(teams, random):
    """Datasets drawn with replacement, then runs within each: the board on the replicate (copies relabelled)
    equals ``srbench rank`` on the table the draw makes, each copy of a dataset under its own name."""
    board = SyntheticBoard({})
    evidence = stack(board, {team: details_of(records) for team, records in teams.items()}, SYNTHETIC)
    names = list(dict.fromkeys(evidence.units["dataset"]))
    index, labels, drawn = [], [], {team: [] for team in teams}
    for copy in range(len(names)):
        name = random.choice(names)
        members = np.flatnonzero(evidence.units["dataset"] == name)
        for position, member in enumerate(random.choices(list(members), k=members.size)):
            index.append(member)
            labels.append(f"{name}#{copy}")
            unit = evidence.units["unit"][member]
            for team, records in teams.items():
                drawn[team] += [{**r, "dataset": labels[-1], "seed": position} for r in records
                                if files.run_key(r["dataset"], r["seed"]) == unit]
    units = evidence.units.iloc[index].reset_index(drop=True).assign(dataset=labels)
    replicate = evidence.take(np.array(index), units)
    # a team with no run in any drawn dataset still counts in the seed profile's n_algs; srbench rank would not
    # know it (official2022 counts only the teams with a finished run: both agree)
    assume(all(drawn.values()))
    for rule in board.rules:
        with tempfile.TemporaryDirectory() as folder:
            expected = rank_command_scores(drawn, Path(folder), aggregate=rule)
        got = dict(zip(evidence.teams, board.scores(replicate, rule)))
        for team, score in expected.items():
            assert math.isclose(got[team], score, rel_tol=1e-12, abs_tol=1e-12)


# --------------------------------------------------------------------------- the scorers

@pytest.mark.parametrize("failed", ["two runs", "a dataset", "every run"])
@pytest.mark.parametrize("aggregate", ["median", "mean"])
def test_synthetic_board_equals_the_scorers_pool_ranking(monkeypatch, aggregate, failed):
    """SyntheticTask.score ranks the submission within the reference pool; the board, given the pool's
    methods and the submission as teams, gives every one of them the same score. A submission that failed
    every run scores 0 and comes last, under the mean rule too (it has no row, as in 2022)."""
    rng = np.random.default_rng(11)
    datasets, seeds = ["d1", "d2", "d3"], [5, 6, 7, 8]
    def records(scale):
        return [{"dataset": d, "seed": s, "r2_test": float(scale * rng.random()),
                 "simplicity": float(-rng.integers(0, 25) / 10), "property": float(rng.integers(0, 2))}
                for d in datasets for s in seeds]
    pool = {"oracle": records(1.0), "linear_regression": records(0.8), "constant_mean": records(0.1)}
    submission = records(0.9)
    submission[2] = {"dataset": "d1", "seed": 7, "failed": "invalid model"}
    submission[5] = {"dataset": "d2", "seed": 6, "r2_test": None, "simplicity": -1.0, "property": None,
                     "reason": "non-finite"}
    lost = {"two runs": (), "a dataset": ("d3",), "every run": datasets}[failed]
    submission = [{"dataset": r["dataset"], "seed": r["seed"], "failed": "time limit"} if r["dataset"] in lost
                  else r for r in submission]
    pool_rows = [{"algorithm": m, "run": seeds.index(r["seed"]), **{k: r[k] for k in ("dataset", "seed")},
                  **{k: float(r[k]) for k in ("r2_test", "simplicity", "property")}}
                 for m, rs in pool.items() for r in rs]
    reference = {"specs": {d: DatasetSpec(d, ["x"], "equivalence") for d in datasets}, "seeds": seeds,
                 "pool": pool_rows}
    monkeypatch.setattr(SyntheticTask, "score_models", lambda self, ref, sub, config, simplify=True:
                        [dict(r) for r in submission])
    task = get_task(SYNTHETIC)
    config = task.load_config({"aggregate": aggregate})
    result = task.score(reference, {"models": {}, "invalid": {}, "warnings": []}, config)
    board = task.final_board(config)
    teams = {**pool_records(pool_rows), files.SUBMISSION: submission}
    evidence = stack(board, {t: details_of(r) for t, r in teams.items()}, SYNTHETIC)
    got = board.scores(evidence, list(board.rules)[0])
    expected = [result.details["pool"][team] for team in evidence.teams]
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    if failed == "every run":
        assert (result.scores["score"], result.scores["pool_position"]) == (0.0, 4.0)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_realworld_board_equals_the_scorer_on_random_runs(data):
    """RealworldTask.score (its runs given, the rest as it is) against the board: the representative run
    (ties on an even count of runs: the first in launch order, metrics.launch_position, for both), the trust
    ratings, the pool's scores."""
    targets, seeds = ["cases", "deaths"], [1, 2, 3, 4]
    r2 = st.sampled_from([0.25, 0.5, 0.625, 0.75, 1.0])
    def runs():
        return [{"dataset": d, "seed": s, "r2_test": data.draw(r2), "property": None,
                 "simplicity": float(-data.draw(st.integers(0, 20)) / 10)} for d in targets for s in seeds]
    pool = {"linear_regression": runs(), "constant_mean": runs()}
    submission = runs()
    submission[2] = {"dataset": "cases", "seed": 3, "failed": "invalid model"}
    pool_rows = [{"algorithm": m, "run": 0, **{k: r[k] for k in ("dataset", "seed", "r2_test", "simplicity")},
                  "property": math.nan} for m, rs in pool.items() for r in rs]
    methods = [*pool, files.SUBMISSION]
    expert = {(t, m): float(data.draw(st.integers(1, 5))) for t in targets for m in methods}
    reference = {"specs": {t: DatasetSpec(t, ["x"], "none") for t in targets}, "seeds": seeds,
                 "pool": pool_rows, "expert": expert}
    task = get_task(REALWORLD)
    original = type(task).score_models
    type(task).score_models = lambda self, ref, sub, config, simplify=True: [dict(r) for r in submission]
    try:
        result = task.score(reference, {"models": {}, "invalid": {}, "warnings": []}, task.load_config({}))
    finally:
        type(task).score_models = original
    with tempfile.TemporaryDirectory() as folder:
        ratings = Path(folder) / "trust.csv"
        ratings.write_text("task,method,trust\n" + "".join(f"{t},{m},{v}\n" for (t, m), v in expert.items()))
        board = task.final_board({"trust_ratings": str(ratings)})
        teams = {**pool_records(pool_rows), files.SUBMISSION: submission}
        evidence = stack(board, {t: details_of(r, REALWORLD) for t, r in teams.items()}, REALWORLD)
    evidence = evidence.take(np.arange(len(evidence.units))[::-1])  # the board orders runs by seed itself
    got = board.scores(evidence, "official")
    np.testing.assert_allclose(got, [result.details["pool"][team] for team in evidence.teams], rtol=1e-12)


@pytest.fixture(scope="module")
def realworld_scored(project_data):
    task = get_task(REALWORLD)
    config = task.load_config({"workers": 1})
    reference = task.load_reference(project_data / "reference_data" / REALWORLD, config)
    submission = task.load_submission(project_data / "sample_submissions" / REALWORLD / "polynomial", reference,
                                      config)
    return project_data, task.score(reference, submission, config)


def test_realworld_board_equals_the_scorers_pool_ranking(realworld_scored, tmp_path):
    root, result = realworld_scored
    ref_dir = root / "reference_data" / REALWORLD
    teams = pool_records(files.read_pool(ref_dir / files.POOL_FILE))
    teams[files.SUBMISSION] = [{**i, "dataset": i["id"].rsplit("/", 1)[0], "seed": int(i["id"].rsplit("/", 1)[1])}
                               for i in result.instances]
    board = get_task(REALWORLD).final_board({"trust_ratings": str(ref_dir / files.EXPERT_FILE)})
    evidence = stack(board, {t: details_of(r, REALWORLD) for t, r in teams.items()}, REALWORLD)
    got = board.scores(evidence, "official")
    np.testing.assert_allclose(got, [result.details["pool"][team] for team in evidence.teams], rtol=1e-12)
    expert = board.scores(evidence, "expert")
    assert expert.shape == got.shape and np.all(expert >= 0)


def test_realworld_trust_ratings_are_required_and_complete(realworld_scored, tmp_path):
    root, result = realworld_scored
    details = {"alice": {"task": REALWORLD, "status": "scored", "instances": result.instances},
               "bob": {"task": REALWORLD, "status": "scored", "instances": result.instances}}
    with pytest.raises(ReferenceDataError, match="trust_ratings"):
        stack(RealworldBoard({}), details, REALWORLD)
    targets = sorted({i["id"].rsplit("/", 1)[0] for i in result.instances})
    ratings = tmp_path / "trust.csv"
    ratings.write_text("task,method,trust\n" + "".join(f"{t},alice,4\n" for t in targets)
                       + f"{targets[0]},bob,2\n")
    with pytest.raises(ReferenceDataError, match=rf"no trust rating for {len(targets) - 1} .*bob on {targets[1]}"):
        stack(RealworldBoard({"trust_ratings": str(ratings)}), details, REALWORLD)
    ratings.write_text(ratings.read_text() + "".join(f"{t},bob,2\n" for t in targets[1:]))
    evidence = stack(RealworldBoard({"trust_ratings": str(ratings)}), details, REALWORLD)
    scores = RealworldBoard({}).scores(evidence, "official")
    assert scores[0] > scores[1]  # the same runs, a higher trust rating on every target


# --------------------------------------------------------------------------- refusals and the pieces

def test_qualification_has_no_final_board_and_other_tasks_details_are_refused():
    assert get_task("srbench.qualification").final_board({}) is None
    board = get_task(SYNTHETIC).final_board({})
    record = {"dataset": "d", "seed": 1, "r2_test": 0.5, "simplicity": -1.0, "property": 1.0}
    with pytest.raises(ReferenceDataError, match="'task' is 'srbench.realworld', not 'srbench.synthetic'"):
        checked(details_of([record], REALWORLD), task=SYNTHETIC)
    with pytest.raises(NotScored, match="'status' is 'invalid'"):
        checked({**details_of([record]), "status": "invalid"})
    with pytest.raises(ReferenceDataError, match="no per-run instances"):
        board.unit_rows(checked({"task": SYNTHETIC, "status": "scored", "instances": []}))


def test_the_task_configuration_names_the_official_rule():
    assert list(SyntheticBoard({"aggregate": "mean"}).rules) == ["mean", "median"]
    board = SyntheticBoard({"aggregate": "median", "profile": "official2022"})
    assert list(board.rules) == ["median/official2022", "median", "mean"]
    assert board.settings["median/official2022"] == ("median", "official2022")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from([np.nan, -np.inf, -1.0, 0.0, 0.25, 0.5, 1.0]), min_size=1,
                         max_size=6), min_size=1, max_size=5).filter(lambda rows: len({len(r) for r in rows}) == 1))
def test_points_and_medians_match_pandas(rows):
    values = np.array(rows, dtype=float).T  # (teams, datasets)
    expected = values.shape[0] - pd.DataFrame(values).rank(method="dense", ascending=False, axis=0).to_numpy()
    np.testing.assert_array_equal(points_from_ranks(values), expected)
    with np.errstate(invalid="ignore"):
        medians = pd.DataFrame(values).median(axis=0).to_numpy()
    np.testing.assert_array_equal(nan_median(values, axis=0), medians)
