"""Hosting with your own data (docs/hosting.md): the checker's rule 31 fails a bundle whose reference data,
input data and starting kit disagree (instance ids, counts, shapes), on fixture bundles broken each way; and
the guide's commands, taken from its sh blocks, run in order in an empty folder through `check --run`."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from codascore import checker

from bundle_fixture import TASK, valid_yaml, write_bundle, zip_folder


def npy(array) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array))
    return buffer.getvalue()


def rule31(report: checker.CheckReport) -> list[str]:
    return [str(f) for f in report.findings if f.rule == 31]


# --------------------------------------------------------------------------- weak lensing: counts of test maps

def lensing_bundle(folder, n_labels: int, n_maps: int):
    data = valid_yaml()
    data["tasks"][0]["input_data"] = f"input_data/{TASK}/"
    return write_bundle(folder, data, {
        f"reference_data/{TASK}/label_test.npy": npy(np.full((n_labels, 5), 0.3)),
        f"input_data/{TASK}/task.yaml": f"task: {TASK}\n",
        f"input_data/{TASK}/test_maps.npy": npy(np.zeros((n_maps, 4, 4), dtype=np.float32)),
    })


def test_weak_lensing_reference_and_input_data_of_the_same_count_agree(tmp_path):
    folder = lensing_bundle(tmp_path / "b", 3, 3)
    for target in (folder, zip_folder(folder, tmp_path / "b.zip")):
        report = checker.check_bundle(target)
        assert rule31(report) == [] and report.ok, report.messages()


def test_weak_lensing_test_maps_the_labels_do_not_count_fail_rule_31(tmp_path):
    report = checker.check_bundle(lensing_bundle(tmp_path / "b", 3, 7))
    assert not report.ok
    assert rule31(report) == [f"ERROR [rule 31] tasks[0].input_data: input_data/{TASK}/: test maps has shape "
                              f"(7,), the reference data reference_data/{TASK} shape (3,)"]


def test_an_unreadable_reference_file_is_named_and_nothing_compared(tmp_path):
    folder = lensing_bundle(tmp_path / "b", 3, 3)
    (folder / "reference_data" / TASK / "label_test.npy").write_text("not numpy")
    found = rule31(checker.check_bundle(folder))
    assert len(found) == 1 and "tasks[0].reference_data" in found[0] and "label_test.npy" in found[0], found


# --------------------------------------------------------------------------- UAI: instance ids

UAI = "uai.pr"
MODEL = "MARKOV\n1\n2\n1\n1 0\n2\n0.5 0.5\n"


def uai_bundle(folder, reference_ids, input_ids, samples: dict[str, list[str]] | None = None):
    data = valid_yaml()
    data["tasks"][0].update(reference_data=f"reference_data/{UAI}/", input_data=f"input_data/{UAI}/")
    data["leaderboards"][0]["columns"] = [{"title": key, "key": key, "index": i, "sorting": "desc"}
                                          for i, key in enumerate(("score", "n_answered", "n_perfect"))]
    files: dict[str, str | None] = {
        f"reference_data/{TASK}/task.yaml": None,
        f"reference_data/{UAI}/task.yaml": f"task: {UAI}\n",
        f"reference_data/{UAI}/reference.json": json.dumps({"instances": [{"id": i} for i in reference_ids]}),
        f"input_data/{UAI}/task.yaml": f"task: {UAI}\n",
    }
    files.update({f"reference_data/{UAI}/models/{i}.uai": MODEL for i in reference_ids})
    files.update({f"input_data/{UAI}/models/{i}.uai": MODEL for i in input_ids})
    if samples is not None:
        data["phases"][0]["starting_kit"] = f"sample_submissions/{UAI}/"
        for sample, ids in samples.items():
            files.update({f"sample_submissions/{UAI}/{sample}/{i}.uai.PR": "PR\n-0.3\n" for i in ids})
            files[f"sample_submissions/{UAI}/{sample}/README.md"] = "a sample\n"
    return write_bundle(folder, data, files)


def test_uai_data_with_the_same_instances_agree(tmp_path):
    report = checker.check_bundle(uai_bundle(tmp_path / "b", ["a", "b", "c"], ["a", "b", "c"],
                                             {"partial": ["a", "b"], "code_solver": []}))
    assert rule31(report) == [], report.messages()


def test_input_data_holding_instances_the_reference_lacks_fails_rule_31(tmp_path):
    # The case: reference_data/uai.pr held 3 instances, input_data/uai.pr still held 7.
    ids = [f"m{k}" for k in range(7)]
    found = rule31(checker.check_bundle(uai_bundle(tmp_path / "b", ids[:3], ids)))
    assert found == [f"ERROR [rule 31] tasks[0].input_data: input_data/{UAI}/ holds 4 item(s) the reference "
                     f"data reference_data/{UAI}/ does not (m3, m4, m5, m6): the scorer would ignore them"]


def test_input_data_lacking_reference_instances_fails_rule_31(tmp_path):
    found = rule31(checker.check_bundle(uai_bundle(tmp_path / "b", ["a", "b", "c"], ["a"])))
    assert found == [f"ERROR [rule 31] tasks[0].input_data: input_data/{UAI}/ lacks 2 of the 3 item(s) of the "
                     f"reference data reference_data/{UAI}/ (b, c)"]


@pytest.mark.parametrize("zipped", [False, True])
def test_a_starting_kit_sample_answering_instances_the_reference_lacks_fails_rule_31(tmp_path, zipped):
    folder = uai_bundle(tmp_path / "b", ["a", "b"], ["a", "b"], {"stale": ["a", "b", "x", "y"],
                                                                "invalid_extra": ["z"]})
    target = zip_folder(folder, tmp_path / "b.zip") if zipped else folder
    found = rule31(checker.check_bundle(target))
    # invalid_* samples must fail anyway, so only the valid one is held to the reference's ids
    assert found == [f"ERROR [rule 31] phases[0].starting_kit: {UAI}/stale holds 2 item(s) the reference data "
                     f"reference_data/{UAI}/ does not (x, y): the scorer would ignore them"]


# --------------------------------------------------------------------------- every family, on the demo's data

def _drop_first_model(folder):
    next(iter(sorted((folder / "models").glob("*.uai")))).unlink()


def _drop_last_test_map(folder):
    maps = np.load(folder / "test_maps.npy")
    np.save(folder / "test_maps.npy", maps[:-1])


def _drop_last_planet(folder):
    lines = (folder / "AuxillaryTable.csv").read_text().splitlines()
    (folder / "AuxillaryTable.csv").write_text("\n".join(lines[:-1]) + "\n")


def _drop_last_dataset(folder):
    meta = json.loads((folder / "datasets.json").read_text())
    meta["datasets"] = meta["datasets"][:-1]
    (folder / "datasets.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("name, drop", [("uai.pr", _drop_first_model), ("weak_lensing.phase1", _drop_last_test_map),
                                        ("ariel.retrieval", _drop_last_planet),
                                        ("srbench.synthetic", _drop_last_dataset)])
def test_each_family_demo_data_agree_and_input_data_one_item_short_fails_rule_31(project_data, tmp_path, name,
                                                                                 drop):
    import shutil

    from codascore.registry import get_task

    data = valid_yaml()
    data["tasks"][0].update(reference_data=f"reference_data/{name}/", input_data=f"input_data/{name}/")
    data["leaderboards"][0]["columns"] = [{"title": key, "key": key, "index": i, "sorting": "desc"}
                                          for i, key in enumerate(get_task(name).score_keys)]
    folder = write_bundle(tmp_path / "b", data, {f"reference_data/{TASK}/task.yaml": None})
    for side in ("reference_data", "input_data"):
        shutil.copytree(project_data / side / name, folder / side / name)
    assert rule31(checker.check_bundle(folder)) == []
    drop(folder / "input_data" / name)
    found = rule31(checker.check_bundle(folder))
    assert len(found) == 1 and found[0].startswith("ERROR [rule 31] tasks[0].input_data: "), found


# --------------------------------------------------------------------------- docs/hosting.md, word for word

REPO = Path(__file__).resolve().parent.parent
GUIDE = REPO / "docs" / "hosting.md"
CHAIN = "MARKOV\n3\n2 2 2\n2\n2 0 1\n2 1 2\n4\n0.9 0.1 0.2 0.8\n4\n0.6 0.4 0.3 0.7\n"


def guide_commands(heading: str) -> str:
    """The fenced sh blocks of the guide's section whose heading starts with heading, in order."""
    sections = re.split(r"^## ", GUIDE.read_text(), flags=re.M)
    section = next(s for s in sections if s.startswith(heading))
    blocks = re.findall(r"^```sh\n(.*?)^```", section, flags=re.S | re.M)
    assert blocks, f"no sh block in the section {heading!r}"
    return "".join(blocks)


def follow_guide(heading: str, folder: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "CODASCORE_REPO": str(REPO),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(["bash", "-euo", "pipefail", "-c", guide_commands(heading)], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=900)


def make_uai_models(folder: Path) -> None:
    models = folder / "my_models"
    models.mkdir(parents=True)
    for k in range(3):  # three chains with their evidence
        (models / f"chain_{k}.uai").write_text(CHAIN)
        (models / f"chain_{k}.uai.evid").write_text(f"1 0 {k % 2}\n")


def make_lensing_data(folder: Path, n_test: int = 6) -> None:
    rng = np.random.default_rng(0)
    data = folder / "my_data"
    data.mkdir(parents=True)
    cosmologies = np.column_stack([rng.uniform(0.1, 0.6, 8), rng.uniform(0.7, 0.95, 8)])
    labels = np.repeat(cosmologies, 4, axis=0)  # 8 cosmologies x 4 realisations
    labels = np.column_stack([labels, rng.uniform(7.2, 8.5, 32), rng.uniform(0, 0.02, 32), rng.normal(0, 0.02, 32)])
    maps = rng.normal(size=(32, 16, 16)) * labels[:, 1, None, None]
    test = labels[rng.permutation(32)[:6]]
    np.save(data / "train_maps.npy", maps.astype(np.float16))
    np.save(data / "train_labels.npy", labels)
    np.save(data / "test_maps.npy", (rng.normal(size=(n_test, 16, 16)) * 0.8).astype(np.float16))
    np.save(data / "test_labels.npy", test)


@pytest.mark.parametrize("heading, make, bundle", [("UAI", make_uai_models, "my_uai"),
                                                   ("Weak lensing", make_lensing_data, "my_lensing")])
def test_the_hosting_guide_followed_word_for_word_builds_a_bundle_that_passes_check_run(tmp_path, heading, make,
                                                                                         bundle):
    make(tmp_path)
    done = follow_guide(heading, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count(f"OK dist/{bundle}.zip") == 1, done.stdout
    assert "running " in done.stderr and "invalid_empty" in done.stderr, done.stderr  # the samples ran
    with zipfile.ZipFile(tmp_path / "first_submission.zip") as archive:
        assert len(archive.namelist()) == 1 and "/" not in archive.namelist()[0]
    assert not (tmp_path / "bundle.seed").exists() and not (tmp_path / "build").exists()  # no seed, nothing made


def test_the_guide_stops_at_the_first_check_when_the_maps_outnumber_the_labels(tmp_path):
    make_lensing_data(tmp_path, n_test=7)
    done = follow_guide("Weak lensing", tmp_path)
    assert done.returncode == 1 and not (tmp_path / "dist").exists(), done.stdout
    assert "ERROR [rule 31] tasks[0].input_data: input_data/weak_lensing.phase1/: test maps has shape (7,), " \
           "the reference data reference_data/weak_lensing.phase1/ shape (6,)" in done.stdout


def test_bundle_data_naming_no_folder_is_a_one_line_usage_error(tmp_path, capsys):
    from codascore.cli import main

    (tmp_path / "competitions").mkdir()
    (tmp_path / "competitions" / "mine.yaml").write_text("version: 2\n")
    code = main(["bundle", "mine", "--root", str(tmp_path), "--data", str(tmp_path / "nowhere")])
    err = capsys.readouterr().err
    assert code == 2 and "--data" in err and "nowhere: no such folder" in err and "Traceback" not in err, err
    assert not (tmp_path / "bundle.seed").exists()
