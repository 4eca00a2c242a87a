"""Weak lensing code submissions: the ingestion step runs model.py under the time limit and writes the
result.json a result submission would hold; end to end through the local runner, every sample
submission of both phases behaves as its name says and the baseline beats the dummy."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from codascore import runner
from codascore.errors import SubmissionError
from codascore.registry import get_task
from codascore.weak_lensing.ingest import result_from_predictions

PHASES = ("weak_lensing.phase1", "weak_lensing.phase2")


@pytest.fixture(scope="module")
def small_inputs(tmp_path_factory) -> dict[str, Path]:
    """input_data/<task>/ of both phases at a small size."""
    root = tmp_path_factory.mktemp("data")
    for name in PHASES:
        task = get_task(name)
        config = {**task.defaults, "n_test": 40, "n_train_cosmologies": 8, "n_train_realisations": 2,
                  "time_limit": 60.0}
        task.generate(root, config, progress=lambda message: None)
    return {name: root / "input_data" / name for name in PHASES}


def model_folder(tmp_path: Path, source: str) -> Path:
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "model.py").write_text(textwrap.dedent(source))
    return folder


def ingest(name: str, input_dir: Path, submission: Path, out: Path, **config) -> dict:
    task = get_task(name)
    out.mkdir(exist_ok=True)
    task.ingest(input_dir, out, submission, task.load_config({**{"time_limit": 60.0}, **config}))
    return json.loads((out / "result.json").read_text()) if (out / "result.json").exists() else {}


def test_model_gets_training_and_test_maps_and_its_answer_is_written(tmp_path, small_inputs):
    submission = model_folder(tmp_path, """
        import numpy as np
        from helper import constant  # the participant's own module beside model.py

        class Model:
            def fit(self, train_maps, train_labels):
                assert train_maps.dtype == np.float32 and train_maps.shape == (16, 48, 48)
                assert train_labels.shape == (16, 5)
                self.centre = train_labels[:, :2].mean(axis=0)

            def predict(self, maps):
                n = len(maps)
                return np.tile(self.centre, (n, 1)), np.full((n, 2), constant)
        """)
    (submission / "helper.py").write_text("constant = 0.05\n")
    result = ingest("weak_lensing.phase1", small_inputs["weak_lensing.phase1"], submission, tmp_path / "out")
    assert set(result) == {"means", "errorbars"}
    assert np.array(result["means"]).shape == (40, 2) and result["errorbars"][0] == [0.05, 0.05]


def test_model_in_a_wrapper_folder_is_found(tmp_path, small_inputs):
    wrapper = tmp_path / "submission" / "my_model"
    wrapper.mkdir(parents=True)
    (wrapper / "model.py").write_text("class Model:\n    def predict(self, maps):\n        return [0.5] * len(maps)\n")
    result = ingest("weak_lensing.phase2", small_inputs["weak_lensing.phase2"], tmp_path / "submission",
                    tmp_path / "out")
    assert result == {"p_ind": [0.5] * 40}


def test_results_submission_is_left_alone(tmp_path, small_inputs):
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "result.json").write_text('{"p_ind": []}')
    out = tmp_path / "out"
    assert ingest("weak_lensing.phase2", small_inputs["weak_lensing.phase2"], submission, out) == {}
    assert list(out.iterdir()) == []


def test_model_without_fit_and_phase2_keys(tmp_path, small_inputs):
    submission = model_folder(tmp_path, """
        class Model:
            def predict(self, maps):
                return {"p_ind": [0.25] * len(maps), "ood_scores": list(range(len(maps))), "notes": "x"}
        """)
    result = ingest("weak_lensing.phase2", small_inputs["weak_lensing.phase2"], submission, tmp_path / "out")
    assert set(result) == {"p_ind", "ood_scores"} and result["p_ind"][0] == 0.25


def test_failing_model_raises_with_the_participants_traceback(tmp_path, small_inputs):
    submission = model_folder(tmp_path, """
        class Model:
            def predict(self, maps):
                return helper_that_does_not_exist(maps)
        """)
    with pytest.raises(SubmissionError) as caught:
        ingest("weak_lensing.phase1", small_inputs["weak_lensing.phase1"], submission, tmp_path / "out")
    text = "\n".join(caught.value.problems)
    assert "NameError" in text and "helper_that_does_not_exist" in text and "model.py" in text
    assert not (tmp_path / "out" / "result.json").exists()


def test_time_limit_stops_the_model(tmp_path, small_inputs):
    submission = model_folder(tmp_path, """
        import time

        class Model:
            def fit(self, train_maps, train_labels):
                time.sleep(60)
        """)
    with pytest.raises(SubmissionError, match="time limit of 1 s"):
        ingest("weak_lensing.phase2", small_inputs["weak_lensing.phase2"], submission, tmp_path / "out",
               time_limit=1.0)


@pytest.mark.parametrize("predictions, required, optional, expected", [
    ({"means": [[1, 2]], "errorbars": [[3, 4]], "p_ind": [0.5]}, ("means", "errorbars"), (),
     {"means": [[1.0, 2.0]], "errorbars": [[3.0, 4.0]]}),
    (([[1, 2]], [[3, 4]]), ("means", "errorbars"), (), {"means": [[1.0, 2.0]], "errorbars": [[3.0, 4.0]]}),
    (np.array([0.1, 0.9]), ("p_ind",), ("ood_scores",), {"p_ind": [0.1, 0.9]}),
    ([0.1, 0.9], ("p_ind",), ("ood_scores",), {"p_ind": [0.1, 0.9]}),
    ((np.array([0.1]), np.array([3.0])), ("p_ind",), ("ood_scores",), {"p_ind": [0.1], "ood_scores": [3.0]}),
    ((np.array([0.1, 0.2]), [3.0]), ("p_ind",), ("ood_scores",), {"p_ind": [0.1, 0.2], "ood_scores": [3.0]}),
])
def test_accepted_shapes_of_answer(predictions, required, optional, expected):
    assert result_from_predictions(predictions, required, optional) == expected


@pytest.mark.parametrize("predictions, message", [
    ({"means": [[1, 2]]}, "without \\['errorbars'\\]"),
    (None, "NoneType"),
    ({"means": [["a", 2]], "errorbars": [[1, 2]]}, "'means' is not an array of numbers"),
    (([1], [2], [3]), "3 values"),
])
def test_wrong_shapes_of_answer_are_explained(predictions, message):
    with pytest.raises(TypeError, match=message):
        result_from_predictions(predictions, ("means", "errorbars"), ())


# --------------------------------------------------------------------------- end to end (local runner)

#: The samples run end to end here (the demo runs all of them; the others are checked in-process below).
END_TO_END = ("code_baseline", "dummy", "broken_model")


@pytest.fixture(scope="module")
def sample_runs(project_data, tmp_path_factory) -> dict[tuple[str, str], runner.RunResult]:
    """Sample submissions of both phases through the local runner, as the demo runs them."""
    out = tmp_path_factory.mktemp("runs")
    return {(name, sample): runner.run(name, project_data / "sample_submissions" / name / sample,
                                       out / name / sample, root=project_data)
            for name in PHASES for sample in END_TO_END}


def in_process_scores(project_data: Path, name: str, folder: Path) -> dict:
    """Scores of a result submission computed in this process (SubmissionError when invalid)."""
    task = get_task(name)
    config = task.load_config({})
    reference = task.load_reference(project_data / "reference_data" / name, config)
    return task.score(reference, task.load_submission(folder, reference, config), config).scores


@pytest.fixture(scope="module")
def scores(sample_runs, project_data) -> dict[str, dict[str, dict]]:
    """phase -> sample -> scores: end-to-end runs, and the other result samples in process."""
    table = {name: {} for name in PHASES}
    for (name, sample), result in sample_runs.items():
        table[name][sample] = result.scores
    for name in PHASES:
        for folder in sorted((project_data / "sample_submissions" / name).iterdir()):
            if folder.name in END_TO_END:
                continue
            if folder.name.startswith("invalid"):
                with pytest.raises(SubmissionError):
                    in_process_scores(project_data, name, folder)
            else:
                table[name][folder.name] = in_process_scores(project_data, name, folder)
    return table


def test_every_sample_behaves_as_its_name_says(sample_runs, scores):
    for (name, sample), result in sample_runs.items():
        if sample.startswith("broken"):
            assert result.exit_code == 1 and not result.scores and not result.violations, (name, sample)
        else:
            assert result.scored, (name, sample, result.violations, result.error)
    assert {"calibrated", "overconfident"} <= set(scores["weak_lensing.phase1"])
    assert {"oracle", "constant_half"} <= set(scores["weak_lensing.phase2"])


def test_baseline_beats_the_dummy_and_is_calibrated_in_phase1(scores):
    phase1 = scores["weak_lensing.phase1"]
    assert phase1["code_baseline"]["score"] > phase1["dummy"]["score"]
    assert 0.60 <= phase1["code_baseline"]["avg_coverage"] <= 0.76
    assert phase1["calibrated"]["score"] > phase1["overconfident"]["score"]


def test_baseline_beats_the_dummy_and_constant_in_phase2(scores):
    phase2 = scores["weak_lensing.phase2"]
    assert phase2["oracle"]["score"] > phase2["code_baseline"]["score"] > phase2["constant_half"]["score"]
    assert phase2["constant_half"]["score"] == pytest.approx(np.log(0.5), rel=1e-12)
    assert phase2["code_baseline"]["score"] > phase2["dummy"]["score"]
    assert phase2["code_baseline"]["tpr_low_fpr"] > 5 * phase2["dummy"]["tpr_low_fpr"]
    assert phase2["oracle"]["tpr_low_fpr"] == 1.0


def test_code_submission_result_is_what_a_result_submission_holds(sample_runs, project_data):
    """The result.json the ingestion step wrote, scored as a result submission, gives the same scores."""
    for name in PHASES:
        baseline = sample_runs[name, "code_baseline"]
        written = baseline.run_dir / "prediction" / "output"
        assert in_process_scores(project_data, name, written) == pytest.approx(baseline.scores, rel=1e-12)


def test_broken_model_fails_with_its_traceback_shown(sample_runs):
    for name in PHASES:
        result = sample_runs[name, "broken_model"]
        assert "your code failed in the ingestion step" in result.error
        assert "model.py" in result.error and "ValueError: cannot reshape" in result.error
        page = (result.run_dir / "scoring" / "output" / "detailed_results.html").read_text()
        assert "cannot reshape" in page and "nothing was scored" in page


# A model written to the official repository's ingestion (FAIR-Universe/Cosmology_Challenge
# ingestion_program/ingestion.py): Model() without arguments, fit() without data, predict({"data": maps})
# returning (means, errorbars), which the official ingestion unpacks.
OFFICIAL_INTERFACE_MODEL = """
    import numpy as np

    class Model:
        def __init__(self):
            self.fitted = False

        def fit(self):
            self.fitted = True  # an official model ships what it learnt; no data is passed

        def predict(self, test_data):
            assert self.fitted and set(test_data) == {"data"}
            maps = test_data["data"]
            assert maps.ndim == 3 and maps.dtype == np.float32
            n = len(maps)
            return np.tile([0.3, 0.8], (n, 1)), np.full((n, 2), 0.1)
    """


def test_official_interface_model_runs_through_codascore_run(project_data, tmp_path, capsys):
    from codascore.cli import main

    submission = model_folder(tmp_path, OFFICIAL_INTERFACE_MODEL)
    code = main(["run", "weak_lensing.phase1", str(submission), "--root", str(project_data),
                 "--out", str(tmp_path / "run")])
    output = capsys.readouterr().out
    assert code == 0, output
    scores = json.loads(next((tmp_path / "run").rglob("scores.json")).read_text())
    assert set(scores) == {"score", "avg_coverage", "R_squared", "MSE"}
    truth = np.load(project_data / "reference_data" / "weak_lensing.phase1" / "label_test.npy")[:, :2]
    means, sigma = np.tile([0.3, 0.8], (len(truth), 1)), 0.1
    expected = -np.mean(np.sum((means - truth) ** 2 / sigma ** 2 + np.log(sigma ** 2)
                               + 1000 * (means - truth) ** 2, axis=1))
    assert scores["score"] == pytest.approx(expected, rel=1e-9)
    result = json.loads(next((tmp_path / "run").rglob("result.json")).read_text())
    assert np.array(result["means"]).shape == truth.shape


def test_official_interface_is_told_apart_by_fit(tmp_path, small_inputs):
    """fit(self) is the official interface; fit(self, *args) and fit with defaults take the project's
    arguments; a Phase 2 deployed model may return its ood_scores alone."""
    submission = model_folder(tmp_path, """
        import numpy as np

        class Model:
            def fit(self, train_maps=None, train_labels=None):
                self.n_train = len(train_maps)

            def predict(self, maps):
                return {"p_ind": np.full(len(maps), 0.5 if self.n_train == 16 else 0.0)}
        """)
    result = ingest("weak_lensing.phase2", small_inputs["weak_lensing.phase2"], submission, tmp_path / "out")
    assert result == {"p_ind": [0.5] * 40}
    official = tmp_path / "official"
    official.mkdir()
    (official / "model.py").write_text(textwrap.dedent("""
        import numpy as np

        class Model:
            def fit(self):
                pass

            def predict(self, test_data):
                return -test_data["data"].reshape(len(test_data["data"]), -1).std(axis=1)
        """))
    result = ingest("weak_lensing.phase2", small_inputs["weak_lensing.phase2"], official, tmp_path / "out2",
                    ranking="deployed")
    assert set(result) == {"ood_scores"} and len(result["ood_scores"]) == 40


def test_the_official_format_sample_scores_the_official_tpr_under_the_deployed_ranking(project_data, tmp_path):
    from sklearn.metrics import roc_curve

    name = "weak_lensing.phase2_deployed"
    sample = project_data / "sample_submissions" / name / "official_format"
    submitted = json.loads((sample / "result.json").read_text())
    assert set(submitted) == {"ood_scores"}  # the official starting kits' format
    result = runner.run(name, sample, tmp_path / "run", root=project_data)
    assert result.scored, (result.violations, result.error)
    is_ood = np.load(project_data / "reference_data" / name / "label_test_phase2.npy")
    fpr, tpr, _ = roc_curve(is_ood, submitted["ood_scores"])
    expected = np.mean(np.interp(np.logspace(np.log10(0.001), np.log10(0.05), 100), fpr, tpr))
    assert abs(result.scores["score"] - expected) <= 1e-12
    assert "log_likelihood" not in result.scores
