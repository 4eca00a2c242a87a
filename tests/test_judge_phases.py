"""A bundle's phase as the judge's input (codascore.judge.phases): the project's own competition YAMLs, and a
fixture bundle as a folder and as a zip."""

from __future__ import annotations

import pytest

from bundle_fixture import valid_yaml, write_bundle, zip_folder
from codascore.errors import JudgeError
from codascore.judge.phases import phase_tasks

REPO_TASKS = ["weak_lensing.phase1", "weak_lensing.phase2", "ariel.retrieval", "srbench.qualification",
              "srbench.synthetic", "srbench.realworld", "uai.pr", "uai.mar", "uai.mpe", "uai.mmap", "uai.mlc",
              "weak_lensing.phase2_deployed"]


def test_the_projects_suite_phase_by_index_and_by_name(repo_root):
    expected = (repo_root, REPO_TASKS, 600.0)
    assert phase_tasks(repo_root / "competition.yaml", 0) == expected
    assert phase_tasks(repo_root, "Suite") == expected
    assert phase_tasks(repo_root / "competitions" / "srbench.yaml", "Real-world track") == \
        (repo_root, ["srbench.realworld"], 600.0)
    assert phase_tasks(repo_root / "competitions" / "srbench.yaml", "1")[1] == ["srbench.synthetic"]


def test_an_unknown_phase_lists_the_bundles_phases(repo_root):
    with pytest.raises(JudgeError, match=r"no phase 'Final' \(its phases: 0 'Qualification', 1 'Synthetic "
                                         r"track', 2 'Real-world track'\)"):
        phase_tasks(repo_root / "competitions" / "srbench.yaml", "Final")
    with pytest.raises(JudgeError, match=r"no phase 3 "):
        phase_tasks(repo_root / "competitions" / "srbench.yaml", 3)
    with pytest.raises(JudgeError, match="no such bundle"):
        phase_tasks(repo_root / "nowhere.yaml", 0)


def test_a_fixture_bundle_as_a_folder_and_as_a_zip(tmp_path):
    competition = valid_yaml()
    competition["phases"][1]["execution_time_limit"] = 30
    del competition["phases"][0]["execution_time_limit"]
    folder = write_bundle(tmp_path / "bundle", competition)
    assert phase_tasks(folder, "First") == (folder.resolve(), ["weak_lensing.phase1"], None)
    extracted = tmp_path / "extracted"
    root, tasks, limit = phase_tasks(zip_folder(folder, tmp_path / "bundle.zip"), "Second", extracted)
    assert (root, tasks, limit) == (extracted.resolve(), ["weak_lensing.phase1"], 30.0)
    assert (extracted / "reference_data" / "weak_lensing.phase1" / "task.yaml").is_file()
    competition["phases"][1]["tasks"] = [7]
    with pytest.raises(JudgeError, match="phase 'Second' lists task 7"):
        phase_tasks(write_bundle(tmp_path / "broken", competition), 1)
