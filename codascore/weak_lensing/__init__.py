"""FAIR Universe Weak Lensing challenge: Phase 1 parameter inference (and Phase 2 OoD detection).

Public API (stable): inference_score, coverage (and the Phase 2 metrics when present).
"""

from .metrics import coverage, inference_score, inference_score_per_instance, r_squared, standardised_mse
from .phase1 import Phase1Task

TASKS = {"weak_lensing.phase1": Phase1Task()}

__all__ = ["coverage", "inference_score", "inference_score_per_instance", "r_squared",
           "standardised_mse", "TASKS"]
