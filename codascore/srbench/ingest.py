"""Code submissions (the official 2022 interface, docs/srbench.md#code-submissions): ``regressor.py``
defines ``est`` (a scikit-learn regressor), ``model(est, X)`` (the fitted model as a string over X's
column names) and optionally ``eval_kwargs``.

The ingestion program finds regressor.py at the submission's root or in its single wrapper folder
(sandbox.find_entry), imports it once in a process of its own to check it (an import that fails is one
clear error naming the missing module and what runs on Codabench), then runs every (dataset, seed) as the
2022 harness did (docs/srbench.md#the-2022-harness): one new process per run, which imports regressor.py
afresh, seeds numpy, sets ``est.random_state``, applies ``eval_kwargs`` (``max_train_samples``,
``scale_x``/``scale_y``, ``pre_train``, ``test_params`` in test mode), fits under a SIGALRM at
``fit_time_limit`` (the harness then carried on with ``est`` as it was; a fit the alarm cannot stop is
stopped by fit_watch's watchdog) and asks ``model(est, X)``. The process, and anything it started, is
killed ``KILL_GRACE`` seconds after the limit (at twice the limit when that comes first); runs go in
parallel. Each run writes its notes to a file as it goes, so that every run's notes (its pre_train, its own
time budget) and the reason it stopped are logged, replied or not.
It writes models.json exactly as a results submission holds it, runs.json (each run's outcome, reason and
fit seconds, for the results page) and, under ``accuracy_source`` auto (the default) or predictions,
predictions.json (``est.predict`` on the run's test features, the target scaling inverted as in 2022).
Worker replies are JSON, never pickle.
"""

from __future__ import annotations

import contextlib
import inspect
import re
import time
import warnings
from pathlib import Path

from ..errors import FitTimeout, ReferenceDataError, SubmissionError
from ..formats.environment import running_record
from ..progress import Counter
from ..sandbox import find_entry, import_participant_module
from ..task import log
from ..validate import is_number
from . import files
from .fit_watch import ALARM_GRACE, FitWatch, RunNotes, budget_text, raw_params, read_notes
from .workers import run_jobs

#: Seconds a run's process may live past ``fit_time_limit`` (model(), predict) before it is killed; never
#: more than fit_time_limit itself.
KILL_GRACE = 60.0
#: The eval_kwargs keys 2022's evaluate_model accepted, with their types (judging code, lines 38-53).
EVAL_KWARGS = {"test_params": dict, "max_train_samples": int, "scale_x": bool, "scale_y": bool,
               "pre_train": callable, "DataFrame": bool}
#: Files 2022's installer read that nothing runs here (docs/srbench.md#dependencies).
IGNORED_FILES = ("environment.yml", "environment.yaml", "install.sh", "requirements.txt")
DEPENDENCY_RULE = ("On Codabench a code submission runs with the competition image's Python packages plus "
                   "what the zip itself carries (modules beside regressor.py, then its vendor/ folder, import "
                   "from there); environment.yml, install.sh and requirements.txt are never run or installed. "
                   "'codascore pack TASK FOLDER --requirements requirements.txt' puts a PyPI method's wheels "
                   "into vendor/ and proves the import (docs/srbench.md#dependencies).")


def eval_kwargs_problem(value) -> str | None:
    """Why regressor.py's eval_kwargs is not what 2022's evaluate_model accepted, or None."""
    if not isinstance(value, dict):
        return f"eval_kwargs is a {type(value).__name__}, not a dict"
    for key, kind in value.items():
        if key not in EVAL_KWARGS:
            return f"eval_kwargs has the unknown key {key!r}; allowed: {sorted(EVAL_KWARGS)}"
        expected = EVAL_KWARGS[key]
        ok = callable(kind) if expected is callable else (
            isinstance(kind, expected) and not (expected is int and isinstance(kind, bool)))
        if not ok:
            return f"eval_kwargs[{key!r}] = {kind!r:.60} is not a {getattr(expected, '__name__', expected)}"
    return None


def load_regressor(entry: str):
    """Import regressor.py (in this fresh process) and check est, model and eval_kwargs."""
    module = import_participant_module(Path(entry), "regressor")
    for name in ("est", "model"):
        if not hasattr(module, name):
            raise AttributeError(f"{files.REGRESSOR_FILE} defines no {name!r}")
    problem = eval_kwargs_problem(getattr(module, "eval_kwargs", {}))
    if problem:
        raise ValueError(f"{files.REGRESSOR_FILE}: {problem}")
    return module


def settings_of(module, scale_default: bool) -> dict:
    """eval_kwargs with 2022's defaults filled in; scale_x/scale_y default to task.yaml's scale_default."""
    given = dict(getattr(module, "eval_kwargs", {}))
    return {"test_params": given.get("test_params") or {}, "max_train_samples": given.get("max_train_samples", 0),
            "scale_x": given.get("scale_x", scale_default), "scale_y": given.get("scale_y", scale_default),
            "pre_train": given.get("pre_train"), "DataFrame": given.get("DataFrame", True)}


def probe_regressor(entry: str, scale_default: bool) -> dict:
    """Runs in a process of its own: import regressor.py once. {"missing": module (or ""), "message": ...}
    when an import fails, else {"eval_kwargs": what each run will apply}."""
    try:
        module = load_regressor(entry)
    except ImportError as exc:  # a missing module, or a name the installed version lacks
        missing = (exc.name or "") if isinstance(exc, ModuleNotFoundError) else ""
        return {"missing": missing, "message": f"{type(exc).__name__}: {exc}"}
    settings = settings_of(module, scale_default)
    return {"eval_kwargs": {**settings, "pre_train": bool(settings["pre_train"]),
                            "test_params": sorted(settings["test_params"])}}


def _params(est) -> dict:
    """est's parameters as short texts (fit_watch.raw_params)."""
    return _params_text(raw_params(est))


def changes(before: dict, after: dict) -> str:
    """'name: old -> new' for every parameter that changed, or 'no parameter changed'."""
    changed = [f"{k}: {before.get(k, '(unset)')} -> {after[k]}" for k in sorted(after) if before.get(k) != after[k]]
    return ", ".join(changed) or "no parameter changed"


def unscale_model(text: str, feature_names: list[str], x_scaler=None, y_scaler=None) -> str:
    """A model string fitted on standardised data, rewritten over the raw features: each feature name x
    becomes ``((x - mean)/scale)`` and the whole ``scale_y*(model) + mean_y`` (docs/srbench.md#scaling)."""
    if x_scaler is not None:
        by_name = {name: f"(({name} - {float(m)!r})/{float(s)!r})"
                   for name, m, s in zip(feature_names, x_scaler.mean_, x_scaler.scale_)}
        pattern = re.compile(r"(?<![A-Za-z0-9_.])(" + "|".join(map(re.escape, sorted(by_name, key=len, reverse=True)))
                             + r")(?![A-Za-z0-9_(])")
        text = pattern.sub(lambda match: by_name[match.group(1)], text)
    if y_scaler is not None:
        text = f"{float(y_scaler.scale_[0])!r}*({text}) + {float(y_scaler.mean_[0])!r}"
    return text


def _training_data(run: dict, kwargs: dict, notes: RunNotes):
    """The run's training data as 2022 prepared it: (X for fit, the DataFrame model() gets, y, x_scaler,
    y_scaler); max_train_samples drawn from the seeded generator, then scale_x / scale_y."""
    import numpy as np
    import pandas as pd
    from sklearn.preprocessing import StandardScaler

    names = list(run["feature_names"])
    X, y = files.read_table(Path(run["train"]), names)
    limit = int(kwargs["max_train_samples"])
    if limit > 0 and len(y) > limit:
        rows = np.random.choice(np.arange(len(y)), size=limit)  # with replacement, as 2022 drew them
        X, y = X[rows], y[rows]
        notes.add(f"max_train_samples: {limit} of the training rows drawn")
    x_scaler = StandardScaler().fit(X) if kwargs["scale_x"] else None
    y_scaler = StandardScaler().fit(y.reshape(-1, 1)) if kwargs["scale_y"] else None
    if x_scaler is not None:
        X = x_scaler.transform(X)
    if y_scaler is not None:
        y = y_scaler.transform(y.reshape(-1, 1)).ravel()
    frame = pd.DataFrame(X, columns=names)
    return (frame if kwargs["DataFrame"] else X), frame, y, x_scaler, y_scaler


def _fit(est, X_fit, y, limit: float, notes: RunNotes) -> tuple[float, bool]:
    """est.fit under the fit's limit (fit_watch.FitWatch); (seconds, whether the alarm stopped it)."""
    started, alarm = time.monotonic(), False
    try:
        with FitWatch(limit, notes):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(X_fit, y)
    except FitTimeout:
        alarm = True
        notes.add(f"fit stopped by SIGALRM at {limit:g} s; model() asked what est holds")
    seconds = time.monotonic() - started
    notes.record(fit_seconds=seconds)
    notes.add(f"fit took {seconds:.2f} s")
    return seconds, alarm


def _predict(est, run: dict, kwargs: dict, x_scaler, y_scaler) -> list[float]:
    """est.predict on the run's test features (scaled as the training data), the target scaling inverted
    (2022, lines 176-191)."""
    import numpy as np
    import pandas as pd

    names = list(run["feature_names"])
    test = files.read_features(Path(run["test"]), names)
    test = x_scaler.transform(test) if x_scaler is not None else test
    values = np.asarray(est.predict(pd.DataFrame(test, columns=names) if kwargs["DataFrame"] else test), dtype=float)
    if values.shape not in ((len(test),), (len(test), 1)):
        raise ValueError(f"est.predict returned shape {values.shape} for {len(test)} test rows; "
                         f"expected ({len(test)},)")
    values = values.reshape(-1, 1)
    if y_scaler is not None:
        values = y_scaler.inverse_transform(values)
    return values.ravel().tolist()  # unrounded: JSON writes float64 exactly


def fit_one(entry: str, run: dict, settings: dict) -> dict:
    """Runs in a new process: one (dataset, seed) as evaluate_model.py ran it (docs/srbench.md#the-2022-harness).
    run: train (and test, or None) csv paths, feature_names, seed, notes_file (where the notes go as they
    come, fit_watch.RunNotes; or None); settings: fit_time_limit, scale_default, test_mode, unscale (rewrite a
    scaled fit's string over the raw features). Returns {"model", "predictions" (or None), "notes" (lines
    for the log), "fit_seconds", "alarm" (the alarm stopped the fit)}."""
    import numpy as np

    names, seed, notes = list(run["feature_names"]), int(run["seed"]), RunNotes(run.get("notes_file"))
    limit = float(settings["fit_time_limit"])
    module = load_regressor(entry)
    est, kwargs = module.est, settings_of(module, bool(settings["scale_default"]))
    np.random.seed(seed)
    if hasattr(est, "random_state"):
        est.random_state = seed  # an attribute, as 2022 set it (not set_params)
    X_fit, frame, y, x_scaler, y_scaler = _training_data(run, kwargs, notes)
    before = raw_params(est)
    before_text = _params_text(before)
    if kwargs["pre_train"]:
        kwargs["pre_train"](est, X_fit, y)
        notes.add(f"pre_train: {changes(before_text, _params(est))}")
    if settings["test_mode"] and kwargs["test_params"]:
        est.set_params(**kwargs["test_params"])
        notes.add(f"test_params applied: {sorted(kwargs['test_params'])}")
    budget = budget_text(before, raw_params(est), limit)
    if budget:
        notes.add(budget)
        notes.record(budget=budget)
    seconds, alarm = _fit(est, X_fit, y, limit, notes)
    parameters = inspect.signature(module.model).parameters
    takes_x = "X" in parameters or len(parameters) >= 2
    with after_the_alarm(alarm, limit, "model(est, X)"):
        text = module.model(est, frame) if takes_x else module.model(est)
    if not isinstance(text, str):
        raise TypeError(f"model(est, X) returned {type(text).__name__}, not a string")
    if settings["unscale"] and (x_scaler is not None or y_scaler is not None):
        text = unscale_model(text, names, x_scaler, y_scaler)
        notes.add("the model string, fitted on standardised data, was rewritten over the raw features")
    with after_the_alarm(alarm, limit, "est.predict"):
        predictions = _predict(est, run, kwargs, x_scaler, y_scaler) if run.get("test") else None
    return {"model": text, "predictions": predictions, "notes": notes.lines, "fit_seconds": seconds,
            "alarm": alarm}


class AfterTheAlarm(RuntimeError):
    """model() or est.predict raised after the fit's alarm had stopped the fit: the message says both."""


@contextlib.contextmanager
def after_the_alarm(alarm: bool, limit: float, what: str):
    """Re-raise what model() or est.predict raised, when the alarm stopped the fit, as one error that says
    both (docs/srbench.md#why-a-run-stopped): a method stopped mid-search often holds no model yet."""
    try:
        yield
    except Exception as exc:
        if not alarm:
            raise
        first = (str(exc).splitlines() or [""])[0][:300]
        raise AfterTheAlarm(f"the fit's alarm at {limit:g} s stopped the fit, and {what} then raised "
                            f"{type(exc).__name__}: {first}") from exc


def _params_text(params: dict) -> dict:
    return {k: f"{v!r:.80}" for k, v in params.items()}


def fit_reply_problem(value, n_test: int | None) -> str | None:
    """Why a worker's reply is not {"model": str, "predictions": n_test floats (or None), "notes": [str]}:
    the worker ran participant code, so the parent checks the shape of what came back before using it."""
    if not isinstance(value, dict) or not isinstance(value.get("model"), str):
        return "the worker's reply holds no model string"
    if not isinstance(value.get("notes", []), list) or not all(isinstance(n, str) for n in value.get("notes", [])):
        return "the worker's notes are not a list of strings"
    predictions = value.get("predictions")
    if n_test is None:
        return None
    if not isinstance(predictions, list) or len(predictions) != n_test:
        return f"the worker's reply holds no list of {n_test} predictions"
    if not all(is_number(v) for v in predictions):
        return "the worker's predictions are not all numbers"
    return None


def check_regressor(entry: Path, config: dict) -> None:
    """Import regressor.py once in a process of its own, under the import check's own limit
    (``import_time_limit``, not the fit's); SubmissionError with one clear message when the import fails (a
    missing module named, with the dependency rule) or est/model/eval_kwargs are wrong. Skipped under
    ``import_check: false``, which the judge's parts take once the judge has imported the team's
    submission itself, once per team and environment (docs/judge.md#the-import-check)."""
    if not config.get("import_check", True):
        log("srbench ingestion: the import of regressor.py was checked once for this team by the judge")
        return
    limit = float(config.get("import_time_limit", config["fit_time_limit"]))
    [outcome] = run_jobs(probe_regressor, [(str(entry), bool(config["scale_default"]))],
                         time_limit=limit, n_workers=1, memory_limit=int(config["fit_memory_limit"]) * 1024**2)
    if outcome.status == "timeout":
        raise SubmissionError(f"{files.REGRESSOR_FILE}: importing it took longer than the import check's time "
                              f"limit of {limit:g} s (import_time_limit)")
    if outcome.status != "ok":
        first = outcome.message.splitlines()[0] if outcome.message else "the import failed"
        raise SubmissionError(f"{files.REGRESSOR_FILE}: {first}")
    reply = outcome.value if isinstance(outcome.value, dict) else {}
    if "missing" in reply:
        missing = str(reply["missing"])[:200]
        raise SubmissionError(f"{files.REGRESSOR_FILE}: importing it failed: "
                              f"{str(reply.get('message'))[:300]}. "
                              + (f"The module {missing!r} is not available here. " if missing else "")
                              + dependency_rule())
    log(f"srbench ingestion: eval_kwargs applied to every run: {reply.get('eval_kwargs')}"
        + ("" if config["test_mode"] else " (test_params only in test_mode)"))


def dependency_rule() -> str:
    """What a submission may import: Codabench's rule, or, in a team's environment that codascore built
    (codascore/formats/environment.py's record in sys.prefix), what that environment was built from."""
    record = running_record()
    if record is None:
        return DEPENDENCY_RULE
    sources = " and ".join(record["sources"]) or "the organiser's entry"
    return (f"The submission ran in its team's environment, built from {sources} on Python "
            f"{record['python_version']} with {len(record['packages'])} packages (docs/judge.md#environments).")


def _run_jobs(input_dir: Path, entry: Path, config: dict, notes_dir: Path) -> tuple[list, list, dict, dict]:
    """(jobs, run keys, {run: test rows} of the runs that predict, settings): one fit_one job per
    (dataset, seed) of datasets.json. Under accuracy_source predictions every run's test features must be
    there; under auto, when one is missing, no run predicts (R² then comes from the strings), with a warning."""
    meta = files.read_json(input_dir / files.DATASETS_FILE, "input data")
    source = config.get("accuracy_source", "auto")
    runs = [(dataset, int(seed)) for dataset in meta["datasets"] for seed in meta["seeds"]]
    missing = [f"test/{d['name']}/{seed}.csv" for d, seed in runs
               if not (input_dir / "test" / d["name"] / f"{seed}.csv").is_file()]
    if missing and source == "predictions":
        raise ReferenceDataError(f"input data: {missing[0]} is missing; accuracy_source: predictions needs every "
                                 "run's test features")
    if missing and source == "auto":
        log(f"WARNING: input data: {missing[0]} (and {len(missing) - 1} more) missing: est.predict is not called "
            "and R² comes from the model strings (accuracy_source: auto)")
    predict = source == "predictions" or (source == "auto" and not missing)
    settings = {"fit_time_limit": float(config["fit_time_limit"]), "scale_default": bool(config["scale_default"]),
                "test_mode": bool(config["test_mode"]), "unscale": not predict}
    jobs, keys, n_test = [], [], {}
    for index, (dataset, seed) in enumerate(runs):
        test = input_dir / "test" / dataset["name"] / f"{seed}.csv"
        key = (dataset["name"], seed)
        if predict:
            n_test[key] = len(files.read_features(test, list(dataset["feature_names"])))
        run = {"train": str(input_dir / "train" / dataset["name"] / f"{seed}.csv"),
               "test": str(test) if predict else None, "feature_names": list(dataset["feature_names"]),
               "seed": seed, "notes_file": str(notes_dir / f"{index}.jsonl")}
        jobs.append((str(entry), run, settings))
        keys.append(key)
    return jobs, keys, n_test, settings


def run_record(outcome, problem: str | None, seen: dict, limit: float) -> dict:
    """runs.json's entry for one run: outcome ("fitted", "fitted at the alarm", "stopped", "killed",
    "failed"), the reason (with the method's own budget when it had one) and the fit's seconds."""
    if not problem:
        value = outcome.value
        alarm = bool(value.get("alarm"))
        seconds = value.get("fit_seconds")
        return {"outcome": "fitted at the alarm" if alarm else "fitted",
                "reason": f"the fit's alarm at {limit:g} s stopped it; its model is what est held then" if alarm
                else "", "fit_seconds": float(seconds) if is_number(seconds) else None}
    if seen["stopped"]:
        kind, reason = "stopped", seen["stopped"]
    elif outcome.status == "timeout":
        grace = min(KILL_GRACE, limit)
        what = "model() or est.predict did not return" if seen["fit_seconds"] is not None else "the fit did not end"
        kind, reason = "killed", (f"killed at the time limit of {limit + grace:g} s (the fit limit of {limit:g} s "
                                  f"plus {grace:g} s): "
                                  f"{what}, and neither the alarm nor the watchdog could stop it")
    else:
        kind, reason = "failed", (problem.splitlines() or [""])[0]
    if seen["budget"]:
        reason += f" ({seen['budget']})"
    seconds = seen["fit_seconds"]
    if seconds is None and seen["fit_started"] is not None:
        seconds = max(outcome.seconds - seen["fit_started"], 0.0)
    return {"outcome": kind, "reason": reason[:600], "fit_seconds": seconds}


def ingest_models(input_dir: Path, output_dir: Path, submission_dir: Path, config: dict) -> None:
    """Fit every (dataset, seed) of input_dir/datasets.json, each in a new process; write
    output_dir/models.json, runs.json (each run's outcome) and, under accuracy_source auto or predictions,
    predictions.json. Every run's notes are logged, a run that failed or was stopped with its reason."""
    import tempfile

    entry, warnings_found = find_entry(submission_dir, (files.REGRESSOR_FILE,))
    if entry is None:
        return  # a results submission: the worker copies its files itself
    for warning in warnings_found:
        log(f"WARNING: {warning}")
    for name in IGNORED_FILES:
        if (entry.parent / name).is_file() and running_record() is None:
            log(f"WARNING: {name} is ignored. {DEPENDENCY_RULE}")
    entry = entry.resolve()
    check_regressor(entry, config)
    with tempfile.TemporaryDirectory(prefix="srbench-notes-") as notes_dir:
        jobs, keys, n_test, settings = _run_jobs(Path(input_dir).resolve(), entry, config, Path(notes_dir))
        limit = settings["fit_time_limit"]
        log(f"srbench ingestion: {len(jobs)} runs, fit limit {limit:g} s each (SIGALRM; a fit the alarm cannot "
            f"stop is stopped {min(ALARM_GRACE, limit / 2):g} s later, a process still running is killed at "
            f"{limit + min(KILL_GRACE, limit):g} s)")
        outcomes = run_jobs(fit_one, jobs, time_limit=limit + min(KILL_GRACE, limit),
                            n_workers=int(config.get("workers") or 0) or None,
                            progress=Counter("runs fitted", len(jobs)),
                            memory_limit=int(config["fit_memory_limit"]) * 1024**2, fresh_process=True)
        seen = [read_notes(Path(job[1]["notes_file"])) for job in jobs]
    models, predictions, runs, failures = {}, {}, {}, []
    for key, outcome, notes in zip(keys, outcomes, seen):
        problem = fit_reply_problem(outcome.value, n_test.get(key)) if outcome.status == "ok" else outcome.message
        for note in (outcome.value["notes"] if not problem else notes["notes"]):
            log(f"srbench ingestion: {key[0]}/{key[1]}: {note[:500]}")
        runs[key] = run_record(outcome, problem, notes, limit)
        if problem:
            failures.append((key, problem))
            log(f"srbench ingestion: {key[0]}/{key[1]} {runs[key]['outcome']}: {runs[key]['reason']}")
            continue
        models[key] = outcome.value["model"]
        if key in n_test:
            predictions[key] = outcome.value["predictions"]
    files.write_runs(output_dir, runs)  # kept beside ingestion_error.txt too: the judge's parts merge it
    if not models:
        (dataset, seed), message = failures[0]
        raise SubmissionError([f"{files.REGRESSOR_FILE}: every fit failed; the first ({dataset}/{seed}):",
                               runs[(dataset, seed)]["reason"], *message.splitlines()[1:]])
    files.write_models(output_dir, models)
    if predictions:
        files.write_predictions(output_dir, predictions)
