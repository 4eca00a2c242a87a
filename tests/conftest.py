"""Shared fixtures, and the golden-vector parametrisation.

- ``repo_root``: the project's source tree (session).
- ``project_data``: a project folder holding every task's demo data (session). It is the source tree when
  ``make data`` made the data there; otherwise the programs are copied into a temporary folder and the data
  generated in it, so that no test writes into the source tree.
- ``golden``: one case of a golden-vector file of ``tests/data/`` (each file records its provenance). A test
  marked ``@pytest.mark.golden("file.json", "key")`` runs once per case of ``file["key"]``; the case's
  ``id`` (or its position) names the test.
- ``uai2014_corpus``: the UAI 2014 instances with their exact solutions, read from ``../shared/uai2014``
  (``CODASCORE_SHARED`` overrides ``../shared``). Only the tests named ``*shared_corpus*`` use it; they skip
  where that corpus is absent, and CI has it.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = REPO_ROOT / "tests" / "data"
SHARED_DIR = Path(os.environ.get("CODASCORE_SHARED", REPO_ROOT.parent / "shared"))
#: What a project folder needs beside the data: the programs and the competition files.
PROJECT_FILES = ("scoring_program", "ingestion_program", "competitions", "pages", "competition.yaml", "logo.png")


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "golden(file, key): run once per case of tests/data/FILE[KEY]")
    config.addinivalue_line("markers", "taurex: needs TauREx (numpy >= 2): deselected by default, run by make test-taurex")
    config.addinivalue_line("markers", "slurm: starts a SLURM of three nodes (tests/slurm_fixture.py); needs slurm-wlm "
                                       "and munge, and root for the nodes' network namespaces")
    config.addinivalue_line("markers", "codabench: talks to the real Codabench site (tests/codabench_fixture.py): "
                                       "deselected by default, run by make test-codabench")
    config.addinivalue_line("markers", "network: downloads from PyPI; skipped unless CODASCORE_NETWORK_TESTS=1")


def golden_cases(file: str, key: str) -> list:
    """The cases of a golden-vector file of tests/data/."""
    return json.loads((DATA_DIR / file).read_text())[key]


def pytest_generate_tests(metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("golden")
    if "golden" in metafunc.fixturenames and marker is not None:
        cases = golden_cases(*marker.args)
        ids = [str(case.get("id", i)) if isinstance(case, dict) else str(i) for i, case in enumerate(cases)]
        metafunc.parametrize("golden", cases, ids=ids)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def project_data(tmp_path_factory) -> Path:
    """A project folder with every task's demo data (see the module docstring)."""
    from codascore.registry import all_tasks

    if (REPO_ROOT / "reference_data" / ".generated").is_file():
        return REPO_ROOT
    root = tmp_path_factory.mktemp("project")
    for name in PROJECT_FILES:
        source = REPO_ROOT / name
        if source.is_dir():
            shutil.copytree(source, root / name)
        elif source.is_file():
            shutil.copy2(source, root / name)
    for task in all_tasks().values():
        task.generate(root, dict(task.defaults), progress=lambda message: None)
    return root


@pytest.fixture(scope="session")
def uai2014_corpus() -> Path:
    path = SHARED_DIR / "uai2014"
    if not path.is_dir():
        pytest.skip("the UAI 2014 corpus of ../shared is not beside this clone")
    return path
