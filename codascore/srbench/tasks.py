"""The two other SRBench 2022 tracks (spec srbench.md §7 and §8).

srbench.qualification: a submission qualifies when it beats LinearRegression's test R² in average
head-to-head ranks: per (dataset, seed) both methods are ranked by round(R², 3) (average ranks, a missing
run ranks last), d = rank(submission) − rank(LinearRegression), median over seeds, mean over datasets;
qualified iff that mean is < 0. ``score`` = −mean (higher is better, > 0 qualifies). The LinearRegression
baseline is fitted by the scorer on each training split (scikit-learn, trusted code). The project ships
stand-in datasets; an organiser points ``datasets.json`` at PMLB files (``.tsv.gz`` with a ``target``
column, column names cleaned: spaces stripped, ``.`` → ``_``) to run the real PMLB-20.

srbench.realworld: per dataset (target) and method, the representative run is the one whose R² is closest
to the median R² of the runs (the first on ties); A = round(R², 3) and S = simplicity of its model
*without* simplification (as the 2022 stage 2); T = the expert's trust score from ``expert.csv``
(task, method, trust), which the organiser provides (the submission is the row whose method is
``submission_method``). Ranks n_algs − dense rank over the reference pool ∪ {submission}; the dataset
score is the harmonic mean of the three ranks; the final score is the mean over datasets.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from ..errors import ReferenceDataError
from ..task import Result, Section, Task
from . import files as io
from .evaluation import DatasetSpec, RunData, score_runs
from .synthetic import COMMON_DEFAULTS, SUBMISSION, check_common_config, read_pool


def clean_column(name: str) -> str:
    """PMLB column names as the 2022 code used them: surrounding spaces stripped, '.' -> '_'."""
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


class _ModelsTask(Task):
    result_files = (io.MODELS_FILE,)
    has_ingestion = True

    def load_config(self, raw: dict) -> dict:
        config = super().load_config(raw)
        check_common_config(config)
        return config

    def load_submission(self, res_dir: Path, reference: dict, config: dict) -> dict:
        return io.read_submission(res_dir, reference, config)

    def _score_models(self, reference: dict, submission: dict, config: dict, simplify: bool) -> list[dict]:
        records = score_runs(submission["models"], reference["specs"], reference["data"],
                             float(config["simplify_time_limit"]), float(config["model_time_limit"]),
                             workers=int(config["workers"]) or None, simplify=simplify,
                             predictions=submission.get("predictions"))
        records += [{"dataset": d, "seed": s, "failed": why} for (d, s), why in submission["invalid"].items()]
        done = {(r["dataset"], r["seed"]) for r in records}
        records += [{"dataset": d, "seed": s, "failed": "no model submitted"}
                    for d in reference["specs"] for s in reference["seeds"] if (d, s) not in done]
        return sorted(records, key=lambda r: (r["dataset"], r["seed"]))

    def ingest(self, input_dir: Path, output_dir: Path, submission_dir: Path, config: dict) -> None:
        from .ingest import ingest_models

        ingest_models(Path(input_dir), Path(output_dir), Path(submission_dir), config)

    def report(self, result: Result, reference, submission, config) -> list[Section]:
        from ..report import paragraph, table
        from .report import ACCURACY_SOURCE_TEXT

        header = list(result.details["table_header"])
        note = ACCURACY_SOURCE_TEXT.get(result.details.get("accuracy_source"), "")
        return [Section("Per dataset", paragraph(note) + table(result.details["table"], header))]


# --------------------------------------------------------------------------- qualification

class QualificationTask(_ModelsTask):
    name = "srbench.qualification"
    title = "SRBench 2022 qualification: beat LinearRegression's test R²"
    score_keys = ("score", "qualified", "mean_r2", "linear_mean_r2", "n_failed_runs")
    defaults = {**COMMON_DEFAULTS, "train_size": 0.75}
    # No formula repeats noisy data; only a model fitted to the test targets reaches R² = 1.
    max_scores = {"mean_r2": 1.0}

    def load_reference(self, ref_dir: Path, config: dict) -> dict:
        from sklearn.linear_model import LinearRegression
        from sklearn.model_selection import train_test_split

        meta = io.read_json(Path(ref_dir) / "datasets.json", "reference data")
        specs, data, linear = {}, {}, {}
        seeds = [int(s) for s in meta["seeds"]]
        for entry in meta["datasets"]:
            names, X, y = read_dataset_file(Path(ref_dir) / entry["path"], entry.get("target", "target"))
            specs[entry["name"]] = DatasetSpec(entry["name"], names, "none")
            for seed in seeds:
                X_tr, X_te, y_tr, y_te = train_test_split(X, y, train_size=float(config["train_size"]),
                                                          random_state=seed)
                data[(entry["name"], seed)] = RunData(seed, X_te, y_te)
                from .metrics import r2_score

                linear[(entry["name"], seed)] = r2_score(y_te, LinearRegression().fit(X_tr, y_tr).predict(X_te))
        return {"specs": specs, "seeds": seeds, "data": data, "linear": linear}

    def score(self, reference: dict, submission: dict, config: dict) -> Result:
        records = self._score_models(reference, submission, config, simplify=False)
        by_run = {(r["dataset"], r["seed"]): r.get("r2_test") for r in records}
        rows, differences = [], []
        for dataset in reference["specs"]:
            per_seed = []
            for seed in reference["seeds"]:
                mine, theirs = by_run.get((dataset, seed)), reference["linear"][(dataset, seed)]
                per_seed.append(head_to_head(mine, theirs))
            d = float(np.median(per_seed))
            differences.append(d)
            mine_r2 = [by_run[(dataset, s)] for s in reference["seeds"] if by_run.get((dataset, s)) is not None]
            rows.append((dataset, _mean(mine_r2), _mean([reference["linear"][(dataset, s)]
                                                          for s in reference["seeds"]]), d))
        mean_d = float(np.mean(differences))
        scores = {"score": 0.0 - mean_d, "qualified": float(mean_d < 0),
                  "mean_r2": float(np.clip(_mean([r[1] for r in rows]), -1e6, 1)),
                  "linear_mean_r2": float(np.clip(_mean([r[2] for r in rows]), -1e6, 1)),
                  "n_failed_runs": float(sum("failed" in r or r.get("r2_test") is None for r in records))}
        details = {"accuracy_source": config["accuracy_source"], "table": rows, "table_header": ["dataset", "mean R² (submission)", "mean R² (LinearRegression)",
                                                   "median rank difference"]}
        instances = [{"id": io.run_key(r["dataset"], r["seed"]),
                      **{k: v for k, v in r.items() if k not in ("dataset", "seed")}} for r in records]
        return Result(scores=scores, instances=instances, warnings=list(submission["warnings"]), details=details)

    def generate(self, root: Path, config: dict, progress=print, seed: int | None = None) -> None:
        from .generate import generate_qualification

        generate_qualification(Path(root), self, config, progress, seed)


def head_to_head(mine: float | None, linear: float) -> float:
    """rank(submission) − rank(LinearRegression) for one run: ranks by round(R², 3) descending, average
    ranks on ties, a missing run ranked after the last (spec §7)."""
    if mine is None or not math.isfinite(mine):
        return 1.0
    a, b = round(mine, 3), round(linear, 3)
    return 0.0 if a == b else (-1.0 if a > b else 1.0)


def _mean(values) -> float:
    values = [v for v in values if v is not None and math.isfinite(v)]
    return float(np.mean(values)) if values else -1e6


# --------------------------------------------------------------------------- real-world

EXPERT_FILE = "expert.csv"


def read_expert(path: Path) -> dict:
    """{(dataset, method): trust} from expert.csv (columns task, method, trust; trust a number)."""
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


def representative(runs: list[dict]) -> dict | None:
    """The run whose R² is closest to the median R² of the runs (the first such run on ties), spec §8."""
    scored = [r for r in runs if r.get("r2_test") is not None and math.isfinite(r["r2_test"])]
    if not scored:
        return None
    median = float(np.median([r["r2_test"] for r in scored]))
    return min(scored, key=lambda r: abs(r["r2_test"] - median))


class RealworldTask(_ModelsTask):
    name = "srbench.realworld"
    title = "SRBench 2022 real-world track: accuracy, simplicity and expert trust"
    score_keys = ("score", "mean_r2", "mean_simplicity", "mean_trust", "n_failed_runs")
    defaults = {**COMMON_DEFAULTS, "submission_method": SUBMISSION, "max_rows": 100}
    # No formula repeats noisy data; only a model fitted to the test targets reaches R² = 1.
    max_scores = {"mean_r2": 1.0}

    def load_reference(self, ref_dir: Path, config: dict) -> dict:
        ref_dir = Path(ref_dir)
        meta = io.read_json(ref_dir / "datasets.json", "reference data")
        seeds = [int(s) for s in meta["seeds"]]
        specs, data = {}, {}
        for entry in meta["datasets"]:
            spec = DatasetSpec(entry["name"], list(entry["feature_names"]), "none")
            specs[spec.name] = spec
            X, y = io.read_table(ref_dir / "test" / f"{spec.name}.csv", spec.feature_names)
            for seed in seeds:
                data[(spec.name, seed)] = RunData(seed, X, y)
        return {"specs": specs, "seeds": seeds, "data": data, "pool": read_pool(ref_dir / "pool.csv"),
                "expert": read_expert(ref_dir / EXPERT_FILE)}

    def score(self, reference: dict, submission: dict, config: dict) -> Result:
        import pandas as pd

        from .ranking import final_scores, rank_per_dataset

        records = self._score_models(reference, submission, config, simplify=False)
        methods = {SUBMISSION: [{**r, "algorithm": SUBMISSION} for r in records]}
        for row in reference["pool"]:
            methods.setdefault(row["algorithm"], []).append(row)
        warnings = list(submission["warnings"])
        rows = []
        for method, runs in methods.items():
            for dataset in reference["specs"]:
                rep = representative([r for r in runs if r["dataset"] == dataset])
                expert_name = config["submission_method"] if method == SUBMISSION else method
                trust = reference["expert"].get((dataset, expert_name), math.nan)
                if method == SUBMISSION and math.isnan(trust):
                    warnings.append(f"{EXPERT_FILE}: no trust score for {expert_name!r} on {dataset}: rank 0")
                rows.append({"algorithm": method, "dataset": dataset, "run": 0,
                             "r2_test": rep["r2_test"] if rep else math.nan,
                             "simplicity": rep["simplicity"] if rep else math.nan, "property": trust})
        per_dataset = rank_per_dataset(pd.DataFrame(rows), aggregate="mean", profile="seed")
        final = final_scores(per_dataset)
        mine = per_dataset[per_dataset["algorithm"] == SUBMISSION]
        scores = {"score": float(final.loc[SUBMISSION, "score"]),
                  "mean_r2": float(np.clip(np.nan_to_num(mine["r2"].mean(), nan=-1e6), -1e6, 1)),
                  "mean_simplicity": float(np.nan_to_num(mine["simplicity"].mean())),
                  "mean_trust": float(np.nan_to_num(mine["property"].mean())),
                  "n_failed_runs": float(sum("failed" in r or r.get("r2_test") is None for r in records))}
        table_rows = [(r["dataset"], r["r2"], r["simplicity"], r["property"], r["r2_rank"], r["simplicity_rank"],
                       r["property_rank"], r["hmean"]) for r in mine.to_dict("records")]
        details = {"accuracy_source": config["accuracy_source"],
                   "pool": {k: float(v) for k, v in final["score"].items()}, "table": table_rows,
                   "table_header": ["dataset", "R² (representative run)", "simplicity", "trust", "rank R²",
                                    "rank simplicity", "rank trust", "harmonic mean"]}
        instances = [{"id": io.run_key(r["dataset"], r["seed"]),
                      **{k: v for k, v in r.items() if k not in ("dataset", "seed")}} for r in records]
        return Result(scores=scores, instances=instances, warnings=warnings, details=details)

    def generate(self, root: Path, config: dict, progress=print, seed: int | None = None) -> None:
        from .generate import generate_realworld

        generate_realworld(Path(root), self, config, progress, seed)


QUALIFICATION = QualificationTask()
REALWORLD = RealworldTask()
