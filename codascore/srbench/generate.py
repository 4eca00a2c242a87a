"""Reference data, input data and sample submissions of the SRBench tasks (``codascore reference``).

Everything is drawn from fixed seeds (the demo's: the 2022 data seeds, 20220601 + i for the qualification
datasets, 20220701 for the real-world stand-ins; or a bundle's private master seed) and written in a fixed
order, so the files are identical on every run. The reference pool is scored here by the same code that
scores submissions.

The run keys ``<dataset>/<seed>`` are public (models.json names them), so a private bundle keeps the 2022
run seeds as keys but draws each run's data from a seed derived from the master seed: a run key does not
rebuild the run's test data.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .. import seeds
from . import files
from .baselines import INJECTION_CORPUS, constant_model, linear_model, polynomial_model
from .datasets import DATA_SEEDS, QUALIFICATION_SEEDS, SYNTHETIC_DATASETS, make_qualification, make_synthetic
from .evaluation import DatasetSpec, RunData, run_rows, score_methods
from .metrics import HARNESS_SEEDS

#: Reference pool of the synthetic track: baseline methods shipped with the reference data
#: (docs/srbench.md#the-reference-pool).
POOL_METHODS = ("oracle", "linear_regression", "constant_mean")

REGRESSOR_SAMPLE = '''"""Sample code submission: ordinary least squares, returned as a model string.

For each dataset and seed the ingestion program starts a new process that imports this file, sets
``est.random_state`` (when ``est`` has one), applies ``eval_kwargs`` (optional: pre_train, scale_x,
scale_y, max_train_samples, test_params), fits ``est`` (X is a pandas DataFrame whose columns are the
dataset's feature names) and calls ``model(est, X)``, which must return a sympy-compatible string over
those names (use ** for powers). Only the image's packages and what this zip carries can be imported.
"""

from sklearn.linear_model import LinearRegression

est = LinearRegression()


def model(est, X=None):
    names = list(X.columns)
    terms = [f"{est.intercept_:.6g}"] + [f"{w:.6g}*{name}" for w, name in zip(est.coef_, names)]
    return " + ".join(terms)
'''


def write_task_yamls(task, ref: Path, inp: Path, config: dict) -> None:
    """Both task.yaml files: the reference data's with every parameter but the generation-only ones, the
    input data's with what the ingestion reads (accuracy_source: auto, the default, or predictions makes it
    record est.predict on the test features, which every generator writes to input_data/<task>/test/)."""
    task.write_task_yaml(ref, config, [key for key in config if key not in files.GENERATION_KEYS])
    task.write_task_yaml(inp, config, files.INGESTION_KEYS)


def _clean(folder: Path) -> Path:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder


def generate_synthetic(root: Path, task, config: dict, progress=print, seed: int | None = None) -> None:
    name = task.name
    ref = _clean(root / "reference_data" / name)
    inp = _clean(root / "input_data" / name)
    samples = root / "sample_submissions" / name
    max_rows = int(config.get("max_rows") or 0) or None
    specs, data, baselines = {}, {}, {method: {} for method in ("oracle", "linear_regression", "constant_mean",
                                                                "polynomial")}
    datasets = list(config.get("datasets") or SYNTHETIC_DATASETS)
    run_seeds = [int(s) for s in (config.get("seeds") or DATA_SEEDS)]
    for dataset in datasets:
        for run in run_seeds:
            d = make_synthetic(dataset, run if seed is None else seeds.integer(seed, name, dataset, run), max_rows)
            specs[dataset] = DatasetSpec(dataset, d.feature_names, d.property, d.truth, d.bad_features)
            files.write_table(inp / "train" / dataset / f"{run}.csv", d.feature_names, d.X_train, d.y_train)
            files.write_table(ref / "test" / dataset / f"{run}.csv", d.feature_names, d.X_test, d.y_test)
            files.write_table(inp / "test" / dataset / f"{run}.csv", d.feature_names, d.X_test, None)
            data[(dataset, run)] = RunData(run, d.X_test, d.y_test)
            baselines["oracle"][(dataset, run)] = d.truth
            baselines["linear_regression"][(dataset, run)] = linear_model(d.feature_names, d.X_train, d.y_train)
            baselines["constant_mean"][(dataset, run)] = constant_model(d.y_train)
            baselines["polynomial"][(dataset, run)] = polynomial_model(d.feature_names, d.X_train, d.y_train)
        progress(f"{name}: generated {dataset} ({len(run_seeds)} seeds)")
    files.write_datasets(ref, {"seeds": run_seeds, "datasets": [
        {"name": s.name, "feature_names": s.feature_names, "property": s.property, "truth": s.truth,
         "bad_features": s.bad_features} for s in specs.values()]})
    files.write_datasets(inp, {"seeds": run_seeds, "datasets": [
        {"name": s.name, "feature_names": s.feature_names} for s in specs.values()]})

    seeds_order = {d: run_seeds for d in specs}
    scored = score_methods({method: baselines[method] for method in POOL_METHODS}, specs, data,
                           float(config["simplify_time_limit"]), float(config["model_time_limit"]),
                           workers=int(config["workers"]) or None,
                           progress_label=f"{name}: scoring the reference pool")
    pool = [row for method in POOL_METHODS
            for row in run_rows(scored[method], method, seeds_order, config["nonfinite_predictions"])]
    files.write_pool(ref / files.POOL_FILE, pool)
    write_task_yamls(task, ref, inp, config)

    _write_common_samples(samples, baselines["linear_regression"], baselines["polynomial"])
    task.write_perfect_submission(ref, samples / "true_formulas", config)
    progress(f"{name}: reference data, input data and {len(list(samples.iterdir()))} samples written")


def write_injection_sample(folder: Path, models: dict) -> None:
    """The true formulas with injection attempts in place of some of them: must be refused (exit 1)."""
    attacked = dict(models)
    for key, attack in zip(sorted(attacked), INJECTION_CORPUS):
        attacked[key] = attack.replace("x1", "x") if key[0].startswith("extrapolation") else attack
    files.write_models(folder, attacked)


def _write_code_sample(samples: Path) -> None:
    code = samples / "code_linear_regression"
    code.mkdir(parents=True)
    (code / files.REGRESSOR_FILE).write_text(REGRESSOR_SAMPLE)


def _write_common_samples(samples: Path, linear: dict, polynomial: dict) -> None:
    _clean(samples)
    files.write_models(samples / "linear_regression", linear)
    files.write_models(samples / "polynomial", polynomial)
    write_injection_sample(samples / "invalid_injection", linear)
    _write_code_sample(samples)


def generate_qualification(root: Path, task, config: dict, progress=print, seed: int | None = None) -> None:
    """Stand-in datasets (Friedman problems, PMLB's fri_* family) split as the 2022 stage 0 split PMLB.
    The split seeds are public (run keys, and the scorer splits again); the datasets are drawn from
    20220601 + index (the demo) or from the private master seed."""
    from sklearn.model_selection import train_test_split

    name = task.name
    ref, inp = _clean(root / "reference_data" / name), _clean(root / "input_data" / name)
    entries, public, linear, polynomial = [], [], {}, {}
    for index in range(3):
        dataset = f"friedman{index + 1}_standin"
        columns, X, y = make_qualification(index, seed=20220601 + index if seed is None
                                           else seeds.integer(seed, name, dataset))
        files.write_table(ref / "data" / f"{dataset}.csv", columns, X, y, target="target")
        entries.append({"name": dataset, "path": f"data/{dataset}.csv", "target": "target"})
        public.append({"name": dataset, "feature_names": columns})
        for run in QUALIFICATION_SEEDS:
            X_tr, X_te, y_tr, _ = train_test_split(X, y, train_size=float(config["train_size"]), random_state=run)
            files.write_table(inp / "train" / dataset / f"{run}.csv", columns, X_tr, y_tr)
            files.write_table(inp / "test" / dataset / f"{run}.csv", columns, X_te, None)
            linear[(dataset, run)] = linear_model(columns, X_tr, y_tr)
            polynomial[(dataset, run)] = polynomial_model(columns, X_tr, y_tr)
    run_seeds = list(QUALIFICATION_SEEDS)
    files.write_datasets(ref, {"seeds": run_seeds, "datasets": entries})
    files.write_datasets(inp, {"seeds": run_seeds, "datasets": public})
    write_task_yamls(task, ref, inp, config)
    _write_common_samples(root / "sample_submissions" / name, linear, polynomial)
    progress(f"{name}: reference data, input data and samples written")


REALWORLD_SEEDS = HARNESS_SEEDS  # the 2022 harness's ten algorithm seeds, in its order
REALWORLD_FEATURES = ["vax_first_dose", "vax_complete", "mask_mandate", "school_closed", "travel_limits",
                      "lag14_value", "delta7_value", "tests_per_100k"]
#: Placeholder trust scores of the demo (the real ones come from the organiser's expert,
#: docs/srbench.md#real-world-track).
DEMO_TRUST = {"constant_mean": 1, "linear_regression": 2, "polynomial": 3, "submission": 3}


def generate_realworld(root: Path, task, config: dict, progress=print, seed: int | None = None) -> None:
    """Stand-in real-world data (three targets over eight named features; the 2022 data are New York
    State COVID-19 series) and a reference pool of baselines with placeholder expert trust scores, drawn
    from 20220701 (the demo) or from the private master seed."""
    import numpy as np

    name = task.name
    ref, inp = _clean(root / "reference_data" / name), _clean(root / "input_data" / name)
    rng = np.random.default_rng(20220701) if seed is None else seeds.generator(seed, name)
    max_rows = int(config.get("max_rows") or 0) or None
    specs, data, baselines = {}, {}, {m: {} for m in ("linear_regression", "constant_mean", "polynomial")}
    for scale, dataset in ((1.0, "value_cases"), (0.1, "value_hosp"), (0.01, "value_deaths")):
        X = rng.uniform(0, 1, (665, len(REALWORLD_FEATURES)))
        y = scale * (1000 * X[:, 5] * (1 - 0.5 * X[:, 1]) + 200 * X[:, 6] ** 2 - 150 * X[:, 2] * X[:, 3]
                     + rng.normal(0, 30, 665))
        n_train, n_test = (420, 245) if not max_rows else (min(420, max_rows), min(245, max_rows))
        X_tr, y_tr, X_te, y_te = X[:n_train], y[:n_train], X[420:420 + n_test], y[420:420 + n_test]
        specs[dataset] = DatasetSpec(dataset, REALWORLD_FEATURES, "none")
        files.write_table(ref / "test" / f"{dataset}.csv", REALWORLD_FEATURES, X_te, y_te)
        for run in REALWORLD_SEEDS:
            files.write_table(inp / "train" / dataset / f"{run}.csv", REALWORLD_FEATURES, X_tr, y_tr)
            files.write_table(inp / "test" / dataset / f"{run}.csv", REALWORLD_FEATURES, X_te, None)
            data[(dataset, run)] = RunData(run, X_te, y_te)
            baselines["linear_regression"][(dataset, run)] = linear_model(REALWORLD_FEATURES, X_tr, y_tr)
            baselines["constant_mean"][(dataset, run)] = constant_model(y_tr)
            baselines["polynomial"][(dataset, run)] = polynomial_model(REALWORLD_FEATURES, X_tr, y_tr)
    run_seeds = list(REALWORLD_SEEDS)
    meta = {"seeds": run_seeds, "datasets": [{"name": d, "feature_names": REALWORLD_FEATURES} for d in specs]}
    files.write_datasets(ref, meta)
    files.write_datasets(inp, meta)
    scored = score_methods(baselines, specs, data, float(config["simplify_time_limit"]),
                           float(config["model_time_limit"]), workers=int(config["workers"]) or None,
                           progress_label=None, simplify=False)
    order = {d: run_seeds for d in specs}
    files.write_pool(ref / files.POOL_FILE, [row for method in baselines
                                             for row in run_rows(scored[method], method, order, "worst")])
    lines = ["task,method,trust"] + [f"{d},{m},{t}" for d in specs for m, t in DEMO_TRUST.items()]
    (ref / files.EXPERT_FILE).write_text("\n".join(lines) + "\n")
    write_task_yamls(task, ref, inp, config)
    _write_common_samples(root / "sample_submissions" / name, baselines["linear_regression"],
                          baselines["polynomial"])
    progress(f"{name}: reference data, input data and samples written")
