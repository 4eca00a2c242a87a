"""SRBench synthetic track: 160 models (16 datasets x 10 seeds) scored end to end, side by side with the
straightforward per-model evaluation of the 2022 code.

- codascore: every model parsed, simplified and rounded once, the canonical form shared by simplicity
  and property, identical strings scored once, the models spread over all cores (worker processes).
- 2022-style: one process, model after model; the string is parsed and simplified separately for
  simplicity and for the property (as evaluate_model.py called evaluation.simplicity and then
  problem_specific_score), and parsed again for the accuracy.

Both must give identical per-run results; the ratio of wall times is the speed-up (target >= 2.5).
Usage: python benchmarks/bench_srbench.py [linear_regression|polynomial|true_formulas] [--repeat N]
"""

from __future__ import annotations

import argparse
import sys
import time

from common import print_table

from codascore.srbench import metrics
from codascore.srbench.baselines import linear_model, polynomial_model
from codascore.srbench.datasets import DATA_SEEDS, SYNTHETIC_DATASETS, make_synthetic
from codascore.srbench.evaluation import DatasetSpec, RunData, accuracy, score_runs
from codascore.srbench.workers import default_workers

LIMIT = metrics.SIMPLIFY_TIME_LIMIT


def build(method: str, max_rows: int = 100):
    specs, data, models = {}, {}, {}
    for dataset in SYNTHETIC_DATASETS:
        for seed in DATA_SEEDS:
            d = make_synthetic(dataset, seed, max_rows)
            specs[dataset] = DatasetSpec(dataset, d.feature_names, d.property, d.truth, d.bad_features)
            data[(dataset, seed)] = RunData(seed, d.X_test, d.y_test)
            if method == "linear_regression":
                models[(dataset, seed)] = linear_model(d.feature_names, d.X_train, d.y_train)
            elif method == "polynomial":
                models[(dataset, seed)] = polynomial_model(d.feature_names, d.X_train, d.y_train)
            else:
                models[(dataset, seed)] = d.truth
    return specs, data, models


def straightforward_2022(models: dict, specs: dict, data: dict) -> list[dict]:
    """One process; each metric parses (and simplifies) the string on its own, as the 2022 code did."""
    truths = {name: metrics.canonicalize(spec.truth, spec.feature_names, LIMIT)
              for name, spec in specs.items() if spec.property == "equivalence"}  # 2022: once, at import
    records = []
    for (dataset, seed), text in sorted(models.items()):
        spec, run = specs[dataset], data[(dataset, seed)]
        nodes = metrics.complexity(text, spec.feature_names, LIMIT)
        simplicity = metrics.simplicity(text, spec.feature_names, LIMIT)
        if spec.property == "equivalence":
            prop = float(metrics.symbolic_equivalence(truths[dataset], text, spec.feature_names, LIMIT,
                                                      shortcuts=False))
        elif spec.property == "feature_absence":
            prop = metrics.feature_absence_score(text, spec.bad_features, spec.feature_names, LIMIT)
        else:
            prop = None
        parsed = metrics.canonicalize(text, spec.feature_names, LIMIT, strict=True).parsed
        r2, _ = accuracy(parsed, spec.feature_names, run)
        records.append({"dataset": dataset, "seed": seed, "nodes": nodes, "simplicity": simplicity,
                        "property": r2 if spec.property == "r2" else prop, "r2_test": r2})
    return records


def comparable(records: list[dict]) -> list[tuple]:
    return sorted((r["dataset"], r["seed"], r.get("nodes"), r.get("simplicity"), r.get("property"),
                   r.get("r2_test")) for r in records)


def main(argv: list[str] | None = None) -> None:
    """argv: [method] [--repeat N]; none (as make bench calls it) means the polynomial sample, once."""
    parser = argparse.ArgumentParser()
    parser.add_argument("method", nargs="?", default="polynomial")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv or [])
    specs, data, models = build(args.method)
    ours_times, old_times = [], []
    for _ in range(args.repeat):
        start = time.perf_counter()
        ours = score_runs(models, specs, data, LIMIT, model_time_limit=120, progress_label=None)
        ours_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        old = straightforward_2022(models, specs, data)
        old_times.append(time.perf_counter() - start)
    identical = comparable(ours) == comparable(old)
    ours_median, old_median = sorted(ours_times)[len(ours_times) // 2], sorted(old_times)[len(old_times) // 2]
    print(f"srbench: {len(models)} models ({args.method}), {default_workers()} cores, "
          f"{args.repeat} repeat(s); identical results: {identical}")
    print_table([("2022-style per-model evaluation (1 process)", f"{old_median:.2f}", "1.00"),
                 ("codascore score_runs (canonical once, all cores)", f"{ours_median:.2f}",
                  f"{old_median / ours_median:.2f}")],
                ("name", "median seconds", "speed-up"))
    if not identical:
        raise SystemExit("results differ")


if __name__ == "__main__":
    main(sys.argv[1:])
