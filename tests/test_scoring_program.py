"""The Codabench contract of the scoring program, run as a subprocess exactly as the worker runs it:
exit codes, scores.json, details.json, detailed_results.html, and the invalid-input classes of Phase 1."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from codascore.scores import clean_scores
from codascore.competition import project_root
from codascore.registry import get_task

REPO_ROOT = project_root()


SCORE_PY = REPO_ROOT / "scoring_program" / "score.py"
TRUTH = [[0.31, 0.82], [0.22, 0.75], [0.45, 0.90]]
GOOD = {"means": [[0.30, 0.84], [0.25, 0.76], [0.40, 0.88]],
        "errorbars": [[0.04, 0.03], [0.02, 0.02], [0.05, 0.03]]}


def make_reference(ref: Path, truth=TRUTH, task="weak_lensing.phase1") -> None:
    ref.mkdir(parents=True, exist_ok=True)
    np.save(ref / "label_test.npy", np.array(truth, dtype=np.float64))
    (ref / "scaler.json").write_text(json.dumps({"mean": [0.3, 0.8], "scale": [0.15, 0.08]}))
    (ref / "task.yaml").write_text(yaml.safe_dump({"task": task}))


def score(tmp_path: Path, result=None, raw: str | None = None, res_files: dict | None = None):
    """Lay out input/ref and input/res (with the worker's metadata file), run score.py, return
    (exit code, stderr, output folder)."""
    make_reference(tmp_path / "input" / "ref")
    res = tmp_path / "input" / "res"
    res.mkdir(parents=True, exist_ok=True)
    (res / "metadata").write_text("exitCode: null\nelapsedTime: null\ningestionExitCode: null\n"
                                  "ingestionElapsedTime: null\n")
    if raw is not None:
        (res / "result.json").write_text(raw)
    elif result is not None:
        (res / "result.json").write_text(json.dumps(result))
    for name, text in (res_files or {}).items():
        (res / name).parent.mkdir(parents=True, exist_ok=True)
        (res / name).write_text(text)
    out = tmp_path / "output"
    proc = subprocess.run([sys.executable, str(SCORE_PY), str(tmp_path / "input"), str(out)],
                          cwd=SCORE_PY.parent, capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stderr, out


def with_value(field, i, j, value):
    result = json.loads(json.dumps(GOOD))
    result[field][i][j] = value
    return result


INVALID = {
    "missing file": (None, None, ["result.json"]),
    "unreadable JSON": (None, '{"means": [[0.3, 0.84],', ["result.json", "not valid JSON", "line 1"]),
    "missing key": ({"means": GOOD["means"]}, None, ["missing key 'errorbars'"]),
    "wrong N": ({"means": GOOD["means"][:2], "errorbars": GOOD["errorbars"]}, None,
                ["'means' has 2 rows, expected 3"]),
    "wrong row width": ({"means": [[0.3, 0.84], [0.25, 0.76, 0.1], [0.4, 0.88]], "errorbars": GOOD["errorbars"]},
                        None, ["means[1]", "3 values"]),
    "non-number": (with_value("means", 2, 0, "0.4"), None, ["means[2][0]", "Omega_m", "not a number"]),
    "NaN": (None, json.dumps(GOOD).replace("0.76", "NaN"), ["means[1][1]", "S_8", "nan"]),
    "infinity": (None, json.dumps(GOOD).replace("0.05", "Infinity"), ["errorbars[2][0]", "inf"]),
    "negative sigma": (with_value("errorbars", 0, 1, -0.03), None, ["errorbars[0][1]", "-0.03", "> 0"]),
    "zero sigma": (with_value("errorbars", 1, 0, 0.0), None, ["errorbars[1][0]", "must be > 0"]),
    "sigma squared underflows": (with_value("errorbars", 2, 1, 1e-170), None, ["errorbars[2][1]", "underflows"]),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_submission_exits_1_without_scores_and_names_field_and_index(tmp_path, case):
    result, raw, fragments = INVALID[case]
    code, stderr, out = score(tmp_path, result=result, raw=raw)
    assert code == 1, stderr
    assert not (out / "scores.json").exists()
    assert not (out / "metadata").exists()
    error_lines = [line for line in stderr.splitlines() if line.startswith("ERROR:")]
    for fragment in fragments:
        assert any(fragment in line for line in error_lines), (fragment, stderr)
    page = (out / "detailed_results.html").read_text()
    assert "nothing was scored" in page
    details = json.loads((out / "details.json").read_text())
    assert details["status"] == "invalid" and details["problems"]


def test_every_problem_is_listed_up_to_twenty(tmp_path):
    result = {"means": [[float("nan")] * 2] * 3, "errorbars": [[-1.0, -1.0]] * 3}
    code, stderr, out = score(tmp_path, raw=json.dumps(result))
    assert code == 1
    errors = [line for line in stderr.splitlines() if "result.json:" in line]
    assert len(errors) == 12  # 6 NaN means + 6 negative errorbars


def test_valid_submission_writes_flat_finite_scores_details_and_page(tmp_path):
    code, stderr, out = score(tmp_path, result=GOOD)
    assert code == 0, stderr
    scores = json.loads((out / "scores.json").read_text())
    assert set(scores) == {"score", "avg_coverage", "R_squared", "MSE"}
    assert all(isinstance(v, float) and np.isfinite(v) for v in scores.values())
    details = json.loads((out / "details.json").read_text())
    assert details["task"] == "weak_lensing.phase1" and details["scores"] == scores
    assert [r["id"] for r in details["instances"]] == [0, 1, 2]
    assert sum(r["score"] for r in details["instances"]) / 3 == pytest.approx(scores["score"], rel=1e-12)
    page = (out / "detailed_results.html").read_text()
    assert "data:image/png;base64," in page and "src='data:" in page
    assert not (out / "metadata").exists()


def test_worker_metadata_in_res_is_ignored(tmp_path):
    code, stderr, out = score(tmp_path, result=GOOD)
    assert code == 0 and "WARNING" not in stderr


def test_one_wrapper_folder_is_descended_with_a_warning_that_is_escaped(tmp_path):
    folder = "<img src=x onerror=alert(1)>"
    code, stderr, out = score(tmp_path, res_files={f"{folder}/result.json": json.dumps(GOOD)})
    assert code == 0, stderr
    assert "wrapper folder" in stderr
    page = (out / "detailed_results.html").read_text()
    assert "wrapper folder" in page and folder not in page and "&lt;img src=x" in page


def test_two_folders_are_not_guessed(tmp_path):
    code, stderr, out = score(tmp_path, res_files={"a/result.json": json.dumps(GOOD),
                                                    "b/result.json": json.dumps(GOOD)})
    assert code == 1 and "Zip the files themselves" in stderr


def test_floored_score_stays_finite(tmp_path):
    result = {"means": [[50.0, 50.0]] * 3, "errorbars": [[1e-3, 1e-3]] * 3}
    code, stderr, out = score(tmp_path, result=result)
    assert code == 0
    assert json.loads((out / "scores.json").read_text())["score"] == -1e6
    assert "floor" in stderr


def test_means_far_off_are_scored_and_clipped_values_named(tmp_path):
    """R² and MSE of means of 1e6 leave Codabench's range: exit 0, every value storable, the clip named."""
    code, stderr, out = score(tmp_path, result={**GOOD, "means": [[1e6, 1e6]] * 3})
    assert code == 0, stderr
    scores = json.loads((out / "scores.json").read_text())
    assert all(math.isfinite(v) and abs(v) < 1e10 for v in scores.values())
    assert scores["R_squared"] == -(1e10 - 1) and scores["MSE"] == 1e10 - 1
    details = json.loads((out / "details.json").read_text())
    assert details["clipped_scores"]["R_squared"] < -1e10 and details["clipped_scores"]["MSE"] > 1e10
    page = (out / "detailed_results.html").read_text()
    assert "R_squared" in page and "clipped to -9999999999" in page and "clipped to 9999999999" in page


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["score", "MSE", "R_squared"]),
                       st.floats(allow_nan=True, allow_infinity=True), min_size=1).filter(
                           lambda s: "score" in s and not math.isnan(s["score"])))
def test_stored_scores_are_finite_below_1e10_and_unchanged_when_storable(scores):
    task = get_task("weak_lensing.phase1")
    cleaned, omitted, clipped, warnings = clean_scores(scores, task)
    for key, value in scores.items():
        if math.isnan(value):
            assert key in omitted and key not in cleaned
            continue
        assert math.isfinite(cleaned[key]) and abs(cleaned[key]) < 1e10
        if abs(value) < 1e10 - 1:
            assert cleaned[key] == value and key not in clipped
        else:
            assert clipped[key] == value and math.copysign(1, cleaned[key]) == math.copysign(1, value)
    assert len(warnings) == len(clipped) + len(omitted)


def test_extra_keys_are_ignored(tmp_path):
    code, _, _ = score(tmp_path, result={**GOOD, "comment": "<b>hi</b>"})
    assert code == 0


@pytest.mark.parametrize("breakage, message", [
    ("no task.yaml", "task.yaml"),
    ("unknown task", "unknown task"),
    ("unknown parameter", "unknown parameter"),
    ("corrupt labels", "label_test.npy"),
])
def test_broken_reference_is_an_organiser_error_exit_2(tmp_path, breakage, message):
    ref = tmp_path / "input" / "ref"
    make_reference(ref)
    if breakage == "no task.yaml":
        (ref / "task.yaml").unlink()
    elif breakage == "unknown task":
        (ref / "task.yaml").write_text("task: weak_lensing.phase9\n")
    elif breakage == "unknown parameter":
        (ref / "task.yaml").write_text("task: weak_lensing.phase1\nlambda: 3\n")
    else:
        (ref / "label_test.npy").write_bytes(b"not numpy")
    (tmp_path / "input" / "res").mkdir(parents=True)
    (tmp_path / "input" / "res" / "result.json").write_text(json.dumps(GOOD))
    proc = subprocess.run([sys.executable, str(SCORE_PY), str(tmp_path / "input"), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "organiser error" in proc.stderr and message in proc.stderr
    assert not (tmp_path / "out" / "scores.json").exists()


def test_ingestion_failure_recorded_in_res_fails_scoring_with_its_text(tmp_path):
    code, stderr, out = score(tmp_path, res_files={"ingestion_error.txt": "Traceback ...\nZeroDivisionError: boom\n"})
    assert code == 1 and "ZeroDivisionError: boom" in stderr
    assert not (out / "scores.json").exists()


def test_failed_ingestion_exit_code_in_worker_metadata_fails_scoring(tmp_path):
    code, stderr, out = score(tmp_path, result=GOOD,
                              res_files={"metadata": "exitCode: null\ningestionExitCode: 137\n"})
    assert code == 1 and "ingestion step exited with code 137" in stderr
    assert not (out / "scores.json").exists()
