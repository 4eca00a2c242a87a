"""SRBench 2022 symbolic regression competition: safe model parsing, per-model metrics, ranking, tasks.

Formulas and the 2022 quirks they keep: docs/srbench.md. Public API: complexity, simplicity,
symbolic_equivalence, feature_absence_score, rank_methods (and parse_model, check_model, canonicalize,
simplicity_from_nodes). sympy and pandas are imported only when used.
"""

from __future__ import annotations

from ..errors import ModelSyntaxError
from .canonical_form import CanonicalModel, canonicalize
from .expressions import check_model, parse_model
from .metrics import (
    complexity,
    feature_absence_score,
    rank_methods,
    simplicity,
    simplicity_from_nodes,
    symbolic_equivalence,
)
from .tasks import QUALIFICATION, REALWORLD, SYNTHETIC

TASKS = {task.name: task for task in (SYNTHETIC, QUALIFICATION, REALWORLD)}

__all__ = ["ModelSyntaxError", "check_model", "parse_model", "CanonicalModel", "canonicalize", "complexity",
           "simplicity", "simplicity_from_nodes", "symbolic_equivalence", "feature_absence_score",
           "rank_methods", "TASKS"]
