"""The weak lensing simulator and data generators: statistics that really depend on the parameters,
the challenge's noise model, out-of-distribution models that differ, and byte-identical outputs."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest

from codascore.registry import get_task
from codascore.weak_lensing import simulator
from codascore.weak_lensing.baseline_model import summaries

FIDUCIAL = [0.3, 0.8, 7.85, 0.013, 0.0]


def labels(n: int = 300, **changes) -> np.ndarray:
    row = dict(zip(simulator.LABEL_COLUMNS, FIDUCIAL), **changes)
    return np.tile([row[c] for c in simulator.LABEL_COLUMNS], (n, 1))


def band_power(maps: np.ndarray) -> np.ndarray:
    """Mean power in a low-k and a high-k band, averaged over maps."""
    k = simulator.wavenumbers(maps.shape[1])
    power = np.abs(np.fft.rfft2(maps)) ** 2
    return np.array([power[:, (k > 0.02) & (k < 0.08)].mean(), power[:, (k > 0.25) & (k < 0.45)].mean()])


def skewness(maps: np.ndarray) -> float:
    flat = maps.reshape(len(maps), -1)
    centred = flat - flat.mean(axis=1, keepdims=True)
    return float(np.mean((centred ** 3).mean(axis=1) / centred.std(axis=1) ** 3))


def maps_for(rows: np.ndarray, seed: int = 1, **kwargs) -> np.ndarray:
    return simulator.convergence_maps(rows, np.random.default_rng(seed), **kwargs)


def test_gaussian_field_power_is_proportional_to_s8_squared():
    rng = np.random.default_rng(0)
    low = simulator.gaussian_fields(simulator.power_spectrum(labels(S_8=0.7)), rng)
    high = simulator.gaussian_fields(simulator.power_spectrum(labels(S_8=0.9)), rng)
    ratio = band_power(high) / band_power(low)
    assert ratio == pytest.approx([(0.9 / 0.7) ** 2] * 2, rel=0.08)


def test_omega_m_changes_the_spectral_tilt():
    low, high = band_power(maps_for(labels(Omega_m=0.15))), band_power(maps_for(labels(Omega_m=0.55)))
    # A steeper spectrum at high Omega_m: less small-scale power relative to large scales.
    assert high[1] / high[0] < 0.6 * low[1] / low[0]


def test_nuisance_parameters_move_the_statistics():
    base = band_power(maps_for(labels()))
    assert band_power(maps_for(labels(T_AGN=8.5)))[1] < 0.95 * base[1]  # baryonic suppression
    assert band_power(maps_for(labels(f_0=0.0265)))[1] < base[1]
    assert band_power(maps_for(labels(Delta_z=0.05)))[0] > 1.05 * base[0]


def test_maps_are_zero_mean_lognormal_with_the_fiducial_rms():
    maps = maps_for(labels(1000))
    assert abs(maps.mean()) < 1e-3
    assert maps.std() == pytest.approx(simulator.SIGMA_0, rel=0.1)
    assert skewness(maps) > 0.5
    assert skewness(maps_for(labels(300, Omega_m=0.12))) > skewness(maps_for(labels(300, Omega_m=0.5)))


def test_shape_noise_has_the_challenges_level_for_the_pixel_size():
    assert simulator.SHAPE_NOISE == pytest.approx(0.4 / math.sqrt(2 * 30 * simulator.PIXEL_ARCMIN ** 2))
    assert 0.4 / math.sqrt(2 * 30 * 4) == pytest.approx(0.025820, abs=1e-6)  # the challenge's 2-arcmin value
    noise = simulator.add_shape_noise(np.zeros((200, 48, 48)), np.random.default_rng(2))
    assert noise.std() == pytest.approx(simulator.SHAPE_NOISE, rel=0.01)


def test_out_of_distribution_models_are_physically_different():
    rows = labels(400)
    mirrored = maps_for(rows, model="mirrored")
    assert skewness(mirrored) < -0.5
    assert band_power(mirrored) == pytest.approx(band_power(maps_for(rows)), rel=0.1)
    # Running curves log P(log k): power drops on both sides of the pivot, not at the pivot.
    k = simulator.wavenumbers()
    with np.errstate(invalid="ignore"):  # P(0) = 0 in both
        running = simulator.power_spectrum(rows[:1], running=[0.5]) / simulator.power_spectrum(rows[:1])
    running, k = running[:, k > 0], k[k > 0]
    assert running[0][np.isclose(k, simulator.K_PIVOT, rtol=0.05)] == pytest.approx(1.0, abs=0.01)
    assert running[0][(k > 0) & (k < 0.03)].max() < 0.8 and running[0][k > 0.4].max() < 0.8


def test_invalid_arguments_are_named():
    with pytest.raises(ValueError, match="model"):
        maps_for(labels(2), model="warm")
    with pytest.raises(ValueError, match="running must be given"):
        maps_for(labels(2), model="running")
    with pytest.raises(ValueError, match="labels"):
        maps_for(np.zeros((2, 3)))


def test_summaries_separate_cosmologies():
    noisy = lambda rows: simulator.add_shape_noise(maps_for(rows), np.random.default_rng(4))
    low, high = summaries(noisy(labels(100, S_8=0.7))), summaries(noisy(labels(100, S_8=0.9)))
    assert np.all(np.isfinite(low))
    assert high[:, 0].mean() > low[:, 0].mean() + 3 * low[:, 0].std() / 10


def digest(root) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name", ["weak_lensing.phase1", "weak_lensing.phase2"])
def test_generation_is_byte_identical_and_complete(tmp_path, name):
    task = get_task(name)
    config = {**task.defaults, "n_test": 60, "n_train_cosmologies": 6, "n_train_realisations": 3}
    for copy in ("a", "b"):
        task.generate(tmp_path / copy, dict(config), progress=lambda message: None)
    first = digest(tmp_path / "a")
    assert first == digest(tmp_path / "b")
    assert f"input_data/{name}/test_maps.npy" in first and f"input_data/{name}/train_labels.npy" in first
    samples = {path.split("/")[2] for path in first if path.startswith("sample_submissions")}
    assert {"code_baseline", "broken_model"} <= samples
    maps = np.load(tmp_path / "a" / "input_data" / name / "test_maps.npy")
    assert maps.shape == (60, 48, 48) and maps.dtype == np.float16
    train = np.load(tmp_path / "a" / "input_data" / name / "train_labels.npy")
    assert train.shape == (18, 5) and np.all(train[:3, :2] == train[0, :2])
