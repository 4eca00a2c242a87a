"""Weak lensing Phase 2 through the scoring program, run as a subprocess as the worker runs it: every
invalid-input class exits 1 naming file, field and index; valid submissions give the metrics' values."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from codascore.competition import project_root
from codascore.weak_lensing import ood_score, tpr_at_low_fpr

SCORE_PY = project_root() / "scoring_program" / "score.py"
IS_OOD = [0, 1, 0, 0, 1, 0, 1, 0]
P_IND = [0.9, 0.2, 0.7, 1.0, 0.0, 0.6, 0.4, 0.8]


def score(tmp_path: Path, result=None, raw: str | None = None, is_ood=IS_OOD, config: dict | None = None):
    """Lay out input/ref (Phase 2 labels, 1 = OoD) and input/res, run score.py; return
    (exit code, stderr, output folder)."""
    ref, res = tmp_path / "input" / "ref", tmp_path / "input" / "res"
    ref.mkdir(parents=True)
    res.mkdir(parents=True)
    np.save(ref / "label_test_phase2.npy", np.array(is_ood, dtype=np.int8))
    (ref / "task.yaml").write_text(yaml.safe_dump({"task": "weak_lensing.phase2", **(config or {})}))
    (res / "metadata").write_text("exitCode: null\ningestionExitCode: 0\n")
    if raw is not None or result is not None:
        (res / "result.json").write_text(raw if raw is not None else json.dumps(result))
    out = tmp_path / "output"
    proc = subprocess.run([sys.executable, str(SCORE_PY), str(tmp_path / "input"), str(out)],
                          cwd=SCORE_PY.parent, capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stderr, out


def replaced(field: str, index: int, value):
    values = list(P_IND)
    values[index] = value
    return {field: values} if field == "p_ind" else {"p_ind": P_IND, field: values}


INVALID = {
    "missing file": (None, None, ["no result file found", "result.json"]),
    "unreadable JSON": (None, '{"p_ind": [0.5,', ["result.json", "not valid JSON"]),
    "not an object": (None, "[0.5, 0.5]", ["result.json", "JSON object"]),
    "missing p_ind": ({"probabilities": P_IND}, None, ["missing key 'p_ind'"]),
    "official format only": ({"ood_scores": P_IND}, None, ["missing key 'p_ind'", "ood_scores"]),
    "p_ind not a list": ({"p_ind": 0.5}, None, ["'p_ind' must be a list", "float"]),
    "wrong N": ({"p_ind": P_IND[:5]}, None, ["'p_ind' has 5 values, expected 8"]),
    "non-number": (replaced("p_ind", 3, "0.5"), None, ["p_ind[3]", "not a number"]),
    "boolean": (replaced("p_ind", 2, True), None, ["p_ind[2]", "true", "not a number"]),
    "null": (replaced("p_ind", 6, None), None, ["p_ind[6]", "null"]),
    "above one": (replaced("p_ind", 5, 1.2), None, ["p_ind[5]", "1.2", "outside [0, 1]"]),
    "negative": (replaced("p_ind", 0, -1e-9), None, ["p_ind[0]", "outside [0, 1]"]),
    "NaN": (None, json.dumps({"p_ind": P_IND}).replace("0.6", "NaN"), ["p_ind[5]", "nan", "finite"]),
    "infinity": (None, json.dumps({"p_ind": P_IND}).replace("0.4", "-Infinity"), ["p_ind[6]", "-inf"]),
    "ood_scores NaN": (None, json.dumps({"p_ind": P_IND, "ood_scores": [1.5] * 8}).replace("1.5]", "NaN]"),
                       ["ood_scores[7]", "nan"]),
    "ood_scores wrong N": ({"p_ind": P_IND, "ood_scores": [0.1] * 9}, None, ["'ood_scores' has 9 values"]),
    "ood_scores non-number": (replaced("ood_scores", 1, "high"), None, ["ood_scores[1]", "not a number"]),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_submission_exits_1_naming_file_field_and_index(tmp_path, case):
    result, raw, fragments = INVALID[case]
    code, stderr, out = score(tmp_path, result=result, raw=raw)
    assert code == 1, stderr
    assert not (out / "scores.json").exists()
    errors = [line for line in stderr.splitlines() if line.startswith("ERROR:")]
    for fragment in fragments:
        assert any(fragment in line for line in errors), (fragment, stderr)
    assert json.loads((out / "details.json").read_text())["status"] == "invalid"


def test_every_problem_is_listed(tmp_path):
    code, stderr, _ = score(tmp_path, result={"p_ind": [2.0] * 8, "ood_scores": ["x"] * 8})
    assert code == 1
    assert len([line for line in stderr.splitlines() if "result.json:" in line]) == 16


def test_scores_equal_the_metrics_with_tpr_from_one_minus_p_ind(tmp_path):
    code, stderr, out = score(tmp_path, result={"p_ind": P_IND})
    assert code == 0, stderr
    scores = json.loads((out / "scores.json").read_text())
    is_ood = np.array(IS_OOD)
    assert scores["score"] == pytest.approx(ood_score(1 - is_ood, P_IND), rel=1e-12)
    assert scores["tpr_low_fpr"] == pytest.approx(tpr_at_low_fpr(is_ood, 1 - np.array(P_IND)), rel=1e-12)
    # Exactly 0 and 1 are allowed and clipped: the score stays finite.
    assert math.isfinite(scores["score"])
    details = json.loads((out / "details.json").read_text())
    assert details["eps"] == 1e-15 and details["tpr_low_fpr_from"] == "1 - p_ind"


def test_submitted_ood_scores_rank_the_secondary_metric(tmp_path):
    inverted = [float(v) for v in np.array(IS_OOD) * -1.0]  # ranks every OoD map lowest
    code, stderr, out = score(tmp_path, result={"p_ind": P_IND, "ood_scores": inverted})
    assert code == 0, stderr
    scores = json.loads((out / "scores.json").read_text())
    assert scores["tpr_low_fpr"] == 0.0
    assert scores["score"] == pytest.approx(ood_score(1 - np.array(IS_OOD), P_IND), rel=1e-12)


def test_eps_comes_from_task_yaml(tmp_path):
    code, stderr, out = score(tmp_path, result={"p_ind": [1.0 - v for v in IS_OOD][:7] + [0.0]},
                              config={"eps": 1e-6})
    assert code == 0, stderr
    expected = math.log(1e-6) / 8 + 7 * math.log(1 - 1e-6) / 8
    assert json.loads((out / "scores.json").read_text())["score"] == pytest.approx(expected, rel=1e-9)


def test_eps_written_without_a_dot_in_task_yaml_is_read_as_a_number(tmp_path):
    ref = tmp_path / "input" / "ref"
    score(tmp_path, result={"p_ind": P_IND})  # lays out input/
    (ref / "task.yaml").write_text("task: weak_lensing.phase2\neps: 1e-6\n")  # a string for YAML 1.1
    proc = subprocess.run([sys.executable, str(SCORE_PY), str(tmp_path / "input"), str(tmp_path / "again")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "again" / "details.json").read_text())["eps"] == 1e-6


def test_bad_eps_is_an_organiser_error(tmp_path):
    code, stderr, out = score(tmp_path, result={"p_ind": P_IND}, config={"eps": 0.7})
    assert code == 2 and "eps" in stderr and not (out / "scores.json").exists()


def test_single_class_reference_omits_tpr_with_a_warning(tmp_path):
    code, stderr, out = score(tmp_path, result={"p_ind": P_IND}, is_ood=[0] * 8)
    assert code == 0, stderr
    scores = json.loads((out / "scores.json").read_text())
    assert set(scores) == {"score", "log_likelihood"} and "single class" in stderr
    assert scores["score"] == scores["log_likelihood"]


def test_report_has_figures_and_reveals_no_per_instance_truth(tmp_path):
    rng = np.random.default_rng(0)
    is_ood = (rng.uniform(size=400) < 0.3).astype(int)
    p_ind = np.clip(rng.normal(0.8 - 0.5 * is_ood, 0.2), 0, 1)
    code, stderr, out = score(tmp_path, result={"p_ind": p_ind.tolist()}, is_ood=is_ood.tolist())
    assert code == 0, stderr
    page = (out / "detailed_results.html").read_text()
    assert page.count("data:image/png;base64,") == 3 and "ROC curve" in page and "reliability" in page
    details = json.loads((out / "details.json").read_text())
    assert all(set(record) == {"id", "p_ind"} for record in details["instances"])
    assert "is_ood" not in stderr and str(is_ood.tolist()[:20])[1:-1] not in stderr + page


def official_tpr_at_low_fpr(is_ood, ood_scores) -> float:
    """The deployed Phase 2 score as the official scoring program documents it (FAIR-Universe/
    Cosmology_Challenge scoring_program/score.py, _score_phase2): scikit-learn's ROC curve, numpy's
    interpolation at 100 FPRs log-spaced from 0.001 to 0.05, the mean."""
    from sklearn.metrics import roc_curve

    fpr, tpr, _ = roc_curve(is_ood, ood_scores)
    return float(np.mean(np.interp(np.logspace(np.log10(0.001), np.log10(0.05), 100), fpr, tpr)))


def deployed_case(n=3000, seed=7):
    rng = np.random.default_rng(seed)
    is_ood = (rng.uniform(size=n) < 0.3).astype(int)
    # rounded, so that tied scores make diagonal ROC segments as real submissions' do
    ood_scores = np.round(rng.normal(1.5 * is_ood, 1.0), 2)
    return is_ood, ood_scores


def test_deployed_ranking_scores_the_official_format_with_the_official_formula(tmp_path):
    is_ood, ood_scores = deployed_case()
    code, stderr, out = score(tmp_path, result={"ood_scores": ood_scores.tolist()}, is_ood=is_ood.tolist(),
                              config={"ranking": "deployed"})
    assert code == 0, stderr
    scores = json.loads((out / "scores.json").read_text())
    expected = official_tpr_at_low_fpr(is_ood, ood_scores)
    assert 0.05 < expected < 0.95
    assert abs(scores["score"] - expected) <= 1e-12 and scores["tpr_low_fpr"] == scores["score"]
    assert "log_likelihood" not in scores  # no p_ind, no log-likelihood
    assert json.loads((out / "details.json").read_text())["ranking"] == "deployed"


def test_deployed_ranking_reports_the_log_likelihood_of_p_ind_as_an_extra_column(tmp_path):
    is_ood, ood_scores = deployed_case(400, seed=3)
    p_ind = 1 / (1 + np.exp(ood_scores - 0.75))
    result = {"p_ind": p_ind.tolist(), "ood_scores": ood_scores.tolist()}
    code, stderr, out = score(tmp_path / "deployed", result=result, is_ood=is_ood.tolist(),
                              config={"ranking": "deployed"})
    assert code == 0, stderr
    deployed = json.loads((out / "scores.json").read_text())
    assert abs(deployed["score"] - official_tpr_at_low_fpr(is_ood, ood_scores)) <= 1e-12
    assert deployed["log_likelihood"] == pytest.approx(ood_score(1 - is_ood, p_ind), rel=1e-12)
    code, stderr, out = score(tmp_path / "seed", result=result, is_ood=is_ood.tolist())
    seed = json.loads((out / "scores.json").read_text())
    assert seed["score"] == seed["log_likelihood"] == deployed["log_likelihood"]
    assert seed["tpr_low_fpr"] == deployed["score"]


@pytest.mark.parametrize("result, config, code_expected, words", [
    ({"scores": [0.5] * 8}, {"ranking": "deployed"}, 1, ["missing key 'ood_scores'", "p_ind"]),
    ({"ood_scores": [0.5] * 7}, {"ranking": "deployed"}, 1, ["'ood_scores' has 7 values, expected 8"]),
    ({"ood_scores": [0.5] * 8}, {"ranking": "official"}, 2, ["ranking must be one of", "official"]),
])
def test_deployed_ranking_refusals(tmp_path, result, config, code_expected, words):
    code, stderr, out = score(tmp_path, result=result, config=config)
    assert code == code_expected and not (out / "scores.json").exists()
    for word in words:
        assert word in stderr


def test_deployed_ranking_needs_both_classes_in_the_reference(tmp_path):
    code, stderr, _ = score(tmp_path, result={"ood_scores": P_IND}, is_ood=[1] * 8,
                            config={"ranking": "deployed"})
    assert code == 2 and "needs both classes" in stderr
