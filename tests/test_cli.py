"""The command line: subcommands reach the right code."""

from __future__ import annotations

import json

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
