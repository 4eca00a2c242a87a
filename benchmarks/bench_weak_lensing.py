"""Weak lensing Phase 1: end-to-end scoring of N = 4000 (process start to scores.json and the HTML
written, the program folder exactly as the bundle holds it) and the metrics alone."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

from codascore import bundle, registry
from codascore.runner import materialise
from codascore.weak_lensing import metrics
from codascore.weak_lensing.phase1 import read_result
from common import median_process_time, median_time, print_table

ROOT = bundle.project_root()
TASK = "weak_lensing.phase1"


def main() -> None:
    task = registry.get_task(TASK)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        materialise(bundle.program_zip(ROOT / "scoring_program"), tmp / "program")
        shutil.copytree(ROOT / "reference_data" / TASK, tmp / "input" / "ref")
        shutil.copytree(ROOT / "sample_submissions" / TASK / "calibrated", tmp / "input" / "res")
        argv = [sys.executable, str(tmp / "program" / "score.py"), str(tmp / "input"), str(tmp / "output")]
        end_to_end = median_process_time(argv, repeat=9, cwd=tmp / "program")

        reference = task.load_reference(tmp / "input" / "ref", task.load_config({}))
        truth = reference["truth"]
        means, errorbars = read_result(tmp / "input" / "res", len(truth))
        scaler = reference["scaler"]

        def all_metrics():
            metrics.inference_score(truth, means, errorbars)
            metrics.coverage(truth, means, errorbars)
            metrics.r_squared(truth, means)
            metrics.standardised_mse(truth, means, *scaler)

        metric_time = median_time(all_metrics, repeat=201, warmup=5)
        read_time = median_time(lambda: read_result(tmp / "input" / "res", len(truth)), repeat=21)
    print_table([
        (f"Phase 1 end to end, N={len(truth)}", f"{end_to_end:.3f} s", "1.5 s"),
        ("Phase 1 metrics alone (score, coverage, R2, MSE)", f"{metric_time * 1e3:.3f} ms", "5 ms"),
        ("Phase 1 read + validate result.json", f"{read_time * 1e3:.2f} ms", "-"),
    ], ("benchmark", "median", "target"))


if __name__ == "__main__":
    main()
