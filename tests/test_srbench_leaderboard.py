"""The SRBench boards of ``codascore leaderboard`` (srbench/leaderboard.py): the official formula on the full
evidence equals ``codascore srbench rank`` and the scorers, the 2022 notebook's golden tables, a cluster
drawn twice counts twice, and bad input is refused naming it."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from board_evidence import unit_rows
from codascore.board import Evidence
from codascore.cli import main as cli_main
from codascore.errors import ReferenceDataError
from codascore.formats.details import NotScored, checked
from codascore.registry import get_task
from codascore.srbench import files
from codascore.srbench.cli import load_results
from codascore.srbench.evaluation import DatasetSpec
from codascore.srbench.leaderboard import (RealworldBoard, SyntheticBoard, nan_median, points_from_ranks)
from codascore.srbench.metrics import rank_methods
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
    # a team with no run in any drawn dataset still counts in the board's n_algs; srbench rank would not know it
    assume(all(drawn.values()))
    for rule in board.rules:
        with tempfile.TemporaryDirectory() as folder:
            expected = rank_command_scores(drawn, Path(folder), aggregate=rule)
        got = dict(zip(evidence.teams, board.scores(replicate, rule)))
        for team, score in expected.items():
            assert math.isclose(got[team], score, rel_tol=1e-12, abs_tol=1e-12)


# --------------------------------------------------------------------------- the scorers

@pytest.mark.parametrize("aggregate", ["median", "mean"])
def test_synthetic_board_equals_the_scorers_pool_ranking(monkeypatch, aggregate):
    """SyntheticTask.score ranks the submission within the reference pool; the board, given the pool's
    methods and the submission as teams, gives every one of them the same score."""
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


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_realworld_board_equals_the_scorer_on_random_runs(data):
    """RealworldTask.score (its runs given, the rest as it is) against the board: the representative run
    (ties on an even count of runs: the first by seed, the order of a participant's runs in details.json; the
    scorer takes the pool's in pool.csv's order, here by seed too), the trust ratings, the pool's scores."""
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
