"""Demo data for ``ariel.retrieval``: planets, observed spectra, sampled ground truth, sample submissions.

Everything is made by the project (no ADC2023 data): true parameters are drawn from documented ranges,
spectra come from the builtin forward model plus Gaussian noise, and the ground-truth posteriors from the
ensemble sampler of :mod:`codascore.ariel.ensemble_sampler`. Fixed seeds (the demo's GENERATOR_SEED, or a bundle's
private master seed) make every file byte-identical on every run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from .. import seeds
from . import files
from .ensemble_sampler import ensemble_posteriors
from .forward_model import MOLECULES, WAVELENGTH_UM, WIDTH_UM, BuiltinForwardModel, opacity_table
from .metrics import PRIOR_BOUNDS, TARGETS
from .spectral_summaries import posterior_quartiles

#: The demo's public seed: its main stream, and [GENERATOR_SEED, 1] for the invalid samples.
GENERATOR_SEED = 2023
N_PLANETS = 24
N_TRAINING = 3000          # simulated planets the sample code submission's regression is fitted on
CODE_SAMPLES = 1000        # rows per planet the sample code submission returns
SOLAR_RADIUS_M = 696_340_000.0
JUPITER_MASS_KG = 1.898e27
TRUE_PARAMETER_TEXT = """True parameters of the demo planets: Rp ~ U(0.4, 1.8) R_Jup, T ~ U(500, 2500) K;
each log10 mixing ratio ~ U(-7, -3) with probability 0.6 (detectable) else U(-12, -8); star radius
~ U(0.6, 1.5) R_sun; planet mass log-uniform in [0.1, 3] M_Jup. Noise per bin: a planet's level
~ U(10, 40) ppm times (1 + 0.5 lambda / 7 um)."""


def draw_planets(rng: np.random.Generator, n: int):
    """(params (n, 7), star_radius_m (n,), planet_mass_kg (n,)) from the documented ranges."""
    detectable = rng.random((n, len(MOLECULES))) < 0.6
    logs = np.where(detectable, rng.uniform(-7, -3, (n, len(MOLECULES))),
                    rng.uniform(-12, -8, (n, len(MOLECULES))))
    params = np.column_stack([rng.uniform(0.4, 1.8, n), rng.uniform(500, 2500, n), logs])
    star_radius = rng.uniform(0.6, 1.5, n) * SOLAR_RADIUS_M
    planet_mass = np.exp(rng.uniform(np.log(0.1), np.log(3.0), n)) * JUPITER_MASS_KG
    return params, star_radius, planet_mass


def observe(forward_model, params, star_radius, planet_mass, rng):
    """Noisy observed spectra and their per-bin noise (both (n, 52))."""
    clean = forward_model.spectra(params, star_radius, planet_mass)
    noise = rng.uniform(10e-6, 40e-6, (params.shape[0], 1)) * (1 + 0.5 * WAVELENGTH_UM / 7.0)
    return clean + noise * rng.standard_normal(clean.shape), noise


def spectral_features(spectra, noise, star_radius_m, planet_mass_kg) -> np.ndarray:
    """Regression features of the sample code submission (kept in its model.py too)."""
    log_depth = np.log10(np.clip(spectra, 1e-8, None))
    level = log_depth.mean(axis=1, keepdims=True)
    return np.column_stack([np.ones(len(spectra)), log_depth - level, level,
                            np.log10(star_radius_m / SOLAR_RADIUS_M), np.log10(planet_mass_kg / JUPITER_MASS_KG),
                            np.log10(noise.mean(axis=1))])


def fit_ridge(features, targets, penalty: float = 1e-3):
    """Ridge coefficients (features x targets) and the residual standard deviation per target."""
    scale = features.std(axis=0)
    scale[scale == 0] = 1.0
    z = features / scale
    gram = z.T @ z + penalty * len(z) * np.eye(z.shape[1])
    coef = np.linalg.solve(gram, z.T @ targets) / scale[:, None]
    residual_sd = (targets - features @ coef).std(axis=0)
    return coef, residual_sd


def generate_demo(root: Path, task, config: dict, progress=print, seed: int | None = None) -> None:
    import pandas as pd

    config = task.load_config(dict(config))
    rng = np.random.default_rng(GENERATOR_SEED) if seed is None else seeds.generator(seed, task.name)
    invalid_rng = (np.random.default_rng([GENERATOR_SEED, 1]) if seed is None
                   else seeds.generator(seed, task.name, "invalid samples"))
    forward_model = BuiltinForwardModel()
    names = [files.planet_name(i) for i in range(N_PLANETS)]
    params, star_radius, planet_mass = draw_planets(rng, N_PLANETS)
    spectra, noise = observe(forward_model, params, star_radius, planet_mass, rng)
    progress(f"ariel: sampling ground-truth posteriors of {N_PLANETS} planets")
    traces, weights, acceptance = ensemble_posteriors(forward_model, spectra, noise, star_radius,
                                                      planet_mass, params, rng)
    progress(f"ariel: sampler acceptance rate {acceptance:.2f}")
    gt_traces = list(traces)
    gt_weights = [w / w.sum() for w in weights]
    spectral_index = list(range(0, N_PLANETS, 2))

    ref = root / "reference_data" / task.name
    inp = root / "input_data" / task.name
    samples = root / "sample_submissions" / task.name
    for folder in (ref, inp, samples):
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
    for folder in (ref, inp):
        task.write_task_yaml(folder, config, keys=task.defaults)

    table = pd.DataFrame({"planet": names, "planet_ID": np.arange(N_PLANETS), "star_radius_m": star_radius,
                          "planet_mass_kg": planet_mass,
                          "in_spectral_subset": [int(i in spectral_index) for i in range(N_PLANETS)]})
    for j, target in enumerate(TARGETS):
        table[f"true_{target}"] = params[:, j]
    table.to_csv(ref / files.PLANETS_FILE, index=False, float_format="%.17g")
    files.write_npz(ref / "ground_truth.npz", files.posteriors_npz_arrays(names, gt_traces, gt_weights))
    _write_frozen_spectra(ref / files.SPECTRAL_TRUTH_FILE, forward_model, gt_traces, gt_weights, star_radius,
                          planet_mass, spectral_index, config)
    opacity = opacity_table()
    pd.DataFrame({"wavelength_um": WAVELENGTH_UM, "width_um": WIDTH_UM, **opacity}).to_csv(
        ref / "builtin_opacity_table.csv", index=False, float_format="%.9e")

    # Participant inputs (code submissions): spectra, noise and the auxiliary table, no truth.
    files.write_code_inputs(inp, spectra, noise, WAVELENGTH_UM, WIDTH_UM, table)

    task.write_perfect_submission(ref, samples / "ground_truth", config)
    _write_samples(samples, names, gt_traces, gt_weights, rng)
    _write_invalid_samples(samples, names, invalid_rng)
    _write_code_sample(samples / "code_ridge_gaussian", forward_model, rng)
    progress(f"ariel: wrote {ref}, {inp} and {len(list(samples.iterdir()))} sample submissions")


def _write_frozen_spectra(path, forward_model, traces, weights, star_radius, planet_mass, spectral_index,
                          config) -> None:
    """GT quartile spectra for both spectral methods, made with the scorer's own draw sequence: two
    posterior draws per planet, then (submission, GT) per spectral planet; the GT draw is used here."""
    stream = np.random.RandomState(int(config["seed"]))
    stream.random_sample(2 * len(traces))
    gt_draws = [stream.random_sample(2)[1] for _ in spectral_index]
    quartiles = {method: [posterior_quartiles(forward_model, traces[p], weights[p], star_radius[p], planet_mass[p],
                                              u, config, method) for p, u in zip(spectral_index, gt_draws)]
                 for method in ("quantiles", "official")}
    files.write_spectral_truth(path, quartiles, config)


def _weighted_moments(trace, w):
    mean = w @ trace
    return mean, np.sqrt(w @ (trace - mean) ** 2)


def _write_posterior_sample(samples: Path, folder_name: str, names, traces, weights, npz: bool = False) -> Path:
    folder = samples / folder_name
    folder.mkdir()
    if npz:
        files.write_npz(folder / "submission.npz", files.posteriors_npz_arrays(names, traces, weights))
    else:
        files.write_posteriors_hdf5(folder / files.SUBMISSION_FILE, names, traces, weights)
    return folder


def _write_samples(samples: Path, names, gt_traces, gt_weights, rng) -> None:
    """Samples made from the ground-truth posteriors (demo only: ArielRetrieval.answer_samples)."""
    def write(folder_name, traces, weights, npz=False):
        return _write_posterior_sample(samples, folder_name, names, traces, weights, npz)

    gauss_t, gauss_w, point_t, point_w = [], [], [], []
    for trace, w in zip(gt_traces, gt_weights):
        mean, sd = _weighted_moments(trace, w)
        # A "baseline" that knows the posterior only roughly: mean off by ~0.5 sd, width off by up to 50 %.
        centre = mean + 0.5 * sd * rng.standard_normal(7)
        width = sd * rng.uniform(0.8, 1.5, 7)
        gauss_t.append(centre + width * rng.standard_normal((2000, 7)))
        gauss_w.append(np.full(2000, 1 / 2000))
        point_t.append(np.repeat(mean[None, :], 1000, axis=0))
        point_w.append(np.full(1000, 1 / 1000))
    write("gaussian_baseline", gauss_t, gauss_w)
    write("gaussian_baseline_npz", gauss_t, gauss_w, npz=True)
    write("point_mass", point_t, point_w)


def _write_invalid_samples(samples: Path, names, rng) -> None:
    """Invalid files, one class each; every one must fail with a message naming planet, dataset, index.
    Made from draws over the prior box, which know nothing of the truth."""
    def write(folder_name, traces, weights):
        return _write_posterior_sample(samples, folder_name, names, traces, weights)

    lo, hi = PRIOR_BOUNDS[:, 0], PRIOR_BOUNDS[:, 1]
    prior_t = [lo + (hi - lo) * rng.random((2000, len(TARGETS))) for _ in names]
    prior_w = [np.full(2000, 1 / 2000) for _ in names]
    write("invalid_missing_planet", prior_t[:-1], prior_w[:-1])
    bad = [t.copy() for t in prior_t]
    bad[1][17, 3] = np.nan
    write("invalid_nan_tracedata", bad, prior_w)
    bad_w = [w.copy() for w in prior_w]
    bad_w[2][5] = -bad_w[2][5]
    bad_w[2][6] += 2 * prior_w[2][5]
    write("invalid_negative_weight", prior_t, bad_w)
    write("invalid_weights_not_normalised", prior_t, [w * (1.01 if i == 3 else 1) for i, w in enumerate(prior_w)])
    write("invalid_too_few_samples", [t[:500] if i == 4 else t for i, t in enumerate(prior_t)],
          [np.full(500, 1 / 500) if i == 4 else w for i, w in enumerate(prior_w)])
    write("invalid_wrong_columns", [t[:, :6] if i == 5 else t for i, t in enumerate(prior_t)], prior_w)
    folder = samples / "invalid_not_hdf5"
    folder.mkdir()
    (folder / "submission.hdf5").write_text("Planet_public1,tracedata\n0.5,1000,-5,-5,-5,-5,-5\n")


def _write_code_sample(folder: Path, forward_model, rng) -> None:
    """A code submission with a real, simple method: ridge regression from the spectrum's shape to the
    parameters, trained on simulated planets, and a Gaussian posterior with the training residual width."""
    params, star_radius, planet_mass = draw_planets(rng, N_TRAINING)
    spectra, noise = observe(forward_model, params, star_radius, planet_mass, rng)
    coef, residual_sd = fit_ridge(spectral_features(spectra, noise, star_radius, planet_mass), params)
    folder.mkdir()
    files.write_npz(folder / "ridge.npz", {"coef": coef, "residual_sd": residual_sd,
                                             "prior_bounds": PRIOR_BOUNDS})
    (folder / "model.py").write_text(CODE_SUBMISSION)


CODE_SUBMISSION = '''"""Sample ADC2023 code submission: ridge regression + Gaussian posterior (numpy only).

predict(spectra, noise, aux) gets the (P, 52) observed spectra, their noise and the auxiliary table
(pandas DataFrame with star_radius_m and planet_mass_kg) and returns, per planet, a trace (M x 7:
Rp, T, log H2O, log CO2, log CO, log CH4, log NH3) and weights summing to 1.
"""
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
N_SAMPLES = %d


def features(spectra, noise, star_radius_m, planet_mass_kg):
    log_depth = np.log10(np.clip(spectra, 1e-8, None))
    level = log_depth.mean(axis=1, keepdims=True)
    return np.column_stack([np.ones(len(spectra)), log_depth - level, level,
                            np.log10(star_radius_m / 696340000.0), np.log10(planet_mass_kg / 1.898e27),
                            np.log10(noise.mean(axis=1))])


def predict(spectra, noise, aux):
    model = np.load(HERE / "ridge.npz")
    x = features(np.asarray(spectra), np.asarray(noise), aux["star_radius_m"].to_numpy(),
                 aux["planet_mass_kg"].to_numpy())
    means = x @ model["coef"]
    lo, hi = model["prior_bounds"][:, 0], model["prior_bounds"][:, 1]
    rng = np.random.default_rng(0)
    traces, weights = [], []
    for mean in means:
        trace = np.clip(mean + model["residual_sd"] * rng.standard_normal((N_SAMPLES, 7)), lo, hi)
        traces.append(trace)
        weights.append(np.full(N_SAMPLES, 1.0 / N_SAMPLES))
    return traces, weights
''' % CODE_SAMPLES
