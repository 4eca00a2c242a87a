"""ariel.retrieval through the local runner: the scoring program as a subprocess, ingestion of code."""

from __future__ import annotations

import json

from codascore import runner

TASK = "ariel.retrieval"


def _sample(root, name):
    return root / "sample_submissions" / TASK / name


def test_ground_truth_sample_scores_through_the_scoring_program(project_data, tmp_path):
    result = runner.run(TASK, _sample(project_data, "ground_truth"), tmp_path / "run", root=project_data)
    assert result.scored, (result.violations, result.error)
    assert set(result.scores) == {"score", "posterior_score", "spectral_score", "posterior_exact"}
    assert result.scores["posterior_score"] > 950 and result.scores["spectral_score"] > 990
    output = tmp_path / "run" / "scoring" / "output"
    details = json.loads((output / "details.json").read_text())
    assert len(details["instances"]) == 24 and details["spectral_ground_truth"] == "frozen"
    assert (output / "detailed_results.html").read_text().count("data:image/png;base64,") >= 3


def test_invalid_sample_exits_1_naming_planet_dataset_index(project_data, tmp_path):
    result = runner.run(TASK, _sample(project_data, "invalid_negative_weight"), tmp_path / "run",
                        root=project_data)
    assert result.exit_code == 1 and not result.scores and not result.violations
    assert "Planet_public3/weights[5]" in result.error


def test_code_submission_runs_through_ingestion(project_data, tmp_path):
    result = runner.run(TASK, _sample(project_data, "code_ridge_gaussian"), tmp_path / "run", root=project_data)
    assert result.scored, (result.violations, result.error)
    point = runner.run(TASK, _sample(project_data, "point_mass"), tmp_path / "point", root=project_data)
    assert result.scores["score"] > point.scores["score"]
