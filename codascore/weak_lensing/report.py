"""Weak lensing Phase 2: out-of-distribution detection (reference reader, submission validator, scores,
report, data, code submissions).

Reference data (``ref/``): ``task.yaml`` and ``label_test_phase2.npy``, N labels 0/1 in the official
orientation (1 = OoD). Submission: ``result.json`` = ``{"p_ind": N probabilities in [0, 1] that each map
is in-distribution, "ood_scores": optional N finite numbers, higher = more likely OoD}`` (spec
weak_lensing.md sections 3.4-3.5).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import ReferenceDataError
from ..report import figure_html, new_figure, paragraph, table
from ..task import Result, Section, Task
from ..validate import Problems
from . import metrics
from .files import write_result
from .tasks import MIN_BIN_COUNT, RESULT_FILE, is_number, read_json_object, sized_list

REFERENCE_FILE = "label_test_phase2.npy"


# --------------------------------------------------------------------------- reading and validation

def number_vector(data: dict, field: str, n: int, problems: Problems, file: str = RESULT_FILE):
    """data[field] as a float64 vector of length n; structural problems (list, length, non-numbers) and
    non-finite values are added to problems with file, field, index and value. None when unusable."""
    values = sized_list(data, field, n, problems, f"{n} numbers", "values", file)
    if values is None:
        return None
    usable = True
    for i, value in enumerate(values):
        if not is_number(value):
            problems.add(f"{file}: {field}[{i}] is {json.dumps(value)[:40]}, not a number")
            usable = False
    if not usable:
        return None
    array = np.array(values, dtype=np.float64)
    for i in np.flatnonzero(~np.isfinite(array)):
        problems.add(f"{file}: {field}[{i}] is {array[i]}, must be finite")
    return array


def read_result(res_dir: Path, n: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Read and validate result.json; return (p_ind, ood_scores or None) or raise SubmissionError."""
    data = read_json_object(Path(res_dir) / RESULT_FILE)
    problems = Problems()
    p_ind = ood_scores = None
    if "p_ind" not in data:
        hint = (" (the official format with only 'ood_scores' is not enough: this scorer needs probabilities)"
                if "ood_scores" in data else "")
        problems.add(f"{RESULT_FILE}: missing key 'p_ind', the list of {n} probabilities that each map is "
                     f"in-distribution{hint}")
    else:
        p_ind = number_vector(data, "p_ind", n, problems)
        if p_ind is not None:
            for i in np.flatnonzero((p_ind < 0) | (p_ind > 1)):
                problems.add(f"{RESULT_FILE}: p_ind[{i}] = {p_ind[i]!r} is outside [0, 1]")
    if "ood_scores" in data:
        ood_scores = number_vector(data, "ood_scores", n, problems)
    problems.raise_if_any()
    return p_ind, ood_scores


def read_reference(ref_dir: Path) -> np.ndarray:
    """The N labels (1 = OoD) as an int8 vector, or ReferenceDataError."""
    try:
        labels = np.load(Path(ref_dir) / REFERENCE_FILE, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ReferenceDataError(f"{REFERENCE_FILE}: cannot be read: {exc}") from exc
    if labels.ndim != 1 or len(labels) == 0:
        raise ReferenceDataError(f"{REFERENCE_FILE}: expected shape (N,), found {labels.shape}")
    if not np.all((labels == 0) | (labels == 1)):
        raise ReferenceDataError(f"{REFERENCE_FILE}: labels must be 0 (InD) or 1 (OoD)")
    return labels.astype(np.int8)


# --------------------------------------------------------------------------- the task

class Phase2Task(Task):
    name = "weak_lensing.phase2"
    title = "Weak lensing Phase 2: out-of-distribution detection"
    score_keys = ("score", "tpr_low_fpr")
    result_files = (RESULT_FILE,)
    has_ingestion = True
    # seed: the demo's public data seed (generation only; a bundle's data comes from the private seed).
    defaults = {"eps": metrics.OOD_EPS, "n_test": 1000, "ood_fraction": 0.3, "n_train_cosmologies": 101,
                "n_train_realisations": 10, "seed": 20250812, "time_limit": 600.0}
    answer_samples = ("oracle",)  # each map's label, hedged at 0.99
    max_scores = {"score": None}  # the log-likelihood of the true labels, clipped at eps

    def load_config(self, raw: dict) -> dict:
        config = super().load_config(raw)
        eps = config["eps"]
        try:  # YAML 1.1 reads "1e-15" (no dot) as a string
            value = float(eps) if isinstance(eps, (int, float, str)) and not isinstance(eps, bool) else None
        except ValueError:
            value = None
        if value is None or not 0 < value < 0.5:
            raise ReferenceDataError(f"task.yaml: eps must be a number in (0, 0.5), got {eps!r}")
        return {**config, "eps": value}

    def load_reference(self, ref_dir: Path, config: dict) -> dict:
        return {"is_ood": read_reference(ref_dir)}

    def load_submission(self, res_dir: Path, reference: dict, config: dict) -> dict:
        p_ind, ood_scores = read_result(res_dir, len(reference["is_ood"]))
        return {"p_ind": p_ind, "ood_scores": ood_scores}

    def score(self, reference: dict, submission: dict, config: dict) -> Result:
        is_ood, p_ind = reference["is_ood"], submission["p_ind"]
        eps = float(config["eps"])
        scores = {"score": metrics.ood_score(1 - is_ood, p_ind, eps)}
        warnings = []
        source = "ood_scores" if submission["ood_scores"] is not None else "1 - p_ind"
        if is_ood.min() == is_ood.max():
            warnings.append("the reference data holds a single class: tpr_low_fpr is not defined")
        else:
            scores["tpr_low_fpr"] = metrics.tpr_at_low_fpr(is_ood, ood_scores(submission))
        # Per-instance records hold the submission's own values only: a per-instance log-likelihood
        # would reveal each map's label.
        instances = [{"id": i, "p_ind": p} for i, p in enumerate(p_ind.tolist())]
        return Result(scores=scores, instances=instances, warnings=warnings,
                      details={"eps": eps, "tpr_low_fpr_from": source, "n_instances": len(is_ood)})

    def report(self, result: Result, reference: dict, submission: dict, config: dict) -> list[Section]:
        return phase2_report(reference["is_ood"], submission["p_ind"], ood_scores(submission),
                             float(config["eps"]), result.details["tpr_low_fpr_from"])

    def generate(self, root: Path, config: dict, progress=print, seed: int | None = None) -> None:
        from .generate import generate_phase2

        generate_phase2(Path(root), self.name, config, progress, seed)

    def write_perfect_submission(self, ref_dir: Path, out_dir: Path, config: dict) -> bool:
        """p_ind = 1 for every in-distribution map and 0 for every OoD map."""
        is_ood = self.load_reference(Path(ref_dir), config)["is_ood"]
        write_result(Path(out_dir), {"p_ind": (1.0 - is_ood.astype(np.float64)).tolist()})
        return True

    def ingest(self, input_dir: Path, output_dir: Path, submission_dir: Path, config: dict) -> None:
        from .ingest import ingest

        ingest(input_dir, output_dir, submission_dir, config, required=("p_ind",), optional=("ood_scores",))


def ood_scores(submission: dict) -> np.ndarray:
    """The scores ranked by tpr_low_fpr: the submitted ood_scores, else 1 - p_ind (spec section 3.4)."""
    return submission["ood_scores"] if submission["ood_scores"] is not None else 1.0 - submission["p_ind"]


# --------------------------------------------------------------------------- report

def coarse_roc(is_ood: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ROC curve sampled every MIN_BIN_COUNT in-distribution maps (the full curve's steps would
    give away the label of every map in score order)."""
    fpr, tpr = metrics.roc(is_ood, scores)
    n_ind = int((is_ood == 0).sum())
    grid = np.unique(np.r_[np.arange(0, n_ind + 1, MIN_BIN_COUNT), n_ind]) / n_ind
    return grid, np.interp(grid, fpr, tpr)


def phase2_report(is_ood: np.ndarray, p_ind: np.ndarray, scores: np.ndarray, eps: float,
                  source: str) -> list[Section]:
    """ROC with the official FPR band, reliability diagram and p_ind histograms per class. Only
    aggregates are drawn (bins of at least MIN_BIN_COUNT maps)."""
    sections = [Section("Scores explained", paragraph(
        f"score: the mean Bernoulli log-likelihood of the maps' classes under p_ind, with p_ind clipped "
        f"to [{eps:g}, 1 - {eps:g}] (so the worst case is ln {eps:g} = {np.log(eps):.4f}; p_ind = 0.5 "
        f"everywhere gives ln 0.5 = -0.6931). tpr_low_fpr: the challenge's deployed metric, the mean true "
        f"positive rate (OoD detected) at 100 false positive rates log-spaced in [0.001, 0.05], ranked by "
        f"{source}."))]
    if is_ood.min() != is_ood.max():
        grid, tpr = coarse_roc(is_ood, scores)
        fig, axes = new_figure(10, 4.0, ncols=2)
        for ax, log_axis in zip(axes, (False, True)):
            ax.axvspan(1e-3, 0.05, color="#ffd54f", alpha=0.35, label="FPR band of tpr_low_fpr")
            ax.plot(grid, tpr, "-", color="#1f4e9c", lw=1.6, label="ROC (OoD = positive)")
            ax.plot([1e-4, 1], [1e-4, 1], "k:", lw=1, label="chance")
            ax.set_xlabel("false positive rate (InD maps flagged)")
            ax.set_ylabel("true positive rate (OoD maps flagged)")
            if log_axis:
                ax.set_xscale("log")
                ax.set_xlim(1e-3 / 2, 1)
            else:
                ax.set_xlim(0, 1)
            ax.set_ylim(0, 1.02)
        axes[0].legend(fontsize=8, loc="lower right")
        roc_html = figure_html(fig, "ROC curve with the FPR band of tpr_low_fpr")
        sections.append(Section("ROC curve", paragraph(
            f"Sampled every {MIN_BIN_COUNT} in-distribution maps; the right panel has a logarithmic FPR "
            f"axis. The shaded band is where tpr_low_fpr averages the TPR.") + roc_html))

    edges = np.linspace(0, 1, 11)
    which = np.clip(np.digitize(p_ind, edges) - 1, 0, 9)
    counts = np.bincount(which, minlength=10)
    ind_counts = np.bincount(which, weights=(is_ood == 0), minlength=10)
    mean_p = np.bincount(which, weights=p_ind, minlength=10)
    shown = counts >= MIN_BIN_COUNT
    fig, axes = new_figure(10, 4.0, ncols=2)
    ax = axes[0]
    ax.plot([0, 1], [0, 1], "k--", lw=1, label="perfect calibration")
    ax.plot(mean_p[shown] / counts[shown], ind_counts[shown] / counts[shown], "o-", color="#c62828",
            label="observed InD fraction")
    ax.set_xlabel("mean submitted p_ind in the bin")
    ax.set_ylabel("fraction of maps in-distribution")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8, loc="upper left")
    ax = axes[1]
    centres = (edges[:-1] + edges[1:]) / 2
    width = edges[1] - edges[0]
    ax.bar(centres[shown], (ind_counts)[shown], width=width * 0.9, color="#5c7cba", alpha=0.8,
           label="in-distribution maps")
    ax.bar(centres[shown], (counts - ind_counts)[shown], width=width * 0.9, bottom=ind_counts[shown],
           color="#e57373", alpha=0.8, label="out-of-distribution maps")
    ax.set_xlabel("submitted p_ind")
    ax.set_ylabel("number of maps")
    ax.legend(fontsize=8, loc="upper center")
    reliability = figure_html(fig, "reliability diagram and p_ind histograms per class")
    rows = [(f"[{a:.1f}, {b:.1f}{']' if b == 1 else ')'}", int(c), (f"{i / c:.3f}" if ok else "-"))
            for a, b, c, i, ok in zip(edges[:-1], edges[1:], counts, ind_counts, shown)]
    hidden = int(counts[~shown].sum())
    note = (f" {hidden} maps in bins of fewer than {MIN_BIN_COUNT} maps are left out of the figures."
            if hidden else "")
    sections.append(Section("Calibration of p_ind", paragraph(
        "Left: maps binned by submitted p_ind; a calibrated submission's points lie on the diagonal. "
        "Right: how many maps of each class fall in each bin (stacked)." + note) + reliability
        + table(rows, ("p_ind bin", "maps", "InD fraction"))))
    return sections
