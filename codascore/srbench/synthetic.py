"""srbench.synthetic: the SRBench 2022 synthetic track on Codabench (spec srbench.md §2–§5).

Reference data (``ref/``): ``task.yaml``; ``datasets.json`` (per dataset: columns, property, generating
expression, bad features; the data seeds); ``test/<dataset>/<seed>.csv`` (test splits); ``pool.csv``
(the per-run results of the reference pool of baseline methods, scored by this same code when the
reference data was generated). Submission: ``models.json`` = {"<dataset>/<seed>": "<model string>"};
under ``accuracy_source: predictions`` also ``predictions.json`` = {"<dataset>/<seed>": [y_pred, ...]},
which the ingestion writes for code submissions (io.read_predictions).

Codabench scores one submission at a time, so the rank-based score ranks the submission within
pool ∪ {submission} (spec §5); ``codascore srbench rank`` ranks all participants against each other.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from ..errors import ReferenceDataError
from ..task import Result, Section, Task
from . import files as io
from .evaluation import DatasetSpec, RunData, run_rows, score_runs

SUBMISSION = "submission"
POOL_FILE = "pool.csv"
POOL_COLUMNS = ("algorithm", "dataset", "run", "seed", "r2_test", "simplicity", "property")
#: Display clamp of mean_r2 (Codabench keeps |v| < 1e10; ranks use the unclamped values), spec §5.
R2_FLOOR = -1e6

COMMON_DEFAULTS = {
    "aggregate": "median",            # "median" (written rules) or "mean" (2022 code)
    "profile": None,                  # missing values: None = official2022 for mean, seed for median
    "simplify_time_limit": 10.0,      # seconds per sympy.simplify (2022: 10)
    "model_time_limit": 60.0,         # hard limit per model (worker killed): sympy stuck in C code
    "workers": 0,                     # scoring processes; 0 = every core
    "invalid_models": "reject",       # "reject": exit 1 listing them; "fail_run": the run counts as failed
    "nonfinite_predictions": "worst",  # "worst": R² = -inf for that run; "missing": the run is missing
    "max_length": 10000,              # longest model string accepted
    "fit_time_limit": 300.0,          # code submissions: seconds per fit and predict (ingestion)
    # R² from "string": the model string evaluated on the test features (documented deviation), or
    # "predictions": the fitted estimator's predictions that the ingestion recorded (2022 code; code
    # submissions only).
    "accuracy_source": "string",
}
ACCURACY_SOURCES = ("string", "predictions")


def check_common_config(config: dict) -> None:
    from .ranking import AGGREGATES, PROFILES

    choices = {"aggregate": AGGREGATES, "profile": (None, *PROFILES), "invalid_models": ("reject", "fail_run"),
               "nonfinite_predictions": ("worst", "missing"), "accuracy_source": ACCURACY_SOURCES}
    for key, allowed in choices.items():
        if key in config and config[key] not in allowed:
            raise ReferenceDataError(f"task.yaml: {key} = {config[key]!r}; allowed: {list(allowed)}")
    for key in ("simplify_time_limit", "model_time_limit", "fit_time_limit", "max_length"):
        value = config.get(key)
        if key in config and (not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0):
            raise ReferenceDataError(f"task.yaml: {key} = {value!r} must be a positive number")


def read_pool(path: Path) -> list[dict]:
    """The reference pool's per-run rows (pool.csv); nan and -inf are allowed values."""
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
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(POOL_COLUMNS)
        for row in rows:
            writer.writerow([row["algorithm"], row["dataset"], row["run"], row["seed"],
                             *(repr(float(row[k])) for k in POOL_COLUMNS[4:])])


class SyntheticTask(Task):
    name = "srbench.synthetic"
    title = "SRBench 2022 synthetic track: accuracy, simplicity and property ranks"
    score_keys = ("score", "mean_r2", "mean_simplicity", "mean_property", "pool_position", "n_failed_runs",
                  "n_unsimplified")
    result_files = (io.MODELS_FILE,)
    has_ingestion = True
    # Generation only: demo sizes (rows per split), and optionally fewer datasets or seeds (None = all).
    defaults = {**COMMON_DEFAULTS, "max_rows": 100, "datasets": None, "seeds": None}
    answer_samples = ("true_formulas",)  # the generating expressions
    max_scores = {"score": None}  # the true formulas' rank within the reference pool

    def load_config(self, raw: dict) -> dict:
        config = super().load_config(raw)
        check_common_config(config)
        return config

    # ----- reading
    def load_reference(self, ref_dir: Path, config: dict) -> dict:
        ref_dir = Path(ref_dir)
        meta = io.read_json(ref_dir / "datasets.json", "reference data")
        try:
            seeds = [int(s) for s in meta["seeds"]]
            specs = {d["name"]: DatasetSpec(d["name"], list(d["feature_names"]), d["property"],
                                            d.get("truth", ""), list(d.get("bad_features", [])))
                     for d in meta["datasets"]}
        except (KeyError, TypeError, ValueError) as exc:
            raise ReferenceDataError(f"datasets.json: malformed ({type(exc).__name__}: {exc})") from None
        data = {}
        for name, spec in specs.items():
            if spec.property not in ("equivalence", "feature_absence", "r2"):
                raise ReferenceDataError(f"datasets.json: {name}: unknown property {spec.property!r}")
            for seed in seeds:
                X, y = io.read_table(ref_dir / "test" / name / f"{seed}.csv", spec.feature_names)
                data[(name, seed)] = RunData(seed, X, y)
        return {"specs": specs, "seeds": seeds, "data": data, "pool": read_pool(ref_dir / POOL_FILE)}

    def load_submission(self, res_dir: Path, reference: dict, config: dict) -> dict:
        return io.read_submission(res_dir, reference, config)

    # ----- scoring
    def score(self, reference: dict, submission: dict, config: dict) -> Result:
        from .ranking import final_scores, rank_per_dataset

        records = score_runs(submission["models"], reference["specs"], reference["data"],
                             float(config["simplify_time_limit"]), float(config["model_time_limit"]),
                             workers=int(config["workers"]) or None, predictions=submission.get("predictions"))
        records += [{"dataset": d, "seed": s, "failed": why} for (d, s), why in submission["invalid"].items()]
        submitted = {(r["dataset"], r["seed"]) for r in records}
        records += [{"dataset": d, "seed": s, "failed": "no model submitted"}
                    for d in reference["specs"] for s in reference["seeds"] if (d, s) not in submitted]
        records.sort(key=lambda r: (list(reference["specs"]).index(r["dataset"]), r["seed"]))
        seeds_order = {d: list(reference["seeds"]) for d in reference["specs"]}
        rows = run_rows(records, SUBMISSION, seeds_order, config["nonfinite_predictions"])
        per_dataset, final = rank_pool(rows, reference["pool"], config, list(reference["specs"]),
                                       rank_per_dataset, final_scores)
        mine = per_dataset[per_dataset["algorithm"] == SUBMISSION].set_index("dataset")
        r2 = np.clip(np.nan_to_num(mine["r2"].to_numpy(dtype=float), nan=R2_FLOOR, neginf=R2_FLOOR), R2_FLOOR, 1)
        scores = {
            "score": float(final.loc[SUBMISSION, "score"]),
            "mean_r2": float(np.mean(r2)),
            "mean_simplicity": _nanmean(mine["simplicity"]),
            "mean_property": _nanmean(mine["property"]),
            "pool_position": float(list(final.index).index(SUBMISSION) + 1),
            "n_failed_runs": float(sum("failed" in r or r.get("r2_test") is None for r in records)),
            "n_unsimplified": float(sum(bool(r.get("timed_out")) for r in records)),
        }
        warnings = list(submission["warnings"]) + _run_warnings(records)
        details = {"aggregate": config["aggregate"], "accuracy_source": config["accuracy_source"],
                   "profile": config["profile"] or ("official2022" if config["aggregate"] == "mean" else "seed"),
                   "pool": {name: float(v) for name, v in final["score"].items()},
                   "per_dataset": _records(per_dataset[per_dataset["algorithm"] == SUBMISSION])}
        instances = [{"id": io.run_key(r["dataset"], r["seed"]), **{k: v for k, v in r.items()
                                                                   if k not in ("dataset", "seed")}}
                     for r in records]
        return Result(scores=scores, instances=instances, warnings=warnings, details=details)

    def report(self, result: Result, reference: dict, submission: dict, config: dict) -> list[Section]:
        from .report import synthetic_report

        return synthetic_report(result)

    # ----- data and ingestion
    def generate(self, root: Path, config: dict, progress=print, seed: int | None = None) -> None:
        from .generate import generate_synthetic

        generate_synthetic(Path(root), self, config, progress, seed)

    def write_perfect_submission(self, ref_dir: Path, out_dir: Path, config: dict) -> bool:
        """models.json holding each dataset's generating expression (datasets.json ``truth``) for every run."""
        meta = io.read_json(Path(ref_dir) / "datasets.json", "reference data")
        io.write_models(Path(out_dir), {(d["name"], int(seed)): d["truth"] for d in meta["datasets"]
                                        for seed in meta["seeds"]})
        return True

    def ingest(self, input_dir: Path, output_dir: Path, submission_dir: Path, config: dict) -> None:
        from .ingest import ingest_models

        ingest_models(Path(input_dir), Path(output_dir), Path(submission_dir), config)


def rank_pool(rows: list[dict], pool: list[dict], config: dict, datasets: list[str], rank_per_dataset,
              final_scores):
    import pandas as pd

    frame = pd.DataFrame(pool + rows, columns=list(POOL_COLUMNS))
    per_dataset = rank_per_dataset(frame, aggregate=config["aggregate"], profile=config["profile"],
                                   datasets=datasets)
    return per_dataset, final_scores(per_dataset)


def _nanmean(values) -> float:
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    return float(np.mean(values)) if values.size else 0.0


def _records(frame) -> list[dict]:
    out = []
    for row in frame.to_dict("records"):
        out.append({k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()})
    return out


def _run_warnings(records: list[dict]) -> list[str]:
    warnings = []
    failed = [r for r in records if "failed" in r and r["failed"] != "no model submitted"]
    for r in failed[:10]:
        warnings.append(f"{io.run_key(r['dataset'], r['seed'])}: run failed: {r['failed']}")
    nonfinite = [r for r in records if "reason" in r]
    for r in nonfinite[:10]:
        warnings.append(f"{io.run_key(r['dataset'], r['seed'])}: worst accuracy: {r['reason']}")
    timed = [r for r in records if r.get("timed_out")]
    if timed:
        warnings.append(f"{len(timed)} model(s) could not be simplified within the time limit and were scored "
                        "unsimplified (as in 2022)")
    return warnings


TASK = SyntheticTask()
