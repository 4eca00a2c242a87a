"""A small, fast simulator of weak lensing convergence maps for the project's own data.

The official maps (HSC Y3 ray-traced simulations) and test labels are not available, so the project
makes maps whose statistics depend on the same parameters, at demo size (48 x 48 pixels of 4 arcmin):

1. A Gaussian random field kappa_G with the power spectrum (k in cycles per pixel, pivot k_p = 0.1)

       P(k) = sigma_0^2 / Z * (S_8 / 0.8)^2 * (k / k_p)^-(n(Omega_m))            amplitude and tilt
              * [1 - b * (k/k_b)^2 / (1 + (k/k_b)^2)]                            baryonic suppression
              * (1 + 2 Delta_z)                                                  photometric-redshift shift

   with tilt n(Omega_m) = 1.2 + 1.2 (Omega_m - 0.3), baryon strength b = 0.15 (T_AGN - 7.2) / 1.3 + 2 f_0,
   k_b = 0.15, and Z the mean of (k / k_p)^-1.2 over the grid (so that sigma_0 = 0.015 is the fiducial
   rms of kappa_G).
2. A lognormal transform kappa = lambda (exp(kappa_G / lambda - s^2 / 2) - 1), s^2 = var(kappa_G) /
   lambda^2, with shift lambda = 0.05 (Omega_m / 0.3)^0.7: maps are positively skewed, more so at low
   Omega_m (for fixed S_8 a lower Omega_m means a higher sigma_8, a more non-linear field).
3. Shape noise: independent Gaussian noise per pixel with sigma_pix = 0.4 / sqrt(2 n_g A_pix), n_g = 30
   arcmin^-2 as in the challenge (docs/weak_lensing.md#the-challenges-data) and A_pix = 16 arcmin^2 for these
   4-arcmin pixels, i.e. 0.012910 (the challenge's 2-arcmin pixels have 0.025820).
   Training maps are stored noiseless, as in the challenge; test maps are noisy.

Out-of-distribution models (Phase 2), physically different from the training model:

- ``running``: the spectral index runs with scale, P gains the factor (k / k_p)^(-alpha ln(k / k_p)),
  |alpha| in [0.35, 0.7] with a random sign (a scale-dependent tilt no (Omega_m, S_8) reproduces);
- ``mirrored``: the non-Gaussian transform is mirrored, kappa = -lambda (exp(-kappa_G / lambda - s^2 / 2) - 1):
  the same power spectrum, negative skewness (void-dominated maps).

Every function is vectorised over maps; randomness comes only from the generator passed in.
"""

from __future__ import annotations

import math

import numpy as np

MAP_SIZE = 48
PIXEL_ARCMIN = 4.0
#: Galaxy density (arcmin^-2) and intrinsic ellipticity dispersion of the challenge's noise model.
GALAXY_DENSITY = 30.0
SHAPE_NOISE = 0.4 / math.sqrt(2 * GALAXY_DENSITY * PIXEL_ARCMIN ** 2)
SIGMA_0 = 0.015
K_PIVOT = 0.1
K_BARYON = 0.15
FIDUCIAL_TILT = 1.2
OOD_MODELS = ("running", "mirrored")
#: |alpha| of the running out-of-distribution model.
RUNNING_RANGE = (0.35, 0.7)
#: Columns of a label row, as in the challenge's label.npy.
LABEL_COLUMNS = ("Omega_m", "S_8", "T_AGN", "f_0", "Delta_z")
_CHUNK = 500


def wavenumbers(size: int = MAP_SIZE) -> np.ndarray:
    """|k| in cycles per pixel on the rfft2 grid of a size x size map (shape (size, size // 2 + 1))."""
    ky = np.fft.fftfreq(size)[:, None]
    kx = np.fft.rfftfreq(size)[None, :]
    return np.hypot(ky, kx)


def tilt(omega_m) -> np.ndarray:
    return FIDUCIAL_TILT + 1.2 * (np.asarray(omega_m, dtype=np.float64) - 0.3)


def lognormal_shift(omega_m) -> np.ndarray:
    return 0.05 * (np.asarray(omega_m, dtype=np.float64) / 0.3) ** 0.7


def power_spectrum(labels: np.ndarray, size: int = MAP_SIZE, running=None) -> np.ndarray:
    """P(k) of each map on the rfft2 grid, shape (n, size, size // 2 + 1); P(0) = 0 (zero-mean maps).

    labels: (n, 5) rows [Omega_m, S_8, T_AGN, f_0, Delta_z]; running: optional (n,) running of the
    spectral index (the ``running`` out-of-distribution model)."""
    labels = np.asarray(labels, dtype=np.float64)
    omega_m, s_8, t_agn, f_0, delta_z = (labels[:, j, None, None] for j in range(5))
    k = wavenumbers(size)
    log_k = np.log(np.where(k > 0, k, 1.0) / K_PIVOT)
    norm = np.mean(np.exp(-FIDUCIAL_TILT * log_k[k > 0]))
    exponent = -tilt(omega_m) * log_k
    if running is not None:
        exponent = exponent - np.asarray(running, dtype=np.float64)[:, None, None] * log_k ** 2
    baryons = 1 - (0.15 * (t_agn - 7.2) / 1.3 + 2 * f_0) * (k / K_BARYON) ** 2 / (1 + (k / K_BARYON) ** 2)
    power = SIGMA_0 ** 2 / norm * (s_8 / 0.8) ** 2 * np.exp(exponent) * baryons * (1 + 2 * delta_z)
    return np.where(k > 0, power, 0.0)


def gaussian_fields(power: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Real Gaussian random fields with the given per-mode power (white noise filtered in Fourier space,
    so the field's variance is the mean of P over the full grid)."""
    n, size = power.shape[0], power.shape[1]
    white = np.fft.rfft2(rng.standard_normal((n, size, size)))
    return np.fft.irfft2(white * np.sqrt(power), s=(size, size))


def field_variance(power: np.ndarray) -> np.ndarray:
    """The expected variance of gaussian_fields(power): the mean of P over the full Fourier grid (the
    rfft2 grid's inner columns stand for two modes each)."""
    size = power.shape[1]
    weights = np.full(power.shape[2], 2.0)
    weights[0] = 1.0
    if size % 2 == 0:
        weights[-1] = 1.0
    return (power * weights).sum(axis=(1, 2)) / size ** 2


def convergence_maps(labels: np.ndarray, rng: np.random.Generator, model: str = "lcdm",
                     running=None, size: int = MAP_SIZE) -> np.ndarray:
    """Noiseless convergence maps (n, size, size) float64 for (n, 5) labels.

    model: ``lcdm`` (the training model), ``running`` (needs ``running``) or ``mirrored``."""
    if model not in ("lcdm", *OOD_MODELS):
        raise ValueError(f"model must be one of lcdm, {', '.join(OOD_MODELS)}; got {model!r}")
    if (model == "running") != (running is not None):
        raise ValueError(f"running must be given for model 'running' and only then (model={model!r})")
    labels = np.asarray(labels, dtype=np.float64)
    if labels.ndim != 2 or labels.shape[1] != 5:
        raise ValueError(f"labels must have shape (n, 5) with columns {LABEL_COLUMNS}, got {labels.shape}")
    out = np.empty((len(labels), size, size))
    for start in range(0, len(labels), _CHUNK):
        rows = slice(start, start + _CHUNK)
        power = power_spectrum(labels[rows], size, None if running is None else np.asarray(running)[rows])
        field = gaussian_fields(power, rng)
        shift = lognormal_shift(labels[rows, 0])[:, None, None]
        s2 = field_variance(power)[:, None, None] / shift ** 2
        sign = -1.0 if model == "mirrored" else 1.0
        out[rows] = sign * shift * np.expm1(sign * field / shift - s2 / 2)
    return out


def add_shape_noise(maps: np.ndarray, rng: np.random.Generator, sigma: float = SHAPE_NOISE) -> np.ndarray:
    """maps + independent Gaussian noise of standard deviation sigma per pixel."""
    return maps + sigma * rng.standard_normal(maps.shape)
