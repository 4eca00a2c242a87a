"""Code submissions (the official 2022 interface, docs/srbench.md#code-submissions): ``regressor.py``
defines ``est`` (a scikit-learn regressor) and ``model(est, X)`` (the fitted model as a string over X's
column names).

The ingestion program finds regressor.py at the submission's root or in its single wrapper folder
(sandbox.find_entry), fits a fresh clone of ``est`` on each (dataset, seed) training set in parallel worker
processes, each fit under ``fit_time_limit`` seconds (the worker and anything it started are killed at the
limit), and writes models.json exactly as a results submission holds it. Under ``accuracy_source:
predictions`` (input_data's task.yaml) the same job, under the same limit, also records ``est.predict`` on
the run's test features (``test/<dataset>/<seed>.csv``, no target) in predictions.json, from which scoring
then takes R² (the 2022 code's r2_test); with the default ``string``, predict is never called. Worker
replies are JSON, never pickle.
"""

from __future__ import annotations

import inspect
from pathlib import Path

from ..errors import ReferenceDataError, SubmissionError
from ..sandbox import find_entry, import_participant_module
from ..task import log
from ..validate import is_number
from . import files
from .workers import Progress, run_jobs

#: The participant's module, imported once per worker process (by its entry file's path).
_MODULES: dict = {}


def _participant_module(entry: str):
    if entry not in _MODULES:
        module = import_participant_module(Path(entry), "regressor")
        for name in ("est", "model"):
            if not hasattr(module, name):
                raise AttributeError(f"{files.REGRESSOR_FILE} defines no {name!r}")
        _MODULES[entry] = module
    return _MODULES[entry]


def fit_one(entry: str, train_csv: str, feature_names: list[str], test_csv: str | None = None) -> dict:
    """Runs in a worker: fit a clone of est on one training set; return {"model": model(est, X) as a
    string, "predictions": est.predict on the test features as a list of floats, or None without them}.
    entry: regressor.py's absolute path; train_csv and test_csv absolute too (the import changes the
    worker's working directory to the participant's folder)."""
    import copy

    import numpy as np
    import pandas as pd

    module = _participant_module(entry)
    X, y = files.read_table(Path(train_csv), feature_names)
    frame = pd.DataFrame(X, columns=feature_names)
    test = pd.DataFrame(files.read_features(Path(test_csv), feature_names), columns=feature_names) if test_csv else None
    try:
        from sklearn.base import clone

        est = clone(module.est)
    except Exception:  # not a scikit-learn estimator: a deep copy is the next best fresh start
        est = copy.deepcopy(module.est)
    est.fit(frame, y)
    takes_x = len(inspect.signature(module.model).parameters) >= 2
    text = module.model(est, frame) if takes_x else module.model(est)
    if not isinstance(text, str):
        raise TypeError(f"model(est, X) returned {type(text).__name__}, not a string")
    predictions = None
    if test is not None:
        predictions = np.asarray(est.predict(test), dtype=float)
        if predictions.shape not in ((len(test),), (len(test), 1)):
            raise ValueError(f"est.predict returned shape {predictions.shape} for {len(test)} test rows; "
                             f"expected ({len(test)},)")
        predictions = predictions.ravel().tolist()  # unrounded: JSON writes float64 exactly
    return {"model": text, "predictions": predictions}


def fit_reply_problem(value, n_test: int | None) -> str | None:
    """Why a worker's reply is not {"model": str, "predictions": n_test floats (or None)}: the worker ran
    participant code, so the parent checks the shape of what came back before writing it."""
    if not isinstance(value, dict) or not isinstance(value.get("model"), str):
        return "the worker's reply holds no model string"
    predictions = value.get("predictions")
    if n_test is None:
        return None
    if not isinstance(predictions, list) or len(predictions) != n_test:
        return f"the worker's reply holds no list of {n_test} predictions"
    if not all(is_number(v) for v in predictions):
        return "the worker's predictions are not all numbers"
    return None


def ingest_models(input_dir: Path, output_dir: Path, submission_dir: Path, config: dict) -> None:
    """Fit every (dataset, seed) of input_dir/datasets.json; write output_dir/models.json, and
    predictions.json under accuracy_source: predictions."""
    entry, warnings = find_entry(submission_dir, (files.REGRESSOR_FILE,))
    if entry is None:
        return  # a results submission: the worker copies its files itself
    for warning in warnings:
        log(f"WARNING: {warning}")
    input_dir = Path(input_dir).resolve()
    meta = files.read_json(input_dir / files.DATASETS_FILE, "input data")
    predict = config.get("accuracy_source") == "predictions"
    jobs, keys, n_test = [], [], {}
    for dataset in meta["datasets"]:
        for seed in meta["seeds"]:
            train = input_dir / "train" / dataset["name"] / f"{seed}.csv"
            test = input_dir / "test" / dataset["name"] / f"{seed}.csv"
            key = (dataset["name"], int(seed))
            if predict:
                if not test.is_file():
                    raise ReferenceDataError(f"input data: test/{dataset['name']}/{seed}.csv is missing; "
                                             "accuracy_source: predictions needs every run's test features")
                n_test[key] = len(files.read_features(test, list(dataset["feature_names"])))
            jobs.append((str(entry.resolve()), str(train), list(dataset["feature_names"]),
                         str(test) if predict else None))
            keys.append(key)
    outcomes = run_jobs(fit_one, jobs, time_limit=float(config["fit_time_limit"]),
                        n_workers=int(config.get("workers") or 0) or None,
                        progress=Progress("srbench ingestion: fits", len(jobs)))
    models, predictions, failures = {}, {}, []
    for key, outcome in zip(keys, outcomes):
        problem = fit_reply_problem(outcome.value, n_test.get(key)) if outcome.status == "ok" else outcome.message
        if problem:
            failures.append((key, problem))
            continue
        models[key] = outcome.value["model"]
        if key in n_test:
            predictions[key] = outcome.value["predictions"]
    for (dataset, seed), message in failures[:5]:
        log(f"srbench ingestion: {dataset}/{seed} failed: {message}")
    if not models:
        (dataset, seed), message = failures[0]
        raise SubmissionError([f"{files.REGRESSOR_FILE}: every fit failed; the first ({dataset}/{seed}):",
                               *message.splitlines()])
    files.write_models(output_dir, models)
    if predictions:
        files.write_predictions(output_dir, predictions)
