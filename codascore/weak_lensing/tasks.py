"""The two weak lensing tasks: Phase 1 (cosmological parameter inference) and Phase 2 (out-of-distribution
detection). Each reads its reference data and the submission with :mod:`.files`, scores with
:mod:`.metrics`, draws its page with :mod:`.report`; code submissions run through :mod:`.ingest`.

Phase 1 reference data (``ref/``): ``task.yaml``, ``label_test.npy`` (N x >=2, columns Omega_m, S_8 first,
as the official file) and ``scaler.json`` (``{"mean": [..], "scale": [..]}``, the training labels'
statistics for ``MSE``). Submission: ``result.json`` = ``{"means": N x 2, "errorbars": N x 2}`` in the
order (Omega_m, S_8).

Phase 2 reference data: ``task.yaml`` and ``label_test_phase2.npy``, N labels 0/1 in the official
orientation (1 = OoD). Submission: ``result.json`` = ``{"p_ind": N probabilities in [0, 1] that each map
is in-distribution, "ood_scores": optional N finite numbers, higher = more likely OoD}``
(docs/weak_lensing.md#submission-formats).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import ReferenceDataError
from ..task import CodeEntry, Result, ScoreGuide, Section, Task
from ..validate import is_number
from . import files, metrics
from .files import RESULT_FILE, write_result
from .report import phase1_report, phase2_report


def test_map_inventory(folder: Path, role: str, labels_file: str) -> dict[str, tuple[int, ...]] | None:
    """Task.data_inventory of both phases: the number of test maps, counted as the reference's labels
    (labels_file) and as input_data/test_maps.npy's maps; a result sample says nothing (its lengths are
    checked when it is scored)."""
    if role == "sample":
        return None
    shape = files.npy_shape(Path(folder) / (labels_file if role == "reference" else files.TEST_MAPS))
    return {"test maps": shape[:1]}


class Phase1Task(Task):
    name = "weak_lensing.phase1"
    title = "Weak lensing Phase 1: cosmological parameter inference"
    score_keys = ("score", "avg_coverage", "R_squared", "MSE")
    result_files = (RESULT_FILE,)
    has_ingestion = True
    code_entry = CodeEntry(files.MODEL_FILE, "codascore.sandbox:import_participant_module", ("model",))
    board_settings = ("lam",)
    # seed: the demo's public data seed (generation only; a bundle's data comes from the private seed).
    defaults = {"lam": 1000.0, "n_test": 4000, "n_train_cosmologies": 101, "n_train_realisations": 10,
                "seed": 20250601, "time_limit": 600.0}
    # truth plus noise: each map's answer to within the noise
    answer_samples = ("calibrated", "overconfident")
    # The score has no maximum (exact means with shrinking error bars grow it without bound); R² <= 1
    # is reached only by the true values.
    max_scores = {"R_squared": 1.0}

    def data_inventory(self, folder: Path, role: str, config: dict) -> dict[str, tuple[int, ...]] | None:
        return test_map_inventory(folder, role, files.PHASE1_LABELS)

    def load_reference(self, ref_dir: Path, config: dict) -> dict:
        return {"truth": files.read_phase1_truth(ref_dir), "scaler": files.read_scaler(ref_dir)}

    def load_submission(self, res_dir: Path, reference: dict, config: dict) -> dict:
        means, errorbars = files.read_phase1_result(res_dir, len(reference["truth"]))
        return {"means": means, "errorbars": errorbars}

    def validate_format(self, res_dir: Path, config: dict) -> str:
        means, _ = files.read_phase1_result(res_dir, None)
        return (f"{RESULT_FILE}: {len(means)} [Omega_m, S_8] means and error bars, finite, error bars > 0; "
                f"scoring checks that there is one per test map")

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

    def final_board(self, config: dict):
        """The official Phase 1 score over resampled test maps (weak_lensing/leaderboard.py)."""
        from .leaderboard import Phase1Board

        return Phase1Board(self.name, float(config["lam"]))

    def score_guide(self, config: dict) -> list[ScoreGuide]:
        lam = float(config["lam"])
        return [
            ScoreGuide("score", "mean over maps of −Σ_p [(μ_p − t_p)²/σ_p² + ln σ_p² + λ (μ_p − t_p)²], p in "
                       f"(Omega_m, S_8), μ and σ the submitted mean and error, t the truth, λ = {lam:g}; "
                       "floored at −10⁶ (docs/weak_lensing.md#phase-1-the-inference-score)", "higher",
                       "−10⁶ to unbounded (narrow, correct errors grow it: σ = 0.01 on exact means gives "
                       "18.42)"),
            ScoreGuide("avg_coverage", "fraction of maps with μ − σ ≤ truth ≤ μ + σ, averaged over Omega_m "
                       "and S_8; a calibrated Gaussian 1σ interval covers 0.683 (above: errors too wide; below: too "
                       "narrow)", "higher", "0 to 1, best near 0.683 rather than 1"),
            ScoreGuide("R_squared", "1 − Σ(t − μ)² / Σ(t − mean t)² per parameter, averaged over the two "
                       "(scikit-learn r2_score)", "higher", "−∞ to 1 (0: no better than the mean truth)"),
            ScoreGuide("MSE", "mean of (μ − t)² after scaling both by the training labels' mean and standard "
                       "deviation per parameter", "lower", "0 to +∞ (1: an error of one training standard "
                       "deviation)"),
        ]

    def report(self, result: Result, reference: dict, submission: dict, config: dict) -> list[Section]:
        return phase1_report(reference["truth"], submission["means"], submission["errorbars"])

    def generate(self, root: Path, config: dict, progress=print, seed: int | None = None) -> None:
        from .generate import generate_phase1

        generate_phase1(self, Path(root), config, progress, seed)

    def write_perfect_submission(self, ref_dir: Path, out_dir: Path, config: dict) -> bool:
        """The true (Omega_m, S_8) as means, with error bars of 0.01 (any positive value reaches R² = 1)."""
        truth = self.load_reference(Path(ref_dir), config)["truth"]
        write_result(Path(out_dir), {"means": truth.tolist(), "errorbars": np.full_like(truth, 0.01).tolist()})
        return True

    def ingest(self, input_dir: Path, output_dir: Path, submission_dir: Path, config: dict) -> None:
        from .ingest import ingest

        ingest(input_dir, output_dir, submission_dir, config, required=("means", "errorbars"))


class Phase2Task(Task):
    """Phase 2 under either ranking (task.yaml ``ranking``, docs/weak_lensing.md#phase-2-two-rankings):
    ``seed`` (the default) ranks by the log-likelihood of p_ind, ``deployed`` by the official mean TPR at
    FPR 0.001-0.05. Both fill the same three columns: score (the ranking's metric), tpr_low_fpr and
    log_likelihood (left out when no p_ind was submitted)."""

    name = "weak_lensing.phase2"
    title = "Weak lensing Phase 2: out-of-distribution detection"
    score_keys = ("score", "tpr_low_fpr", "log_likelihood")
    result_files = (RESULT_FILE,)
    has_ingestion = True
    code_entry = CodeEntry(files.MODEL_FILE, "codascore.sandbox:import_participant_module", ("model",))
    board_settings = ("ranking", "eps")
    # seed: the demo's public data seed (generation only; a bundle's data comes from the private seed).
    defaults = {"ranking": "seed", "eps": metrics.OOD_EPS, "n_test": 1000, "ood_fraction": 0.3,
                "n_train_cosmologies": 101, "n_train_realisations": 10, "seed": 20250812, "time_limit": 600.0}
    answer_samples = ("oracle",)  # each map's label, hedged at 0.99
    max_scores = {"score": None}  # the log-likelihood of the true labels, clipped at eps

    def load_config(self, raw: dict) -> dict:
        config = super().load_config(raw)
        eps = config["eps"]
        try:  # YAML 1.1 reads "1e-15" (no dot) as a string
            value = float(eps) if is_number(eps) or isinstance(eps, str) else None
        except ValueError:
            value = None
        if value is None or not 0 < value < 0.5:
            raise ReferenceDataError(f"task.yaml: eps must be a number in (0, 0.5), got {eps!r}")
        if config["ranking"] not in files.RANKINGS:
            raise ReferenceDataError(f"task.yaml: ranking must be one of {list(files.RANKINGS)}, "
                                     f"got {config['ranking']!r}")
        return {**config, "eps": value}

    def data_inventory(self, folder: Path, role: str, config: dict) -> dict[str, tuple[int, ...]] | None:
        return test_map_inventory(folder, role, files.PHASE2_LABELS)

    def load_reference(self, ref_dir: Path, config: dict) -> dict:
        is_ood = files.read_phase2_labels(ref_dir)
        if config["ranking"] == "deployed" and is_ood.min() == is_ood.max():
            raise ReferenceDataError(f"{files.PHASE2_LABELS}: ranking 'deployed' needs both classes (0 = InD, "
                                     f"1 = OoD); every label is {int(is_ood[0])}")
        return {"is_ood": is_ood}

    def load_submission(self, res_dir: Path, reference: dict, config: dict) -> dict:
        p_ind, ood_scores = files.read_phase2_result(res_dir, len(reference["is_ood"]), config["ranking"])
        return {"p_ind": p_ind, "ood_scores": ood_scores}

    def validate_format(self, res_dir: Path, config: dict) -> str:
        # "deployed" accepts ood_scores alone; which ranking a competition uses is in its reference data.
        p_ind, ood_scores = files.read_phase2_result(res_dir, None, "deployed")
        fields = [f"{len(values)} {text}" for values, text in ((p_ind, "p_ind in [0, 1]"),
                                                              (ood_scores, "finite ood_scores")) if values is not None]
        caveat = "" if p_ind is not None else "; without p_ind, a phase ranked by log-likelihood refuses it"
        return f"{RESULT_FILE}: {' and '.join(fields)}; scoring checks that there is one per test map{caveat}"

    def score(self, reference: dict, submission: dict, config: dict) -> Result:
        is_ood, p_ind = reference["is_ood"], submission["p_ind"]
        eps, deployed = float(config["eps"]), config["ranking"] == "deployed"
        scores, warnings = {}, []
        # tpr_low_fpr ranks the submitted ood_scores, else 1 - p_ind (docs/weak_lensing.md#phase-2-resultjson).
        if submission["ood_scores"] is not None:
            source, ranked = "ood_scores", submission["ood_scores"]
        else:
            source, ranked = "1 - p_ind", 1.0 - p_ind
        # NaN (one class only, or no p_ind): the Codabench layer leaves the key out and lists it in
        # details.json (docs/weak_lensing.md#a-single-class-reference).
        tpr = metrics.tpr_at_low_fpr(is_ood, ranked)
        if np.isnan(tpr):
            warnings.append("the reference data holds a single class: tpr_low_fpr is not defined")
        likelihood = metrics.ood_score(1 - is_ood, p_ind, eps) if p_ind is not None else float("nan")
        if p_ind is None:
            warnings.append("no p_ind submitted: log_likelihood is not computed (score is the TPR of ood_scores)")
        if deployed:
            scores = {"score": tpr, "tpr_low_fpr": tpr, "log_likelihood": likelihood}
        else:
            scores = {"score": likelihood, "tpr_low_fpr": tpr, "log_likelihood": likelihood}
        # Per-map records hold the submission's own values only (a per-map log-likelihood or label would
        # reveal the truth: the suite shows details.json to participants); both submitted vectors, so that
        # the final leaderboard recomputes both rankings (weak_lensing/leaderboard.py).
        instances = [{"id": i} for i in range(len(is_ood))]
        for field, values in (("p_ind", p_ind), ("ood_score", submission["ood_scores"])):
            if values is not None:
                for record, value in zip(instances, values.tolist()):
                    record[field] = value
        return Result(scores=scores, instances=instances, warnings=warnings,
                      details={"ranking": config["ranking"], "eps": eps, "tpr_low_fpr_from": source,
                               "n_instances": len(is_ood)},
                      report_data={"ranked": ranked})

    def final_board(self, config: dict):
        """Both Phase 2 rankings over test maps resampled within each class (weak_lensing/leaderboard.py);
        the maps' labels, which details.json does not hold, come from the reference data (use_reference)."""
        from .leaderboard import Phase2Board

        return Phase2Board(self.name, config["ranking"], float(config["eps"]))

    def score_guide(self, config: dict) -> list[ScoreGuide]:
        eps = float(config["eps"])
        likelihood = ("mean over maps of ln(probability given to the map's true class), i.e. y ln p_ind + "
                      f"(1 − y) ln(1 − p_ind) with y = 1 for in-distribution maps, clipped to [ε, 1 − ε], "
                      f"ε = {eps:g}; p_ind = 0.5 everywhere gives −0.6931")
        likelihood_range = f"ln ε = {np.log(eps):.4f} to 0"
        tpr = ("mean true positive rate (OoD maps flagged) at 100 false positive rates log-spaced from 0.001 "
               "to 0.05, ranking ood_scores (or 1 − p_ind); a constant score gives 0.0127")
        if config["ranking"] == "deployed":
            first = ScoreGuide("score", "tpr_low_fpr (this phase ranks as the challenge was deployed)",
                               "higher", "0 to 1")
        else:
            first = ScoreGuide("score", "log_likelihood (this phase ranks by the log-likelihood of p_ind)",
                               "higher", likelihood_range)
        return [first, ScoreGuide("tpr_low_fpr", tpr, "higher", "0 to 1"),
                ScoreGuide("log_likelihood", likelihood + " (left out when no p_ind was submitted)", "higher",
                           likelihood_range)]

    def report(self, result: Result, reference: dict, submission: dict, config: dict) -> list[Section]:
        return phase2_report(reference["is_ood"], submission["p_ind"], result.report_data["ranked"],
                             result.details["eps"], result.details["tpr_low_fpr_from"], config["ranking"])

    def generate(self, root: Path, config: dict, progress=print, seed: int | None = None) -> None:
        from .generate import generate_phase2

        generate_phase2(self, Path(root), config, progress, seed)

    def write_perfect_submission(self, ref_dir: Path, out_dir: Path, config: dict) -> bool:
        """p_ind = 1 for every in-distribution map and 0 for every OoD map."""
        is_ood = self.load_reference(Path(ref_dir), config)["is_ood"]
        write_result(Path(out_dir), {"p_ind": (1.0 - is_ood.astype(np.float64)).tolist()})
        return True

    def ingest(self, input_dir: Path, output_dir: Path, submission_dir: Path, config: dict) -> None:
        from .ingest import ingest

        if config["ranking"] == "deployed":  # ood_scores alone is enough; a bare array is ood_scores
            ingest(input_dir, output_dir, submission_dir, config, required=(), optional=("p_ind", "ood_scores"),
                   bare="ood_scores")
        else:
            ingest(input_dir, output_dir, submission_dir, config, required=("p_ind",), optional=("ood_scores",))


class Phase2DeployedTask(Phase2Task):
    """Phase 2 ranked as the challenge was deployed: the same data and files, ``ranking: deployed``."""

    name = "weak_lensing.phase2_deployed"
    title = "Weak lensing Phase 2 (as deployed): out-of-distribution detection ranked by TPR at low FPR"
    defaults = {**Phase2Task.defaults, "ranking": "deployed"}
    max_scores = {"score": 1.0, "tpr_low_fpr": 1.0}  # perfect separation of the classes
