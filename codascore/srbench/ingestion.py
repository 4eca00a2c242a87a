"""Code submissions (the official 2022 interface, spec §6.1): ``regressor.py`` defines ``est`` (a
scikit-learn regressor) and ``model(est, X)`` (the fitted model as a string over X's column names).

The ingestion program fits a fresh clone of ``est`` on each (dataset, seed) training set in parallel
worker processes, each fit under ``fit_time_limit`` seconds (the worker and anything it started are
killed at the limit), and writes models.json exactly as a results submission holds it.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path

from ..task import SubmissionError
from . import io
from .workers import Progress, run_jobs

REGRESSOR_FILE = "regressor.py"
_MODULES: dict = {}


def _participant_module(submission_dir: str):
    if submission_dir not in _MODULES:
        spec = importlib.util.spec_from_file_location("regressor", Path(submission_dir) / REGRESSOR_FILE)
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, submission_dir)  # the participant's helper modules beside regressor.py
        spec.loader.exec_module(module)
        for name in ("est", "model"):
            if not hasattr(module, name):
                raise AttributeError(f"{REGRESSOR_FILE} defines no {name!r}")
        _MODULES[submission_dir] = module
    return _MODULES[submission_dir]


def fit_one(submission_dir: str, train_csv: str, feature_names: list[str]) -> str:
    """Runs in a worker: fit a clone of est on one training set, return model(est, X) as a string."""
    import copy

    import pandas as pd

    module = _participant_module(submission_dir)
    X, y = io.read_table(Path(train_csv), feature_names)
    frame = pd.DataFrame(X, columns=feature_names)
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
    return text


def ingest_models(input_dir: Path, output_dir: Path, submission_dir: Path, config: dict) -> None:
    """Fit every (dataset, seed) of input_dir/datasets.json; write output_dir/models.json."""
    if not (submission_dir / REGRESSOR_FILE).is_file():
        return  # a results submission: the worker copies its files itself
    meta = io.read_json(input_dir / "datasets.json", "input data")
    jobs, keys = [], []
    for dataset in meta["datasets"]:
        for seed in meta["seeds"]:
            train = input_dir / "train" / dataset["name"] / f"{seed}.csv"
            jobs.append((str(submission_dir.resolve()), str(train), list(dataset["feature_names"])))
            keys.append((dataset["name"], int(seed)))
    outcomes = run_jobs(fit_one, jobs, time_limit=float(config["fit_time_limit"]),
                        n_workers=int(config.get("workers") or 0) or None,
                        progress=Progress("srbench ingestion: fits", len(jobs)))
    models = {key: o.value for key, o in zip(keys, outcomes) if o.status == "ok"}
    failures = [(key, o) for key, o in zip(keys, outcomes) if o.status != "ok"]
    for (dataset, seed), outcome in failures[:5]:
        print(f"srbench ingestion: {dataset}/{seed} failed: {outcome.message}", file=sys.stderr)
    if not models:
        (dataset, seed), outcome = failures[0]
        raise SubmissionError([f"{REGRESSOR_FILE}: every fit failed; the first ({dataset}/{seed}):",
                               *outcome.message.splitlines()])
    io.write_models(output_dir, models)
