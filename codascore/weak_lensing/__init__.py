"""FAIR Universe Weak Lensing challenge: Phase 1 parameter inference and Phase 2 OoD detection.

Public API (stable): inference_score, coverage, ood_score, tpr_at_low_fpr.
"""

from .metrics import (coverage, inference_score, inference_score_per_instance, ood_score, r_squared,
                      standardised_mse, tpr_at_low_fpr)
from .tasks import Phase1Task, Phase2DeployedTask, Phase2Task

TASKS = {"weak_lensing.phase1": Phase1Task(), "weak_lensing.phase2": Phase2Task(),
         "weak_lensing.phase2_deployed": Phase2DeployedTask()}

__all__ = ["coverage", "inference_score", "inference_score_per_instance", "ood_score", "r_squared",
           "standardised_mse", "tpr_at_low_fpr", "TASKS"]
