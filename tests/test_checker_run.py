"""`check --run` (rules 14, 22-27): the bundle's sample submissions go through the local runner. Each fixture
bundle has a small scoring program of its own that breaks one rule of the scoring contract."""

from __future__ import annotations

import pytest
from bundle_fixture import TASK, valid_yaml, write_bundle

from codascore import checker
from codascore.checker import runs

# A scorer that behaves: valid scores for a valid sample, exit 1 with ERROR: for a sample marked invalid.
SCORER = """\
import json, os, sys, time
inp, out = sys.argv[1], sys.argv[2]
submitted = open(os.path.join(inp, "res", "result.json")).read()
if "invalid" in submitted:
    print("ERROR: result.json: means[0][0] is NaN", file=sys.stderr)
    sys.exit(1)
scores = {"score": 1.5, "avg_coverage": 0.68, "R_squared": 0.9, "MSE": 0.1}
page = "<html><body>ok</body></html>"
# BREAK
if page is not None:
    with open(os.path.join(out, "detailed_results.html"), "w") as f:
        f.write(page)
with open(os.path.join(out, "scores.json"), "w") as f:
    json.dump(scores, f)
"""

BREAKS = {
    "nan score": ("scores['R_squared'] = float('nan')", 22, "is not a finite number"),
    "huge score": ("scores['MSE'] = 1e12", 22, "is not a finite number below 1e10"),
    "missing column key": ("del scores['avg_coverage']", 22, "lacks the column key 'avg_coverage'"),
    "writes output/metadata": ("open(os.path.join(out, 'metadata'), 'w').write('exitCode: 0')", 23,
                               "wrote output/metadata"),
    "crash on a valid sample": ("raise RuntimeError('boom')", 22, "exit code 1 on a valid sample"),
    "echoes the reference": ("print(open(os.path.join(inp, 'ref', 'truth.txt')).read())", 26,
                             "echo 1 reference value(s) at full precision"),
    "random scores": ("import random; scores['score'] = random.random()", 27,
                      "scoring it twice gave different scores.json"),
    "relative link in the page": ("page = '<img src=\"plot.png\">'", 25, "not self-contained"),
    "no detailed results": ("page = None", 25, "no detailed_results.html"),
    "too slow": ("time.sleep(2.2)", 14, "not below half of min(execution_time_limit, 600) = 2 s"),
}


def run_bundle(tmp_path, scorer: str, limit: int = 600):
    data = valid_yaml()
    data["phases"][0]["starting_kit"] = f"sample_submissions/{TASK}"
    data["phases"][1]["starting_kit"] = f"sample_submissions/{TASK}"
    data["phases"] = data["phases"][:1]
    data["phases"][0]["execution_time_limit"] = limit
    del data["phases"][0]["end"]
    files = {
        "scoring_program/score.py": scorer,
        f"reference_data/{TASK}/truth.txt": "0.3141592653\n",
        f"sample_submissions/{TASK}/good/result.json": '{"means": [[0.3, 0.8]]}',
        f"sample_submissions/{TASK}/invalid_nan/result.json": '{"means": "invalid"}',
    }
    return checker.check_bundle(write_bundle(tmp_path / "b", data, files), run=True)


def test_a_well_behaved_scorer_passes_every_run_rule(tmp_path):
    report = run_bundle(tmp_path, SCORER)
    assert report.ok, report.messages()


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_each_broken_scorer_is_caught_by_its_rule(tmp_path, name):
    code, rule, fragment = BREAKS[name]
    scorer = SCORER.replace("# BREAK", code)
    report = run_bundle(tmp_path, scorer, limit=4 if name == "too slow" else 600)
    hits = [f for f in report.errors if f.rule == rule and fragment in f.message]
    assert hits, report.messages()
    assert hits[0].path.startswith(f"phases[0].starting_kit ({TASK}/")


def test_an_invalid_sample_that_scores_is_caught(tmp_path):
    scorer = SCORER.replace('if "invalid" in submitted:', 'if False:')
    report = run_bundle(tmp_path, scorer)
    assert any(f.rule == 24 and f.path.endswith("invalid_nan)") and "must exit non-zero" in f.message
               for f in report.errors), report.messages()


def test_an_invalid_sample_must_say_error_on_stderr(tmp_path):
    scorer = SCORER.replace('print("ERROR: result.json: means[0][0] is NaN", file=sys.stderr)',
                            'print("something went wrong", file=sys.stderr)')
    report = run_bundle(tmp_path, scorer)
    assert any(f.rule == 24 and "no line starting with 'ERROR:'" in f.message for f in report.errors)


def test_reference_values_are_read_from_npy_hdf5_and_text(tmp_path):
    import h5py
    import numpy as np

    np.save(tmp_path / "labels.npy", np.array([[0.123456789, 0.5]]))
    with h5py.File(tmp_path / "truth.h5", "w") as handle:
        handle["planet/trace"] = np.array([2.718281828])
    (tmp_path / "scaler.json").write_text('{"mean": [0.31415926535]}')
    assert runs.reference_strings(tmp_path) == {"0.123456789", "2.718281828", "0.31415926535"}
