"""Real 2022 teams scored as 2022 scored them (docs/srbench.md#accuracy-source,
docs/srbench.md#why-a-run-stopped, docs/srbench.md#the-results-page): R² of a code submission from
est.predict by default, every run's notes and the reason it stopped in the log, and every run on the page."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from codascore import runner
from codascore.errors import SubmissionError
from codascore.registry import get_task
from codascore.srbench import files
from codascore.srbench.fit_watch import budgets
from codascore.srbench.metrics import r2_score
from codascore.srbench.report import runs_section
from codascore.task import Result

TASK = "srbench.synthetic"
SMALL = {"datasets": ["noise_easy"], "seeds": [2082, 3946], "max_rows": 40}

# model() rewrites its protected operator for readability, as one 2022 team did: predict computes
# log(1 + |x1|), the string says log(x1), which is NaN for the negative x1 of the test split.
PROTECTED = '''import numpy as np
from sklearn.linear_model import LinearRegression


def _feature(X):
    return np.log(1 + np.abs(np.asarray(X, dtype=float)[:, :1]))


class Protected:
    def get_params(self, deep=True):
        return {}

    def fit(self, X, y):
        self.lr = LinearRegression().fit(_feature(X), y)
        return self

    def predict(self, X):
        return self.lr.predict(_feature(X))


est = Protected()


def model(est, X):
    return f"{est.lr.coef_[0]!r}*log(x1) + {est.lr.intercept_!r}"
'''

# A method whose own budget (set by pre_train) is far above the fit limit, and whose search swallows the
# alarm's exception (FIT_BODY) or replaces the SIGALRM handler.
BUDGETED = '''import signal
import time


class Budgeted:
    def __init__(self):
        self.max_time = None

    def get_params(self, deep=True):
        return {{"max_time": self.max_time}}

    def fit(self, X, y):
{body}
        end = time.monotonic() + 30
        while time.monotonic() < end:
            try:
                time.sleep(0.05)
            except Exception:
                pass
        return self


def pre_train(est, X, y):
    est.max_time = 3595


eval_kwargs = {{"pre_train": pre_train}}
est = Budgeted()


def model(est, X):
    return "x1"
'''


@pytest.fixture(scope="module")
def root(tmp_path_factory, repo_root) -> Path:
    """The programs and a small srbench.synthetic (task.yaml defaults) in a temporary project folder."""
    root = tmp_path_factory.mktemp("srbench_real_teams")
    for program in ("scoring_program", "ingestion_program"):
        shutil.copytree(repo_root / program, root / program)
    task = get_task(TASK)
    task.generate(root, task.load_config(SMALL), progress=lambda message: None)
    return root


def _code(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "code"
    folder.mkdir()
    (folder / files.REGRESSOR_FILE).write_text(text)
    return folder


def _instances(result) -> dict:
    details = json.loads((result.run_dir / "scoring" / "output" / "details.json").read_text())
    return {i["id"]: i for i in details["instances"]}


def test_the_generators_write_auto_and_the_test_features(root):
    for folder in ("reference_data", "input_data"):
        assert yaml.safe_load((root / folder / TASK / "task.yaml").read_text())["accuracy_source"] == "auto"
    assert (root / "input_data" / TASK / "test" / "noise_easy" / "2082.csv").is_file()


def test_a_model_string_unlike_predict_is_scored_from_predict_by_default(root, tmp_path):
    code = _code(tmp_path, PROTECTED)
    result = runner.run(TASK, code, tmp_path / "auto", root=root)
    assert result.scored, result.error
    names = ["x1"]
    for key, instance in _instances(result).items():
        dataset, seed = key.split("/")
        X_train, y_train = files.read_table(root / "input_data" / TASK / "train" / dataset / f"{seed}.csv", names)
        X_test, y_test = files.read_table(root / "reference_data" / TASK / "test" / dataset / f"{seed}.csv", names)
        feature = lambda X: np.log(1 + np.abs(X[:, :1]))  # noqa: E731
        from sklearn.linear_model import LinearRegression

        expected = r2_score(y_test, LinearRegression().fit(feature(X_train), y_train).predict(feature(X_test)))
        assert instance["r2_test"] == pytest.approx(expected, rel=1e-9)
        assert instance["fit_outcome"] == "fitted" and instance["fit_seconds"] >= 0
    assert json.loads((result.run_dir / "scoring" / "output" / "details.json").read_text())[
        "accuracy_source"] == "predictions"
    # forced to the string, the same fits fail, and the reason says the values came from the string
    forced = tmp_path / "forced"
    shutil.copytree(root, forced)
    for folder in ("reference_data", "input_data"):
        path = forced / folder / TASK / "task.yaml"
        path.write_text(yaml.safe_dump({**yaml.safe_load(path.read_text()), "accuracy_source": "string"}))
    by_string = runner.run(TASK, code, tmp_path / "string", root=forced)
    assert by_string.scored, by_string.error
    reasons = [i.get("reason", "") for i in _instances(by_string).values()]
    assert all(r.startswith("the model string evaluated on the test features") for r in reasons), reasons
    assert all("values of the model string are not finite" in r for r in reasons)


def test_a_results_submission_is_scored_from_its_strings_by_default(root, tmp_path):
    result = runner.run(TASK, root / "sample_submissions" / TASK / "linear_regression", tmp_path / "run", root=root)
    assert result.scored, result.error
    details = json.loads((result.run_dir / "scoring" / "output" / "details.json").read_text())
    assert details["accuracy_source"] == "string"


@pytest.mark.parametrize("body, why", [
    ("        pass", "catches it and carries on"),
    ("        signal.signal(signal.SIGALRM, lambda *args: None)", "replaced the SIGALRM handler"),
])
def test_a_run_past_its_limit_is_stopped_and_logged_with_its_budget(root, tmp_path, capfd, body, why):
    code = _code(tmp_path, BUDGETED.format(body=body))
    task = get_task(TASK)
    started = time.monotonic()
    with pytest.raises(SubmissionError, match="every fit failed"):
        task.ingest(root / "input_data" / TASK, tmp_path / "out", code, task.load_config({"fit_time_limit": 1.0}))
    assert time.monotonic() - started < 20  # stopped at 1.5 s, not after the method's own 30 s
    err = capfd.readouterr().err
    for seed in SMALL["seeds"]:
        line = next(line for line in err.splitlines() if f"noise_easy/{seed} stopped:" in line)
        assert why in line and "fit limit" in line and "max_time = 3595" in line, line
        assert f"noise_easy/{seed}: pre_train: max_time: None -> 3595" in err
    runs = json.loads((tmp_path / "out" / files.RUNS_FILE).read_text())
    assert {entry["outcome"] for entry in runs.values()} == {"stopped"}
    assert all(entry["fit_seconds"] == pytest.approx(1.5) for entry in runs.values())


def test_budget_parameters_are_read_by_their_names():
    found = budgets({"max_time": 60, "est__time_limit": 5.0, "timeout": None, "generations": 100,
                     "Budget": 7, "max_iter": 10})
    assert found == {"max_time": 60.0, "est__time_limit": 5.0, "Budget": 7.0}


def test_the_page_lists_every_run_failures_first():
    instances = [
        {"id": "noise_easy/1", "r2_test": 0.9, "simplicity": -1.2, "simplified": "x1 + 1", "fit_outcome": "fitted",
         "fit_reason": "", "fit_seconds": 0.5},
        {"id": "noise_easy/2", "failed": "no model submitted", "fit_outcome": "killed",
         "fit_reason": "killed at the time limit of 360 s", "fit_seconds": 300.0},
        {"id": "noise_easy/3", "r2_test": None, "reason": "predictions.json (est.predict on the test features): "
         "3 of 3 predictions are not finite", "simplicity": -0.0, "simplified": "x1"},
        {"id": "noise_easy/4", "r2_test": 0.5, "simplicity": -0.4, "simplified": "x1" * 200},
    ]
    html = runs_section(Result(scores={}, instances=instances), simplified=True).html
    rows = html.split("<tr>")[2:]
    assert len(rows) == 4
    assert "noise_easy</td><td>2<" in rows[0] and "killed: killed at the time limit of 360 s" in rows[0]
    assert "noise_easy</td><td>3<" in rows[1] and "worst R²: predictions.json" in rows[1]
    assert "(400 characters)" in rows[3] and "4 runs, 2 without an accuracy" in html
