"""Readers and writers of the SRBench files: models.json (submissions), datasets.json, data CSVs and the
reference pool. Readers validate and name file, key and value in every error; they compute no score."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import ModelSyntaxError, ReferenceDataError, SubmissionError
from ..validate import Problems, read_participant_json
from .expressions import check_model

MODELS_FILE = "models.json"
#: Written by the ingestion beside models.json: the fitted estimator's test predictions per run.
PREDICTIONS_FILE = "predictions.json"


def run_key(dataset: str, seed: int) -> str:
    """The key of one run in models.json: ``"<dataset>/<seed>"`` (spec §6.2)."""
    return f"{dataset}/{seed}"


def read_submission(res_dir: Path, reference: dict, config: dict) -> dict:
    """models.json checked against every (dataset, seed) run of the reference (all SRBench tracks):
    {"models", "invalid", "warnings"} as read_models returns them."""
    expected = {run_key(d, s): (d, s) for d in reference["specs"] for s in reference["seeds"]}
    names = {d: spec.feature_names for d, spec in reference["specs"].items()}
    models, invalid, warnings = read_models(res_dir, expected, names, int(config["max_length"]),
                                            config["invalid_models"])
    predictions = None
    if config.get("accuracy_source") == "predictions":
        n_test = {run: reference["data"][run].y_test.size for run in expected.values()}
        predictions = read_predictions(res_dir, expected, [*models, *invalid], n_test)
    return {"models": models, "invalid": invalid, "warnings": warnings, "predictions": predictions}


def read_models(res_dir: Path, expected: dict, feature_names: dict, max_length: int,
                invalid_models: str = "reject") -> tuple[dict, dict, list[str]]:
    """Read and validate models.json.

    Format (spec §6.2): a JSON object ``{"<dataset>/<seed>": "<model string>", ...}``; the list form
    ``[{"dataset": ..., "seed": ..., "model": ...}, ...]`` is accepted too.
    expected: {key: (dataset, seed)} of every run; feature_names: {dataset: [columns]}.
    invalid_models: "reject" lists every string that fails the whitelist as a SubmissionError;
    "fail_run" counts such runs as failed (returned in the second dict with the reason).
    Returns (models {(dataset, seed): text}, invalid {(dataset, seed): reason}, warnings).
    """
    data = read_participant_json(Path(res_dir) / MODELS_FILE, hint=" (expected at the zip's root)")
    problems = Problems()
    entries = _entries(data, problems)
    models, invalid = {}, {}
    for key, text in entries:
        if key not in expected:
            problems.add(f"{MODELS_FILE}: unknown run {key[:80]!r} (expected keys such as "
                         f"{next(iter(expected))!r}; see the starting kit's list)")
            continue
        dataset, seed = expected[key]
        if (dataset, seed) in models or (dataset, seed) in invalid:
            problems.add(f"{MODELS_FILE}: run {key!r} appears twice")
            continue
        if not isinstance(text, str):
            problems.add(f"{MODELS_FILE}: {key}: the model must be a string, found {json.dumps(text)[:40]}")
            continue
        try:
            check_model(text, feature_names[dataset], strict=True, max_length=max_length)
        except ModelSyntaxError as exc:
            if invalid_models == "reject":
                problems.add(f"{MODELS_FILE}: {key}: {exc}")
            else:
                invalid[(dataset, seed)] = f"invalid model: {exc}"
            continue
        models[(dataset, seed)] = text
    problems.raise_if_any()
    warnings = []
    missing = [key for key, run in expected.items() if run not in models and run not in invalid]
    if missing:
        warnings.append(f"{MODELS_FILE}: {len(missing)} of {len(expected)} runs have no model and count as "
                        f"failed (first: {', '.join(missing[:5])})")
    if not models and not invalid:
        raise SubmissionError(f"{MODELS_FILE}: no model for any of the {len(expected)} runs")
    return models, invalid, warnings


def _entries(data, problems: Problems) -> list[tuple[str, object]]:
    if isinstance(data, dict):
        return list(data.items())
    if isinstance(data, list):
        entries = []
        for index, item in enumerate(data):
            if not isinstance(item, dict) or not {"dataset", "seed", "model"} <= set(item):
                problems.add(f"{MODELS_FILE}: item [{index}] must be an object with dataset, seed and model")
                continue
            entries.append((f"{item['dataset']}/{item['seed']}", item["model"]))
        return entries
    raise SubmissionError(f"{MODELS_FILE}: expected a JSON object {{\"<dataset>/<seed>\": \"<model>\"}}, "
                          f"found {type(data).__name__}")


def read_predictions(res_dir: Path, expected: dict, runs: list, n_test: dict) -> dict:
    """Read and validate predictions.json, the fitted estimator's predictions on the test features.

    Format: a JSON object ``{"<dataset>/<seed>": [y_pred per test row, ...], ...}`` holding exactly the
    runs of models.json (``runs``: their (dataset, seed)), each list as long as that run's test split
    (``n_test``: {(dataset, seed): rows}). Numbers are JSON numbers; non-finite predictions appear as
    ``NaN``, ``Infinity`` or ``-Infinity`` (what Python's json writes) and are kept: scoring applies the
    ``nonfinite_predictions`` rule to them. Returns {(dataset, seed): float64 array}.
    """
    hint = (" (accuracy_source: predictions takes R² from the fitted estimator's predictions, which only a "
            "code submission can provide: the ingestion program runs regressor.py and writes "
            f"{PREDICTIONS_FILE} beside {MODELS_FILE}; a results submission cannot be scored under this "
            "setting. Organisers: input_data's task.yaml must say accuracy_source: predictions too)")
    data = read_participant_json(Path(res_dir) / PREDICTIONS_FILE, hint=hint)
    if not isinstance(data, dict):
        raise SubmissionError(f"{PREDICTIONS_FILE}: expected a JSON object {{\"<dataset>/<seed>\": [numbers]}}, "
                              f"found {type(data).__name__}")
    problems = Problems()
    predictions = {}
    for key, values in data.items():
        if key not in expected:
            problems.add(f"{PREDICTIONS_FILE}: unknown run {key[:80]!r}")
            continue
        run = expected[key]
        if not isinstance(values, list):
            problems.add(f"{PREDICTIONS_FILE}: run {key!r}: expected a list of numbers, found "
                         f"{type(values).__name__}")
            continue
        if len(values) != n_test[run]:
            problems.add(f"{PREDICTIONS_FILE}: run {key!r}: {len(values)} predictions, expected {n_test[run]} "
                         "(one per test row)")
            continue
        bad = next((i for i, v in enumerate(values) if not _is_float64(v)), None)
        if bad is not None:
            problems.add(f"{PREDICTIONS_FILE}: run {key!r}: index {bad}: {json.dumps(values[bad])[:40]} is not "
                         "a number")
            continue
        predictions[run] = np.asarray(values, dtype=float)
    submitted = set(runs)
    wanted = {run: key for key, run in expected.items() if run in submitted}
    for run in sorted(set(wanted) - set(predictions)):
        if wanted[run] not in data:
            problems.add(f"{PREDICTIONS_FILE}: run {wanted[run]!r} has a model in {MODELS_FILE} but no predictions")
    for run in sorted(set(predictions) - set(wanted)):
        problems.add(f"{PREDICTIONS_FILE}: run {run_key(*run)!r} has predictions but no model in {MODELS_FILE}")
    problems.raise_if_any()
    return predictions


def _is_float64(value) -> bool:
    """A JSON number that float64 holds (booleans and integers beyond float64's range are not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        float(value)
    except OverflowError:
        return False
    return True


def write_predictions(folder: Path, predictions: dict) -> None:
    """predictions.json from {(dataset, seed): sequence of floats}; floats written exactly (repr), keys in
    a stable order, non-finite values as NaN / Infinity / -Infinity."""
    folder.mkdir(parents=True, exist_ok=True)
    data = {run_key(dataset, seed): [float(v) for v in values]
            for (dataset, seed), values in sorted(predictions.items())}
    (folder / PREDICTIONS_FILE).write_text(json.dumps(data) + "\n")


def write_models(folder: Path, models: dict) -> None:
    """models.json from {(dataset, seed): text}, keys in a stable order (deterministic bytes)."""
    folder.mkdir(parents=True, exist_ok=True)
    data = {run_key(dataset, seed): text for (dataset, seed), text in sorted(models.items())}
    (folder / MODELS_FILE).write_text(json.dumps(data, indent=1) + "\n")


def write_table(path: Path, feature_names: list[str], X: np.ndarray, y: np.ndarray | None,
                target: str = "y") -> None:
    """A CSV with the feature columns then the target (12 significant digits: deterministic, compact);
    the features only when y is None."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [",".join([*feature_names, *([target] if y is not None else [])])]
    lines += [",".join(f"{v:.12g}" for v in row) for row in (np.column_stack([X, y]) if y is not None else X)]
    path.write_text("\n".join(lines) + "\n")


def read_table(path: Path, feature_names: list[str], target: str = "y") -> tuple[np.ndarray, np.ndarray]:
    """(X, y) from a data CSV whose header must be exactly the feature names then the target."""
    values = _read_matrix(path, [*feature_names, target])
    return values[:, :-1], values[:, -1]


def read_features(path: Path, feature_names: list[str]) -> np.ndarray:
    """X from a CSV of features only (the test features given to code submissions), header = the names."""
    return _read_matrix(path, list(feature_names))


def _read_matrix(path: Path, expected: list[str]) -> np.ndarray:
    import pandas as pd

    try:
        frame = pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise ReferenceDataError(f"{path.name}: cannot be read: {exc}") from None
    if list(frame.columns) != expected:
        raise ReferenceDataError(f"{path}: columns {list(frame.columns)[:8]} differ from {expected[:8]}")
    values = frame.to_numpy(dtype=float)
    if not np.all(np.isfinite(values)):
        row = int(np.argwhere(~np.isfinite(values))[0][0])
        raise ReferenceDataError(f"{path}: row {row} holds a non-finite value")
    return values


def read_json(path: Path, what: str):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ReferenceDataError(f"{what} {Path(path).name}: cannot be read: {exc}") from None


__all__ = ["MODELS_FILE", "PREDICTIONS_FILE", "run_key", "read_models", "read_predictions", "write_models",
           "write_predictions", "write_table", "read_table", "read_features", "read_json"]
