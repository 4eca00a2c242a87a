"""Weak lensing: end-to-end scoring (process start to scores.json and the HTML written, the program
folder exactly as the bundle holds it) of Phase 1 at N = 4000 and Phase 2 at N = 10000, the metrics
alone, and the simulator's maps per second."""

from __future__ import annotations

import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import yaml
from common import median_process_time, median_time, print_table

from codascore import bundle, competition, registry
from codascore.runner import materialise
from codascore.weak_lensing import metrics, simulator
from codascore.weak_lensing.generate import draw_labels
from codascore.weak_lensing.files import read_phase1_result

ROOT = competition.project_root()
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
        end_to_end_cpu = median_process_cpu(argv, repeat=5, cwd=tmp / "program")

        reference = task.load_reference(tmp / "input" / "ref", task.load_config({}))
        truth = reference["truth"]
        means, errorbars = read_phase1_result(tmp / "input" / "res", len(truth))
        scaler = reference["scaler"]

        def all_metrics():
            metrics.inference_score(truth, means, errorbars)
            metrics.coverage(truth, means, errorbars)
            metrics.r_squared(truth, means)
            metrics.standardised_mse(truth, means, *scaler)

        metric_time = median_time(all_metrics, repeat=201, warmup=5)
        read_time = median_time(lambda: read_phase1_result(tmp / "input" / "res", len(truth)), repeat=21)
        phase2_rows = phase2_benchmarks(tmp / "phase2")
    print_table([
        (f"Phase 1 end to end, N={len(truth)}", f"{end_to_end:.3f} s", "1.5 s"),
        ("  same, CPU time (user + system)", f"{end_to_end_cpu:.3f} s", "-"),
        ("Phase 1 metrics alone (score, coverage, R2, MSE)", f"{metric_time * 1e3:.3f} ms", "5 ms"),
        ("Phase 1 read + validate result.json", f"{read_time * 1e3:.2f} ms", "-"),
        *phase2_rows,
        *simulator_rows(),
        *baseline_rows(),
    ], ("benchmark", "median", "target"))


def median_process_cpu(argv: list[str], repeat: int = 7, cwd=None) -> float:
    """Median CPU time (user + system) of a whole process: close to its wall time on an idle machine,
    and much less sensitive than wall time to other jobs sharing the cores."""
    times = []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(times)


def phase2_benchmarks(tmp: Path, n: int = 10_000) -> list[tuple]:
    """Phase 2 end to end at the challenge's N = 10000 (30 % OoD, a separating p_ind plus ood_scores)."""
    rng = np.random.default_rng(7)
    is_ood = (rng.uniform(size=n) < 0.3).astype(np.int8)
    p_ind = 1 / (1 + np.exp(-rng.normal(2.5 - 5 * is_ood, 1.5)))
    ref, res = tmp / "input" / "ref", tmp / "input" / "res"
    ref.mkdir(parents=True)
    res.mkdir(parents=True)
    np.save(ref / "label_test_phase2.npy", is_ood)
    (ref / "task.yaml").write_text(yaml.safe_dump({"task": "weak_lensing.phase2"}))
    (res / "result.json").write_text(json.dumps({"p_ind": p_ind.tolist(), "ood_scores": (-p_ind).tolist()}))
    program = tmp.parent / "program"
    argv = [sys.executable, str(program / "score.py"), str(tmp / "input"), str(tmp / "output")]
    end_to_end = median_process_time(argv, repeat=9, cwd=program)
    end_to_end_cpu = median_process_cpu(argv, repeat=5, cwd=program)
    python_start = median_process_cpu([sys.executable, "-c", "import numpy"], repeat=5)
    score_time = median_time(lambda: metrics.ood_score(1 - is_ood, p_ind), repeat=201, warmup=5)
    tpr_time = median_time(lambda: metrics.tpr_at_low_fpr(is_ood, -p_ind), repeat=51, warmup=2)
    return [
        (f"Phase 2 end to end, N={n}", f"{end_to_end:.3f} s", "1.5 s"),
        ("  same, CPU time (user + system)", f"{end_to_end_cpu:.3f} s", "-"),
        ("  of which CPU: python + numpy start", f"{python_start:.3f} s", "-"),
        ("Phase 2 ood_score alone", f"{score_time * 1e3:.3f} ms", "-"),
        ("Phase 2 tpr_at_low_fpr alone", f"{tpr_time * 1e3:.3f} ms", "-"),
    ]


def simulator_rows(n: int = 2000) -> list[tuple]:
    """Noisy 48 x 48 maps per second: field, lognormal transform and shape noise."""
    labels = draw_labels(np.random.default_rng(0), n)

    def simulate():
        rng = np.random.default_rng(1)
        simulator.add_shape_noise(simulator.convergence_maps(labels, rng), rng)

    seconds = median_time(simulate, repeat=5)
    return [(f"simulator, {n} noisy {simulator.MAP_SIZE}x{simulator.MAP_SIZE} maps", f"{seconds:.3f} s",
             "-"), ("simulator maps per second", f"{n / seconds:,.0f} maps/s", "-")]


if __name__ == "__main__":
    main()


def baseline_rows() -> list[tuple]:
    """The code_baseline sample's fit + predict on Phase 1's input data (as ingestion runs it)."""
    from codascore.weak_lensing.baseline_model import Model
    from codascore.weak_lensing.ingest import read_inputs

    train_maps, train_labels, test_maps = read_inputs(ROOT / "input_data" / TASK)
    seconds = median_time(lambda: Model().fit(train_maps, train_labels).predict(test_maps), repeat=3)
    return [(f"code_baseline fit ({len(train_maps)} maps) + predict ({len(test_maps)} maps)",
             f"{seconds:.2f} s", "-")]
