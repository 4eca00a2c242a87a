"""The project's own generators of the SRBench 2022 synthetic datasets (docs/srbench.md#the-synthetic-datasets)
and of the stand-in datasets for the qualification and real-world tracks.

Every dataset is drawn from ``numpy.random.default_rng(seed)`` as the 2022 generators did (same
functions, distributions, splits and noise model); bit-for-bit equality with the 2022 CSVs is neither
possible nor required. No 2022 data file is used.
"""

from __future__ import annotations

import dataclasses

import numpy as np

#: Data seeds of the 10 repetitions (docs/srbench.md#ten-runs-are-ten-seeded-datasets).
DATA_SEEDS = (2082, 3946, 5847, 6087, 6589, 7102, 7884, 8674, 9023, 9900)
#: Seeds of the qualification splits, SEEDS[0:5] of the 2022 code (docs/srbench.md#qualification).
QUALIFICATION_SEEDS = (24305, 8356, 16130, 24399, 2804)
LEVELS = ("easy", "medium", "hard")

_BASE = "0.4*x1*x2 - 1.5*x1 + 2.5*x2 + 1"
EXACT_FORMULAS = {
    "easier": _BASE,
    "easy": f"{_BASE} + log(30*x3**2)",
    "medium": f"({_BASE})/(1 + 0.2*(x1**2 + x2**2))",
    "hard": f"(5.5*sin(x1 + x2) + {_BASE})/(1 + 0.2*(x1**2 + x2**2))",
}
EXACT_FEATURES = {"easier": 10, "easy": 10, "medium": 5, "hard": 2}
FEATURESELECTION_FORMULA = "0.11*x1**3 + 0.91*x3*x5 + 0.68*x7*x9 + 0.26*x11**2*x13 + 0.13*x15*x17*x19"
FEATURESELECTION_NOISE = {"easy": 0.025, "medium": 0.05, "hard": 0.10}
LOCALOPT_TERMS = ("0.77*x1*x2", "1.52*x2*x3", "1.2*x4**2", "0.31*x1*x4*x5", "0.23*x3*x4*x5")
LOCALOPT_K = {"easy": 3, "medium": 4, "hard": 5}
EXTRAPOLATION_FORMULA = "erf(0.22*x) + 0.17*sin(5.5*x)"
EXTRAPOLATION_NOISE = {"easy": 0.025, "medium": 0.05, "hard": 0.10}
NOISE_FORMULA = "(0.11*x1**4 - 1.4*x1**3)/(0.68*x1**2 + 1)"
NOISE_NOISE = {"easy": 0.05, "medium": 0.10, "hard": 0.15}

#: The 16 datasets of the synthetic track, in the 2022 order.
SYNTHETIC_DATASETS = (tuple(f"exact_formula_{level}" for level in EXACT_FORMULAS)
                      + tuple(f"{family}_{level}" for family in ("featureselection", "localopt",
                                                                  "extrapolation", "noise")
                              for level in LEVELS))


@dataclasses.dataclass
class Dataset:
    """One generated dataset: the split, the column names, and what its property is measured by."""

    name: str
    seed: int
    feature_names: list[str]
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    property: str  # "equivalence", "feature_absence" or "r2"
    truth: str  # the generating expression (a model string)
    bad_features: list[str] = dataclasses.field(default_factory=list)


def add_noise(y: np.ndarray, ratio: float, seed: int) -> np.ndarray:
    """y + N(0, σ) with σ = std(y, ddof=1)·sqrt(r/(1-r)), one draw per row from a fresh default_rng(seed)
    (create_data.py's add_noise): the expected share of the noise in the variance is r."""
    if not 0 <= ratio < 1:
        raise ValueError(f"ratio must be in [0, 1), got {ratio}")
    if ratio == 0:
        return y.copy()
    sigma = np.std(y, ddof=1) * np.sqrt(ratio / (1 - ratio))
    return y + np.random.default_rng(seed).normal(0.0, sigma, y.shape[0])


def _columns(n: int) -> list[str]:
    return [f"x{i + 1}" for i in range(n)]


def _exact_formula(level: str, seed: int) -> tuple:
    X = np.random.default_rng(seed).uniform(-5, 5, (2000, EXACT_FEATURES[level]))
    x1, x2 = X[:, 0], X[:, 1]
    base = 0.4 * x1 * x2 - 1.5 * x1 + 2.5 * x2 + 1
    if level == "easier":
        y = base
    elif level == "easy":
        y = base + np.log(30 * X[:, 2] ** 2)
    elif level == "medium":
        y = base / (1 + 0.2 * (x1**2 + x2**2))
    else:
        y = (5.5 * np.sin(x1 + x2) + base) / (1 + 0.2 * (x1**2 + x2**2))
    return X, y, 1000, "equivalence", EXACT_FORMULAS[level], []


def _featureselection(level: str, seed: int) -> tuple:
    X = np.random.default_rng(seed).uniform(-10, 10, (1000, 20))
    c = {i + 1: X[:, i] for i in range(20)}
    y = (0.11 * c[1] ** 3 + 0.91 * c[3] * c[5] + 0.68 * c[7] * c[9] + 0.26 * c[11] ** 2 * c[13]
         + 0.13 * c[15] * c[17] * c[19])
    y = add_noise(y, FEATURESELECTION_NOISE[level], seed)
    # The committed 2022 generator's irrelevant set: the even-numbered columns
    # (docs/srbench.md#feature-selection-data-and-bad-set-disagree).
    return X, y, 500, "feature_absence", FEATURESELECTION_FORMULA, [f"x{i}" for i in range(2, 21, 2)]


def _localopt(level: str, seed: int) -> tuple:
    k = LOCALOPT_K[level]
    rng = np.random.default_rng(seed)
    A = rng.uniform(-5, 5, (1000, 5))
    x1, x2, x3, x4, x5 = A.T
    terms = [0.77 * x1 * x2, 1.52 * x2 * x3, 1.2 * x4**2, 0.31 * x1 * x4 * x5, 0.23 * x3 * x4 * x5][:k]
    surrogates = [g + rng.normal(0.0, np.std(g) * np.sqrt(0.1 / 0.9), g.shape[0]) for g in terms]
    X = np.column_stack([A, *surrogates])
    y = np.sum(terms, axis=0)
    truth = " + ".join(LOCALOPT_TERMS[:k])
    return X, y, 100, "feature_absence", truth, [f"x{i}" for i in range(6, 6 + k)]


def _extrapolation(level: str, seed: int) -> tuple:
    from scipy.special import erf

    x = np.arange(-150, 401) / 10.0
    y = add_noise(erf(0.22 * x) + 0.17 * np.sin(5.5 * x), EXTRAPOLATION_NOISE[level], seed)
    n_train = int(np.sum(x <= 15))
    return x[:, None], y, n_train, "r2", EXTRAPOLATION_FORMULA, []


def _noise(level: str, seed: int) -> tuple:
    x = np.concatenate([np.arange(-25, 26) * 0.4, np.random.default_rng(seed).uniform(-10, 10, 949)])
    y = (0.11 * x**4 - 1.4 * x**3) / (0.68 * x**2 + 1)
    return x[:, None], add_noise(y, NOISE_NOISE[level], seed), 51, "r2", NOISE_FORMULA, []


_GENERATORS = {"exact_formula": _exact_formula, "featureselection": _featureselection,
               "localopt": _localopt, "extrapolation": _extrapolation, "noise": _noise}


def _evenly(n: int, cap: int | None) -> np.ndarray:
    if not cap or n <= cap:
        return np.arange(n)
    return np.unique(np.round(np.linspace(0, n - 1, cap)).astype(int))


def make_synthetic(name: str, seed: int, max_rows: int | None = None) -> Dataset:
    """Generate dataset ``name`` (one of SYNTHETIC_DATASETS) for data seed ``seed``.

    max_rows: keep at most this many evenly spaced rows of each split (demo sizes); None keeps 2022's sizes.
    """
    if name not in SYNTHETIC_DATASETS:
        raise ValueError(f"name must be one of {SYNTHETIC_DATASETS}, got {name!r}")
    family, level = name.rsplit("_", 1)
    X, y, n_train, prop, truth, bad = _GENERATORS[family](level, seed)
    names = ["x"] if family == "extrapolation" else _columns(X.shape[1])
    train, test = _evenly(n_train, max_rows), n_train + _evenly(len(y) - n_train, max_rows)
    return Dataset(name, seed, names, X[train], y[train], X[test], y[test], prop, truth, bad)


def make_qualification(index: int, seed: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Stand-in for a PMLB-20 dataset: Friedman-style regression problems (the fri_c* family of PMLB),
    drawn with scikit-learn's generators. Returns (column names, X, y)."""
    from sklearn.datasets import make_friedman1, make_friedman2, make_friedman3

    makers = (lambda: make_friedman1(300, 7, noise=0.5, random_state=seed),
              lambda: make_friedman2(300, noise=5.0, random_state=seed),
              lambda: make_friedman3(300, noise=0.05, random_state=seed))
    X, y = makers[index % len(makers)]()
    return _columns(X.shape[1]), X, y


__all__ = ["DATA_SEEDS", "QUALIFICATION_SEEDS", "SYNTHETIC_DATASETS", "EXACT_FORMULAS", "Dataset",
           "add_noise", "make_synthetic", "make_qualification"]
