"""Reference data, input data and sample submissions of the SRBench tasks (``codascore reference``).

Everything is drawn from fixed seeds and written in a fixed order, so the files are identical on every
run. The reference pool is scored here by the same code that scores submissions.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from . import io
from .baselines import INJECTION_CORPUS, constant_model, linear_model, polynomial_model
from .datasets import DATA_SEEDS, SYNTHETIC_DATASETS, make_synthetic

#: Reference pool of the synthetic track: baseline methods shipped with the reference data (spec §5).
POOL_METHODS = ("oracle", "linear_regression", "constant_mean")

REGRESSOR_SAMPLE = '''"""Sample code submission: ordinary least squares, returned as a model string.

The ingestion program imports this file, fits a fresh copy of ``est`` on each training set
(X is a pandas DataFrame whose columns are the dataset's feature names) and calls ``model(est, X)``,
which must return a sympy-compatible string over those names (use ** for powers).
"""

from sklearn.linear_model import LinearRegression

est = LinearRegression()


def model(est, X=None):
    names = list(X.columns)
    terms = [f"{est.intercept_:.6g}"] + [f"{w:.6g}*{name}" for w, name in zip(est.coef_, names)]
    return " + ".join(terms)
'''


def write_yaml(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def _clean(folder: Path) -> Path:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder


def generate_synthetic(root: Path, task, config: dict, progress=print) -> None:
    from .evaluation import DatasetSpec, RunData, run_rows, score_methods
    from .synthetic import write_pool

    name = task.name
    ref = _clean(root / "reference_data" / name)
    inp = _clean(root / "input_data" / name)
    samples = root / "sample_submissions" / name
    max_rows = int(config.get("max_rows") or 0) or None
    specs, data, baselines = {}, {}, {method: {} for method in ("oracle", "linear_regression", "constant_mean",
                                                                "polynomial")}
    datasets = list(config.get("datasets") or SYNTHETIC_DATASETS)
    seeds = [int(s) for s in (config.get("seeds") or DATA_SEEDS)]
    for dataset in datasets:
        for seed in seeds:
            d = make_synthetic(dataset, seed, max_rows)
            specs[dataset] = DatasetSpec(dataset, d.feature_names, d.property, d.truth, d.bad_features)
            io.write_table(inp / "train" / dataset / f"{seed}.csv", d.feature_names, d.X_train, d.y_train)
            io.write_table(ref / "test" / dataset / f"{seed}.csv", d.feature_names, d.X_test, d.y_test)
            data[(dataset, seed)] = RunData(seed, d.X_test, d.y_test)
            baselines["oracle"][(dataset, seed)] = d.truth
            baselines["linear_regression"][(dataset, seed)] = linear_model(d.feature_names, d.X_train, d.y_train)
            baselines["constant_mean"][(dataset, seed)] = constant_model(d.y_train)
            baselines["polynomial"][(dataset, seed)] = polynomial_model(d.feature_names, d.X_train, d.y_train)
        progress(f"{name}: generated {dataset} ({len(seeds)} seeds)")
    meta = {"seeds": seeds, "datasets": [
        {"name": s.name, "feature_names": s.feature_names, "property": s.property, "truth": s.truth,
         "bad_features": s.bad_features} for s in specs.values()]}
    (ref / "datasets.json").write_text(json.dumps(meta, indent=1) + "\n")
    public = {"seeds": seeds, "datasets": [
        {"name": s.name, "feature_names": s.feature_names} for s in specs.values()]}
    (inp / "datasets.json").write_text(json.dumps(public, indent=1) + "\n")

    seeds_order = {d: seeds for d in specs}
    scored = score_methods({method: baselines[method] for method in POOL_METHODS}, specs, data,
                           float(config["simplify_time_limit"]), float(config["model_time_limit"]),
                           workers=int(config["workers"]) or None,
                           progress_label=f"{name}: scoring the reference pool")
    pool = [row for method in POOL_METHODS
            for row in run_rows(scored[method], method, seeds_order, config["nonfinite_predictions"])]
    write_pool(ref / "pool.csv", pool)
    generation_only = ("max_rows", "datasets", "seeds")
    write_yaml(ref / "task.yaml", {"task": name, **{k: v for k, v in config.items() if k not in generation_only}})
    write_yaml(inp / "task.yaml", {"task": name, "fit_time_limit": config["fit_time_limit"],
                                   "workers": config["workers"], "max_length": config["max_length"]})

    _clean(samples)
    io.write_models(samples / "true_formulas", baselines["oracle"])
    io.write_models(samples / "linear_regression", baselines["linear_regression"])
    io.write_models(samples / "polynomial", baselines["polynomial"])
    write_injection_sample(samples / "invalid_injection", baselines["oracle"])
    code = samples / "code_linear_regression"
    code.mkdir(parents=True)
    (code / "regressor.py").write_text(REGRESSOR_SAMPLE)
    progress(f"{name}: reference data, input data and {len(list(samples.iterdir()))} samples written")


def write_injection_sample(folder: Path, models: dict) -> None:
    """The true formulas with injection attempts in place of some of them: must be refused (exit 1)."""
    attacked = dict(models)
    for key, attack in zip(sorted(attacked), INJECTION_CORPUS):
        attacked[key] = attack.replace("x1", "x") if key[0].startswith("extrapolation") else attack
    io.write_models(folder, attacked)
