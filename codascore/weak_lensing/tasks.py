"""Weak lensing Phase 1: the task (reference reader, submission validator, scores, report, data).

Code submissions (``model.py``) are run by :mod:`codascore.weak_lensing.ingestion`.

Reference data (``ref/``): ``task.yaml``, ``label_test.npy`` (N x >=2, columns Omega_m, S_8 first, as the
official file) and ``scaler.json`` (``{"mean": [..], "scale": [..]}``, the training labels' statistics for
``MSE``). Submission: ``result.json`` = ``{"means": N x 2, "errorbars": N x 2}`` in the order (Omega_m, S_8).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from statistics import NormalDist

import numpy as np

from ..errors import ReferenceDataError, SubmissionError
from ..report import figure_html, new_figure, paragraph, table
from ..task import Result, Section, Task
from ..validate import Problems, read_participant_json
from . import metrics
from .files import RESULT_FILE, write_result
from .metrics import PARAMETERS

#: Prior ranges of the challenge's training cosmologies (spec weak_lensing.md section 1).
PRIOR = {"Omega_m": (0.0913, 0.619), "S_8": (0.680, 0.955)}
#: Report cells with fewer maps than this are not drawn: a participant knows their own predictions, so a
#: sparse cell of (truth, prediction) would give away that map's truth.
MIN_BIN_COUNT = 10


# --------------------------------------------------------------------------- reading and validation

def read_json_object(path: Path) -> dict:
    """A JSON object from a participant's file, or SubmissionError naming the file and the position."""
    name = path.name
    data = read_participant_json(path)
    if not isinstance(data, dict):
        raise SubmissionError(f"{name}: expected a JSON object with keys, found {type(data).__name__}")
    return data


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def sized_list(data: dict, field: str, n: int, problems: Problems, what: str, unit: str,
               file: str = RESULT_FILE):
    """data[field] when it is a list of n entries (one per test map); else a problem is added, None."""
    value = data[field]
    if not isinstance(value, list):
        problems.add(f"{file}: '{field}' must be a list of {what}, found {type(value).__name__}")
        return None
    if len(value) != n:
        problems.add(f"{file}: '{field}' has {len(value)} {unit}, expected {n} (one per test map)")
        return None
    return value


def pairs_array(data: dict, field: str, n_rows: int, problems: Problems, file: str = RESULT_FILE):
    """data[field] as an (n_rows, 2) float64 array; every structural problem is added to problems
    (file, field, index and value named). Returns None when the structure is unusable."""
    if field not in data:
        problems.add(f"{file}: missing key '{field}' (expected a list of {n_rows} [Omega_m, S_8] pairs)")
        return None
    rows = sized_list(data, field, n_rows, problems, "[Omega_m, S_8] pairs", "rows", file)
    if rows is None:
        return None
    usable = True
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != 2:
            width = len(row) if isinstance(row, list) else type(row).__name__
            problems.add(f"{file}: {field}[{i}] must be a pair [Omega_m, S_8], found {width!s:.40}"
                         + (" values" if isinstance(row, list) else ""))
            usable = False
            continue
        for j, value in enumerate(row):
            if not is_number(value):
                problems.add(f"{file}: {field}[{i}][{j}] ({PARAMETERS[j]}) is {json.dumps(value)[:40]}, "
                             f"not a number")
                usable = False
    return np.array(rows, dtype=np.float64) if usable else None


def check_finite(array: np.ndarray, file: str, field: str, problems: Problems) -> None:
    for i, j in np.argwhere(~np.isfinite(array)):
        problems.add(f"{file}: {field}[{i}][{j}] ({PARAMETERS[j]}) is {array[i, j]}, must be finite")


def check_errorbars(errorbars: np.ndarray, problems: Problems, file: str = RESULT_FILE) -> None:
    """sigma must be > 0 and large enough that sigma**2 does not underflow to 0 (the score would be
    infinite). Non-finite values are reported by check_finite."""
    with np.errstate(all="ignore"):
        bad = np.isfinite(errorbars) & ((errorbars <= 0) | (errorbars ** 2 == 0))
    for i, j in np.argwhere(bad):
        value = errorbars[i, j]
        why = "must be > 0" if value <= 0 else "is so small that its square underflows to 0"
        problems.add(f"{file}: errorbars[{i}][{j}] ({PARAMETERS[j]}) = {value!r} {why}")


def read_result(res_dir: Path, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Read and validate result.json; return (means, errorbars) or raise SubmissionError."""
    data = read_json_object(Path(res_dir) / RESULT_FILE)
    problems = Problems()
    means = pairs_array(data, "means", n_rows, problems)
    errorbars = pairs_array(data, "errorbars", n_rows, problems)
    if means is not None:
        check_finite(means, RESULT_FILE, "means", problems)
    if errorbars is not None:
        check_finite(errorbars, RESULT_FILE, "errorbars", problems)
        check_errorbars(errorbars, problems)
    problems.raise_if_any()
    return means, errorbars


# --------------------------------------------------------------------------- the task

class Phase1Task(Task):
    name = "weak_lensing.phase1"
    title = "Weak lensing Phase 1: cosmological parameter inference"
    score_keys = ("score", "avg_coverage", "R_squared", "MSE")
    result_files = (RESULT_FILE,)
    has_ingestion = True
    # seed: the demo's public data seed (generation only; a bundle's data comes from the private seed).
    defaults = {"lam": 1000.0, "n_test": 4000, "n_train_cosmologies": 101, "n_train_realisations": 10,
                "seed": 20250601, "time_limit": 600.0}
    # truth plus noise: each map's answer to within the noise
    answer_samples = ("calibrated", "overconfident")
    # The score has no maximum (exact means with shrinking error bars grow it without bound); R² <= 1
    # is reached only by the true values.
    max_scores = {"R_squared": 1.0}

    def load_reference(self, ref_dir: Path, config: dict) -> dict:
        ref_dir = Path(ref_dir)
        try:
            labels = np.load(ref_dir / "label_test.npy", allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise ReferenceDataError(f"label_test.npy: cannot be read: {exc}") from exc
        if labels.ndim != 2 or labels.shape[1] < 2 or len(labels) == 0:
            raise ReferenceDataError(f"label_test.npy: expected shape (N, >=2), found {labels.shape}")
        truth = np.ascontiguousarray(labels[:, :2], dtype=np.float64)
        if not np.all(np.isfinite(truth)):
            raise ReferenceDataError("label_test.npy: non-finite values in the first two columns")
        return {"truth": truth, "scaler": read_scaler(ref_dir)}

    def load_submission(self, res_dir: Path, reference: dict, config: dict) -> dict:
        means, errorbars = read_result(res_dir, len(reference["truth"]))
        return {"means": means, "errorbars": errorbars}

    def score(self, reference: dict, submission: dict, config: dict) -> Result:
        truth, means, errorbars = reference["truth"], submission["means"], submission["errorbars"]
        lam = float(config["lam"])
        per_instance = metrics.inference_score_per_instance(truth, means, errorbars, lam)
        scores = {"score": metrics.inference_score(truth, means, errorbars, lam),
                  "avg_coverage": metrics.coverage(truth, means, errorbars),
                  "R_squared": metrics.r_squared(truth, means)}
        warnings = []
        if reference["scaler"] is not None:
            scores["MSE"] = metrics.standardised_mse(truth, means, *reference["scaler"])
        else:
            warnings.append("the reference data has no scaler.json: MSE is not computed")
        if scores["score"] == metrics.SCORE_FLOOR:
            warnings.append("the mean score is below the floor -1e6 and was set to -1e6")
        inside = metrics.covered(truth, means, errorbars)
        # Per-instance records hold the submission's own values only, never the truth.
        instances = [{"id": i, "score": float(s), "covered_Omega_m": bool(c[0]), "covered_S_8": bool(c[1])}
                     for i, (s, c) in enumerate(zip(per_instance.tolist(), inside.tolist()))]
        return Result(scores=scores, instances=instances, warnings=warnings,
                      details={"lam": lam, "n_instances": len(truth)})

    def report(self, result: Result, reference: dict, submission: dict, config: dict) -> list[Section]:
        return phase1_report(reference["truth"], submission["means"], submission["errorbars"])

    def generate(self, root: Path, config: dict, progress=print, seed: int | None = None) -> None:
        from .generate import generate_phase1

        generate_phase1(Path(root), self.name, config, progress, seed)

    def write_perfect_submission(self, ref_dir: Path, out_dir: Path, config: dict) -> bool:
        """The true (Omega_m, S_8) as means, with error bars of 0.01 (any positive value reaches R² = 1)."""
        truth = self.load_reference(Path(ref_dir), config)["truth"]
        write_result(Path(out_dir), {"means": truth.tolist(), "errorbars": np.full_like(truth, 0.01).tolist()})
        return True

    def ingest(self, input_dir: Path, output_dir: Path, submission_dir: Path, config: dict) -> None:
        from .ingest import ingest

        ingest(input_dir, output_dir, submission_dir, config, required=("means", "errorbars"))


def read_scaler(ref_dir: Path):
    """(mean, scale) of the training labels' first two columns from scaler.json, else from label.npy
    (StandardScaler statistics: mean and population std), else None (MSE is then omitted)."""
    json_path, npy_path = ref_dir / "scaler.json", ref_dir / "label.npy"
    if json_path.is_file():
        try:
            data = json.loads(json_path.read_text())
            mean = np.asarray(data["mean"], dtype=np.float64).reshape(2)
            scale = np.asarray(data["scale"], dtype=np.float64).reshape(2)
        except (ValueError, KeyError, TypeError) as exc:
            raise ReferenceDataError(f"scaler.json: expected {{'mean': [2 numbers], 'scale': [2 numbers]}}: "
                                     f"{exc}") from exc
    elif npy_path.is_file():
        labels = np.load(npy_path, allow_pickle=False)
        labels = labels.reshape(-1, labels.shape[-1])
        mean, scale = labels[:, :2].mean(axis=0), labels[:, :2].std(axis=0)
    else:
        return None
    if not (np.all(np.isfinite(mean)) and np.all(scale > 0)):
        raise ReferenceDataError(f"scaler: mean {mean.tolist()} and scale {scale.tolist()} must be finite, "
                                 f"scale > 0")
    return mean, scale


# --------------------------------------------------------------------------- report

def phase1_report(truth: np.ndarray, means: np.ndarray, errorbars: np.ndarray) -> list[Section]:
    """Predicted against true (hexagons and truth bins of at least MIN_BIN_COUNT maps, so that no single
    map's truth is readable), pull histograms against N(0, 1), coverage at 1 and 2 sigma against the
    Gaussian levels, and the calibration curve (coverage against nominal level)."""
    sigma = np.abs(errorbars)
    with np.errstate(all="ignore"):
        pulls = (means - truth) / sigma

    fig, axes = new_figure(10, 4.2, ncols=2)
    for p, ax in enumerate(axes):
        lo, hi = PRIOR[PARAMETERS[p]]
        ax.hexbin(truth[:, p], means[:, p], gridsize=25, cmap="Blues", mincnt=MIN_BIN_COUNT,
                  extent=(lo, hi, min(lo, np.percentile(means[:, p], 1)), max(hi, np.percentile(means[:, p], 99))))
        edges = np.linspace(truth[:, p].min(), truth[:, p].max(), 13)
        centres, mean_pred, mean_sigma = [], [], []
        for a, b in zip(edges[:-1], edges[1:]):
            rows = (truth[:, p] >= a) & (truth[:, p] <= b)
            if rows.sum() >= MIN_BIN_COUNT:
                centres.append((a + b) / 2)
                mean_pred.append(np.median(means[rows, p]))
                mean_sigma.append(np.median(sigma[rows, p]))
        ax.errorbar(centres, mean_pred, yerr=mean_sigma, fmt="o", color="#c62828", capsize=3,
                    label="median prediction ± median σ (truth bins)")
        ax.plot([lo, hi], [lo, hi], "k--", lw=1, label="prediction = truth")
        ax.set_xlabel(f"true {PARAMETERS[p]}")
        ax.set_ylabel(f"predicted {PARAMETERS[p]}")
        ax.legend(fontsize=8, loc="upper left")
    scatter = figure_html(fig, "predicted against true, per parameter")

    fig, axes = new_figure(10, 3.6, ncols=2)
    grid = np.linspace(-5, 5, 201)
    for p, ax in enumerate(axes):
        finite = pulls[np.isfinite(pulls[:, p]), p]
        ax.hist(np.clip(finite, -5, 5), bins=60, range=(-5, 5), density=True, color="#5c7cba", alpha=0.8,
                label="(μ − truth)/σ")
        ax.plot(grid, np.exp(-grid ** 2 / 2) / math.sqrt(2 * math.pi), "k-", lw=1.5, label="N(0, 1)")
        ax.set_xlabel(f"pull of {PARAMETERS[p]} (clipped to ±5)")
        ax.legend(fontsize=8)
    histogram = figure_html(fig, "histogram of pulls against N(0,1)")

    rows = []
    for n_sigma in (1.0, 2.0):
        inside = metrics.covered(truth, means, errorbars, n_sigma).mean(axis=0)
        nominal = math.erf(n_sigma / math.sqrt(2))
        rows.append((f"{n_sigma:g} σ", nominal, float(inside[0]), float(inside[1])))
    coverage_table = table(rows, ("interval", "Gaussian level", "Omega_m", "S_8"),
                           caption="Fraction of maps whose truth lies within μ ± nσ")

    # Calibration curve: coverage of the central Gaussian interval at each nominal level.
    levels = np.linspace(0.02, 0.98, 49)
    half_widths = np.array([NormalDist().inv_cdf((1 + level) / 2) for level in levels])
    with np.errstate(invalid="ignore"):
        inside = np.abs(pulls)[None, :, :] <= half_widths[:, None, None]
    fig, ax = new_figure(5.2, 4.2)
    ax.plot([0, 1], [0, 1], "k--", lw=1, label="calibrated")
    for p, colour in zip(range(2), ("#1f4e9c", "#c62828")):
        ax.plot(levels, inside[:, :, p].mean(axis=1), "-", color=colour, lw=1.6, label=PARAMETERS[p])
    ax.axvline(math.erf(1 / math.sqrt(2)), color="#999", lw=0.8, ls=":")
    ax.set_xlabel("nominal level of μ ± zσ (Gaussian)")
    ax.set_ylabel("observed coverage")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8, loc="upper left")
    calibration = figure_html(fig, "coverage against nominal level")
    return [
        Section("Predicted against true", paragraph(
            f"Density of (true, predicted) pairs, in cells of at least {MIN_BIN_COUNT} maps; red points are "
            "the median prediction in bins of the true value, with the median submitted σ as error bars.")
            + scatter),
        Section("Pulls", paragraph("A calibrated submission's pulls follow N(0, 1).") + histogram),
        Section("Coverage", coverage_table + paragraph(
            "Calibration curve: the fraction of maps whose truth lies in the central Gaussian interval "
            "μ ± zσ of each nominal level (the dotted line marks 1σ, 68.3 %). Above the diagonal the "
            "errors are too wide, below it too narrow.") + calibration),
    ]
