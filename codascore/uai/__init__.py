"""UAI 2022 probabilistic inference track: PR, MAR, MPE, MMAP and MLC (spec/uai.md).

Public API (ARCHITECTURE.md): read_model, read_evidence, log10_likelihood, log10_partition, marginals,
hellinger, instance_score. The tasks are in :mod:`codascore.uai.tasks` (``TASKS``).
"""

from ..errors import FormatError, TableTooLarge
from .engine import log10_partition, marginals, mmap, mpe
from .formats import Model, read_evidence, read_model, read_query
from .metrics import hellinger, instance_score, log10_likelihood, mean_hellinger
from .tasks import TASKS

__all__ = ["read_model", "read_evidence", "read_query", "log10_likelihood", "log10_partition", "marginals",
           "mpe", "mmap", "hellinger", "mean_hellinger", "instance_score", "Model", "FormatError",
           "TableTooLarge", "TASKS"]
