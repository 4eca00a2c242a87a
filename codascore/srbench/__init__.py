"""SRBench 2022 symbolic regression competition: safe model parsing, per-model metrics, ranking, tasks.

Spec: srbench.md. Public API: complexity, simplicity, symbolic_equivalence, feature_absence_score,
rank_methods. sympy and pandas are imported only when used.
"""

from __future__ import annotations

from ..errors import ModelSyntaxError
from .expressions import check_model, parse_model
from .metrics import (
    CanonicalModel,
    canonicalize,
    complexity,
    feature_absence_score,
    simplicity,
    simplicity_from_nodes,
    symbolic_equivalence,
)
from .synthetic import TASK as _SYNTHETIC
from .tasks import QUALIFICATION as _QUALIFICATION
from .tasks import REALWORLD as _REALWORLD

TASKS = {task.name: task for task in (_SYNTHETIC, _QUALIFICATION, _REALWORLD)}


def __getattr__(name: str):
    if name == "rank_methods":  # pandas is imported on first use only
        from .ranking import rank_methods

        return rank_methods
    raise AttributeError(name)


__all__ = ["ModelSyntaxError", "check_model", "parse_model", "CanonicalModel", "canonicalize", "complexity",
           "simplicity", "simplicity_from_nodes", "symbolic_equivalence", "feature_absence_score",
           "rank_methods", "TASKS"]
