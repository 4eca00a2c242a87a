"""Shared fixtures. Data in ../shared (golden vectors, UAI 2014 corpus) is read only here, and tests that
need it skip cleanly when it is absent (e.g. a clone without the steering repo beside it)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DIR = Path(os.environ.get("CODASCORE_SHARED", REPO_ROOT.parent / "shared"))


def shared_path(*parts: str) -> Path:
    """Path below ../shared, or skip the calling test when it is not there."""
    path = SHARED_DIR.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not available: {'/'.join(parts)}")
    return path


def load_vectors(name: str) -> dict:
    """A golden-vector JSON file from ../shared/vectors (skips when absent)."""
    return json.loads(shared_path("vectors", name).read_text())


@pytest.fixture(scope="session")
def project_root() -> Path:
    """The project with its demo data (made here when `make data` has not run)."""
    from codascore.registry import all_tasks

    for name, task in all_tasks().items():
        if not (REPO_ROOT / "reference_data" / name).is_dir():
            task.generate(REPO_ROOT, dict(task.defaults), progress=lambda message: None)
    return REPO_ROOT
