"""Deterministic reference data and sample submissions for the weak lensing tasks.

The official test labels are private, so the project draws its own: truths uniform over the challenge's
prior ranges (spec weak_lensing.md section 1), nuisance parameters from their published priors.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import yaml

from .phase1 import PRIOR

#: The calibrated sample's 1-sigma errors, close to the starting kit's CNN baselines (0.043, 0.032).
CALIBRATED_SIGMA = (0.04, 0.03)


def draw_labels(rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, 5) labels [Omega_m, S_8, T_AGN, f_0, Delta_z] from the challenge's priors."""
    return np.column_stack([
        rng.uniform(*PRIOR["Omega_m"], n),
        rng.uniform(*PRIOR["S_8"], n),
        rng.uniform(7.2, 8.5, n),
        rng.uniform(0.0, 0.0265, n),
        rng.normal(0.0, 0.022, n),
    ])


def write_yaml(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def write_result(folder: Path, data: dict) -> None:
    """A sample result.json, deterministic (repr of floats, fixed key order)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "result.json").write_text(json.dumps(data, allow_nan=True, separators=(",", ":")) + "\n")


def phase1_samples(truth: np.ndarray, rng: np.random.Generator) -> dict[str, dict]:
    """The Phase 1 sample submissions: calibrated, dummy (as the official dummy), overconfident, and
    invalid_nan (must fail)."""
    n = len(truth)
    sigma = np.tile(CALIBRATED_SIGMA, (n, 1))
    calibrated_means = truth + sigma * rng.standard_normal((n, 2))
    samples = {
        "calibrated": {"means": calibrated_means, "errorbars": sigma},
        "dummy": {"means": rng.uniform(0, 1, (n, 2)), "errorbars": rng.uniform(0, 1, (n, 2))},
        "overconfident": {"means": calibrated_means, "errorbars": sigma / 4},
    }
    invalid = calibrated_means.copy()
    invalid[n // 3, 1] = np.nan
    samples["invalid_nan"] = {"means": invalid, "errorbars": sigma}
    return {name: {k: v.tolist() for k, v in arrays.items()} for name, arrays in samples.items()}


def generate_phase1(root: Path, task_name: str, config: dict, progress=print) -> None:
    rng = np.random.default_rng(int(config["seed"]))
    ref = root / "reference_data" / task_name
    ref.mkdir(parents=True, exist_ok=True)
    train = draw_labels(rng, int(config["n_train_cosmologies"]))
    truth = draw_labels(rng, int(config["n_test"]))
    np.save(ref / "label_test.npy", truth)
    scaler = {"mean": train[:, :2].mean(axis=0).tolist(), "scale": train[:, :2].std(axis=0).tolist()}
    (ref / "scaler.json").write_text(json.dumps(scaler, indent=1) + "\n")
    write_yaml(ref / "task.yaml", {"task": task_name, **config})
    for name, data in phase1_samples(truth[:, :2], rng).items():
        write_result(root / "sample_submissions" / task_name / name, data)
    progress(f"{task_name}: {len(truth)} test labels, 4 sample submissions")
