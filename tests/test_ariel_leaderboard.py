"""ariel.retrieval's final board (codascore/ariel/leaderboard.py): the official final score recomputed from
per-planet details equals what the scorer wrote, and the resampling design keeps the spectral subset apart."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from board_evidence import score_sample, stack, unit_rows
from codascore.board import Evidence
from codascore.competition import read_task_config
from codascore.errors import ReferenceDataError, SubmissionError
from codascore.formats.details import checked
from codascore.leaderboard.inputs import Inputs, TeamFiles, check_board_settings

TASK = "ariel.retrieval"
SAMPLES = ("ground_truth", "gaussian_baseline", "point_mass")


@pytest.fixture(scope="module")
def scored(project_data, tmp_path_factory):
    """The board, and each sample's (details.json, scores.json) as the scoring program wrote them."""
    reference = project_data / "reference_data" / TASK
    task, config = read_task_config(reference, "reference data")
    outputs = {name: score_sample(reference, project_data / "sample_submissions" / TASK / name,
                                  tmp_path_factory.mktemp(name)) for name in SAMPLES}
    return task.final_board(config), outputs


def test_the_final_score_on_the_full_data_is_the_scorers_to_the_last_bit(scored):
    board, outputs = scored
    evidence = stack(board, TASK, {name: unit_rows(board, details) for name, (details, _) in outputs.items()})
    assert list(board.rules)[0] == "final"
    for rule, key in (("final", "score"), ("posterior", "posterior_score"), ("spectral", "spectral_score")):
        assert board.scores(evidence, rule).tolist() == [outputs[name][1][key] for name in SAMPLES], rule
    # posterior_exact: the scorer averages the (planet, target) table at once, the board per-planet means
    assert board.scores(evidence, "posterior_exact") == pytest.approx(
        [outputs[name][1]["posterior_exact"] for name in SAMPLES], rel=1e-12)
    # stacked in another order (as a leaderboard may stack them), the units give the same bits
    shuffled = evidence.take(np.random.default_rng(3).permutation(len(evidence.units)))
    assert board.scores(shuffled, "final").tolist() == board.scores(evidence, "final").tolist()


def test_the_rows_carry_the_spectral_subset_and_the_design_resamples_within_it(scored):
    board, outputs = scored
    details = outputs["gaussian_baseline"][0]
    rows = unit_rows(board, details)
    assert [row["unit"] for row in rows] == [record["id"] for record in details["instances"]]
    assert [row["in_spectral_subset"] for row in rows] == [int("spectral" in r) for r in details["instances"]]
    assert 0 < sum(row["in_spectral_subset"] for row in rows) < len(rows)
    assert board.design.strata == ("in_spectral_subset",) and board.design.cluster is None


def test_a_details_json_of_another_task_or_rule_is_refused_naming_the_field(scored):
    board, outputs = scored
    details = outputs["point_mass"][0]
    assert details["board_settings"] == {"posterior_weight": board.beta}
    with pytest.raises(ReferenceDataError, match="'task' is 'weak_lensing.phase1', not 'ariel.retrieval'"):
        checked({**details, "task": "weak_lensing.phase1"}, task=TASK)
    other = copy.deepcopy(details)
    other["board_settings"]["posterior_weight"] = 0.5
    with pytest.raises(ReferenceDataError, match="board_settings.posterior_weight"):
        check_board_settings(Inputs(TASK, [TeamFiles("t", [checked(other)])]), ("posterior_weight",),
                             {"posterior_weight": board.beta})
    broken = copy.deepcopy(details)
    broken["instances"][2]["posterior"] = None
    with pytest.raises(SubmissionError, match=r"instances\[2\].*'posterior'"):
        board.unit_rows(checked(broken))


# ------------------------------------------------------------------------------------- properties
def evidence_of(board, posterior, spectral, subset) -> Evidence:
    """Evidence of teams x planets from per-planet values, through unit_rows as details.json holds them."""
    teams = {}
    for t in range(posterior.shape[0]):
        instances = []
        for p in range(posterior.shape[1]):
            record = {"id": f"Planet_{p}", "posterior": posterior[t, p], "posterior_exact": posterior[t, p],
                      "in_spectral_subset": bool(subset[p])}
            if subset[p]:
                record["spectral"] = spectral[t, p]
            instances.append(record)
        teams[f"team{t}"] = unit_rows(board, {"task": TASK, "status": "scored", "instances": instances})
    return stack(board, TASK, teams)


planets = st.integers(2, 30).flatmap(lambda n: st.tuples(
    st.lists(st.booleans(), min_size=n, max_size=n).filter(any),
    st.integers(1, 4), st.integers(0, 2**32 - 1), st.floats(0.0, 1.0)))


@settings(max_examples=60, deadline=None)
@given(planets)
def test_the_formula_is_the_weighted_mix_of_two_means_whatever_the_others_spectral_values(case):
    subset, n_teams, seed, beta = case
    from codascore.ariel.leaderboard import ArielBoard

    board = ArielBoard(TASK, beta)
    rng = np.random.default_rng(seed)
    posterior, spectral = rng.uniform(0, 1000, (2, n_teams, len(subset)))
    subset = np.array(subset)
    evidence = evidence_of(board, posterior, spectral, subset)
    expected = beta * posterior.mean(axis=1) + (1 - beta) * spectral[:, subset].mean(axis=1)
    assert board.scores(evidence, "final") == pytest.approx(expected, rel=1e-12, abs=1e-9)
    assert board.scores(evidence, "spectral") == pytest.approx(spectral[:, subset].mean(axis=1), rel=1e-12)
    # the per-planet shares the leaderboard's Wilcoxon tests compare average to the final score
    shares = evidence.values[:, :, evidence.metrics.index("final")]
    assert shares.mean(axis=1) == pytest.approx(expected, rel=1e-9, abs=1e-9)
    # a planet outside the subset never counts in the spectral part
    evidence.values[:, ~subset, evidence.metrics.index("spectral")] = rng.uniform(0, 1000)
    assert board.scores(evidence, "final") == pytest.approx(expected, rel=1e-12, abs=1e-9)
    # every unit drawn once, in any order, is the full data (the scorer's order is kept by position)
    order = rng.permutation(len(subset))
    assert board.scores(evidence.take(order), "final").tolist() == board.scores(evidence, "final").tolist()


def test_without_a_spectral_planet_the_final_score_is_the_posterior_score():
    from codascore.ariel.leaderboard import ArielBoard

    board = ArielBoard(TASK, 0.8)
    posterior = np.array([[500.0, 700.0, 900.0]])
    evidence = evidence_of(board, posterior, posterior, np.zeros(3, dtype=bool))
    assert board.scores(evidence, "final").tolist() == [700.0]
    assert board.scores(evidence, "spectral").tolist() == [0.0]  # the worst: nothing to average
    with pytest.raises(ValueError, match="unknown rule"):
        board.scores(evidence, "median")


def test_a_units_table_without_positions_is_ranked_in_its_own_order():
    from codascore.ariel.leaderboard import ArielBoard

    board = ArielBoard(TASK, 0.8)
    units = pd.DataFrame({"unit": ["a", "b"], "in_spectral_subset": [1, 0]})
    values = np.array([[[0.0, 900.0, 800.0, 900.0], [0.0, 700.0, 0.0, 700.0]]])
    evidence = Evidence(TASK, ["t"], units, list(board.metric_names()), values)
    assert board.scores(evidence, "final").tolist() == [0.8 * 800.0 + 0.2 * 800.0]
