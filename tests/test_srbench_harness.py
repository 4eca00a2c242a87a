"""Code submissions run as the 2022 harness ran them (docs/srbench.md#the-2022-harness): one new process
and a new import of regressor.py per (dataset, seed), random_state set, eval_kwargs applied (pre_train,
scale_x/scale_y, max_train_samples, test_params), and an import that fails explained once."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression
from sklearn.preprocessing import StandardScaler

from codascore.errors import SubmissionError
from codascore.registry import get_task
from codascore.srbench import files
from codascore.srbench.expressions import parse_model
from codascore.srbench.metrics import compile_model
from codascore.srbench.ingest import check_regressor, eval_kwargs_problem, unscale_model
from codascore.srbench.workers import run_jobs

TASK = "srbench.qualification"
# Two datasets with different widths: a 7-feature formula sent for the 4-feature set is the reported bug.
DATASETS = {"wide": [f"x{i}" for i in range(1, 8)], "narrow": ["a", "b", "c", "d"]}
SEEDS = [11, 12]

# A participant-style regressor: get_params() without `deep` (clone() fails on it), a module-level cache
# that a reused process would carry into the next run, pre_train setting a time budget, scaling on.
BUDGETED = '''import sys

import numpy as np

sys.srbench_test_imports = getattr(sys, "srbench_test_imports", 0) + 1
IMPORTS = sys.srbench_test_imports
_CACHE = {}


class Budgeted:
    fits = 0

    def __init__(self, max_time=None, random_state=None):
        self.max_time = max_time
        self.random_state = random_state

    def get_params(self):
        return {"max_time": self.max_time, "random_state": self.random_state}

    def set_params(self, **params):
        for key, value in params.items():
            setattr(self, key, value)
        return self

    def fit(self, X, y):
        if "coef" in _CACHE:  # a warm start from whatever this process fitted before
            self.intercept_, self.coef_ = _CACHE["coef"]
            return self
        Budgeted.fits += 1
        A = np.c_[np.ones(len(X)), np.asarray(X, dtype=float)]
        w = np.linalg.lstsq(A, np.asarray(y, dtype=float), rcond=None)[0]
        self.intercept_, self.coef_ = float(w[0]), [float(v) for v in w[1:]]
        _CACHE["coef"] = (self.intercept_, self.coef_)
        # one write, newline included: the parallel runs share the captured stdout, and print() writes the
        # line and its end apart on an unbuffered stream, so two lines could run into one
        sys.stdout.write(f"BUDGETED imports={IMPORTS} fits={Budgeted.fits} random_state={self.random_state} "
                         f"max_time={self.max_time} xmean={float(np.abs(np.mean(np.asarray(X), axis=0)).max()):.1e} "
                         f"ystd={float(np.std(y)):.6f}\\n")
        sys.stdout.flush()
        return self

    def predict(self, X):
        return self.intercept_ + np.asarray(X, dtype=float) @ np.asarray(self.coef_)


est = Budgeted()


def budget(est, X, y):
    est.set_params(max_time=7 if len(X) <= 1000 else 70)


def model(est, X):
    return " + ".join([repr(est.intercept_)] + [f"{w!r}*{name}" for w, name in zip(est.coef_, X.columns)])


eval_kwargs = {"pre_train": budget, "scale_x": True, "scale_y": True, "test_params": {"max_time": 1}}
'''


def _write_inputs(folder: Path) -> dict:
    """input_data for two datasets x two seeds: y = 3 + sum_j (j+1)*x_j*10**j + noise, features far from
    standardised (so a string fitted on scaled data would be wrong on the raw features)."""
    rng = np.random.default_rng(5)
    data = {}
    for name, columns in DATASETS.items():
        for seed in SEEDS:
            X = rng.normal(5.0, 3.0, size=(60, len(columns))) * (10.0 ** np.arange(len(columns)) / 10)
            y = 3 + X @ np.arange(1, len(columns) + 1) + rng.normal(0, 0.1, 60)
            files.write_table(folder / "train" / name / f"{seed}.csv", columns, X, y)
            files.write_table(folder / "test" / name / f"{seed}.csv", columns, X[:10], None)
            data[(name, seed)] = (X, y)
    files.write_datasets(folder, {"seeds": SEEDS, "datasets": [{"name": n, "feature_names": c}
                                                               for n, c in DATASETS.items()]})
    return data


def _value(text: str, columns: list[str], X: np.ndarray) -> np.ndarray:
    """A model string's values on X, through the scorer's own parser (so it also passes the whitelist)."""
    return np.asarray(compile_model(parse_model(text, columns), columns)(X), dtype=float)


@pytest.fixture
def budgeted(tmp_path) -> Path:
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / files.REGRESSOR_FILE).write_text(BUDGETED)
    return folder


@pytest.mark.parametrize("source", ["string", "predictions"])
def test_each_run_gets_a_fresh_import_its_seed_and_its_pre_train(tmp_path, budgeted, capfd, source):
    inputs = tmp_path / "input"
    data = _write_inputs(inputs)
    task = get_task(TASK)
    config = task.load_config({"accuracy_source": source, "workers": 2})
    task.ingest(inputs, tmp_path / "out", budgeted, config)
    out, err = capfd.readouterr()
    lines = [line for line in out.splitlines() if line.startswith("BUDGETED")]
    assert len(lines) == len(DATASETS) * len(SEEDS)
    assert all("imports=1 fits=1 " in line for line in lines)  # a new process and a new import per run
    assert sorted(int(re.search(r"random_state=(\d+)", line).group(1)) for line in lines) == sorted(SEEDS * 2)
    assert all("max_time=7 " in line for line in lines)  # pre_train ran before fit; test_params did not
    assert all(float(re.search(r"xmean=(\S+)", line).group(1)) < 1e-9 for line in lines)  # fitted on scaled X
    assert all(re.search(r"ystd=1\.000000", line) for line in lines)  # and scaled y
    assert err.count("pre_train: max_time: None -> 7") == len(DATASETS) * len(SEEDS)  # visible in the log
    models = json.loads((tmp_path / "out" / files.MODELS_FILE).read_text())
    for (name, seed), (X, y) in data.items():
        text = models[files.run_key(name, seed)]
        used = set(re.findall(r"(?<![\w.])[A-Za-z_]\w*", text))  # not the e of 1e-05
        assert used == set(DATASETS[name])  # no other dataset's model string
        raw_fit = LinearRegression().fit(X, y).predict(X)
        if source == "string":  # the scaled fit's string, rewritten over the raw features
            assert np.allclose(_value(text, DATASETS[name], X), raw_fit, rtol=1e-8, atol=1e-8)
        else:  # the string as model() returned it (over standardised features), as 2022 kept it
            scaled = StandardScaler().fit(X).transform(X)
            y_scaled = StandardScaler().fit(y.reshape(-1, 1)).transform(y.reshape(-1, 1)).ravel()
            fitted = LinearRegression().fit(scaled, y_scaled).predict(scaled)
            assert np.allclose(_value(text, DATASETS[name], scaled), fitted, rtol=1e-8, atol=1e-8)
    if source == "predictions":  # est.predict on scaled test features, the target scaling inverted
        predictions = json.loads((tmp_path / "out" / files.PREDICTIONS_FILE).read_text())
        for (name, seed), (X, y) in data.items():
            expected = LinearRegression().fit(X, y).predict(X[:10])
            assert np.allclose(predictions[files.run_key(name, seed)], expected, rtol=1e-8)


def test_test_mode_applies_test_params_after_pre_train(tmp_path, budgeted, capfd):
    inputs = tmp_path / "input"
    _write_inputs(inputs)
    task = get_task(TASK)
    task.ingest(inputs, tmp_path / "out", budgeted, task.load_config({"test_mode": True}))
    out, err = capfd.readouterr()
    assert out.count("max_time=1 ") == len(DATASETS) * len(SEEDS)
    assert "test_params applied: ['max_time']" in err


def test_max_train_samples_draws_with_replacement_from_the_seeded_generator(tmp_path, capfd):
    inputs = tmp_path / "input"
    data = _write_inputs(inputs)
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / files.REGRESSOR_FILE).write_text(
        "import numpy as np\nfrom sklearn.linear_model import LinearRegression\n\n\n"
        "class Recorder(LinearRegression):\n"
        "    def fit(self, X, y):\n"
        "        print('ROWS', ','.join(f'{v!r}' for v in y), flush=True)\n"
        "        return super().fit(X, y)\n\n\n"
        "est = Recorder()\neval_kwargs = {'max_train_samples': 20, 'DataFrame': False}\n\n\n"
        "def model(est, X):\n    return repr(float(est.intercept_))\n")
    task = get_task(TASK)
    task.ingest(inputs, tmp_path / "out", folder, task.load_config({}))
    seen = sorted(tuple(float(v) for v in line.split()[1].split(","))
                  for line in capfd.readouterr().out.splitlines() if line.startswith("ROWS"))
    expected = []
    for name, seed in data:
        _, y = files.read_table(inputs / "train" / name / f"{seed}.csv", DATASETS[name])  # as written
        np.random.seed(seed)
        expected.append(tuple(y[np.random.choice(np.arange(len(y)), size=20)].tolist()))
    assert seen == sorted(expected)


def test_a_missing_module_is_one_clear_error_with_the_dependency_rules(tmp_path, capfd):
    inputs = tmp_path / "input"
    _write_inputs(inputs)
    folder = tmp_path / "feat-example"
    folder.mkdir()
    (folder / files.REGRESSOR_FILE).write_text("from feat_not_installed_here import Feat\n\nest = Feat()\n\n\n"
                                               "def model(est, X):\n    return est.model_\n")
    (folder / "environment.yml").write_text("name: feat\ndependencies:\n  - feat\n")
    task = get_task(TASK)
    with pytest.raises(SubmissionError) as caught:
        task.ingest(inputs, tmp_path / "out", folder, task.load_config({}))
    [message] = caught.value.problems
    assert "feat_not_installed_here" in message
    assert "environment.yml, install.sh and requirements.txt are never run" in message
    assert "codascore pack" in message and "vendor/" in message and "Traceback" not in message
    assert "WARNING: environment.yml is ignored" in capfd.readouterr().err
    assert not (tmp_path / "out" / files.MODELS_FILE).exists()


def test_a_name_the_installed_package_lacks_is_not_called_a_missing_module(tmp_path):
    inputs = tmp_path / "input"
    _write_inputs(inputs)
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / files.REGRESSOR_FILE).write_text("from sklearn.linear_model import NoSuchRegressor\n")
    task = get_task(TASK)
    with pytest.raises(SubmissionError) as caught:
        task.ingest(inputs, tmp_path / "out", folder, task.load_config({}))
    [message] = caught.value.problems
    assert "cannot import name 'NoSuchRegressor'" in message and "is not available here" not in message
    assert "environment.yml, install.sh and requirements.txt are never run" in message


# An import that takes longer than a fit may: its check has a limit of its own (import_time_limit).
SLOW_IMPORT = """import time

time.sleep(2.5)
from sklearn.linear_model import LinearRegression

est = LinearRegression()


def model(est, X):
    return " + ".join([repr(float(est.intercept_))] + [f"{w!r}*{n}" for w, n in zip(est.coef_, X.columns)])
"""


def test_the_import_check_has_a_limit_of_its_own_not_the_fits(tmp_path):
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / files.REGRESSOR_FILE).write_text(SLOW_IMPORT)
    task = get_task(TASK)
    check_regressor(folder / files.REGRESSOR_FILE, task.load_config({"fit_time_limit": 1, "import_time_limit": 60}))
    with pytest.raises(SubmissionError) as caught:
        check_regressor(folder / files.REGRESSOR_FILE, task.load_config({"fit_time_limit": 60,
                                                                         "import_time_limit": 1}))
    assert caught.value.problems == [f"{files.REGRESSOR_FILE}: importing it took longer than the import check's "
                                     "time limit of 1 s (import_time_limit)"]


# A search stopped by the alarm before it holds any model: model() then raises.
NO_MODEL_YET = """import time


class Search:
    def fit(self, X, y):
        while True:
            time.sleep(0.05)

    def predict(self, X):
        return self.best_.predict(X)


est = Search()


def model(est, X):
    return est.best_
"""


def test_a_fit_stopped_by_the_alarm_whose_model_then_raised_says_both(tmp_path):
    inputs = tmp_path / "input"
    _write_inputs(inputs)
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / files.REGRESSOR_FILE).write_text(NO_MODEL_YET)
    task = get_task(TASK)
    with pytest.raises(SubmissionError) as caught:
        task.ingest(inputs, tmp_path / "out", folder, task.load_config({"fit_time_limit": 1, "workers": 2}))
    said = ("the fit's alarm at 1 s stopped the fit, and model(est, X) then raised AttributeError: 'Search' object "
            "has no attribute 'best_'")
    assert said in "\n".join(caught.value.problems)
    runs = json.loads((tmp_path / "out" / files.RUNS_FILE).read_text())
    assert len(runs) == len(DATASETS) * len(SEEDS)
    assert all(run["outcome"] == "failed" and said in run["reason"] for run in runs.values())


@pytest.mark.parametrize("value, problem", [
    ({"pre_train": print, "scale_x": False}, None),
    ({"max_train_samples": 10, "test_params": {}, "DataFrame": True}, None),
    ({"sym_data": True}, "unknown key 'sym_data'"),
    ({"scale_x": 1}, "is not a bool"),
    ({"max_train_samples": True}, "is not a int"),
    ({"pre_train": 3}, "is not a callable"),
    ([("scale_x", True)], "not a dict"),
])
def test_eval_kwargs_are_checked_against_what_2022_accepted(value, problem):
    found = eval_kwargs_problem(value)
    assert (found is None) if problem is None else (problem in found)


def test_unscaling_rewrites_whole_feature_names_only():
    X = np.array([[1.0, 10.0], [3.0, 30.0], [5.0, 20.0]])
    y = np.array([1.0, 2.0, 4.0])
    x_scaler, y_scaler = StandardScaler().fit(X), StandardScaler().fit(y.reshape(-1, 1))
    text = unscale_model("2*x1 + x11 - exp(x1)", ["x1", "x11"], x_scaler, y_scaler)
    scaled = x_scaler.transform(X)
    expected = y_scaler.scale_[0] * (2 * scaled[:, 0] + scaled[:, 1] - np.exp(scaled[:, 0])) + y_scaler.mean_[0]
    assert np.allclose(_value(text, ["x1", "x11"], X), expected)
    only_y = unscale_model("1.5*x1", ["x1"], None, y_scaler)
    assert np.allclose(_value(only_y, ["x1"], X[:, :1]), 1.5 * X[:, 0] * y_scaler.scale_[0] + y_scaler.mean_[0])


def _pid(_):
    return os.getpid()


def test_fresh_process_gives_every_job_its_own_process():
    shared = [o.value for o in run_jobs(_pid, [(i,) for i in range(6)], time_limit=30, n_workers=2)]
    fresh = [o.value for o in run_jobs(_pid, [(i,) for i in range(6)], time_limit=30, n_workers=2,
                                       fresh_process=True)]
    assert len(set(fresh)) == 6 and os.getpid() not in fresh
    assert len(set(shared)) <= 2
