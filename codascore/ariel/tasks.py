"""Task ``ariel.retrieval``: ADC2023 final score = 0.8 mean posterior score + 0.2 mean spectral score.

Reference folder (written by :mod:`codascore.ariel.generate`, or by an organiser from ADC2023 data; the
files are described in :mod:`codascore.ariel.files`):

- ``task.yaml``: ``task: ariel.retrieval`` and the parameters of :attr:`ArielRetrieval.defaults`;
- ``ground_truth.hdf5`` / ``.h5`` / ``.npz``: GT weighted samples, one group per scored planet;
- ``planets.csv``: ``planet`` (group name, in scoring order), ``star_radius_m``, ``planet_mass_kg``,
  ``in_spectral_subset`` (0/1); optional ``true_*`` columns (shown in the report only);
- ``spectral_truth.npz`` (optional): GT quartile spectra frozen at build time, keys
  ``<method>/q1|q2|q3`` (rows in spectral-subset order) and ``meta/*`` (seed, method settings, forward
  model). Used when they match task.yaml; otherwise the GT side is computed at scoring time.

Random draws (one legacy RandomState(seed), docs/ariel.md#one-random-stream-and-its-draw-order): for each
planet, posterior(submission) then posterior(GT); then for each spectral planet, spectral(submission)
then spectral(GT).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from ..errors import ReferenceDataError
from ..progress import counted
from ..task import CodeEntry, Result, ScoreGuide, Section, Task
from . import files
from .metrics import TARGETS, final_score, posterior_exact_target_scores, posterior_target_scores_batch, spectral_score
from .spectral_summaries import median_and_bound, posterior_quartiles


@dataclasses.dataclass
class ArielReference:
    names: list[str]
    gt: files.Posteriors
    planets: "object"  # pandas.DataFrame, one row per planet in scoring order
    spectral_index: list[int]  # positions (in names) of the spectral-subset planets
    frozen: dict | None  # {"q1","q2","q3": (S, 52)} matching the config, or None


@dataclasses.dataclass
class ArielSubmission:
    posteriors: files.Posteriors


class ArielRetrieval(Task):
    name = "ariel.retrieval"
    title = "Ariel Data Challenge 2023: atmospheric retrieval (posterior + spectral score)"
    score_keys = ("score", "posterior_score", "spectral_score", "posterior_exact")
    result_files = ("submission.hdf5", "submission.npz", "*.hdf5", "*.h5", "*.npz")
    has_ingestion = True
    code_entry = CodeEntry(files.ENTRY_FILE, "codascore.sandbox:import_participant_module", ("model",))
    board_settings = ("posterior_weight",)
    defaults = {
        "seed": 0,                       # legacy RandomState seed of every resampling draw
        "posterior_weight": 0.8,         # beta: final = beta posterior + (1 - beta) spectral
        "min_samples": 1000,             # 1000 <= M <= 5000 (ADC2023 notebook)
        "max_samples": 5000,
        "weight_sum_tolerance": 1e-5,    # reject above; renormalise between sqrt(eps) and this
        "spectral_method": "quantiles",  # quantiles | official (ADC2023 row selection)
        "spectral_samples": 256,         # K rows per side in the quantiles method
        "argsort_compat": "numpy123",    # official method's tie order: numpy123 | stable
        "forward_model": "builtin",      # builtin | taurex
        "taurex_opacity_path": None,
        "taurex_cia_path": None,
        "time_limit": 600,               # seconds for a code submission's predict()
    }
    # The ground-truth posteriors, and Gaussians and point masses made from their moments.
    answer_samples = ("ground_truth", "gaussian_baseline", "gaussian_baseline_npz", "point_mass")
    # The exact posterior score is 1000 only for the ground-truth samples themselves; the official score of
    # an independent sample of the true posterior varies around the ground truth's own (resampling).
    max_scores = {"posterior_exact": 1000.0}

    def load_config(self, raw: dict) -> dict:
        config = super().load_config(raw)
        choices = {"spectral_method": ("quantiles", "official"), "argsort_compat": ("numpy123", "stable"),
                   "forward_model": ("builtin", "taurex")}
        for key, allowed in choices.items():
            if config[key] not in allowed:
                raise ReferenceDataError(f"task.yaml: {key} = {config[key]!r}, expected one of {allowed}")
        if not 0 <= float(config["posterior_weight"]) <= 1:
            raise ReferenceDataError(f"task.yaml: posterior_weight = {config['posterior_weight']!r} not in [0, 1]")
        if not 1 <= int(config["min_samples"]) <= int(config["max_samples"]):
            raise ReferenceDataError("task.yaml: need 1 <= min_samples <= max_samples")
        if int(config["spectral_samples"]) < 2:
            raise ReferenceDataError("task.yaml: spectral_samples must be at least 2")
        return config

    # ------------------------------------------------------------------------------------- reference
    def data_inventory(self, folder: Path, role: str, config: dict) -> dict[str, tuple[int, ...]] | None:
        """Planet ids: planets.csv's planet_ID in the reference, AuxillaryTable.csv's in the input data; a
        sample says nothing (its planets are checked when it is scored)."""
        if role == "sample":
            return None
        if role == "reference":
            table, name = files.read_planets(folder)[0], files.PLANETS_FILE
        else:
            table, name = files.read_code_inputs(folder)[2], files.AUX_FILE
        if "planet_ID" not in table.columns:
            raise ReferenceDataError(f"{role} data {name}: no planet_ID column to compare")
        return {f"planet_ID {i}": () for i in table["planet_ID"]}

    def load_reference(self, ref_dir: Path, config: dict) -> ArielReference:
        ref_dir = Path(ref_dir)
        planets, names = files.read_planets(ref_dir)
        gt = files.read_ground_truth(ref_dir, names, float(config["weight_sum_tolerance"]))
        spectral_index = [i for i, flag in enumerate(planets["in_spectral_subset"]) if int(flag)]
        frozen = files.read_spectral_truth(ref_dir / files.SPECTRAL_TRUTH_FILE, config, len(spectral_index))
        return ArielReference(names, gt, planets, spectral_index, frozen)

    # ------------------------------------------------------------------------------------ submission
    def load_submission(self, res_dir: Path, reference: ArielReference, config: dict) -> ArielSubmission:
        posteriors = files.load_posteriors(Path(res_dir), reference.names, int(config["min_samples"]),
                                           int(config["max_samples"]), float(config["weight_sum_tolerance"]))
        return ArielSubmission(posteriors)

    def validate_format(self, res_dir: Path, config: dict) -> str:
        return files.check_posterior_format(Path(res_dir), int(config["min_samples"]), int(config["max_samples"]),
                                            float(config["weight_sum_tolerance"]))

    # --------------------------------------------------------------------------------------- scoring
    def score(self, reference: ArielReference, submission: ArielSubmission, config: dict) -> Result:
        from .forward_model import make_forward_model

        sub, gt = submission.posteriors, reference.gt
        rng = np.random.RandomState(int(config["seed"]))
        per_target = posterior_target_scores_batch(sub.traces, sub.weights, gt.traces, gt.weights, rng)
        exact = np.array([posterior_exact_target_scores(t, w, g, gw) for t, w, g, gw in
                          zip(sub.traces, sub.weights, gt.traces, gt.weights)])
        posterior = per_target.mean(axis=1)
        spectral, quartiles = {}, {}
        if reference.spectral_index:
            forward_model = make_forward_model(config)
            for row, p in enumerate(counted(reference.spectral_index, "planet spectra computed")):
                u_sub, u_gt = rng.random_sample(), rng.random_sample()
                aux = reference.planets.iloc[p]
                star_radius, planet_mass = float(aux["star_radius_m"]), float(aux["planet_mass_kg"])
                sub_q = posterior_quartiles(forward_model, sub.traces[p], sub.weights[p], star_radius,
                                            planet_mass, u_sub, config)
                if reference.frozen is not None:
                    gt_q = tuple(reference.frozen[k][row] for k in files.QUARTILES)
                else:
                    gt_q = posterior_quartiles(forward_model, gt.traces[p], gt.weights[p], star_radius,
                                               planet_mass, u_gt, config)
                spectral[p] = spectral_score(*median_and_bound(*sub_q), *median_and_bound(*gt_q))
                quartiles[p] = (sub_q, gt_q)
        posterior_mean = float(posterior.mean())
        spectral_mean = float(np.mean(list(spectral.values()))) if spectral else None
        beta = float(config["posterior_weight"])
        scores = {
            "score": final_score(posterior_mean, spectral_mean, beta) if spectral else posterior_mean,
            "posterior_score": posterior_mean,
            "posterior_exact": float(exact.mean()),
        }
        if spectral_mean is not None:
            scores["spectral_score"] = spectral_mean
        instances = []
        for p, name in enumerate(reference.names):
            record = {"id": name, "posterior": float(posterior[p]), "posterior_exact": float(exact[p].mean()),
                      "M": int(sub.traces[p].shape[0]), "in_spectral_subset": p in spectral}
            record.update({f"posterior_{t}": float(s) for t, s in zip(TARGETS, per_target[p])})
            if p in spectral:
                record["spectral"] = float(spectral[p])
            instances.append(record)
        warnings = list(sub.warnings)
        if not spectral:
            warnings.append("no spectral-subset planet in the reference: score = posterior score")
        details = {"per_target_posterior": dict(zip(TARGETS, per_target.mean(axis=0).tolist())),
                   "settings": {k: config[k] for k in ("seed", "posterior_weight", "spectral_method",
                                                       "spectral_samples", "argsort_compat", "forward_model")},
                   "spectral_ground_truth": "frozen" if reference.frozen is not None else "computed"}
        # The report draws the quartile spectra of both sides for each spectral planet (by position).
        return Result(scores=scores, instances=instances, warnings=warnings, details=details,
                      report_data={"spectral_quartiles": quartiles})

    def final_board(self, config: dict):
        """ADC2023's final score over planets, the spectral subset resampled within itself (ariel/leaderboard.py)."""
        from .leaderboard import ArielBoard

        return ArielBoard(self.name, float(config["posterior_weight"]))

    def score_guide(self, config: dict) -> list[ScoreGuide]:
        beta = float(config["posterior_weight"])
        return [
            ScoreGuide("score", f"{beta:g} × posterior_score + {1 - beta:g} × spectral_score (the posterior score "
                       "alone when the reference has no spectral planet; docs/ariel.md#final-score)", "higher",
                       "0 to 1000"),
            ScoreGuide("posterior_score", "mean over planets and the 7 targets of 1000 × (1 − D), D the "
                       "Kolmogorov–Smirnov distance between the submission's and the ground truth's marginals, "
                       "each weighted sample first resampled to equal weights (one seeded draw) and clipped to "
                       "the prior", "higher", "0 to 1000 (the ground truth itself scores about 989, not 1000: "
                       "resampling noise)"),
            ScoreGuide("spectral_score", "mean over the spectral-subset planets of max(1000 − (L(median) + "
                       "L(IQR)) / 2, 0): L compares the submission's and the ground truth's forward-modelled "
                       "spectra bin by bin in log₁₀ (100 × mean |difference|; of its square when the mean "
                       "levels differ by 1 dex or more)", "higher", "0 to 1000"),
            ScoreGuide("posterior_exact", "as posterior_score, but comparing the weighted marginal CDFs "
                       "directly, without resampling (deterministic; a project addition)", "higher",
                       "0 to 1000 (1000 only for the ground truth itself)"),
        ]

    def report(self, result, reference, submission, config) -> list[Section]:
        from .report import report_sections

        return report_sections(result, reference, submission)

    # ---------------------------------------------------------------------- generation and ingestion
    def generate(self, root: Path, config: dict, progress=print, seed: int | None = None) -> None:
        from .generate import generate_demo

        generate_demo(Path(root), self, config, progress, seed)

    def write_perfect_submission(self, ref_dir: Path, out_dir: Path, config: dict) -> bool:
        """The ground-truth posteriors themselves, as submission.hdf5."""
        reference = self.load_reference(Path(ref_dir), config)
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        files.write_posteriors_hdf5(Path(out_dir) / files.SUBMISSION_FILE, reference.names, reference.gt.traces,
                                    reference.gt.weights)
        return True

    def ingest(self, input_dir: Path, output_dir: Path, submission_dir: Path, config: dict) -> None:
        from .ingest import ingest

        ingest(Path(input_dir), Path(output_dir), Path(submission_dir), config)


TASKS = {ArielRetrieval.name: ArielRetrieval()}
