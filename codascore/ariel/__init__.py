"""Ariel Data Challenge 2023 (ADC2023): posterior and spectral scores of atmospheric retrievals.

Public API: :func:`posterior_score`, :func:`spectral_score` (official metrics), the deterministic
:func:`posterior_exact_score`, and the task ``ariel.retrieval``. h5py is imported only when an HDF5 file
is read or written.
"""

from .metrics import (
                      PRIOR_BOUNDS,
                      TARGETS,
                      final_score,
                      posterior_exact_score,
                      posterior_score,
                      posterior_target_scores,
                      posterior_target_scores_batch,
                      spectral_score,
)
from .tasks import TASKS

__all__ = ["PRIOR_BOUNDS", "TARGETS", "TASKS", "final_score", "posterior_exact_score", "posterior_score",
           "posterior_target_scores", "posterior_target_scores_batch", "spectral_score"]
