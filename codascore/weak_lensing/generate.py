"""Deterministic reference data, input data and sample submissions for the weak lensing tasks.

The official maps and test labels are private, so the project makes its own with its simulator
(:mod:`codascore.weak_lensing.simulator`): cosmologies uniform over the challenge's prior ranges
(docs/weak_lensing.md#reference-data-provenance), nuisance parameters from their published priors. Every random stream
comes from the task's ``seed`` (the demo) or from the bundle's private master seed, so every run writes
the same bytes.

input_data/<task>/    task.yaml, train_maps.npy (M, 48, 48) float16 noiseless, train_labels.npy (M, 5),
                      test_maps.npy (N, 48, 48) float16 with shape noise
reference_data/<task>/ task.yaml and the truths (Phase 1: label_test.npy (N, 5) and scaler.json;
                      Phase 2: label_test_phase2.npy (N,) with 1 = OoD, the official orientation)
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from .. import seeds
from ..task import Task
from . import simulator
from .files import MODEL_FILE, PHASE1_LABELS, PHASE2_LABELS, PRIOR, SCALER_FILE, TEST_MAPS, TRAIN_LABELS, \
    TRAIN_MAPS, write_result

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


def phase1_samples(truth: np.ndarray, rng: np.random.Generator) -> dict[str, dict]:
    """The Phase 1 sample submissions: calibrated and overconfident (the truth plus noise: demo only),
    dummy (as the official dummy), and invalid_nan (the dummy with a NaN; must fail)."""
    n = len(truth)
    sigma = np.tile(CALIBRATED_SIGMA, (n, 1))
    calibrated_means = truth + sigma * rng.standard_normal((n, 2))
    samples = {
        "calibrated": {"means": calibrated_means, "errorbars": sigma},
        "dummy": {"means": rng.uniform(0, 1, (n, 2)), "errorbars": rng.uniform(0, 1, (n, 2))},
        "overconfident": {"means": calibrated_means, "errorbars": sigma / 4},
    }
    invalid = samples["dummy"]["means"].copy()
    invalid[n // 3, 1] = np.nan
    samples["invalid_nan"] = {"means": invalid, "errorbars": sigma}
    return {name: {k: v.tolist() for k, v in arrays.items()} for name, arrays in samples.items()}


SOURCES = Path(__file__).resolve().parent


def streams(task: Task, config: dict, n: int, seed: int | None) -> list[np.random.Generator]:
    """n independent generators (one per purpose, so that changing one part of the data leaves the others
    unchanged) from the task's demo ``seed``, or from the private master seed when one is given."""
    root = np.random.SeedSequence(int(config["seed"])) if seed is None else seeds.sequence(seed, task.name)
    return [np.random.default_rng(s) for s in root.spawn(n)]


def write_task_yamls(task: Task, folders: tuple[Path, ...], config: dict, seed: int | None) -> None:
    """task.yaml in each folder, the parameters in config's order; a private bundle's leaves out the demo's
    public ``seed``, which did not make its data."""
    keys = [k for k in config if k != "task" and (seed is None or k != "seed")]
    for folder in folders:
        task.write_task_yaml(folder, config, keys)


def training_set(rng: np.random.Generator, n_cosmologies: int, n_realisations: int):
    """(maps (M, 48, 48) noiseless, labels (M, 5)): n_cosmologies cosmologies drawn from the prior, each
    with n_realisations nuisance draws and map realisations; rows grouped by cosmology, as the
    challenge's (101, 256) label.npy flattened."""
    cosmologies = draw_labels(rng, n_cosmologies)
    labels = np.repeat(cosmologies, n_realisations, axis=0)
    labels[:, 2:] = draw_labels(rng, len(labels))[:, 2:]
    return simulator.convergence_maps(labels, rng), labels


def save_maps(path: Path, maps: np.ndarray) -> None:
    """Maps are stored as float16, as the challenge's files are."""
    np.save(path, maps.astype(np.float16))


def write_input_data(folder: Path, train, test_maps: np.ndarray) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    save_maps(folder / TRAIN_MAPS, train[0])
    np.save(folder / TRAIN_LABELS, train[1])
    save_maps(folder / TEST_MAPS, test_maps)


def write_code_samples(samples_dir: Path) -> None:
    """code_baseline (the baseline model, both phases) and broken_model (raises; must fail)."""
    for name, source in (("code_baseline", "baseline_model.py"), ("broken_model", "broken_model.py")):
        folder = samples_dir / name
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SOURCES / source, folder / MODEL_FILE)


def generate_phase1(task: Task, root: Path, config: dict, progress=print, seed: int | None = None) -> None:
    label_rng, train_rng, map_rng, sample_rng = streams(task, config, 4, seed)
    ref, inputs = root / "reference_data" / task.name, root / "input_data" / task.name
    ref.mkdir(parents=True, exist_ok=True)
    train = training_set(train_rng, int(config["n_train_cosmologies"]), int(config["n_train_realisations"]))
    truth = draw_labels(label_rng, int(config["n_test"]))
    test_maps = simulator.add_shape_noise(simulator.convergence_maps(truth, map_rng), map_rng)
    np.save(ref / PHASE1_LABELS, truth)
    cosmologies = train[1][::int(config["n_train_realisations"]), :2]
    scaler = {"mean": cosmologies.mean(axis=0).tolist(), "scale": cosmologies.std(axis=0).tolist()}
    (ref / SCALER_FILE).write_text(json.dumps(scaler, indent=1) + "\n")
    write_task_yamls(task, (ref, inputs), config, seed)
    write_input_data(inputs, train, test_maps)
    samples_dir = root / "sample_submissions" / task.name
    samples = phase1_samples(truth[:, :2], sample_rng)
    for name, data in samples.items():
        write_result(samples_dir / name, data)
    write_code_samples(samples_dir)
    progress(f"{task.name}: {len(train[1])} training maps, {len(truth)} test maps and labels, "
             f"{len(samples) + 2} sample submissions")


def ood_test_set(rng: np.random.Generator, n: int, ood_fraction: float):
    """(noisy maps (n, 48, 48), is_ood (n,) int8): in-distribution maps from the training model and OoD
    maps split evenly between the simulator's two out-of-distribution models, in random order."""
    labels = draw_labels(rng, n)
    is_ood = np.zeros(n, dtype=np.int8)
    is_ood[:int(round(ood_fraction * n))] = 1
    is_ood = rng.permutation(is_ood)
    ood = np.flatnonzero(is_ood)
    running, mirrored = ood[: len(ood) // 2], ood[len(ood) // 2:]
    maps = np.empty((n, simulator.MAP_SIZE, simulator.MAP_SIZE))
    ind = np.flatnonzero(is_ood == 0)
    maps[ind] = simulator.convergence_maps(labels[ind], rng)
    alpha = rng.uniform(*simulator.RUNNING_RANGE, len(running)) * rng.choice([-1.0, 1.0], len(running))
    maps[running] = simulator.convergence_maps(labels[running], rng, model="running", running=alpha)
    maps[mirrored] = simulator.convergence_maps(labels[mirrored], rng, model="mirrored")
    return simulator.add_shape_noise(maps, rng), is_ood


def skewness_ood_scores(test_maps: np.ndarray) -> np.ndarray:
    """Minus each test map's pixel skewness: the training model's lognormal maps are positively skewed, so
    a low skewness hints at OoD. Made from the public test maps only (a starting-kit sample)."""
    pixels = test_maps.reshape(len(test_maps), -1).astype(np.float64)
    centred = pixels - pixels.mean(axis=1, keepdims=True)
    return -(centred ** 3).mean(axis=1) / (centred ** 2).mean(axis=1) ** 1.5


def phase2_samples(is_ood: np.ndarray, rng: np.random.Generator, ranking: str,
                   test_maps: np.ndarray) -> dict[str, dict]:
    """Result-submission samples of Phase 2: oracle (knows the truth, hedged at 0.99), constant_half,
    dummy (uniform p_ind and ood_scores, like the official dummy), invalid_out_of_range (a probability
    above 1; must fail) and the official format, ``{"ood_scores": [...]}`` alone: under the seed's ranking
    invalid_official_format (must fail), under the deployed one official_format (minus each map's
    skewness; scored)."""
    n = len(is_ood)
    oracle = np.where(is_ood == 1, 0.01, 0.99)
    out_of_range = np.full(n, 0.5)
    out_of_range[n // 4] = 1.2
    dummy_scores = rng.uniform(0, 1, n)
    samples = {
        "oracle": {"p_ind": oracle.tolist()},
        "constant_half": {"p_ind": [0.5] * n},
        "dummy": {"p_ind": rng.uniform(0, 1, n).tolist(), "ood_scores": dummy_scores.tolist()},
        "invalid_out_of_range": {"p_ind": out_of_range.tolist()},
    }
    if ranking == "deployed":
        samples["official_format"] = {"ood_scores": skewness_ood_scores(test_maps).tolist()}
    else:
        samples["invalid_official_format"] = {"ood_scores": dummy_scores.tolist()}
    return samples


def generate_phase2(task: Task, root: Path, config: dict, progress=print, seed: int | None = None) -> None:
    train_rng, test_rng, sample_rng = streams(task, config, 3, seed)
    ref, inputs = root / "reference_data" / task.name, root / "input_data" / task.name
    ref.mkdir(parents=True, exist_ok=True)
    train = training_set(train_rng, int(config["n_train_cosmologies"]), int(config["n_train_realisations"]))
    test_maps, is_ood = ood_test_set(test_rng, int(config["n_test"]), float(config["ood_fraction"]))
    np.save(ref / PHASE2_LABELS, is_ood)
    write_task_yamls(task, (ref, inputs), config, seed)
    write_input_data(inputs, train, test_maps)
    samples_dir = root / "sample_submissions" / task.name
    samples = phase2_samples(is_ood, sample_rng, config["ranking"], test_maps)
    for name, data in samples.items():
        write_result(samples_dir / name, data)
    write_code_samples(samples_dir)
    progress(f"{task.name}: {len(train[1])} training maps, {len(is_ood)} test maps "
             f"({int(is_ood.sum())} OoD), {len(samples) + 2} sample submissions")
