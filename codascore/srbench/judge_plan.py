"""SRBench's judging plan for ``codascore judge`` (codascore.plan.JudgePlan; docs/judge.md#plans): a code
submission's prediction step split into one part per (dataset, seed), the unit the 2022 organisers
submitted as one LSF job per (dataset, method, seed).

``parts`` lists the parts with each one's budget (the fit's SIGALRM by the run's training rows, the step's
limit, cores and memory) from a budget profile; ``write_part_input`` writes one part's input data
(datasets.json with that dataset and seed only, its CSVs, task.yaml with the part's settings), on which the
ordinary ingestion runs; ``merge`` puts the parts' models.json (and predictions.json, runs.json) together
into what the whole ingestion writes, a part not done being a missing run as a failed fit is there.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from ..errors import ReferenceDataError, SubmissionError
from ..plan import DEFAULT_CORES, DEFAULT_MEMORY, JudgePlan, Part, PartOutcome
from ..task import log
from ..validate import is_number
from . import files

#: The keys a budget of an SRBench task may hold beyond a pipeline's (docs/judge.md#profiles).
BUDGET_KEYS = frozenset({"seeds", "fit_time_limit_small", "fit_time_limit_large", "large_above_rows", "walltime",
                         "accuracy_source"})
#: Seconds a part's step is given beyond the fit and the ingestion's KILL_GRACE: starting Python, the import
#: check and reading the data. 3,600 + 60 + 240 = 3,900 s is 2022's LSF walltime of 1:05 (analyze.py).
IMPORT_MARGIN = 240.0
#: A dataset name as it goes into a part's key, a folder name.
DATASET_NAME = re.compile(r"[A-Za-z0-9_.+-]+")
#: The first line of the whole ingestion's error when no fit succeeded (ingest.ingest_models).
EVERY_FIT_FAILED = f"{files.REGRESSOR_FILE}: every fit failed; the first ("
#: The organisers' budgets of 2022, each number with its source in docs/judge.md#profiles.
_2022 = {"fit_time_limit_small": 3600, "fit_time_limit_large": 36000, "large_above_rows": 1000,
         "memory": 16 * 1024**3, "accuracy_source": "predictions"}
PROFILES = {
    "srbench.synthetic": {"official2022": {**_2022, "seeds": 10, "walltime": 3900, "cores": 8}},
    "srbench.realworld": {"official2022": {**_2022, "seeds": 10, "cores": 8}},
    "srbench.qualification": {"official2022": {**_2022, "seeds": 5, "cores": 4}},
}


def part_key(dataset: str, seed: int) -> str:
    return f"dataset={dataset},seed={int(seed)}"


def run_of(part: Part) -> tuple[str, int]:
    """(dataset, seed) of a part; ReferenceDataError when its item is not one ``parts`` makes."""
    try:
        dataset, seed = str(part.item["dataset"]), int(part.item["seed"])
    except (KeyError, TypeError, ValueError):
        raise ReferenceDataError(f"judge part {part.key[:80]!r}: its item {part.item!r} names no dataset and "
                                 f"seed") from None
    if not DATASET_NAME.fullmatch(dataset):
        raise ReferenceDataError(f"judge part {part.key[:80]!r}: dataset {dataset[:80]!r} is not a plain name")
    return dataset, seed


def input_settings(task, input_dir: Path) -> tuple[dict, dict]:
    """(raw, config): input_dir's task.yaml as written (without ``task``) and as the ingestion reads it."""
    import yaml

    path = Path(input_dir) / "task.yaml"
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ReferenceDataError(f"input data task.yaml: cannot be read: {exc}") from None
    if not isinstance(raw, dict) or raw.get("task") != task.name:
        raise ReferenceDataError(f"input data task.yaml: not a task.yaml of {task.name}")
    raw = {k: v for k, v in raw.items() if k != "task"}
    return raw, task.load_config(raw)


def check_profile(task_name: str, profile: dict) -> None:
    """The budget's values are usable (ReferenceDataError naming the key and value)."""
    for key in ("fit_time_limit_small", "fit_time_limit_large", "walltime", "time_limit", "cores", "memory"):
        value = profile.get(key)
        if value is not None and (not is_number(value) or value <= 0):
            raise ReferenceDataError(f"profile for {task_name}: {key} = {value!r} must be a positive number")
    rows = profile.get("large_above_rows")
    if rows is not None and (not isinstance(rows, int) or isinstance(rows, bool) or rows < 0):
        raise ReferenceDataError(f"profile for {task_name}: large_above_rows = {rows!r} must be a whole number")
    if profile.get("accuracy_source", "auto") not in files.ACCURACY_SOURCES:
        raise ReferenceDataError(f"profile for {task_name}: accuracy_source = {profile['accuracy_source']!r}; "
                                 f"allowed: {list(files.ACCURACY_SOURCES)}")


def chosen_seeds(listed: list, wanted) -> list[int]:
    """The seeds judged: all of datasets.json's (wanted None), its first ``wanted`` (a count), or the seeds
    ``wanted`` names (a list, each of them listed)."""
    listed = [int(s) for s in listed]
    if wanted is None:
        return listed
    if isinstance(wanted, int) and not isinstance(wanted, bool):
        if not 1 <= wanted <= len(listed):
            raise ReferenceDataError(f"the profile asks for {wanted} seeds; the input data's "
                                     f"{files.DATASETS_FILE} lists {len(listed)}: {listed}")
        return listed[:wanted]
    if isinstance(wanted, (list, tuple)) and wanted:
        unknown = [s for s in wanted if not isinstance(s, int) or s not in listed]
        if unknown:
            raise ReferenceDataError(f"the profile's seeds {unknown} are not among the input data's "
                                     f"{files.DATASETS_FILE} seeds {listed}")
        return [int(s) for s in wanted]
    raise ReferenceDataError(f"the profile's seeds = {wanted!r}: a number of seeds or a list of seeds")


def training_rows(path: Path) -> int:
    """The data rows of a training CSV (its lines but the header), counted without parsing."""
    try:
        with open(path, "rb") as handle:
            lines = sum(1 for line in handle if line.strip())
    except OSError as exc:
        raise ReferenceDataError(f"input data: {path.parent.parent.name}/{path.parent.name}/{path.name}: "
                                 f"cannot be read: {exc.strerror}") from None
    return max(lines - 1, 0)


def fit_limit(profile: dict, rows: int, default: float) -> float:
    """The fit's SIGALRM seconds: the profile's small limit up to large_above_rows training rows, its large
    limit above (2022: evaluate_model.py's MAXTIME), the input data's fit_time_limit where it gives none."""
    small = profile.get("fit_time_limit_small", default)
    threshold = profile.get("large_above_rows")
    if threshold is not None and rows > threshold:
        return float(profile.get("fit_time_limit_large", small))
    return float(small)


def step_limit(profile: dict, fit: float) -> float:
    """Seconds the part's prediction step may take: the fit, the ingestion's kill grace and IMPORT_MARGIN,
    capped by the profile's walltime (2022's LSF -W); the profile's time_limit when it gives one."""
    from .ingest import KILL_GRACE

    if profile.get("time_limit") is not None:
        return float(profile["time_limit"])
    limit = fit + min(KILL_GRACE, fit) + IMPORT_MARGIN
    return min(limit, float(profile["walltime"])) if profile.get("walltime") is not None else limit


class SRBenchPlan(JudgePlan):
    """One SRBench task's plan: a part per (dataset, seed), one group (the whole task)."""

    budget_keys = BUDGET_KEYS
    checked_import = {"import_check": False}

    def __init__(self, task):
        super().__init__(task)
        self.profiles = PROFILES.get(task.name, {})

    def check_budget(self, budget: dict) -> None:
        super().check_budget(budget)
        check_profile(self.task.name, budget)

    def parts(self, input_dir: Path, config: dict, budget: dict) -> list[Part]:
        """One part per (dataset, seed) of input_dir's datasets.json, datasets then seeds in its order. The
        parts' settings start from input_dir's task.yaml (what the ingestion reads; config, the scoring's, is
        not used) and take the budget's values over it."""
        input_dir, budget = Path(input_dir), dict(budget or {})
        _, settings = input_settings(self.task, input_dir)
        meta = files.read_json(input_dir / files.DATASETS_FILE, "input data")
        try:
            seeds = chosen_seeds(meta["seeds"], budget.get("seeds"))
            names = [str(d["name"]) for d in meta["datasets"]]
        except (KeyError, TypeError, ValueError) as exc:
            raise ReferenceDataError(f"input data {files.DATASETS_FILE}: malformed ({type(exc).__name__}: {exc})") \
                from None
        memory = float(budget.get("memory", DEFAULT_MEMORY))
        base = {"fit_memory_limit": int(memory // 1024**2)} if "memory" in budget else {}
        if "accuracy_source" in budget:
            base["accuracy_source"] = budget["accuracy_source"]
        parts = []
        for name in names:
            if not DATASET_NAME.fullmatch(name):
                raise ReferenceDataError(f"input data {files.DATASETS_FILE}: dataset name {name!r} is not a "
                                         "plain folder name (letters, digits, _ . + -)")
            for seed in seeds:
                rows = training_rows(input_dir / "train" / name / f"{seed}.csv")
                fit = fit_limit(budget, rows, float(settings["fit_time_limit"]))
                parts.append(Part(key=part_key(name, seed), item={"dataset": name, "seed": int(seed)},
                                  config={**base, "fit_time_limit": fit},
                                  cores=float(budget.get("cores", DEFAULT_CORES)), memory=memory,
                                  time_limit=step_limit(budget, fit)))
        return parts

    def write_part_input(self, input_dir: Path, part: Part, dest: Path) -> None:
        """dest: datasets.json listing the part's dataset and seed only, that run's train CSV (and its test
        features under accuracy_source predictions, or auto when the input data holds them), and task.yaml =
        input_dir's with part.config over it."""
        input_dir, dest = Path(input_dir), Path(dest)
        dataset, seed = run_of(part)
        raw, _ = input_settings(self.task, input_dir)
        merged = {**raw, **part.config}
        config = self.task.load_config(merged)  # an unknown or bad value is refused before anything is written
        meta = files.read_json(input_dir / files.DATASETS_FILE, "input data")
        entries = [d for d in meta.get("datasets", []) if isinstance(d, dict) and d.get("name") == dataset]
        if not entries or seed not in [int(s) for s in meta.get("seeds", [])]:
            raise ReferenceDataError(f"input data {files.DATASETS_FILE}: no run {files.run_key(dataset, seed)} "
                                     f"(judge part {part.key})")
        source_of_r2 = config["accuracy_source"]
        wanted = ["train"] + (["test"] if source_of_r2 == "predictions" or (
            source_of_r2 == "auto" and (input_dir / "test" / dataset / f"{seed}.csv").is_file()) else [])
        for split in wanted:
            source = input_dir / split / dataset / f"{seed}.csv"
            if not source.is_file():
                raise ReferenceDataError(f"input data: {split}/{dataset}/{seed}.csv is missing (judge part {part.key})")
            target = dest / split / dataset / f"{seed}.csv"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
        files.write_datasets(dest, {**meta, "seeds": [seed], "datasets": entries[:1]})
        self.task.write_task_yaml(dest, merged, keys=list(merged))

    def merge(self, outcomes: list[PartOutcome], dest: Path, config: dict) -> None:
        """dest/models.json (and predictions.json when the parts wrote predictions, runs.json with every
        part's run) as the whole ingestion writes them from the same runs; SubmissionError as the whole
        ingestion's when no part holds a model: the import check's own error when the first failed part never
        fitted (its runs.json has no entry), else "every fit failed" with the first failed fit's reason."""
        models, predictions, failures, runs = {}, {}, [], {}
        for outcome in outcomes:
            run = run_of(outcome.part)
            model, values, problem = read_part_output(outcome, run)
            fitted = files.read_runs(Path(outcome.output), {files.run_key(*run): run}).get(run)
            runs[run] = fitted or {"outcome": "failed" if problem else "fitted",
                                   "reason": (problem.splitlines() or [""])[0][:600], "fit_seconds": None}
            if problem:
                failures.append((run, problem, fitted is not None))
                continue
            models[run] = model
            if values is not None:
                predictions[run] = values
        for (dataset, seed), message, _ in failures[:5]:
            log(f"srbench judge: {dataset}/{seed} failed: {message.splitlines()[0] if message else ''}")
        if not models:
            if not failures:
                raise SubmissionError(f"{files.REGRESSOR_FILE}: no judge part to merge")
            (dataset, seed), message, fitted = failures[0]
            if not fitted:
                raise SubmissionError(message.splitlines())  # stopped before any fit: the part's own error
            raise SubmissionError([f"{EVERY_FIT_FAILED}{dataset}/{seed}):", *message.splitlines()[1:]])
        files.write_models(Path(dest), models)
        files.write_runs(Path(dest), runs)
        if predictions:
            files.write_predictions(Path(dest), predictions)


def read_part_output(outcome: PartOutcome, run: tuple[str, int]) -> tuple[str | None, list | None, str]:
    """(model, predictions or None, why it failed) of one part: a part not done failed for its reason; a
    done one whose models.json holds no model for its run failed too."""
    if not outcome.done:
        return None, None, outcome.reason.rstrip("\n") or f"the part {outcome.status}"
    folder = Path(outcome.output)
    try:
        models = json.loads((folder / files.MODELS_FILE).read_text())
        predictions = json.loads((folder / files.PREDICTIONS_FILE).read_text()) \
            if (folder / files.PREDICTIONS_FILE).is_file() else {}
    except (OSError, ValueError) as exc:
        return None, None, f"the part's output cannot be read: {exc}"
    key = files.run_key(*run)
    if not isinstance(models, dict) or not isinstance(models.get(key), str):
        return None, None, f"the part's {files.MODELS_FILE} holds no model for {key}"
    return models[key], predictions.get(key) if isinstance(predictions, dict) else None, ""
