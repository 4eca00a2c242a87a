"""The SRBench files: their names, their readers, writers and validators, and the task.yaml parameters
the three tracks share.

A participant's: models.json (every run's model string) and, from code submissions, predictions.json.
An organiser's: datasets.json (the runs, columns, properties), the data CSVs, pool.csv (the reference
pool's per-run results), expert.csv (real-world trust scores), PMLB tables (qualification), and the
details.json files and per-run CSVs that ``codascore srbench rank`` ranks. Readers validate and name file,
key and value in every error; they compute no score (metrics.py does).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from ..errors import ModelSyntaxError, ReferenceDataError, SubmissionError
from ..validate import Problems, is_number, read_participant_json
from .expressions import check_model
from .metrics import AGGREGATES, PROFILES

MODELS_FILE = "models.json"
#: Written by the ingestion beside models.json: the fitted estimator's test predictions per run.
PREDICTIONS_FILE = "predictions.json"
#: Written by the ingestion beside models.json: every run's outcome, reason and fit seconds (the page's table).
RUNS_FILE = "runs.json"
#: The code submission's entry file (the 2022 interface: ``est`` and ``model(est, X)``).
REGRESSOR_FILE = "regressor.py"
#: The runs of a task: in the reference data with what scoring needs, in the input data the public part.
DATASETS_FILE = "datasets.json"
#: The reference pool's per-run results (synthetic and real-world tracks).
POOL_FILE = "pool.csv"
POOL_COLUMNS = ("algorithm", "dataset", "run", "seed", "r2_test", "simplicity", "property")
#: The expert's trust scores of the real-world track (task, method, trust), from the organiser.
EXPERT_FILE = "expert.csv"
#: The submission's name in the rankings; no pool method may take it.
SUBMISSION = "submission"

#: task.yaml parameters of every track (docs/srbench.md#configuration).
COMMON_DEFAULTS = {
    "aggregate": "median",            # "median" (written rules) or "mean" (2022 code)
    "profile": None,                  # missing values: None = official2022 for mean, seed for median
    "simplify_time_limit": 10.0,      # seconds per sympy.simplify (2022: 10)
    "model_time_limit": 60.0,         # hard limit per model (worker killed): sympy stuck in C code
    "workers": 0,                     # scoring processes; 0 = every core
    "invalid_models": "reject",       # "reject": exit 1 listing them; "fail_run": the run counts as failed
    "nonfinite_predictions": "worst",  # "worst": R² = -inf for that run; "missing": the run is missing
    "max_length": 10000,              # longest model string accepted
    "fit_time_limit": 300.0,          # code submissions: seconds per fit (2022: 3600 up to 1000 rows)
    "fit_memory_limit": 16384,        # code submissions: MB of address space per run (2022: -m 16384)
    "import_time_limit": 300.0,       # code submissions: seconds the import check of regressor.py may take
    "import_check": True,             # false: the judge checked the import once for the team (its parts skip it)
    # eval_kwargs defaults the 2022 judging code used (docs/srbench.md#the-2022-harness)
    "scale_default": False,           # scale_x / scale_y when regressor.py does not say
    "test_mode": False,               # true: apply eval_kwargs' test_params (2022's -test)
    # R² from "auto": the fitted estimator's predictions when res/ holds predictions.json (a code
    # submission: the ingestion records est.predict, as 2022 scored), the model string otherwise (a results
    # submission); "string": always the model string evaluated on the test features (documented deviation);
    # "predictions": always the recorded predictions (code submissions only). docs/srbench.md#accuracy-source
    "accuracy_source": "auto",
}
ACCURACY_SOURCES = ("auto", "string", "predictions")
#: Parameters only the generators read: reference data's task.yaml leaves them out.
GENERATION_KEYS = ("max_rows", "datasets", "seeds")
#: The parameters the ingestion program reads (input_data/<task>/task.yaml).
INGESTION_KEYS = ("fit_time_limit", "fit_memory_limit", "scale_default", "test_mode", "workers", "max_length",
                  "accuracy_source")


def check_config(config: dict) -> None:
    """The shared task.yaml parameters have allowed values (ReferenceDataError naming the key otherwise)."""
    choices = {"aggregate": AGGREGATES, "profile": (None, *PROFILES), "invalid_models": ("reject", "fail_run"),
               "nonfinite_predictions": ("worst", "missing"), "accuracy_source": ACCURACY_SOURCES}
    for key, allowed in choices.items():
        if key in config and config[key] not in allowed:
            raise ReferenceDataError(f"task.yaml: {key} = {config[key]!r}; allowed: {list(allowed)}")
    for key in ("simplify_time_limit", "model_time_limit", "fit_time_limit", "fit_memory_limit", "max_length",
                "import_time_limit"):
        value = config.get(key)
        if key in config and (not is_number(value) or value <= 0):
            raise ReferenceDataError(f"task.yaml: {key} = {value!r} must be a positive number")
    for key in ("scale_default", "test_mode", "import_check"):
        if key in config and not isinstance(config[key], bool):
            raise ReferenceDataError(f"task.yaml: {key} = {config[key]!r} must be true or false")


# --------------------------------------------------------------------------- the participant's files

def run_key(dataset: str, seed: int) -> str:
    """The key of one run in models.json: ``"<dataset>/<seed>"`` (docs/srbench.md#model-strings)."""
    return f"{dataset}/{seed}"


def read_submission(res_dir: Path, reference: dict, config: dict) -> dict:
    """models.json checked against every (dataset, seed) run of the reference (all SRBench tracks):
    {"models", "invalid", "warnings"} as read_models returns them."""
    expected = {run_key(d, s): (d, s) for d in reference["specs"] for s in reference["seeds"]}
    names = {d: spec.feature_names for d, spec in reference["specs"].items()}
    models, invalid, warnings = read_models(res_dir, expected, names, int(config["max_length"]),
                                            config["invalid_models"])
    predictions, source = None, accuracy_source(res_dir, config)
    if source == "predictions":
        n_test = {run: reference["data"][run].y_test.size for run in expected.values()}
        predictions = read_predictions(res_dir, expected, [*models, *invalid], n_test)
    return {"models": models, "invalid": invalid, "warnings": warnings, "predictions": predictions,
            "accuracy_source": source, "runs": read_runs(res_dir, expected)}


def accuracy_source(res_dir: Path, config: dict) -> str:
    """The source of R² for this submission: task.yaml's accuracy_source, ``auto`` resolved by what res/
    holds: "predictions" when it holds predictions.json (the ingestion writes it for every code submission
    under auto), "string" otherwise (a results submission); docs/srbench.md#accuracy-source."""
    source = config.get("accuracy_source", "auto")
    if source == "auto":
        return "predictions" if (Path(res_dir) / PREDICTIONS_FILE).is_file() else "string"
    return source


def read_runs(res_dir: Path, expected: dict) -> dict:
    """{(dataset, seed): {"outcome", "reason", "fit_seconds"}} from runs.json, which the ingestion writes
    for the page's per-run table; {} when there is none (a results submission) or it cannot be read. Only
    shown, never scored: anything malformed is left out."""
    path = Path(res_dir) / RUNS_FILE
    try:
        data = json.loads(path.read_text()) if path.is_file() and path.stat().st_size < 4 * 1024**2 else {}
    except (OSError, ValueError):
        return {}
    runs = {}
    for key, entry in (data.items() if isinstance(data, dict) else ()):
        if key in expected and isinstance(entry, dict):
            seconds = entry.get("fit_seconds")
            runs[expected[key]] = {"outcome": str(entry.get("outcome", ""))[:40],
                                   "reason": str(entry.get("reason", ""))[:600],
                                   "fit_seconds": float(seconds) if is_number(seconds) else None}
    return runs


def write_runs(folder: Path, runs: dict) -> None:
    """runs.json from {(dataset, seed): {"outcome", "reason", "fit_seconds"}}, keys in a stable order."""
    folder.mkdir(parents=True, exist_ok=True)
    data = {run_key(dataset, seed): entry for (dataset, seed), entry in sorted(runs.items())}
    (folder / RUNS_FILE).write_text(json.dumps(data, indent=1) + "\n")


def read_models(res_dir: Path, expected: dict, feature_names: dict, max_length: int,
                invalid_models: str = "reject") -> tuple[dict, dict, list[str]]:
    """Read and validate models.json.

    Format (docs/srbench.md#model-strings): a JSON object ``{"<dataset>/<seed>": "<model string>", ...}``; the list form
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


def check_models_format(res_dir: Path, max_length: int) -> str:
    """The reference-free check (``codascore validate``): models.json's structure, keys of the form
    ``<dataset>/<seed>``, each run once, and every model string through the whitelist grammar. Which runs
    exist and which columns each dataset has are known only to the reference: names are not checked here.
    A one-line summary."""
    data = read_participant_json(Path(res_dir) / MODELS_FILE, hint=" (expected at the zip's root)")
    problems = Problems()
    seen = set()
    for key, text in _entries(data, problems):
        dataset, _, seed = str(key).rpartition("/")
        if not dataset or not seed.lstrip("-").isdigit():
            problems.add(f"{MODELS_FILE}: key {str(key)[:80]!r} is not '<dataset>/<seed>' (e.g. 'feynman_I_6_2/0')")
        elif key in seen:
            problems.add(f"{MODELS_FILE}: run {key!r} appears twice")
        seen.add(key)
        if not isinstance(text, str):
            problems.add(f"{MODELS_FILE}: {key}: the model must be a string, found {json.dumps(text)[:40]}")
            continue
        try:
            check_model(text, (), strict=False, max_length=max_length)
        except ModelSyntaxError as exc:
            problems.add(f"{MODELS_FILE}: {key}: {exc}")
    if not seen and not problems:
        problems.add(f"{MODELS_FILE}: holds no model")
    problems.raise_if_any()
    return (f"{MODELS_FILE}: {len(seen)} model strings in the accepted grammar; scoring checks the run names "
            f"and each dataset's column names")


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
    ``nonfinite_predictions`` rule to them (docs/srbench.md#the-predictions-file). Returns
    {(dataset, seed): float64 array}.
    """
    hint = (" (accuracy_source: predictions takes R² from the fitted estimator's predictions, which only a "
            "code submission can provide: the ingestion program runs regressor.py and writes "
            f"{PREDICTIONS_FILE} beside {MODELS_FILE}; a results submission cannot be scored under this "
            "setting. Organisers: input_data's task.yaml must say accuracy_source: predictions or auto too)")
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
    if not is_number(value):
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


# --------------------------------------------------------------------------- the organiser's files

def read_json(path: Path, what: str):
    """A JSON file of the reference or input data (``what`` says which); ReferenceDataError if unreadable."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ReferenceDataError(f"{what} {Path(path).name}: cannot be read: {exc}") from None


def write_datasets(folder: Path, meta: dict) -> None:
    """folder/datasets.json: {"seeds": [...], "datasets": [{"name", "feature_names", ...}, ...]}."""
    (Path(folder) / DATASETS_FILE).write_text(json.dumps(meta, indent=1) + "\n")


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


def clean_column(name: str) -> str:
    """PMLB column names as the 2022 code used them: surrounding spaces stripped, '.' -> '_'
    (docs/srbench.md#qualification)."""
    return str(name).strip().replace(".", "_")


def read_dataset_file(path: Path, target: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(columns, X, y) from a CSV or a PMLB .tsv/.tsv.gz file holding a ``target`` column."""
    import pandas as pd

    sep = "\t" if ".tsv" in path.name else ","
    try:
        frame = pd.read_csv(path, sep=sep)
    except (OSError, ValueError) as exc:
        raise ReferenceDataError(f"{path.name}: cannot be read: {exc}") from None
    frame.columns = [clean_column(c) for c in frame.columns]
    if target not in frame.columns:
        raise ReferenceDataError(f"{path.name}: no target column {target!r}")
    names = [c for c in frame.columns if c != target]
    return names, frame[names].to_numpy(dtype=float), frame[target].to_numpy(dtype=float)


def read_pool(path: Path) -> list[dict]:
    """The reference pool's per-run rows (pool.csv); nan and -inf are allowed values
    (docs/srbench.md#the-reference-pool)."""
    if not path.is_file():
        raise ReferenceDataError(f"{path.name}: missing from the reference data (the reference pool)")
    rows = []
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        if tuple(reader.fieldnames or ()) != POOL_COLUMNS:
            raise ReferenceDataError(f"{path.name}: columns must be {list(POOL_COLUMNS)}")
        for line, row in enumerate(reader, start=2):
            try:
                rows.append({"algorithm": row["algorithm"], "dataset": row["dataset"], "run": int(row["run"]),
                             "seed": int(row["seed"]), **{k: float(row[k]) for k in POOL_COLUMNS[4:]}})
            except ValueError as exc:
                raise ReferenceDataError(f"{path.name} line {line}: {exc}") from None
    if SUBMISSION in {row["algorithm"] for row in rows}:
        raise ReferenceDataError(f"{path.name}: the name {SUBMISSION!r} is reserved for the submission")
    return rows


def write_pool(path: Path, rows: list[dict]) -> None:
    """pool.csv from per-run rows (floats written exactly, with repr)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(POOL_COLUMNS)
        for row in rows:
            writer.writerow([row["algorithm"], row["dataset"], row["run"], row["seed"],
                             *(repr(float(row[k])) for k in POOL_COLUMNS[4:])])


def read_expert(path: Path) -> dict:
    """{(dataset, method): trust} from expert.csv (columns task, method, trust; trust a number)
    (docs/srbench.md#real-world-track)."""
    if not path.is_file():
        raise ReferenceDataError(f"{path.name}: missing; the organiser provides the expert's trust scores")
    out = {}
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        if not {"task", "method", "trust"} <= set(reader.fieldnames or ()):
            raise ReferenceDataError(f"{path.name}: columns must include task, method, trust")
        for line, row in enumerate(reader, start=2):
            try:
                out[(row["task"], row["method"])] = float(row["trust"])
            except ValueError:
                raise ReferenceDataError(f"{path.name} line {line}: trust {row['trust']!r} is not a number") from None
    return out


# --------------------------------------------------------------------------- what `codascore srbench rank` reads

def read_details_runs(path: Path) -> list[dict]:
    """The per-run records of one scored submission, from the details.json its scoring wrote: each
    instance with its id ``"<dataset>/<seed>"`` split into dataset and seed."""
    try:
        data = json.loads(Path(path).read_text())
    except ValueError as exc:
        raise ReferenceDataError(f"{path}: not a details.json of an SRBench task ({type(exc).__name__}: "
                                 f"{exc})") from None
    return details_runs(data, str(path))


def details_runs(data: dict, source: str) -> list[dict]:
    """The per-run records of a details.json already read (``source`` names it in errors): each instance
    with its id ``"<dataset>/<seed>"`` split into dataset and seed. ReferenceDataError naming the field when
    it holds none."""
    try:
        records = []
        for instance in data.get("instances", []):
            dataset, seed = str(instance["id"]).rsplit("/", 1)
            records.append({**instance, "dataset": dataset, "seed": int(seed)})
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ReferenceDataError(f"{source}: not a details.json of an SRBench task: instances[].id "
                                 f"({type(exc).__name__}: {exc})") from None
    if not records:
        raise ReferenceDataError(f"{source}: no per-run instances (is it a details.json of srbench.synthetic?)")
    return records


def read_results_csv(path: Path):
    """A per-run results table (algorithm, dataset, run, r2_test, simplicity, property) as a DataFrame."""
    import pandas as pd

    try:
        return pd.read_csv(path)
    except ValueError as exc:
        raise ReferenceDataError(f"{path}: not a CSV table of per-run results: {exc}") from None
