"""The command line: subcommands reach the right code, and ``codascore run`` works from any folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from codascore.cli import main
from codascore.registry import get_task


def test_build_reference_task_source_out_builds_an_organisers_reference(tmp_path, capsys):
    task = get_task("uai.pr")
    task.generate(tmp_path / "demo", dict(task.defaults), progress=lambda message: None)
    models = tmp_path / "demo" / "reference_data" / "uai.pr" / "models"
    assert main(["build-reference", "uai.pr", str(models), str(tmp_path / "rebuilt")]) == 0
    assert "written to" in capsys.readouterr().out
    rebuilt = json.loads((tmp_path / "rebuilt" / "reference.json").read_text())
    generated = json.loads((tmp_path / "demo" / "reference_data" / "uai.pr" / "reference.json").read_text())
    by_id = lambda reference: {instance["id"]: instance for instance in reference.pop("instances")}
    rebuilt_instances, generated_instances = by_id(rebuilt), by_id(generated)
    assert len(generated_instances) == 7 and rebuilt_instances == generated_instances
    assert rebuilt == generated  # the rest: task and parameters


def test_reference_with_task_names_generates_demo_data(tmp_path):
    assert main(["reference", "weak_lensing.phase1", "--root", str(tmp_path)]) == 0
    assert (tmp_path / "reference_data" / "weak_lensing.phase1" / "task.yaml").is_file()
    assert (tmp_path / "sample_submissions" / "weak_lensing.phase1" / "calibrated" / "result.json").is_file()


def test_build_reference_uai_mlc_accepts_data_in_the_official_and_the_older_layout(tmp_path, capsys):
    task = get_task("uai.mlc")
    task.generate(tmp_path / "demo", dict(task.defaults), progress=lambda message: None)
    models = tmp_path / "demo" / "reference_data" / "uai.mlc" / "models"
    generated = json.loads((tmp_path / "demo" / "reference_data" / "uai.mlc" / "reference.json").read_text())
    data_files = sorted(models.glob("*.uai.data"))
    assert data_files
    for path in data_files:  # written as the 2022 data-format page shows: pairs, then the weight
        lines = [line.split() for line in path.read_text().splitlines() if line.strip()]
        n_labelled = len(lines[1]) - 1 + len(lines[2]) - 1
        assert all(len(tokens) == 2 * n_labelled + 1 for tokens in lines[5:])
    assert main(["build-reference", "uai.mlc", str(models), str(tmp_path / "official")]) == 0
    assert json.loads((tmp_path / "official" / "reference.json").read_text()) == generated
    for path in [*data_files, *models.glob("*.uai.test")]:  # the older layout: counts in front of the pairs
        text = path.read_text().splitlines()
        e_count, q_count = text[1].split()[0], text[2].split()[0]
        labelled = path.suffix == ".data"
        rewritten = []
        for tokens in (line.split() for line in text[6:]):
            evidence, rest = tokens[:2 * int(e_count)], tokens[2 * int(e_count):]
            rewritten.append(" ".join([e_count, *evidence] + ([q_count, *rest] if labelled else [])))
        path.write_text("\n".join(text[:6] + rewritten) + "\n")
    assert main(["build-reference", "uai.mlc", str(models), str(tmp_path / "older")]) == 0
    assert json.loads((tmp_path / "older" / "reference.json").read_text()) == generated


# ----------------------------------------------------------------- run from any folder

#: One results sample of each family that scores in seconds.
QUICK_SAMPLES = [("weak_lensing.phase1", "calibrated"), ("ariel.retrieval", "gaussian_baseline"),
                 ("srbench.qualification", "linear_regression"), ("uai.pr", "exact")]


def codascore_in(cwd, project, *args):
    """``python -m codascore`` run in cwd with the project's package importable: (exit code, stdout, stderr)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(project),
                                                                      os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-m", "codascore", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("task, sample", QUICK_SAMPLES, ids=[task for task, sample in QUICK_SAMPLES])
def test_run_without_root_from_any_folder_takes_the_installed_projects_programs(tmp_path, repo_root,
                                                                                project_data, task, sample):
    if project_data != repo_root:
        pytest.skip("the installed project has no demo data (make data): the programs would find no reference")
    submission = project_data / "sample_submissions" / task / sample
    code, out, err = codascore_in(tmp_path, repo_root, "run", task, submission)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"{task} / {sample}: scored") and str(tmp_path / "runs" / task) in lines[0]
    assert any(line.split()[:1] == ["score"] for line in lines[1:]), out
    assert lines[-1].startswith("report: ")


def test_run_with_a_root_holding_no_programs_fails_naming_the_folder(tmp_path, repo_root, project_data):
    (tmp_path / "empty").mkdir()
    exact = project_data / "sample_submissions" / "uai.pr" / "exact"
    code, out, err = codascore_in(tmp_path, repo_root, "run", "uai.pr", exact, "--root", "empty")
    error = [line for line in err.splitlines() if line.startswith("error: ")]
    assert code != 0 and "Traceback" not in err
    assert len(error) == 1 and "not found" in error[0] and "empty" in error[0]


def test_run_with_a_root_holding_no_programs_says_what_root_names(tmp_path, repo_root, project_data):
    (tmp_path / "empty").mkdir()
    exact = project_data / "sample_submissions" / "uai.pr" / "exact"
    code, out, err = codascore_in(tmp_path, repo_root, "run", "uai.pr", exact, "--root", "empty")
    assert "--root" in [line for line in err.splitlines() if line.startswith("error: ")][0]
