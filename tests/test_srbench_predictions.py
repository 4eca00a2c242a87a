"""accuracy_source: predictions (docs/srbench.md#accuracy-source, docs/srbench.md#the-predictions-file): R² from the fitted estimator's predictions, which the
ingestion records in predictions.json; simplicity and property still come from the model string."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from sklearn.linear_model import LinearRegression
from sklearn.metrics import r2_score

from codascore import runner
from codascore.errors import ReferenceDataError, SubmissionError
from codascore.registry import get_task
from codascore.srbench import files
from codascore.srbench.evaluation import score_runs
from codascore.srbench.ingest import fit_reply_problem

TASK = "srbench.synthetic"
SMALL = {"datasets": ["exact_formula_easier", "noise_easy"], "seeds": [2082, 3946], "max_rows": 40,
         "accuracy_source": "predictions"}
RUNS = [("exact_formula_easier", 2082), ("exact_formula_easier", 3946), ("noise_easy", 2082), ("noise_easy", 3946)]

# predict() is least squares on every feature; model() states only the intercept: the two R² differ.
INTERCEPT_ONLY = '''from sklearn.linear_model import LinearRegression

est = LinearRegression()


def model(est, X=None):
    return f"{est.intercept_:.6g}"
'''


@pytest.fixture(scope="module")
def root(tmp_path_factory, repo_root) -> Path:
    """The programs and srbench.synthetic's data (SMALL, accuracy_source: predictions) in a temporary
    project folder, for the runner."""
    root = tmp_path_factory.mktemp("srbench_predictions")
    for program in ("scoring_program", "ingestion_program"):
        shutil.copytree(repo_root / program, root / program)
    get_task(TASK).generate(root, get_task(TASK).load_config(SMALL), progress=lambda message: None)
    return root


@pytest.fixture(scope="module")
def intercept_only(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("code") / "intercept_only"
    folder.mkdir()
    (folder / "regressor.py").write_text(INTERCEPT_ONLY)
    return folder


def _with_source(root: Path, dest: Path, source: str) -> Path:
    """A copy of the bundle whose task.yaml files (reference and input data) set accuracy_source."""
    shutil.copytree(root, dest)
    for folder in ("reference_data", "input_data"):
        path = dest / folder / TASK / "task.yaml"
        path.write_text(yaml.safe_dump({**yaml.safe_load(path.read_text()), "accuracy_source": source},
                                       sort_keys=False))
    return dest


def _instances(result) -> dict:
    details = json.loads((result.run_dir / "scoring" / "output" / "details.json").read_text())
    return {i["id"]: i for i in details["instances"]}


def _split(root: Path, dataset: str, seed: int):
    names = json.loads((root / "input_data" / TASK / "datasets.json").read_text())["datasets"]
    features = next(d["feature_names"] for d in names if d["name"] == dataset)
    X_train, y_train = files.read_table(root / "input_data" / TASK / "train" / dataset / f"{seed}.csv", features)
    X_test, y_test = files.read_table(root / "reference_data" / TASK / "test" / dataset / f"{seed}.csv", features)
    return X_train, y_train, X_test, y_test


# --------------------------------------------------------------------------- end to end

def test_code_submission_r2_comes_from_predict_and_the_default_from_the_string(root, intercept_only, tmp_path):
    by_predict = runner.run(TASK, intercept_only, tmp_path / "predictions", root=root)
    assert by_predict.scored, by_predict.error
    by_string = runner.run(TASK, intercept_only, tmp_path / "string",
                           root=_with_source(root, tmp_path / "string_root", "string"))
    assert by_string.scored, by_string.error
    predicted, stated = _instances(by_predict), _instances(by_string)
    for dataset, seed in RUNS:
        X_train, y_train, X_test, y_test = _split(root, dataset, seed)
        fit = LinearRegression().fit(X_train, y_train)
        expected_predict = r2_score(y_test, fit.predict(X_test))
        expected_string = r2_score(y_test, np.full(y_test.size, float(f"{fit.intercept_:.6g}")))
        key = files.run_key(dataset, seed)
        assert predicted[key]["r2_test"] == pytest.approx(expected_predict, rel=1e-9)
        assert stated[key]["r2_test"] == pytest.approx(expected_string, rel=1e-9)
        assert abs(expected_predict - expected_string) > 0.1
        # simplicity comes from the string under both sources
        assert predicted[key]["simplicity"] == stated[key]["simplicity"] == -0.0
    assert by_predict.scores["mean_r2"] > by_string.scores["mean_r2"] + 0.1
    html = (by_predict.run_dir / "scoring" / "output" / "detailed_results.html").read_text()
    assert "Accuracy: R² of the fitted estimator&#x27;s predictions" in html
    written = by_predict.run_dir / "prediction" / "output"
    models = json.loads((written / files.MODELS_FILE).read_text())
    predictions = json.loads((written / files.PREDICTIONS_FILE).read_text())
    assert set(predictions) == set(models) == {files.run_key(*run) for run in RUNS}


def test_results_submission_under_predictions_fails_naming_code_submissions(root, tmp_path):
    result = runner.run(TASK, root / "sample_submissions" / TASK / "linear_regression", tmp_path / "run",
                        root=root)
    assert result.exit_code == 1
    assert not (result.run_dir / "scoring" / "output" / "scores.json").exists()
    assert "predictions.json" in result.error and "only a code submission" in result.error


def test_string_source_ignores_a_predictions_file(root, tmp_path):
    """accuracy_source: string takes R² from the string, whatever a predictions.json beside it says (the
    default is auto since the issue "Real SRBench teams scored as 2022 scored them": see
    test_srbench_real_teams.py)."""
    task = get_task(TASK)
    assert task.defaults["accuracy_source"] == "auto"
    config = task.load_config({"accuracy_source": "string"})
    reference = task.load_reference(root / "reference_data" / TASK, config)
    shutil.copy(root / "sample_submissions" / TASK / "true_formulas" / files.MODELS_FILE, tmp_path / files.MODELS_FILE)
    plain = task.score(reference, task.load_submission(tmp_path, reference, config), config)
    (tmp_path / files.PREDICTIONS_FILE).write_text(json.dumps({files.run_key(*run): [0.0] * 40 for run in RUNS}))
    submission = task.load_submission(tmp_path, reference, config)
    assert submission["predictions"] is None
    with_file = task.score(reference, submission, config)
    assert with_file.scores == plain.scores
    assert with_file.scores["mean_r2"] > 0.9  # the true formulas, not the zeros of the file


@pytest.mark.parametrize("name", ["srbench.synthetic", "srbench.qualification", "srbench.realworld"])
def test_accuracy_source_is_validated_for_every_track(name):
    task = get_task(name)
    assert task.load_config({"accuracy_source": "predictions"})["accuracy_source"] == "predictions"
    with pytest.raises(ReferenceDataError, match="accuracy_source"):
        task.load_config({"accuracy_source": "predict"})


@pytest.mark.parametrize("name", ["srbench.qualification", "srbench.realworld"])
def test_other_tracks_take_r2_from_the_ingested_predictions(name, intercept_only, project_data, tmp_path):
    task = get_task(name)
    raw = yaml.safe_load((project_data / "input_data" / name / "task.yaml").read_text())
    assert raw["accuracy_source"] == "auto"  # the generator's default: predictions for code submissions
    output = tmp_path / "output"
    task.ingest(project_data / "input_data" / name, output, intercept_only,
                task.load_config({**{k: v for k, v in raw.items() if k != "task"}, "accuracy_source": "predictions"}))
    results = {}
    for source in ("string", "predictions"):
        config = task.load_config({"accuracy_source": source})
        reference = task.load_reference(project_data / "reference_data" / name, config)
        results[source] = task.score(reference, task.load_submission(output, reference, config), config)
    r2 = {source: [i["r2_test"] for i in result.instances] for source, result in results.items()}
    assert min(r2["predictions"]) > max(r2["string"]) + 0.1  # least squares beats its own intercept
    if name == "srbench.qualification":  # predict is LinearRegression itself: a tie, not a loss
        assert results["predictions"].scores["score"] == 0.0
        assert results["string"].scores["score"] == -1.0


# --------------------------------------------------------------------------- reader

EXPECTED = {files.run_key(*run): run for run in RUNS}
N_TEST = {run: 3 for run in RUNS}


def _read(tmp_path: Path, content, runs=RUNS):
    text = content if isinstance(content, str) else json.dumps(content)
    (tmp_path / files.PREDICTIONS_FILE).write_text(text)
    return files.read_predictions(tmp_path, EXPECTED, list(runs), N_TEST)


def _valid() -> dict:
    return {files.run_key(*run): [1.0, 2.0, 3.5] for run in RUNS}


def test_reader_accepts_the_format_and_keeps_nonfinite_values(tmp_path):
    content = json.dumps(_valid())[:-1] + ', "noise_easy/3946": [1, NaN, -Infinity]}'
    predictions = _read(tmp_path, content)
    assert predictions[("exact_formula_easier", 2082)].tolist() == [1.0, 2.0, 3.5]
    assert np.isnan(predictions[("noise_easy", 3946)][1]) and predictions[("noise_easy", 3946)][2] == -math.inf


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update({"nope/1": [1.0, 2.0, 3.0]}), r"unknown run 'nope/1'"),
    (lambda d: d.pop("noise_easy/2082"), r"run 'noise_easy/2082' has a model in models.json but no predictions"),
    (lambda d: d.update({"noise_easy/2082": [1.0, 2.0]}), r"run 'noise_easy/2082': 2 predictions, expected 3"),
    (lambda d: d.update({"noise_easy/2082": {"0": 1.0}}), r"run 'noise_easy/2082': expected a list of numbers"),
    (lambda d: d.update({"noise_easy/2082": [1.0, "2.0", 3.0]}), r"run 'noise_easy/2082': index 1: \"2.0\" is not"),
    (lambda d: d.update({"noise_easy/2082": [1.0, 2.0, None]}), r"run 'noise_easy/2082': index 2: null is not"),
    (lambda d: d.update({"noise_easy/2082": [True, 2.0, 3.0]}), r"run 'noise_easy/2082': index 0: true is not"),
    (lambda d: d.update({"noise_easy/2082": [1.0, 10**309, 3.0]}),
     r"predictions.json: noise_easy/2082\[1\] = 1000.* beyond the range of a float64"),
])
def test_reader_refuses_each_malformed_class_naming_file_run_and_index(tmp_path, change, message):
    data = _valid()
    change(data)
    with pytest.raises(SubmissionError, match=message) as caught:
        _read(tmp_path, data)
    assert all(line.startswith(files.PREDICTIONS_FILE) for line in caught.value.problems)


def test_reader_refuses_predictions_for_a_run_without_model_and_non_objects(tmp_path):
    with pytest.raises(SubmissionError, match="'noise_easy/3946' has predictions but no model"):
        _read(tmp_path, _valid(), runs=RUNS[:3])
    with pytest.raises(SubmissionError, match="expected a JSON object"):
        _read(tmp_path, [[1.0, 2.0, 3.0]])
    with pytest.raises(SubmissionError, match="not valid JSON"):
        _read(tmp_path, "{")
    (tmp_path / files.PREDICTIONS_FILE).unlink()
    with pytest.raises(SubmissionError, match="missing.*only a code submission"):
        files.read_predictions(tmp_path, EXPECTED, list(RUNS), N_TEST)


def test_write_then_read_is_exact(tmp_path):
    values = {run: np.random.default_rng(1).normal(size=3) * 1e-7 + 1 / 3 for run in RUNS}
    files.write_predictions(tmp_path, values)
    back = files.read_predictions(tmp_path, EXPECTED, list(RUNS), N_TEST)
    assert all(back[run].tolist() == values[run].tolist() for run in RUNS)


# --------------------------------------------------------------------------- scoring and ingestion pieces

@pytest.mark.parametrize("rule", ["worst", "missing"])
def test_nonfinite_predictions_follow_the_nonfinite_rule(root, rule):
    task = get_task(TASK)
    config = task.load_config({"accuracy_source": "predictions", "nonfinite_predictions": rule})
    reference = task.load_reference(root / "reference_data" / TASK, config)
    models = {run: "x1" if run[0] == "noise_easy" else "x1 + x2" for run in RUNS}
    predictions = {run: reference["data"][run].y_test.copy() for run in RUNS}
    predictions[("noise_easy", 2082)][5] = math.nan
    records = {(r["dataset"], r["seed"]): r for r in score_runs(models, reference["specs"], reference["data"], 10.0,
                                                                60.0, workers=1, progress_label=None,
                                                                predictions=predictions)}
    bad = records[("noise_easy", 2082)]
    assert bad["r2_test"] is None and "predictions.json" in bad["reason"] and "row 5: nan" in bad["reason"]
    assert records[("noise_easy", 3946)]["r2_test"] == 1.0  # the perfect predictions, not the string x1
    submission = {"models": models, "invalid": {}, "warnings": [], "predictions": predictions}
    details = task.score(reference, submission, config).details
    noise = next(r for r in details["per_dataset"] if r["dataset"] == "noise_easy")
    # worst: the -inf run pulls the median of two runs to -inf (shown as null); missing: only the perfect run
    assert noise["r2"] == (None if rule == "worst" else 1.0)


def test_score_runs_refuses_models_without_predictions(root):
    task = get_task(TASK)
    config = task.load_config({})
    reference = task.load_reference(root / "reference_data" / TASK, config)
    with pytest.raises(ValueError, match="no y_pred"):
        score_runs({RUNS[0]: "x1"}, reference["specs"], reference["data"], 10.0, 60.0, workers=1,
                   progress_label=None, predictions={})


@pytest.mark.parametrize("value, n_test, ok", [
    ({"model": "x1", "predictions": [1.0, 2]}, 2, True),
    ({"model": "x1", "predictions": None}, None, True),
    ({"model": "x1", "predictions": None}, 2, False),
    ({"model": "x1", "predictions": [1.0]}, 2, False),
    ({"model": "x1", "predictions": [1.0, "2"]}, 2, False),
    ({"model": "x1", "predictions": [1.0, True]}, 2, False),
    ({"model": 3, "predictions": [1.0, 2.0]}, 2, False),
    (["x1", [1.0, 2.0]], 2, False),
])
def test_the_parent_checks_each_worker_reply(value, n_test, ok):
    assert (fit_reply_problem(value, n_test) is None) == ok


@pytest.mark.parametrize("predict, message", [
    ("import time\n        time.sleep(600)", "time limit"),
    ("return [[1.0, 2.0]] * len(X)", "est.predict returned shape"),
])
def test_predict_runs_in_the_fit_job_under_its_time_limit(root, tmp_path, predict, message):
    folder = tmp_path / "code"
    folder.mkdir()
    (folder / "regressor.py").write_text(
        "from sklearn.linear_model import LinearRegression\n\n\n"
        "class Regressor(LinearRegression):\n"
        f"    def predict(self, X):\n        {predict}\n\n\n"
        "est = Regressor()\n\n\ndef model(est, X=None):\n    return 'x1'\n")
    task = get_task(TASK)
    config = task.load_config({"fit_time_limit": 2.0, "accuracy_source": "predictions"})
    with pytest.raises(SubmissionError, match=message):
        task.ingest(root / "input_data" / TASK, tmp_path / "out", folder, config)
    assert not (tmp_path / "out" / files.PREDICTIONS_FILE).exists()


def test_string_ingestion_never_calls_predict(root, tmp_path):
    folder = tmp_path / "code"
    folder.mkdir()
    (folder / "regressor.py").write_text(
        "from sklearn.linear_model import LinearRegression\n\n\n"
        "class Regressor(LinearRegression):\n"
        "    def predict(self, X):\n        raise RuntimeError('predict called')\n\n\n"
        "est = Regressor()\n\n\ndef model(est, X=None):\n    return 'x1'\n")
    task = get_task(TASK)
    task.ingest(root / "input_data" / TASK, tmp_path / "out", folder, task.load_config({"accuracy_source": "string"}))
    assert set(json.loads((tmp_path / "out" / files.MODELS_FILE).read_text())) == {files.run_key(*run) for run in RUNS}
    assert not (tmp_path / "out" / files.PREDICTIONS_FILE).exists()


def test_missing_test_features_under_auto_fall_back_to_the_strings(root, intercept_only, tmp_path, capfd):
    inputs = tmp_path / "input"
    shutil.copytree(root / "input_data" / TASK, inputs)
    (inputs / "test" / "noise_easy" / "3946.csv").unlink()
    task = get_task(TASK)
    task.ingest(inputs, tmp_path / "out", intercept_only, task.load_config({}))
    assert "test/noise_easy/3946.csv" in capfd.readouterr().err
    assert (tmp_path / "out" / files.MODELS_FILE).exists()
    assert not (tmp_path / "out" / files.PREDICTIONS_FILE).exists()


def test_missing_test_features_under_predictions_is_an_organiser_error(root, intercept_only, tmp_path):
    inputs = tmp_path / "input"
    shutil.copytree(root / "input_data" / TASK, inputs)
    (inputs / "test" / "noise_easy" / "3946.csv").unlink()
    task = get_task(TASK)
    with pytest.raises(ReferenceDataError, match="test/noise_easy/3946.csv"):
        task.ingest(inputs, tmp_path / "out", intercept_only, task.load_config({"accuracy_source": "predictions"}))
