"""The weak lensing final boards (codascore/weak_lensing/leaderboard.py): each official formula on the full
data equals what the scorer wrote; Phase 2's TPR on resampled maps is scikit-learn's ROC of those maps."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from board_evidence import score_sample, stack, unit_rows
from codascore.competition import read_task_config
from codascore.errors import ReferenceDataError, SubmissionError
from codascore.formats.details import checked
from codascore.leaderboard.inputs import Inputs, TeamFiles, check_board_settings
from codascore.weak_lensing import files
from codascore.weak_lensing.leaderboard import Phase2Board

PHASE1, PHASE2, DEPLOYED = "weak_lensing.phase1", "weak_lensing.phase2", "weak_lensing.phase2_deployed"


def board_and_scores(project_data, tmp_path, name, samples):
    """The task's board (Phase 2's with the reference labels), and each sample's details and scores."""
    reference = project_data / "reference_data" / name
    task, config = read_task_config(reference, "reference data")
    board = task.final_board(config)
    if board.needs_reference:
        board.use_reference(reference)
    outputs = {}
    for sample in samples:
        path = sample if not isinstance(sample, str) else project_data / "sample_submissions" / name / sample
        outputs[path.name] = score_sample(reference, path, tmp_path / path.name)
    return board, outputs


def full_scores(board, task, outputs, rule):
    evidence = stack(board, task, {name: unit_rows(board, details) for name, (details, _) in outputs.items()})
    return board.scores(evidence, rule).tolist(), evidence


def test_phase1_score_on_the_full_data_is_the_scorers_to_the_last_bit(project_data, tmp_path):
    board, outputs = board_and_scores(project_data, tmp_path, PHASE1, ("calibrated", "overconfident", "dummy"))
    assert list(board.rules) == ["score"] and "may declare a tie" in board.rules["score"]
    scores, evidence = full_scores(board, PHASE1, outputs, "score")
    assert scores == [value["score"] for _, value in outputs.values()]
    assert len(evidence.units) == 4000 and board.design.strata == ()
    shuffled = evidence.take(np.random.default_rng(0).permutation(len(evidence.units)))
    assert board.scores(shuffled, "score").tolist() == scores


def test_phase1_floor_applies_to_a_resampled_mean_and_to_non_finite_maps(project_data, tmp_path):
    board, outputs = board_and_scores(project_data, tmp_path, PHASE1, ("calibrated",))
    details = copy.deepcopy(outputs["calibrated"][0])
    details["instances"][7]["score"] = None  # what details.json holds for a non-finite s_i
    worse = copy.deepcopy(outputs["calibrated"][0])
    worse["instances"][0]["score"] = -1e12
    scores, _ = full_scores(board, PHASE1, {"nan": (details, {}), "low": (worse, {})}, "score")
    assert scores == [-1e6, -1e6]
    with pytest.raises(SubmissionError, match=r"instances\[0\] has no 'score'"):
        board.unit_rows(checked({**details, "instances": [{"id": 0, "p_ind": 0.5}]}))


def test_phase2_both_rankings_on_the_full_data_are_the_scorers(project_data, tmp_path):
    board, outputs = board_and_scores(project_data, tmp_path, PHASE2, ("dummy", "constant_half", "oracle"))
    assert list(board.rules) == ["log-likelihood", "TPR"] and "may declare a tie" in board.rules["log-likelihood"]
    assert board.design.strata == ("ood",)
    likelihood, evidence = full_scores(board, PHASE2, outputs, "log-likelihood")
    assert likelihood == [value["log_likelihood"] for _, value in outputs.values()]
    assert board.scores(evidence, "TPR").tolist() == [value["tpr_low_fpr"] for _, value in outputs.values()]
    labels = files.read_phase2_labels(project_data / "reference_data" / PHASE2)
    assert evidence.units["ood"].tolist() == labels.tolist()


def test_phase2_deployed_ranks_the_submitted_ood_scores_first(project_data, tmp_path):
    reference = project_data / "reference_data" / DEPLOYED
    labels = files.read_phase2_labels(reference)
    rng = np.random.default_rng(5)
    both = tmp_path / "both"
    both.mkdir()
    # p_ind and ood_scores that disagree: the TPR must rank ood_scores, the log-likelihood read p_ind
    (both / "result.json").write_text(json.dumps({
        "p_ind": rng.uniform(size=len(labels)).tolist(),
        "ood_scores": np.round(rng.normal(1.2 * labels, 1.0), 2).tolist()}))
    board, outputs = board_and_scores(project_data, tmp_path, DEPLOYED, ("official_format", "oracle", both))
    assert list(board.rules) == ["TPR", "log-likelihood"] and "may declare a tie" in board.rules["TPR"]
    tpr, evidence = full_scores(board, DEPLOYED, outputs, "TPR")
    assert tpr == [value["score"] for _, value in outputs.values()]
    likelihood = board.scores(evidence, "log-likelihood").tolist()
    assert likelihood[1:] == [outputs[name][1]["log_likelihood"] for name in ("oracle", "both")]
    assert likelihood[0] == pytest.approx(np.log(board.eps))  # official_format has no p_ind: the worst


def test_phase2_details_are_refused_without_labels_or_from_another_task(project_data, tmp_path):
    board, outputs = board_and_scores(project_data, tmp_path, PHASE2, ("dummy",))
    details = outputs["dummy"][0]
    with pytest.raises(ReferenceDataError, match="'task' is 'weak_lensing.phase2_deployed', not 'weak_lensing.phase2'"):
        checked({**details, "task": DEPLOYED}, task=PHASE2)
    with pytest.raises(ReferenceDataError, match="label"):
        Phase2Board(PHASE2, "seed", board.eps).unit_rows(checked(details))
    assert board.needs_reference and "tie" not in board.rules["TPR"]  # the alternative declares nothing
    with pytest.raises(ReferenceDataError, match="holds 999 maps"):
        board.unit_rows(checked({**details, "instances": details["instances"][:999]}))
    assert details["board_settings"] == {"ranking": "seed", "eps": board.eps}
    with pytest.raises(ReferenceDataError, match="'board_settings.eps' is 1e-06"):
        check_board_settings(Inputs(PHASE2, [TeamFiles("t", [checked({**details, "board_settings": {"eps": 1e-6}})])]),
                             ("ranking", "eps"), {"ranking": "seed", "eps": board.eps})
    assert details["tpr_low_fpr_from"] == "ood_scores"  # dummy submits both vectors
    older = [{"id": r["id"], "p_ind": r["p_ind"]} for r in details["instances"]]  # as scored before this version
    with pytest.raises(SubmissionError, match="'tpr_low_fpr_from'"):  # the TPR ranked vectors it lacks
        board.unit_rows(checked({**details, "instances": older}))
    with pytest.raises(SubmissionError, match="neither p_ind nor ood_score"):
        board.unit_rows(checked({**details, "instances": [{"id": r["id"]} for r in details["instances"]]}))


# ------------------------------------------------------------------------------------- properties
def official_tpr(is_ood, ood_scores) -> float:
    """The deployed score as the official scorer computes it: scikit-learn's ROC, numpy's interp."""
    from sklearn.metrics import roc_curve

    fpr, tpr, _ = roc_curve(is_ood, ood_scores)
    return float(np.mean(np.interp(np.logspace(np.log10(0.001), np.log10(0.05), 100), fpr, tpr)))


maps = st.tuples(st.integers(2, 40), st.integers(2, 40), st.integers(1, 3), st.integers(0, 2**32 - 1))


@settings(max_examples=60, deadline=None)
@given(maps)
def test_phase2_on_a_stratified_replicate_is_the_official_formula_of_the_resampled_maps(case):
    n_ind, n_ood, n_teams, seed = case
    rng = np.random.default_rng(seed)
    labels = np.r_[np.zeros(n_ind, int), np.ones(n_ood, int)]
    rng.shuffle(labels)
    board = Phase2Board(PHASE2, "seed", 1e-15, labels)
    p_ind = np.round(rng.uniform(size=(n_teams, len(labels))), 1)  # ties, and exact 0 and 1
    teams = {f"t{t}": unit_rows(board, {"task": PHASE2, "status": "scored", "instances": [
        {"id": k, "p_ind": float(p)} for k, p in enumerate(p_ind[t])]}) for t in range(n_teams)}
    evidence = stack(board, PHASE2, teams)
    # a paired replicate drawn within each class, as Design(strata=("ood",)) draws it
    index = np.concatenate([rng.choice(np.flatnonzero(labels == c), (labels == c).sum()) for c in (0, 1)])
    replicate = evidence.take(index)
    drawn, y = p_ind[:, index], labels[index]
    assert board.scores(replicate, "TPR") == pytest.approx([official_tpr(y, 1 - p) for p in drawn], abs=1e-12)
    truth_probability = np.clip(np.where(y == 0, drawn, 1 - drawn), 1e-15, 1 - 1e-15)
    assert board.scores(replicate, "log-likelihood") == pytest.approx(np.log(truth_probability).mean(axis=1),
                                                                      rel=1e-12)
    # every map drawn once, in any order, is the full data
    order = rng.permutation(len(labels))
    for rule in board.rules:
        assert board.scores(evidence.take(order), rule).tolist() == board.scores(evidence, rule).tolist()
