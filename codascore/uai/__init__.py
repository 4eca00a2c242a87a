"""UAI 2022 probabilistic inference track: PR, MAR, MPE, MMAP and MLC (docs/uai.md).

Public API: read_model, read_evidence, read_query, log10_likelihood, log10_partition, marginals, mpe, mmap,
hellinger, mean_hellinger, instance_score. The tasks are in :mod:`codascore.uai.tasks` (``TASKS``).

Modules: ``files`` (instance files and reference.json), ``result_files`` (answers), ``metrics`` (pure
errors and scores), ``tasks``, ``report``, ``ingest`` (code submissions), ``generate`` (demo data); the exact
engine is ``bucket_elimination`` on ``elimination_order``, ``contraction`` and ``peeling``;
``trivial_solvers`` define MaxErr; ``lbp_solver`` is the sample code submission.
"""

from ..errors import FormatError, TableTooLarge
from .bucket_elimination import log10_partition, marginals, mmap, mpe
from .files import Model, read_evidence, read_model, read_query
from .metrics import hellinger, instance_score, log10_likelihood, mean_hellinger
from .tasks import TASKS

__all__ = ["read_model", "read_evidence", "read_query", "log10_likelihood", "log10_partition", "marginals",
           "mpe", "mmap", "hellinger", "mean_hellinger", "instance_score", "Model", "FormatError",
           "TableTooLarge", "TASKS"]
