"""SRBench 2022 symbolic regression competition: safe model parsing, per-model metrics, ranking, tasks.

Spec: srbench.md. Public API: complexity, simplicity, symbolic_equivalence, feature_absence_score,
rank_methods. sympy is imported only when a model is parsed.
"""

from __future__ import annotations

from .expressions import ModelSyntaxError, parse_model
from .metrics import (CanonicalModel, canonicalize, complexity, feature_absence_score, simplicity,
                      simplicity_from_nodes, symbolic_equivalence)

__all__ = ["ModelSyntaxError", "parse_model", "CanonicalModel", "canonicalize", "complexity", "simplicity",
           "simplicity_from_nodes", "symbolic_equivalence", "feature_absence_score"]
