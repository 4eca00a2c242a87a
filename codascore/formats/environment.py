"""A team's environment as ``codascore.environments`` builds it (docs/judge.md#environments)::

    CACHE/<digest>/                    a virtual environment built by uv (bin/python, lib/...)
    CACHE/<digest>/codascore-requirements.txt   what uv installed it from (the team's, the organiser's and
                                       the programs' requirements, one a line)
    CACHE/<digest>/codascore-environment.json   its record, written last: an environment without one is
                                       unfinished and is built again
    OUT/environments/                  the default cache of a judgement

The record says what the environment was built from (its digest, the requirements, the interpreter) and
what it holds (the packages uv installed): the judge reads it to reuse the environment, and the SRBench
ingestion to say, when an import fails, that the submission ran in its team's environment rather than in
the competition image.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .atomic import write_atomic

#: A judgement's folder of environments (below OUT).
ENVIRONMENTS = "environments"
#: The record of a finished environment, in its folder.
ENVIRONMENT_RECORD = "codascore-environment.json"
#: The requirements an environment was installed from, in its folder.
ENVIRONMENT_REQUIREMENTS = "codascore-requirements.txt"
#: The record's fields.
RECORD_FIELDS = ("digest", "python", "python_version", "requirements", "sources", "binary_only", "packages")


def write_record(folder: Path, record: dict) -> None:
    """Write an environment's record (atomically), which marks it finished."""
    missing = [field for field in RECORD_FIELDS if field not in record]
    if missing:
        raise ValueError(f"an environment's record lacks {missing}")
    write_atomic(Path(folder) / ENVIRONMENT_RECORD, json.dumps(record, indent=1, sort_keys=True) + "\n")


def read_record(folder: Path) -> dict | None:
    """The record of the environment in folder, or None when it has none (unfinished) or an unreadable one."""
    try:
        record = json.loads((Path(folder) / ENVIRONMENT_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and all(field in record for field in RECORD_FIELDS) else None


def running_record() -> dict | None:
    """The record of the environment this interpreter belongs to (sys.prefix), or None outside one."""
    return read_record(Path(sys.prefix))
