"""The three SRBench 2022 tracks as Codabench tasks.

srbench.synthetic (docs/srbench.md#the-synthetic-track): 16 generated datasets × 10 data seeds. Reference
data (``ref/``): ``task.yaml``; ``datasets.json`` (per dataset: columns, property, generating expression,
bad features; the data seeds); ``test/<dataset>/<seed>.csv``; ``pool.csv`` (the reference pool's per-run
results, scored by this same code when the reference data was generated). Codabench scores one submission
at a time, so the rank-based score ranks the submission within pool ∪ {submission};
``codascore srbench rank`` ranks all participants against each other.

srbench.qualification (docs/srbench.md#qualification): a submission qualifies when it beats
LinearRegression's test R² in average head-to-head ranks. ``score`` = −(mean over datasets of the median
over seeds of rank(submission) − rank(LinearRegression)); > 0 qualifies. The scorer fits LinearRegression
itself on each training split (scikit-learn, trusted code).

srbench.realworld (docs/srbench.md#real-world-track): per dataset (target) and method, the representative
run's R² and unsimplified simplicity, and the expert's trust score from ``expert.csv``, ranked within the
reference pool ∪ {submission}; the harmonic mean of the three ranks, the mean over datasets.

Submission (every track): models.json, or regressor.py run by the ingestion (files.py, ingest.py).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..errors import ReferenceDataError
from ..task import CodeEntry, Result, ScoreGuide, Section, Task
from . import files
from .evaluation import DatasetSpec, RunData, score_runs
from .metrics import final_scores, head_to_head, r2_score, rank_per_dataset, representative

#: Display clamp of the R² scores: Codabench stores |v| < 1e10 and R² has no lower bound; ranks use the
#: unclamped values (docs/srbench.md#scores-of-the-synthetic-track).
R2_FLOOR = -1e6
PROPERTIES = ("equivalence", "feature_absence", "r2")


def clamp_r2(values):
    """R² for display: clipped to [R2_FLOOR, 1], a NaN or -inf (no run scored, or the worst) at R2_FLOOR."""
    return np.clip(np.nan_to_num(np.asarray(values, dtype=float), nan=R2_FLOOR, neginf=R2_FLOOR), R2_FLOOR, 1)


def finite_mean(values, empty: float) -> float:
    """The mean of the finite values (None, NaN and infinities left out), or ``empty`` when there is none."""
    finite = [float(v) for v in values if v is not None and math.isfinite(v)]
    return float(np.mean(finite)) if finite else empty


def count_failed(records: list[dict]) -> float:
    """Runs without an accuracy: failed (invalid model, no model, time limit) or non-finite predictions."""
    return float(sum("failed" in r or r.get("r2_test") is None for r in records))


def run_instances(records: list[dict]) -> list[dict]:
    """details.json's per-run records: the run key as ``id``, then what scoring found."""
    return [{"id": files.run_key(r["dataset"], r["seed"]),
             **{k: v for k, v in r.items() if k not in ("dataset", "seed")}} for r in records]


def json_records(frame) -> list[dict]:
    """A DataFrame's rows as dicts, non-finite floats as None (JSON has no NaN)."""
    return [{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}
            for row in frame.to_dict("records")]


def accuracy_complexity(per_dataset) -> dict[str, dict[str, list]]:
    """The report's accuracy-against-complexity points: per dataset, each method's aggregated R² and
    simplicity ([r2, simplicity], None where missing), the submission among the pool's methods
    (docs/srbench.md#the-results-page)."""
    points: dict[str, dict[str, list]] = {}
    for row in json_records(per_dataset[["algorithm", "dataset", "r2", "simplicity"]]):
        points.setdefault(row["dataset"], {})[row["algorithm"]] = [row["r2"], row["simplicity"]]
    return points


class ModelsTask(Task):
    """What the three tracks share: models.json (or regressor.py through the ingestion), the common
    task.yaml parameters, and scoring every run's model string."""

    result_files = (files.MODELS_FILE,)
    has_ingestion = True
    code_entry = CodeEntry(files.REGRESSOR_FILE, "codascore.srbench.ingest:load_regressor")
    board_settings = ("accuracy_source",)

    def load_config(self, raw: dict) -> dict:
        config = super().load_config(raw)
        files.check_config(config)
        return config

    def data_inventory(self, folder: Path, role: str, config: dict) -> dict[str, tuple[int, ...]] | None:
        """The datasets and seeds datasets.json lists, in the reference and in the input data alike (a run is
        one dataset with one seed); a sample says nothing (its runs are checked when it is scored)."""
        if role == "sample":
            return None
        meta = files.read_json(Path(folder) / files.DATASETS_FILE, f"{role} data")
        try:
            return {**{f"dataset {d['name']}": () for d in meta["datasets"]},
                    **{f"seed {seed}": () for seed in meta["seeds"]}}
        except (KeyError, TypeError) as exc:
            raise ReferenceDataError(f"{role} data {files.DATASETS_FILE}: no datasets[].name or seeds "
                                     f"({exc})") from None

    def load_submission(self, res_dir: Path, reference: dict, config: dict) -> dict:
        return files.read_submission(res_dir, reference, config)

    def validate_format(self, res_dir: Path, config: dict) -> str:
        return files.check_models_format(Path(res_dir), int(config["max_length"]))

    def score_models(self, reference: dict, submission: dict, config: dict, simplify: bool = True) -> list[dict]:
        """One record per (dataset, seed) of the reference, by dataset name then seed: the scored models,
        and the invalid ones (fail_run) and the runs without a model, both failed."""
        records = score_runs(submission["models"], reference["specs"], reference["data"],
                             float(config["simplify_time_limit"]), float(config["model_time_limit"]),
                             workers=int(config["workers"]) or None, simplify=simplify,
                             predictions=submission.get("predictions"))
        records += [{"dataset": d, "seed": s, "failed": why} for (d, s), why in submission["invalid"].items()]
        done = {(r["dataset"], r["seed"]) for r in records}
        records += [{"dataset": d, "seed": s, "failed": "no model submitted"}
                    for d in reference["specs"] for s in reference["seeds"] if (d, s) not in done]
        for record in records:  # what the ingestion saw of the run (runs.json): shown on the page
            fit = submission.get("runs", {}).get((record["dataset"], record["seed"]))
            if fit:
                record.update({"fit_outcome": fit["outcome"], "fit_reason": fit["reason"],
                               "fit_seconds": fit["fit_seconds"]})
        return sorted(records, key=lambda r: (r["dataset"], r["seed"]))

    def ingest(self, input_dir: Path, output_dir: Path, submission_dir: Path, config: dict) -> None:
        from .ingest import ingest_models

        ingest_models(Path(input_dir), Path(output_dir), Path(submission_dir), config)

    def judge_plan(self):
        """One part per (dataset, seed), the 2022 organisers' job (judge_plan.py, docs/judge.md#profiles)."""
        from .judge_plan import SRBenchPlan

        return SRBenchPlan(self)

    def final_board(self, config: dict):
        """The track's final ranking for ``codascore leaderboard`` (srbench/leaderboard.py): the synthetic
        and real-world tracks have one (the real world's needs ``trust_ratings`` in config), the
        qualification none."""
        from .leaderboard import final_board

        return final_board(self.name, config)

    def score_guide(self, config: dict) -> list[ScoreGuide]:
        from .report import GUIDES

        return GUIDES[self.name](config)

    def report(self, result: Result, reference, submission, config) -> list[Section]:
        from .report import REPORTS

        return REPORTS[self.name](result)


# --------------------------------------------------------------------------- synthetic

class SyntheticTask(ModelsTask):
    name = "srbench.synthetic"
    title = "SRBench 2022 synthetic track: accuracy, simplicity and property ranks"
    score_keys = ("score", "mean_r2", "mean_simplicity", "mean_property", "pool_position", "n_failed_runs",
                  "n_unsimplified")
    # Generation only: demo sizes (rows per split), and optionally fewer datasets or seeds (None = all).
    defaults = {**files.COMMON_DEFAULTS, "max_rows": 100, "datasets": None, "seeds": None}
    answer_samples = ("true_formulas",)  # the generating expressions
    max_scores = {"score": None}  # the true formulas' rank within the reference pool

    def load_reference(self, ref_dir: Path, config: dict) -> dict:
        ref_dir = Path(ref_dir)
        meta = files.read_json(ref_dir / files.DATASETS_FILE, "reference data")
        try:
            seeds = [int(s) for s in meta["seeds"]]
            specs = {d["name"]: DatasetSpec(d["name"], list(d["feature_names"]), d["property"],
                                            d.get("truth", ""), list(d.get("bad_features", [])))
                     for d in meta["datasets"]}
        except (KeyError, TypeError, ValueError) as exc:
            raise ReferenceDataError(f"{files.DATASETS_FILE}: malformed ({type(exc).__name__}: {exc})") from None
        data = {}
        for name, spec in specs.items():
            if spec.property not in PROPERTIES:
                raise ReferenceDataError(f"{files.DATASETS_FILE}: {name}: unknown property {spec.property!r}")
            for seed in seeds:
                X, y = files.read_table(ref_dir / "test" / name / f"{seed}.csv", spec.feature_names)
                data[(name, seed)] = RunData(seed, X, y)
        return {"specs": specs, "seeds": seeds, "data": data, "pool": files.read_pool(ref_dir / files.POOL_FILE)}

    def score(self, reference: dict, submission: dict, config: dict) -> Result:
        import pandas as pd

        from .evaluation import run_rows

        records = self.score_models(reference, submission, config)
        order = {name: index for index, name in enumerate(reference["specs"])}
        records.sort(key=lambda r: (order[r["dataset"]], r["seed"]))  # details.json: datasets.json's order
        seeds_order = {d: list(reference["seeds"]) for d in reference["specs"]}
        rows = run_rows(records, files.SUBMISSION, seeds_order, config["nonfinite_predictions"])
        frame = pd.DataFrame(reference["pool"] + rows, columns=list(files.POOL_COLUMNS))
        per_dataset = rank_per_dataset(frame, aggregate=config["aggregate"], profile=config["profile"],
                                       datasets=list(reference["specs"]))
        final = final_scores(per_dataset)
        mine = per_dataset[per_dataset["algorithm"] == files.SUBMISSION]
        scores = {
            "score": float(final.loc[files.SUBMISSION, "score"]),
            "mean_r2": float(np.mean(clamp_r2(mine["r2"]))),
            "mean_simplicity": finite_mean(mine["simplicity"], empty=0.0),
            "mean_property": finite_mean(mine["property"], empty=0.0),
            "pool_position": float(list(final.index).index(files.SUBMISSION) + 1),
            "n_failed_runs": count_failed(records),
            "n_unsimplified": float(sum(bool(r.get("timed_out")) for r in records)),
        }
        details = {"aggregate": config["aggregate"], "accuracy_source": submission.get("accuracy_source", config["accuracy_source"]),
                   "profile": config["profile"] or ("official2022" if config["aggregate"] == "mean" else "seed"),
                   "pool": {name: float(v) for name, v in final["score"].items()},
                   "per_dataset": json_records(mine)}
        warnings = list(submission["warnings"]) + _run_warnings(records)
        return Result(scores=scores, instances=run_instances(records), warnings=warnings, details=details,
                      report_data={"accuracy_complexity": accuracy_complexity(per_dataset)})

    def generate(self, root: Path, config: dict, progress=print, seed: int | None = None) -> None:
        from .generate import generate_synthetic

        generate_synthetic(Path(root), self, config, progress, seed)

    def write_perfect_submission(self, ref_dir: Path, out_dir: Path, config: dict) -> bool:
        """models.json holding each dataset's generating expression (datasets.json ``truth``) for every run."""
        meta = files.read_json(Path(ref_dir) / files.DATASETS_FILE, "reference data")
        files.write_models(Path(out_dir), {(d["name"], int(seed)): d["truth"] for d in meta["datasets"]
                                           for seed in meta["seeds"]})
        return True


def _run_warnings(records: list[dict]) -> list[str]:
    warnings = []
    failed = [r for r in records if "failed" in r and r["failed"] != "no model submitted"]
    for r in failed[:10]:
        warnings.append(f"{files.run_key(r['dataset'], r['seed'])}: run failed: {r['failed']}")
    nonfinite = [r for r in records if "reason" in r]
    for r in nonfinite[:10]:
        warnings.append(f"{files.run_key(r['dataset'], r['seed'])}: worst accuracy: {r['reason']}")
    timed = [r for r in records if r.get("timed_out")]
    if timed:
        warnings.append(f"{len(timed)} model(s) could not be simplified within the time limit and were scored "
                        "unsimplified (as in 2022)")
    return warnings


# --------------------------------------------------------------------------- qualification

class QualificationTask(ModelsTask):
    name = "srbench.qualification"
    title = "SRBench 2022 qualification: beat LinearRegression's test R²"
    score_keys = ("score", "qualified", "mean_r2", "linear_mean_r2", "n_failed_runs")
    defaults = {**files.COMMON_DEFAULTS, "train_size": 0.75}
    # No formula repeats noisy data; only a model fitted to the test targets reaches R² = 1.
    max_scores = {"mean_r2": 1.0}

    def load_reference(self, ref_dir: Path, config: dict) -> dict:
        from sklearn.linear_model import LinearRegression
        from sklearn.model_selection import train_test_split

        meta = files.read_json(Path(ref_dir) / files.DATASETS_FILE, "reference data")
        specs, data, linear = {}, {}, {}
        seeds = [int(s) for s in meta["seeds"]]
        for entry in meta["datasets"]:
            names, X, y = files.read_dataset_file(Path(ref_dir) / entry["path"], entry.get("target", "target"))
            specs[entry["name"]] = DatasetSpec(entry["name"], names, "none")
            for seed in seeds:
                X_tr, X_te, y_tr, y_te = train_test_split(X, y, train_size=float(config["train_size"]),
                                                          random_state=seed)
                data[(entry["name"], seed)] = RunData(seed, X_te, y_te)
                linear[(entry["name"], seed)] = r2_score(y_te, LinearRegression().fit(X_tr, y_tr).predict(X_te))
        return {"specs": specs, "seeds": seeds, "data": data, "linear": linear}

    def score(self, reference: dict, submission: dict, config: dict) -> Result:
        records = self.score_models(reference, submission, config, simplify=False)
        by_run = {(r["dataset"], r["seed"]): r.get("r2_test") for r in records}
        rows, differences = [], []
        for dataset in reference["specs"]:
            runs = [(dataset, seed) for seed in reference["seeds"]]
            d = float(np.median([head_to_head(by_run.get(run), reference["linear"][run]) for run in runs]))
            differences.append(d)
            rows.append((dataset, finite_mean([by_run.get(run) for run in runs], empty=R2_FLOOR),
                         finite_mean([reference["linear"][run] for run in runs], empty=R2_FLOOR), d))
        mean_d = float(np.mean(differences))
        scores = {"score": 0.0 - mean_d, "qualified": float(mean_d < 0),
                  "mean_r2": float(clamp_r2(finite_mean([r[1] for r in rows], empty=R2_FLOOR))),
                  "linear_mean_r2": float(clamp_r2(finite_mean([r[2] for r in rows], empty=R2_FLOOR))),
                  "n_failed_runs": count_failed(records)}
        details = {"accuracy_source": submission.get("accuracy_source", config["accuracy_source"]), "table": rows,
                   "table_header": ["dataset", "mean R² (submission)", "mean R² (LinearRegression)",
                                    "median rank difference"]}
        return Result(scores=scores, instances=run_instances(records), warnings=list(submission["warnings"]),
                      details=details)

    def generate(self, root: Path, config: dict, progress=print, seed: int | None = None) -> None:
        from .generate import generate_qualification

        generate_qualification(Path(root), self, config, progress, seed)


# --------------------------------------------------------------------------- real-world

class RealworldTask(ModelsTask):
    name = "srbench.realworld"
    title = "SRBench 2022 real-world track: accuracy, simplicity and expert trust"
    score_keys = ("score", "mean_r2", "mean_simplicity", "mean_trust", "n_failed_runs")
    defaults = {**files.COMMON_DEFAULTS, "submission_method": files.SUBMISSION, "max_rows": 100}
    # No formula repeats noisy data; only a model fitted to the test targets reaches R² = 1.
    max_scores = {"mean_r2": 1.0}

    def load_reference(self, ref_dir: Path, config: dict) -> dict:
        ref_dir = Path(ref_dir)
        meta = files.read_json(ref_dir / files.DATASETS_FILE, "reference data")
        seeds = [int(s) for s in meta["seeds"]]
        specs, data = {}, {}
        for entry in meta["datasets"]:
            spec = DatasetSpec(entry["name"], list(entry["feature_names"]), "none")
            specs[spec.name] = spec
            X, y = files.read_table(ref_dir / "test" / f"{spec.name}.csv", spec.feature_names)
            for seed in seeds:
                data[(spec.name, seed)] = RunData(seed, X, y)
        return {"specs": specs, "seeds": seeds, "data": data, "pool": files.read_pool(ref_dir / files.POOL_FILE),
                "expert": files.read_expert(ref_dir / files.EXPERT_FILE)}

    def score(self, reference: dict, submission: dict, config: dict) -> Result:
        import pandas as pd

        records = self.score_models(reference, submission, config, simplify=False)
        methods = {files.SUBMISSION: [{**r, "algorithm": files.SUBMISSION} for r in records]}
        for row in reference["pool"]:
            methods.setdefault(row["algorithm"], []).append(row)
        warnings = list(submission["warnings"])
        rows = []
        for method, runs in methods.items():
            for dataset in reference["specs"]:
                rep = representative([r for r in runs if r["dataset"] == dataset])
                expert_name = config["submission_method"] if method == files.SUBMISSION else method
                trust = reference["expert"].get((dataset, expert_name), math.nan)
                if method == files.SUBMISSION and math.isnan(trust):
                    warnings.append(f"{files.EXPERT_FILE}: no trust score for {expert_name!r} on {dataset}: rank 0")
                rows.append({"algorithm": method, "dataset": dataset, "run": 0,
                             "r2_test": rep["r2_test"] if rep else math.nan,
                             "simplicity": rep["simplicity"] if rep else math.nan, "property": trust})
        per_dataset = rank_per_dataset(pd.DataFrame(rows), aggregate="mean", profile="seed")
        final = final_scores(per_dataset)
        mine = per_dataset[per_dataset["algorithm"] == files.SUBMISSION]
        scores = {"score": float(final.loc[files.SUBMISSION, "score"]),
                  "mean_r2": float(clamp_r2(mine["r2"].mean())),
                  "mean_simplicity": float(np.nan_to_num(mine["simplicity"].mean())),
                  "mean_trust": float(np.nan_to_num(mine["property"].mean())),
                  "n_failed_runs": count_failed(records)}
        table_rows = [(r["dataset"], r["r2"], r["simplicity"], r["property"], r["r2_rank"], r["simplicity_rank"],
                       r["property_rank"], r["hmean"]) for r in mine.to_dict("records")]
        details = {"accuracy_source": submission.get("accuracy_source", config["accuracy_source"]),
                   "pool": {k: float(v) for k, v in final["score"].items()}, "table": table_rows,
                   "table_header": ["dataset", "R² (representative run)", "simplicity", "trust", "rank R²",
                                    "rank simplicity", "rank trust", "harmonic mean"]}
        return Result(scores=scores, instances=run_instances(records), warnings=warnings, details=details,
                      report_data={"accuracy_complexity": accuracy_complexity(per_dataset)})

    def generate(self, root: Path, config: dict, progress=print, seed: int | None = None) -> None:
        from .generate import generate_realworld

        generate_realworld(Path(root), self, config, progress, seed)


SYNTHETIC = SyntheticTask()
QUALIFICATION = QualificationTask()
REALWORLD = RealworldTask()
