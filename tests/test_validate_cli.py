"""``codascore validate TASK SUBMISSION``: a participant's reference-free format check. A well-formed
submission of every family exits 0 with one OK line; a malformed one exits 1 naming file, field, index and
value; neither shows a traceback. The submissions are written here, from the documented formats, so that no
reference data is anywhere near.
"""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

from codascore.cli import main


def validate(capsys, task, path):
    """(exit code, stdout lines, stderr lines) of ``codascore validate``; never a traceback."""
    code = main(["validate", task, str(path)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out.strip().splitlines(), err.strip().splitlines()


def folder_with(tmp_path, name, files: dict):
    folder = tmp_path / name
    folder.mkdir()
    for file_name, content in files.items():
        if isinstance(content, bytes):
            (folder / file_name).write_bytes(content)
        else:
            (folder / file_name).write_text(content if isinstance(content, str) else json.dumps(content))
    return folder


def phase1(means, errorbars):
    return {"result.json": {"means": means, "errorbars": errorbars}}


def posteriors_npz(tmp_path, name, trace, weights):
    folder = tmp_path / name
    folder.mkdir()
    np.savez(folder / "submission.npz", **{"Planet_public1/tracedata": trace, "Planet_public1/weights": weights})
    return folder


GOOD_TRACE = np.random.default_rng(0).normal(size=(1000, 7))
GOOD_WEIGHTS = np.full(1000, 1e-3)


def well_formed(tmp_path, task):
    if task == "weak_lensing.phase1":
        return folder_with(tmp_path, "ok", phase1([[0.3, 0.8]] * 3, [[0.01, 0.02]] * 3))
    if task == "weak_lensing.phase2":
        return folder_with(tmp_path, "ok", {"result.json": {"p_ind": [0.1, 0.9, 0.5]}})
    if task == "ariel.retrieval":
        return posteriors_npz(tmp_path, "ok", GOOD_TRACE, GOOD_WEIGHTS)
    if task == "srbench.synthetic":
        return folder_with(tmp_path, "ok", {"models.json": {"feynman_I_6_2/0": "exp(-x1**2/2)/sqrt(2*pi)",
                                                            "other/1": "0.5*x1 + 2"}})
    return folder_with(tmp_path, "ok", {"a.uai.PR": "PR\n-1.25\n", "b.uai.PR": "PR\n1\n-BEGIN-\n-3.5 L\n"})


@pytest.mark.parametrize("task", ["weak_lensing.phase1", "weak_lensing.phase2", "ariel.retrieval",
                                  "srbench.synthetic", "uai.pr"])
def test_a_well_formed_submission_of_every_family_passes_in_one_line(tmp_path, capsys, task):
    code, out, err = validate(capsys, task, well_formed(tmp_path, task))
    assert code == 0 and len(out) == 1 and out[0].startswith(f"OK {task} submission"), (out, err)
    assert "scoring checks" in out[0]  # says what only the reference can check


@pytest.mark.parametrize("task, files, expected", [
    ("weak_lensing.phase1", phase1([[0.3, 0.8]] * 3, [[0.01, 0.02], [0.01, -0.1], [0.01, 0.02]]),
     "result.json: errorbars[1][1] (S_8) = -0.1 must be > 0"),
    ("weak_lensing.phase1", phase1([[0.3, 0.8]] * 3, [[0.01, 0.02]] * 2),
     "result.json: 'means' has 3 but 'errorbars' has 2 entries"),
    ("weak_lensing.phase1", phase1([[0.3, "x"]], [[0.01, 0.02]]), "result.json: means[0][1] (S_8) is \"x\""),
    ("weak_lensing.phase1", {"result.json": "[1, 2"}, "result.json"),
    ("weak_lensing.phase2", {"result.json": {"p_ind": [0.1, 1.5]}}, "result.json: p_ind[1] = 1.5 is outside [0, 1]"),
    ("weak_lensing.phase2", {"result.json": {"p_ind": [0.1, 0.5], "ood_scores": [1.0]}},
     "'p_ind' has 2 but 'ood_scores' has 1"),
    ("weak_lensing.phase2", {"result.json": {}}, "missing key 'ood_scores'"),
    ("srbench.synthetic", {"models.json": {"d/0": "x1 ^ 2"}}, "models.json: d/0: character '^' at position 3"),
    ("srbench.synthetic", {"models.json": {"d": "x1"}}, "models.json: key 'd' is not '<dataset>/<seed>'"),
    ("srbench.synthetic", {"models.json": {"d/0": 3}}, "models.json: d/0: the model must be a string, found 3"),
    ("srbench.synthetic", {"models.json": {}}, "models.json: holds no model"),
    ("uai.pr", {"a.uai.PR": "PR\nabc\n"}, "a.uai.PR: line 2: PR value 'abc' is not a number"),
    ("uai.pr", {"answers.txt": "PR\n1\n"}, "expected *.uai.PR at the root"),
    ("uai.mpe", {"a.uai.MPE": "MPE\n3 0 x 1\n"}, "a.uai.MPE: line 2: token 'x' in the MPE solution is not an integer"),
    ("uai.mar", {"a.uai.MAR": "MPE\n1 2 0.5 0.5\n"}, "a.uai.MAR: line 1: task word 'MPE' does not name the task MAR"),
])
def test_a_malformed_submission_exits_1_naming_file_field_index_and_value(tmp_path, capsys, task, files, expected):
    code, out, err = validate(capsys, task, folder_with(tmp_path, "bad", files))
    assert code == 1 and not out
    assert err[0].startswith(f"INVALID {task} submission") and any(expected in line for line in err[1:]), err


@pytest.mark.parametrize("trace, weights, expected", [
    (np.where(np.arange(7000).reshape(1000, 7) == 17, np.nan, GOOD_TRACE), GOOD_WEIGHTS,
     "Planet_public1/tracedata[2][3] = nan is not finite"),
    (GOOD_TRACE[:, :6], GOOD_WEIGHTS, "Planet_public1/tracedata has shape (1000, 6), expected (M, 7)"),
    (GOOD_TRACE, GOOD_WEIGHTS * 1.01, "Planet_public1/weights sum to"),
    (GOOD_TRACE[:500], GOOD_WEIGHTS[:500] * 2, "M = 500 samples; allowed 1000 <= M <= 5000"),
])
def test_a_malformed_ariel_posterior_exits_1(tmp_path, capsys, trace, weights, expected):
    code, out, err = validate(capsys, "ariel.retrieval", posteriors_npz(tmp_path, "bad", trace, weights))
    assert code == 1 and any(expected in line for line in err[1:]), err


def test_a_zip_is_checked_as_its_folder_and_a_wrapper_folder_is_a_warning(tmp_path, capsys):
    folder = well_formed(tmp_path, "weak_lensing.phase1")
    flat, wrapped = tmp_path / "flat.zip", tmp_path / "wrapped.zip"
    with zipfile.ZipFile(flat, "w") as archive:
        archive.write(folder / "result.json", "result.json")
    with zipfile.ZipFile(wrapped, "w") as archive:
        archive.write(folder / "result.json", "mine/result.json")
    code, out, err = validate(capsys, "weak_lensing.phase1", flat)
    assert code == 0 and not err and "3 [Omega_m, S_8]" in out[0]
    code, out, err = validate(capsys, "weak_lensing.phase1", wrapped)
    assert code == 0 and len(err) == 1 and "wrapper folder 'mine/'" in err[0]


def test_a_file_that_is_no_zip_and_a_hostile_zip_are_refused_in_a_line(tmp_path, capsys):
    text = tmp_path / "result.json"
    text.write_text("{}")
    code, out, err = validate(capsys, "weak_lensing.phase1", text)
    assert code == 1 and "result.json: not a zip file" in err[1]
    hostile = tmp_path / "hostile.zip"
    with zipfile.ZipFile(hostile, "w") as archive:
        archive.writestr("../escaped.json", "{}")
    code, out, err = validate(capsys, "weak_lensing.phase1", hostile)
    assert code == 1 and "hostile.zip: cannot be extracted" in err[1]
    assert not (tmp_path / "escaped.json").exists()


def test_a_code_submission_is_sent_to_codascore_run(tmp_path, capsys):
    code, out, err = validate(capsys, "weak_lensing.phase1", folder_with(tmp_path, "code", {"model.py": "x = 1\n"}))
    assert code == 1 and "codascore run weak_lensing.phase1 SUBMISSION" in err[-1]
    # Ariel's code may ship its own .npz, which looks like a result file: still sent to codascore run
    folder = folder_with(tmp_path, "ariel_code", {"predict.py": "def predict(spectra, noise, aux): pass\n"})
    np.savez(folder / "weights.npz", coef=np.zeros(3))
    code, out, err = validate(capsys, "ariel.retrieval", folder)
    assert code == 1 and "weights.npz: coef/tracedata is missing" in err[1]
    assert "codascore run ariel.retrieval SUBMISSION" in err[-1]


def test_a_generation_module_missing_from_the_wheel_is_told_as_such(monkeypatch, capsys):
    from codascore.cli import left_out_of_wheel
    from codascore.commands.reference import Reference

    def without_generators(self, args):
        raise ModuleNotFoundError("No module named 'codascore.uai.generate'", name="codascore.uai.generate")

    monkeypatch.setattr(Reference, "run", without_generators)
    assert main(["reference", "uai.pr"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "leaves out" in err and "pip install -e ." in err
    assert left_out_of_wheel(ModuleNotFoundError(name="codascore.seeds"))
    assert not left_out_of_wheel(ModuleNotFoundError(name="codascore.uai.tasks"))


def test_the_participant_pages_install_the_built_wheel_and_validate(repo_root):
    """codascore is not on PyPI: every overview page tells the wheel's commands that make test-wheel runs."""
    import re

    pages = sorted((repo_root / "pages").glob("*/overview.md"))
    assert len(pages) == 5
    for page in pages:
        text = page.read_text()
        assert not re.search(r"pip install codascore\b", text), f"{page.name}: codascore is not on PyPI"
        assert "make wheel" in text and "pip install dist/codascore-*.whl" in text, page
        assert re.search(r"codascore validate (TASK|[a-z_]+\.[a-z0-9_]+) my_submission\.zip", text), page
    assert re.search(r"^wheel:", (repo_root / "Makefile").read_text(), re.M)


def test_every_task_has_a_reference_free_check():
    from codascore.registry import all_tasks
    from codascore.task import Task

    tasks = all_tasks()
    assert len(tasks) == 12
    assert [name for name, task in tasks.items() if type(task).validate_format is Task.validate_format] == []
