"""srbench.synthetic end to end through the local runner (a reduced generated bundle: 5 datasets x 2
seeds, so the suite stays short; the full 16 x 10 is exercised by make demo and the benchmark)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from codascore import runner
from codascore.errors import ReferenceDataError, SubmissionError
from codascore.registry import get_task
from codascore.srbench import files

TASK = "srbench.synthetic"
SMALL = {"datasets": ["exact_formula_easier", "featureselection_easy", "localopt_easy", "extrapolation_easy",
                      "noise_easy"], "seeds": [2082, 3946], "max_rows": 40}


@pytest.fixture(scope="module")
def root(tmp_path_factory, repo_root) -> Path:
    """The programs and srbench.synthetic's data (SMALL) in a temporary project folder, for the runner."""
    root = tmp_path_factory.mktemp("srbench")
    for program in ("scoring_program", "ingestion_program"):
        shutil.copytree(repo_root / program, root / program)
    get_task(TASK).generate(root, get_task(TASK).load_config(SMALL), progress=lambda message: None)
    return root


def _run(root: Path, sample: str, tmp_path: Path):
    return runner.run(TASK, root / "sample_submissions" / TASK / sample, tmp_path / sample, root=root)


def test_generation_is_deterministic(root, tmp_path):
    task = get_task(TASK)
    task.generate(tmp_path, task.load_config(SMALL), progress=lambda message: None)
    for folder in ("reference_data", "input_data", "sample_submissions"):
        for path in sorted((root / folder).rglob("*")):
            if path.is_file():
                assert path.read_bytes() == (tmp_path / path.relative_to(root)).read_bytes(), path


def test_true_formulas_score_like_the_oracle_of_the_pool(root, tmp_path):
    result = _run(root, "true_formulas", tmp_path)
    assert result.scored, result.error
    details = json.loads((result.run_dir / "scoring" / "output" / "details.json").read_text())
    assert result.scores["score"] == pytest.approx(details["pool"]["oracle"])
    assert result.scores["n_failed_runs"] == 0
    assert list(result.scores)[0] == "score" and all(len(k) <= 36 for k in result.scores)
    ranks = {r["dataset"]: r for r in details["per_dataset"]}
    assert ranks["exact_formula_easier"]["property"] == 1.0  # the formula is recovered
    assert ranks["featureselection_easy"]["property"] == 1.0  # no irrelevant feature is used
    html = (result.run_dir / "scoring" / "output" / "detailed_results.html").read_text()
    assert "Rank against the reference pool" in html and "data:image/png;base64" in html
    assert "Accuracy against complexity" in html and "How to read this page" in html


def test_invalid_injection_fails_with_exit_1_and_runs_nothing(root, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = _run(root, "invalid_injection", tmp_path)
    assert result.exit_code == 1
    assert not (result.run_dir / "scoring" / "output" / "scores.json").exists()
    assert not list(tmp_path.rglob("SENTINEL"))


def test_code_submission_equals_its_results_submission(root, tmp_path):
    code = _run(root, "code_linear_regression", tmp_path)
    assert code.scored, code.error
    written = json.loads((code.run_dir / "prediction" / "output" / files.MODELS_FILE).read_text())
    sample = json.loads((root / "sample_submissions" / TASK / "linear_regression" / files.MODELS_FILE).read_text())
    assert written == sample
    details = json.loads((code.run_dir / "scoring" / "output" / "details.json").read_text())
    assert details["accuracy_source"] == "predictions"  # the default auto: R² from est.predict, as in 2022
    # with R² from the strings (accuracy_source: string), the code submission scores as its results do
    forced = tmp_path / "string_root"
    shutil.copytree(root, forced)
    for folder in ("reference_data", "input_data"):
        path = forced / folder / TASK / "task.yaml"
        path.write_text(path.read_text().replace("accuracy_source: auto", "accuracy_source: string"))
    by_string = runner.run(TASK, root / "sample_submissions" / TASK / "code_linear_regression",
                           tmp_path / "string", root=forced)
    results = _run(root, "linear_regression", tmp_path)
    assert results.scores == by_string.scores


def test_nonfinite_models_are_worst_and_missing_runs_failed(root, tmp_path):
    models = json.loads((root / "sample_submissions" / TASK / "true_formulas" / files.MODELS_FILE).read_text())
    models["noise_easy/2082"] = "x1**10**10"  # non-finite predictions: worst accuracy, with a reason
    models.pop("noise_easy/3946")  # a missing run
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / files.MODELS_FILE).write_text(json.dumps(models))
    result = runner.run(TASK, folder, tmp_path / "run", root=root)
    assert result.scored, result.error
    details = json.loads((result.run_dir / "scoring" / "output" / "details.json").read_text())
    run = {i["id"]: i for i in details["instances"]}
    assert "not finite" in run["noise_easy/2082"]["reason"]
    assert run["noise_easy/3946"]["failed"] == "no model submitted"
    assert result.scores["n_failed_runs"] == 2
    noise = {r["dataset"]: r for r in details["per_dataset"]}["noise_easy"]
    assert noise["r2"] is None  # -inf: the worst accuracy (only run left is the non-finite one)
    assert math.isfinite(result.scores["mean_r2"])


def test_a_constant_model_far_off_is_scored_with_every_value_storable(root, tmp_path):
    """A valid but very bad submission is always scored (exit 0): values Codabench cannot store are
    clipped to ±(1e10 - 1), and the page and details.json name the true values."""
    models = json.loads((root / "sample_submissions" / TASK / "true_formulas" / files.MODELS_FILE).read_text())
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / files.MODELS_FILE).write_text(json.dumps({run: "10000000.0" for run in models}))
    result = runner.run(TASK, folder, tmp_path / "run", root=root)
    assert result.exit_code == 0 and result.scored, result.error
    assert all(math.isfinite(v) and abs(v) < 1e10 for v in result.scores.values())
    output = result.run_dir / "scoring" / "output"
    clipped = json.loads((output / "details.json").read_text())["clipped_scores"]
    assert "mean_property" in clipped and clipped["mean_property"] < -1e10
    assert result.scores["mean_property"] == -(1e10 - 1)
    page = (output / "detailed_results.html").read_text()
    assert "mean_property" in page and "clipped to -9999999999" in page


@pytest.mark.parametrize("content, message", [
    ("[1, 2]", r"item \[0\]"),
    ("{\"nope/1\": \"x1\"}", "unknown run"),
    ("{\"exact_formula_easier/2082\": 3}", "must be a string"),
    ("{\"exact_formula_easier/2082\": \"x1 ^ 2\"}", r"use \*\* for powers"),
    ("{", "not valid JSON"),
])
def test_malformed_models_json_is_refused_with_the_key_named(root, tmp_path, content, message):
    task = get_task(TASK)
    config = task.load_config({})
    reference = task.load_reference(root / "reference_data" / TASK, config)
    (tmp_path / files.MODELS_FILE).write_text(content)

    with pytest.raises(SubmissionError, match=message):
        task.load_submission(tmp_path, reference, config)


def test_bad_configuration_is_an_organiser_error():

    with pytest.raises(ReferenceDataError, match="aggregate"):
        get_task(TASK).load_config({"aggregate": "max"})
    with pytest.raises(ReferenceDataError, match="unknown parameter"):
        get_task(TASK).load_config({"typo": 1})


def test_fail_run_mode_scores_the_rest_and_escapes_the_quoted_token(root, tmp_path):
    task = get_task(TASK)
    config = task.load_config({"invalid_models": "fail_run"})
    reference = task.load_reference(root / "reference_data" / TASK, config)
    models = json.loads((root / "sample_submissions" / TASK / "true_formulas" / files.MODELS_FILE).read_text())
    models["exact_formula_easier/2082"] = "x1 + '<script>alert(1)</script>'"
    (tmp_path / files.MODELS_FILE).write_text(json.dumps(models))
    submission = task.load_submission(tmp_path, reference, config)
    result = task.score(reference, submission, config)
    assert result.scores["n_failed_runs"] == 1
    html = "".join(section.html for section in task.report(result, reference, submission, config))
    assert "<script>" not in html and "&lt;script&gt;" in html
