"""srbench.qualification and srbench.realworld end to end (task methods), and the organiser's rank command."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from codascore.cli import main as cli_main
from codascore.errors import ReferenceDataError, SubmissionError
from codascore.registry import get_task
from codascore.srbench.files import clean_column
from codascore.srbench.metrics import head_to_head, representative


@pytest.fixture(scope="module")
def root(project_data) -> Path:
    return project_data


def _score(root: Path, name: str, sample: str, ref_dir: Path | None = None):
    task = get_task(name)
    ref_dir = ref_dir or root / "reference_data" / name
    raw = yaml.safe_load((ref_dir / "task.yaml").read_text())
    config = task.load_config({k: v for k, v in raw.items() if k != "task"})
    reference = task.load_reference(ref_dir, config)
    submission = task.load_submission(root / "sample_submissions" / name / sample, reference, config)
    result = task.score(reference, submission, config)
    task.report(result, reference, submission, config)
    return result


def test_polynomial_qualifies_and_linear_regression_ties_with_itself(root):
    polynomial = _score(root, "srbench.qualification", "polynomial")
    assert polynomial.scores["qualified"] == 1.0 and polynomial.scores["score"] > 0
    linear = _score(root, "srbench.qualification", "linear_regression")
    assert linear.scores == {**linear.scores, "qualified": 0.0, "score": 0.0}


@pytest.mark.parametrize("name", ["srbench.qualification", "srbench.realworld"])
def test_injection_sample_is_refused(root, name):
    with pytest.raises(SubmissionError, match="not allowed"):
        _score(root, name, "invalid_injection")


def test_realworld_ranks_against_the_pool_with_expert_trust(root):
    result = _score(root, "srbench.realworld", "linear_regression")
    pool = result.details["pool"]
    assert set(pool) == {"submission", "linear_regression", "constant_mean", "polynomial"}
    # same models as the pool's linear_regression but a higher placeholder trust (3 vs 2): not worse
    assert pool["submission"] >= pool["linear_regression"]
    assert result.scores["mean_trust"] == 3.0
    # the accuracy-against-complexity figure gets every method of the pool on every target
    points = result.report_data["accuracy_complexity"]
    assert points and all(set(methods) == set(pool) for methods in points.values())


def test_realworld_without_expert_rating_warns_and_ranks_trust_zero(root, tmp_path):
    name = "srbench.realworld"
    ref_dir = tmp_path / "ref"
    shutil.copytree(root / "reference_data" / name, ref_dir)
    expert = ref_dir / "expert.csv"
    expert.write_text("\n".join(line for line in expert.read_text().splitlines() if ",submission," not in line))
    result = _score(root, name, "linear_regression", ref_dir=ref_dir)
    assert any("no trust score" in w for w in result.warnings)
    assert result.scores["score"] == 0.0  # a zero rank makes every harmonic mean 0


def test_head_to_head_and_representative_rules():
    assert head_to_head(0.9004, 0.9) == 0.0  # equal after rounding to 3 decimals
    assert head_to_head(0.91, 0.9) == -1.0 and head_to_head(0.5, 0.9) == 1.0
    assert head_to_head(None, 0.9) == 1.0  # a missing run ranks last
    runs = [{"r2_test": v, "i": i} for i, v in enumerate([0.1, 0.5, 0.9, 0.5])]
    assert representative(runs)["i"] == 1  # closest to the median 0.5, first on ties
    assert clean_column(" a.b ") == "a_b"


def test_missing_expert_file_is_an_organiser_error(root, tmp_path):
    name = "srbench.realworld"
    shutil.copytree(root / "reference_data" / name, tmp_path / "ref")
    (tmp_path / "ref" / "expert.csv").unlink()
    task = get_task(name)
    with pytest.raises(ReferenceDataError, match="expert"):
        task.load_reference(tmp_path / "ref", task.load_config({}))


def test_rank_command_reproduces_the_golden_table(repo_root, tmp_path, capsys):
    tables = json.loads((repo_root / "tests" / "data" / "srbench_ranking_visible.json").read_text())["tables"]
    table = tables[-1]
    path = tmp_path / "runs.csv"
    pd.DataFrame(table["rows"]).to_csv(path, index=False)
    assert cli_main(["srbench", "rank", str(path), "--aggregate", "mean", "--out", str(tmp_path / "f.csv")]) == 0
    final = pd.read_csv(tmp_path / "f.csv", index_col=0)["score"].to_dict()
    assert final == pytest.approx(table["final"], rel=1e-9)


def test_rank_command_reads_details_json(tmp_path, capsys):
    instances = [{"id": f"d/{seed}", "r2_test": r2, "simplicity": -1.0, "property": 1.0}
                 for seed, r2 in ((1, 0.9), (2, 0.8))]
    for name, shift in (("alice", 0.0), ("bob", -0.5)):
        folder = tmp_path / name
        folder.mkdir()
        shifted = [{**i, "r2_test": i["r2_test"] + shift} for i in instances]
        (folder / "details.json").write_text(json.dumps({"instances": shifted}))
    assert cli_main(["srbench", "rank", str(tmp_path / "alice" / "details.json"),
                     str(tmp_path / "bob" / "details.json")]) == 0
    out = capsys.readouterr().out
    assert out.index("alice") < out.index("bob")


@pytest.mark.parametrize("name", ["srbench.qualification", "srbench.realworld"])
def test_score_changes_nothing_it_is_given(root, name):
    task = get_task(name)
    config = task.load_config({})
    reference = task.load_reference(root / "reference_data" / name, config)
    submission = task.load_submission(root / "sample_submissions" / name / "polynomial", reference, config)
    before = pickle.dumps((reference, submission, config))
    result = task.score(reference, submission, config)
    assert pickle.dumps((reference, submission, config)) == before
    assert not [key for key in result.details if key.startswith("_")]
    assert not [key for instance in result.instances for key in instance if key.startswith("_")]


def test_rank_command_raises_one_error_line_for_bad_input(tmp_path, capsys):
    details = tmp_path / "alice" / "details.json"
    details.parent.mkdir()
    details.write_text(json.dumps({"instances": []}))
    assert cli_main(["srbench", "rank", str(details)]) == 2  # a ReferenceDataError: the organiser's
    assert capsys.readouterr().err == f"error: {details}: no per-run instances (is it a details.json of " \
                                      "srbench.synthetic?)\n"
    assert cli_main(["srbench", "rank", str(details), "--names", "a", "b"]) == 2
    assert "--names has 2 names for 1 details.json files" in capsys.readouterr().err
    table = tmp_path / "runs.csv"
    table.write_text("algorithm,dataset,run,r2_test,simplicity,property\nA,d,0,0.5,inf,1\n")
    assert cli_main(["srbench", "rank", str(table)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the results cannot be ranked: results['simplicity'] row 0") and "ERROR" not in err
