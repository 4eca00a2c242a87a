"""A bundle's phase as the judge's input (codascore.judge.phases): the project's own competition YAMLs, a
fixture bundle as a folder and as a zip, and ``codascore judge phase BUNDLE PHASE`` judging a phase's
two tasks in turn into one results.csv with the phase's time limit."""

from __future__ import annotations

import csv
import shutil
import sqlite3

import pytest
import yaml

from bundle_fixture import valid_yaml, write_bundle, zip_folder
from codascore.errors import JudgeError
from codascore.judge.phases import phase_tasks
from codascore.outcomes import ExitCode

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


def uai_bundle(project_data, folder):
    """A bundle folder of two tasks, uai.pr and uai.mar, in one phase of 120 s: the project's programs and
    data linked in."""
    for name in ("scoring_program", "ingestion_program"):
        folder.joinpath(name).parent.mkdir(parents=True, exist_ok=True)
        folder.joinpath(name).symlink_to(project_data / name)
    tasks = []
    for index, task in enumerate(("uai.pr", "uai.mar")):
        for data in ("reference_data", "input_data"):
            (folder / data).mkdir(exist_ok=True)
            (folder / data / task).symlink_to(project_data / data / task)
        tasks.append({"index": index, "name": task, "scoring_program": "scoring_program/",
                      "ingestion_program": "ingestion_program/", "reference_data": f"reference_data/{task}/",
                      "input_data": f"input_data/{task}/"})
    phases = [{"name": "Warm-up", "tasks": [0], "execution_time_limit": 600},
              {"name": "Inference", "tasks": [0, 1], "execution_time_limit": 120}]
    (folder / "competition.yaml").write_text(yaml.safe_dump({"version": 2, "title": "UAI", "tasks": tasks,
                                                             "phases": phases}))
    return folder


def test_the_judge_verb_judges_a_bundles_phase_into_one_results_csv(project_data, tmp_path, capsys):
    pytest.importorskip("distributed")
    from codascore.cli import main as cli_main

    bundle = uai_bundle(project_data, tmp_path / "bundle")
    shutil.copytree(project_data / "sample_submissions" / "uai.pr" / "exact", tmp_path / "teams" / "alice")
    out = tmp_path / "judgement"
    assert cli_main(["judge", "phase", str(bundle), "Inference", str(tmp_path / "teams"),
                     "--out", str(out), "--workers", "1"]) == ExitCode.OK
    printed = capsys.readouterr()
    assert "uai.pr: 1 units (1 done)" in printed.out and "uai.mar: 1 units" in printed.out
    assert "phase 'Inference' of bundle: uai.pr, uai.mar" in printed.err
    with open(out / "results.csv", newline="") as handle:
        rows = {row["task"]: row for row in csv.DictReader(handle)}
    assert set(rows) == {"uai.pr", "uai.mar"} and rows["uai.pr"]["state"] == "done"
    with sqlite3.connect(out / "judge.sqlite") as db:
        assert set(db.execute("SELECT task, time_limit FROM units")) == {("uai.pr", 120.0), ("uai.mar", 120.0)}
    for wrong in (["phase", str(bundle), str(tmp_path / "teams")],  # no PHASE
                  ["phase", str(bundle), "0", "uai.pr", str(tmp_path / "teams")],  # a TASK too
                  ["phase", str(bundle), "0", str(tmp_path / "teams"), "--root", str(project_data)]):
        with pytest.raises(SystemExit) as refused:
            cli_main(["judge", *wrong, "--out", str(out)])
        assert refused.value.code == ExitCode.ORGANISER_ERROR, wrong
        assert capsys.readouterr().err.startswith("codascore")
    assert cli_main(["judge", "phase", str(bundle), "Final", str(tmp_path / "teams"),
                     "--out", str(out)]) == ExitCode.ORGANISER_ERROR
    assert "0 'Warm-up', 1 'Inference'" in capsys.readouterr().err
