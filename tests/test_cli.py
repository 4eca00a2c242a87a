"""The command line: subcommands reach the right code."""

from __future__ import annotations

import json

from codascore.cli import main
from codascore.registry import get_task


def test_reference_task_source_out_builds_an_organisers_reference(tmp_path, capsys):
    task = get_task("uai.pr")
    task.generate(tmp_path / "demo", dict(task.defaults), progress=lambda message: None)
    models = tmp_path / "demo" / "reference_data" / "uai.pr" / "models"
    assert main(["reference", "uai.pr", str(models), str(tmp_path / "rebuilt")]) == 0
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
