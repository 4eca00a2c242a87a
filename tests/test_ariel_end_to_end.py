"""ariel.retrieval through the local runner: the scoring program as a subprocess, ingestion of code."""

from __future__ import annotations

import json

import pytest

from conftest import REPO_ROOT
from codascore import runner
from codascore.registry import get_task

TASK = "ariel.retrieval"


@pytest.fixture(scope="module")
def project_root():
    """The project with its generated data (made here when `make data` has not run)."""
    if not (REPO_ROOT / "reference_data" / TASK / "spectral_truth.npz").is_file():
        get_task(TASK).generate(REPO_ROOT, dict(get_task(TASK).defaults), progress=lambda message: None)
    return REPO_ROOT


def _sample(root, name):
    return root / "sample_submissions" / TASK / name


def test_ground_truth_sample_scores_through_the_scoring_program(project_root, tmp_path):
    result = runner.run(TASK, _sample(project_root, "ground_truth"), tmp_path / "run", root=project_root,
                        quiet=True)
    assert result.scored, (result.violations, result.error)
    assert set(result.scores) == {"score", "posterior_score", "spectral_score", "posterior_exact"}
    assert result.scores["posterior_score"] > 950 and result.scores["spectral_score"] > 990
    output = tmp_path / "run" / "scoring" / "output"
    details = json.loads((output / "details.json").read_text())
    assert len(details["instances"]) == 24 and details["spectral_ground_truth"] == "frozen"
    assert (output / "detailed_results.html").read_text().count("data:image/png;base64,") >= 3


def test_invalid_sample_exits_1_naming_planet_dataset_index(project_root, tmp_path):
    result = runner.run(TASK, _sample(project_root, "invalid_negative_weight"), tmp_path / "run",
                        root=project_root, quiet=True)
    assert result.exit_code == 1 and not result.scores and not result.violations
    assert "Planet_public3/weights[5]" in result.error


def test_code_submission_runs_through_ingestion(project_root, tmp_path):
    result = runner.run(TASK, _sample(project_root, "code_ridge_gaussian"), tmp_path / "run", root=project_root,
                        quiet=True)
    assert result.scored, (result.violations, result.error)
    point = runner.run(TASK, _sample(project_root, "point_mass"), tmp_path / "point", root=project_root,
                       quiet=True)
    assert result.scores["score"] > point.scores["score"]
