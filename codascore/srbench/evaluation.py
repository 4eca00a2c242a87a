"""Scoring the runs of one method: every model string canonicalised once, its metrics computed from that
one canonical form (docs/srbench.md#per-model-metrics), all models in parallel worker processes under a
per-model time limit (docs/srbench.md#safe-parsing).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Sequence

import numpy as np

from ..errors import ModelSyntaxError
from ..progress import Counter
from . import metrics
from .canonical_form import CanonicalModel, canonicalize
from .files import PREDICTIONS_FILE
from .workers import Outcome, run_jobs


@dataclasses.dataclass
class DatasetSpec:
    """What scoring needs to know about one dataset (identical for all its seeds)."""

    name: str
    feature_names: list[str]
    property: str  # "equivalence", "feature_absence", "r2" or "none"
    truth: str = ""
    bad_features: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class RunData:
    """The test split of one (dataset, seed); y_pred: the fitted estimator's predictions on X_test when
    accuracy comes from them (accuracy_source: predictions, or auto with predictions.json), else None (R² of
    the model string)."""

    seed: int
    X_test: np.ndarray
    y_test: np.ndarray
    y_pred: np.ndarray | None = None


@functools.lru_cache(maxsize=64)
def _canonical_truth(text: str, names: tuple, limit: float | None):
    return canonicalize(text, names, limit)


def property_value(model: CanonicalModel, spec: DatasetSpec, limit: float | None) -> float | None:
    """The dataset's property for one canonical model (None for r2 datasets: it is the run's R²);
    docs/srbench.md#property-per-dataset."""
    if spec.property == "equivalence":
        truth = _canonical_truth(spec.truth, tuple(spec.feature_names), limit)
        return float(metrics.symbolic_equivalence(truth, model, spec.feature_names, limit))
    if spec.property == "feature_absence":
        return metrics.feature_absence_score(model, spec.bad_features, spec.feature_names, limit)
    return None


def accuracy(parsed, feature_names: Sequence[str], run: RunData) -> tuple[float | None, str | None]:
    """(test R², None), or (None, reason) when the predictions are not all finite.

    The predictions are run.y_pred when given (the estimator's, recorded by the ingestion), else those of
    the parsed model compiled to numpy."""
    if run.y_pred is not None:
        problem = metrics.predictions_problem(run.y_pred)
        if problem:
            return None, f"{PREDICTIONS_FILE} (est.predict on the test features): {problem}"
        return metrics.r2_score(run.y_test, run.y_pred), None
    try:
        predictions = metrics.compile_model(parsed, feature_names)(run.X_test)
    except Exception as exc:  # e.g. numpy cannot evaluate a function on these inputs
        return None, f"the model cannot be evaluated on the test data ({type(exc).__name__}: {exc})"[:300]
    problem = metrics.predictions_problem(predictions, "values of the model string")
    if problem:
        return None, f"the model string evaluated on the test features: {problem}"
    return metrics.r2_score(run.y_test, predictions), None


def evaluate_model(text: str, spec: DatasetSpec, runs: Sequence[RunData], simplify_time_limit: float | None,
                   strict: bool = True, simplify: bool = True) -> list[dict]:
    """Score one model string on one dataset for every run (seed) that submitted this same string.

    The model is parsed, simplified and rounded once; complexity, simplicity and property come from that
    canonical form, the R² of each run from the parsed expression compiled to numpy. One record per run:
    seed, r2_test (None with ``reason`` when predictions are non-finite), simplicity, property, nodes,
    timed_out, simplified (str of the canonical form).
    """
    try:
        model = canonicalize(text, spec.feature_names, simplify_time_limit, strict=strict,
                                     simplify=simplify)
    except ModelSyntaxError as exc:
        return [{"seed": run.seed, "failed": f"invalid model: {exc}"} for run in runs]
    nodes = model.nodes
    common = {"nodes": nodes, "simplicity": metrics.simplicity_from_nodes(nodes), "timed_out": model.timed_out,
              "simplified": str(model.expr)[:2000]}
    prop = property_value(model, spec, simplify_time_limit)
    records = []
    for run in runs:
        r2, reason = accuracy(model.parsed, spec.feature_names, run)
        record = {"seed": run.seed, **common, "r2_test": r2,
                  "property": r2 if spec.property == "r2" else prop}
        if reason:
            record["reason"] = reason
        records.append(record)
    return records


def score_runs(models: dict, specs: dict, data: dict, simplify_time_limit: float | None, model_time_limit: float,
               workers: int | None = None, progress_label: str | None = "models scored",
               strict: bool = True, simplify: bool = True, predictions: dict | None = None) -> list[dict]:
    """Score every submitted model; one record per (dataset, seed) in ``models``.

    models: {(dataset, seed): model string}; specs: {dataset: DatasetSpec}; data: {(dataset, seed): RunData}.
    predictions: None (R² of the model strings) or {(dataset, seed): y_pred} for every run of ``models``
    (R² of those predictions; simplicity and property still come from the strings).
    Identical strings on one dataset are scored once. A model whose scoring outlives ``model_time_limit``
    (sympy stuck) is killed with its worker and its runs are failed with that reason.
    """
    if predictions is not None:
        unpredicted = sorted(set(models) - set(predictions))
        if unpredicted:
            raise ValueError(f"predictions: no y_pred for run {unpredicted[0]} (and {len(unpredicted) - 1} more)")
        data = {run: dataclasses.replace(split, y_pred=predictions.get(run)) for run, split in data.items()}
    return score_methods({"": models}, specs, data, simplify_time_limit, model_time_limit, workers,
                         progress_label, strict, simplify)[""]


def _warm_up() -> None:
    """Import sympy, scipy.special and lambdify's printers before the workers fork, so that no model's
    time limit pays for the imports."""
    import sympy

    metrics.compile_model(canonicalize("erf(x) + 1", ["x"]).parsed, ["x"])(np.zeros((2, 1)))
    sympy.simplify(sympy.Symbol("x") + 1)


def score_methods(methods: dict, specs: dict, data: dict, simplify_time_limit: float | None,
                  model_time_limit: float, workers: int | None = None,
                  progress_label: str | None = "models scored", strict: bool = True,
                  simplify: bool = True) -> dict:
    """score_runs for several methods at once ({method: models} -> {method: records}), sharing one pool
    of workers so that the slow exact-formula models of every method are spread over all cores."""
    groups: dict[tuple, list[tuple]] = {}
    for method, models in methods.items():
        for (dataset, seed), text in models.items():
            groups.setdefault((dataset, text), []).append((method, seed))
    # Equivalence checks are the slowest jobs: start them first so that no core idles at the end.
    keys = sorted(groups, key=lambda k: (specs[k[0]].property != "equivalence", k[0], min(groups[k])))
    jobs = [(text, specs[dataset], [data[(dataset, seed)] for seed in sorted({s for _, s in groups[(dataset, text)]})],
             simplify_time_limit, strict, simplify) for dataset, text in keys]
    _warm_up()
    progress = Counter(progress_label, len(jobs)) if progress_label else None
    outcomes: list[Outcome] = run_jobs(evaluate_model, jobs, time_limit=model_time_limit, n_workers=workers,
                                       progress=progress)
    results: dict = {method: [] for method in methods}
    for (dataset, text), outcome in zip(keys, outcomes):
        by_seed = {}
        if outcome.status == "ok":
            by_seed = {record["seed"]: record for record in outcome.value}
        why = ("scoring stopped at the per-model time limit" if outcome.status == "timeout"
               else "scoring failed: " + (outcome.message.splitlines() or [""])[0])
        for method, seed in groups[(dataset, text)]:
            record = by_seed.get(seed, {"seed": seed, "failed": why})
            results[method].append({"dataset": dataset, **record})
    for records in results.values():
        records.sort(key=lambda r: (r["dataset"], r["seed"]))
    return results


def run_rows(records: Sequence[dict], algorithm: str, seeds_order: dict, nonfinite: str = "worst") -> list[dict]:
    """Per-run rows for ranking (algorithm, dataset, run, r2_test, simplicity, property).

    A failed run (invalid model, scoring time limit) has NaN values: it is missing. A run whose predictions
    are non-finite counts as the worst accuracy (-inf) when ``nonfinite`` is "worst", or is missing with
    "missing" (the 2022 code had no such run: its R² came from est.predict); docs/srbench.md#missing-values.
    """
    rows = []
    for record in records:
        run = seeds_order[record["dataset"]].index(record["seed"])
        if "failed" in record:
            r2 = simp = prop = math.nan
        else:
            simp = record["simplicity"]
            r2 = record["r2_test"]
            prop = record["property"]
            if r2 is None:
                r2 = -math.inf if nonfinite == "worst" else math.nan
                if record.get("property") is None:
                    prop = r2
            if prop is None:  # a dataset without a property (qualification, real-world)
                prop = math.nan
        rows.append({"algorithm": algorithm, "dataset": record["dataset"], "run": run, "seed": record["seed"],
                     "r2_test": r2, "simplicity": simp, "property": prop})
    return rows


__all__ = ["DatasetSpec", "RunData", "evaluate_model", "score_runs", "score_methods", "run_rows", "property_value",
           "accuracy"]
