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
                                       out / name / sample, root=project_data, quiet=True)
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
