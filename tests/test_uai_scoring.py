"""Scoring rules of the UAI tasks (docs/uai.md#scoring): per-instance score, the MLC instance score, invalid
answer classes, new best answers, MaxErr about 0, a pure score(), and end-to-end runs of the project_data samples
through the local runner."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from codascore import runner
from codascore.errors import ReferenceDataError, SubmissionError
from codascore.uai import TASKS, files, hellinger, instance_score, metrics, result_files
from codascore.uai.best_known import update_best


def test_instance_score_rule():
    assert instance_score(0.0, 2.0) == 100.0
    assert instance_score(2.0, 2.0) == 0.0            # the trivial answer
    assert instance_score(5.0, 2.0) == 0.0            # worse than trivial
    assert instance_score(0.5, 2.0) == pytest.approx(75.0)
    assert instance_score(math.inf, 2.0) == 0.0       # zero likelihood
    assert instance_score(1e-7, 0.0) == 100.0         # MaxErr ~ 0, answer within the tolerance
    assert instance_score(1e-3, 1e-7) == 0.0          # MaxErr ~ 0, answer outside it
    assert instance_score(1e-3, 1e-7, tolerance=1e-2) == 100.0
    with pytest.raises(ValueError, match="max_err"):
        instance_score(0.1, math.nan)
    with pytest.raises(ValueError, match="err must be"):
        instance_score(-0.1, 1.0)


def test_hellinger_definition():
    assert hellinger([1, 0], [0, 1]) == pytest.approx(1.0)
    assert hellinger([0.5, 0.5], [2, 2]) == 0.0       # renormalised
    p, q = np.array([0.2, 0.8]), np.array([0.6, 0.4])
    assert hellinger(p, q) == pytest.approx(np.linalg.norm(np.sqrt(p) - np.sqrt(q)) / math.sqrt(2))
    with pytest.raises(ValueError, match=r"q\[1\] = -0.1"):
        hellinger([0.5, 0.5], [1.1, -0.1])
    assert metrics.mean_hellinger([[1, 0], [0.5, 0.5]], [[0, 1], [0.5, 0.5]], observed=[0]) == 0.0


def score_folder(task, root: Path, folder: Path):
    config = task.load_config({})
    reference = task.load_reference(root / "reference_data" / task.name, config)
    return task.score(reference, task.load_submission(folder, reference, config), config)


@pytest.mark.parametrize("name", sorted(TASKS))
def test_exact_trivial_perturbed_samples(project_data, name):
    task = TASKS[name]
    samples = project_data / "sample_submissions" / name
    exact = score_folder(task, project_data, samples / "exact")
    assert exact.scores["score"] == 100.0 and exact.scores["n_perfect"] == len(exact.instances)
    trivial = score_folder(task, project_data, samples / "trivial")
    stored = json.loads((project_data / "reference_data" / name / "reference.json").read_text())["instances"]
    for record, ref in zip(trivial.instances, stored):
        # 0, or 100 where the trivial answer is already exact (MaxErr ~ 0); MLC averages its lines.
        lines = ref.get("lines", [ref])
        expected = 100.0 * np.mean([line["trivial_error"] <= 1e-6 for line in lines])
        assert record["score"] == pytest.approx(expected)
    perturbed = score_folder(task, project_data, samples / "perturbed")
    assert 0.0 < perturbed.scores["score"] < 100.0
    assert perturbed.scores["n_answered"] == len(perturbed.instances)


@pytest.mark.parametrize("name", sorted(TASKS))
def test_malformed_sample_scores_zero_with_reasons(project_data, name):
    task = TASKS[name]
    result = score_folder(task, project_data, project_data / "sample_submissions" / name / "malformed")
    assert result.scores == {"score": 0.0, "n_answered": 0.0, "n_perfect": 0.0}
    assert all(r["status"] in ("missing", "invalid") and r["reason"] for r in result.instances)


def test_a_submission_answering_2_of_7_instances_is_scored_with_a_warning(project_data, tmp_path):
    task = TASKS["uai.mar"]
    exact = project_data / "sample_submissions" / "uai.mar" / "exact"
    assert not [w for w in score_folder(task, project_data, exact).warnings if "answered" in w]
    answers = sorted(exact.glob("*.uai.MAR"))
    partial = tmp_path / "partial"
    partial.mkdir()
    for path in answers[:2]:
        shutil.copy(path, partial / path.name)
    result = score_folder(task, project_data, partial)
    assert len(answers) == 7 and result.scores["score"] == pytest.approx(200 / 7)
    unanswered = ", ".join(r["id"] for r in result.instances if r["status"] == "missing")
    assert result.warnings == [f"answered 2 of 7 instances; the 5 other(s) score 0: ids {unanswered}"]


def test_unreadable_answers_are_named_in_a_warning(project_data, tmp_path):
    result = score_folder(TASKS["uai.mpe"], project_data, project_data / "sample_submissions" / "uai.mpe" / "malformed")
    unreadable = [r["id"] for r in result.instances if r["status"] == "invalid"]
    assert unreadable and any(w.startswith(f"{len(unreadable)} answer(s) could not be read and score 0")
                              and unreadable[0] in w for w in result.warnings)


def test_each_invalid_answer_class_has_its_reason(project_data, tmp_path):
    task = TASKS["uai.mpe"]
    ref = project_data / "reference_data" / "uai.mpe"
    data = json.loads((ref / "reference.json").read_text())["instances"]
    ped = next(r for r in data if r["id"].startswith("pedigree"))
    model = files.read_model(ref / "models" / f"{ped['id']}.uai")
    evidence = files.read_evidence(ref / "models" / f"{ped['id']}.uai.evid", model)
    best = np.array(ped["best_assignment"])
    # A zero-likelihood assignment: a child genotype impossible under Mendelian transmission.
    zero = best.copy()
    for v in range(model.n_vars):
        if v in evidence:
            continue
        for val in range(model.cards[v]):
            zero[v] = val
            if metrics.log10_likelihood(model, zero) == -math.inf:
                break
        else:
            zero[v] = best[v]
            continue
        break
    flipped = best.copy()
    v_ev = min(evidence)
    flipped[v_ev] = 1 - flipped[v_ev]
    cases = {
        "wrong task word": ("MMAP\n" + result_files.format_mpe(best).split("\n", 1)[1], "does not name the task"),
        "not an integer": ("MPE\n2 x\n", "not an integer"),
        "wrong count": ("MPE\n5 0 0\n", "neither"),
        "evidence mismatch": (result_files.format_mpe(flipped), "evidence variable"),
        "zero likelihood": (result_files.format_mpe(zero), "zero likelihood"),
    }
    for label, (text, reason) in cases.items():
        folder = tmp_path / label.replace(" ", "_")
        folder.mkdir()
        (folder / f"{ped['id']}.uai.MPE").write_text(text)
        result = score_folder(task, project_data, folder)
        record = next(r for r in result.instances if r["id"] == ped["id"])
        assert record["score"] == 0.0 and reason in record["reason"], label
        others = [r for r in result.instances if r["id"] != ped["id"]]
        assert all(r["status"] == "missing" and "missing result file" in r["reason"] for r in others)


def test_better_than_best_mpe_scores_100_and_is_reported(project_data, tmp_path):
    ref = tmp_path / "ref"
    shutil.copytree(project_data / "reference_data" / "uai.mpe", ref)
    data = json.loads((ref / "reference.json").read_text())
    target = data["instances"][1]
    true_best = target["best_log10"]
    target["best_log10"] = true_best - 0.5  # pretend the stored best is worse than the optimum
    target["trivial_log10"] = min(target["trivial_log10"], target["best_log10"] - 1.0)
    (ref / "reference.json").write_text(json.dumps(data))
    task = TASKS["uai.mpe"]
    config = task.load_config({})
    reference = task.load_reference(ref, config)
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / f"{target['id']}.uai.MPE").write_text(result_files.format_mpe(target["best_assignment"]))
    result = task.score(reference, task.load_submission(sub, reference, config), config)
    record = next(r for r in result.instances if r["id"] == target["id"])
    assert record["score"] == 100.0
    (new,) = result.details["new_best"]
    assert new["id"] == target["id"] and new["log10_value"] == pytest.approx(true_best)
    details = tmp_path / "details.json"
    details.write_text(json.dumps({"task": "uai.mpe", **result.details}))
    assert len(update_best(ref, [details])) == 1
    assert json.loads((ref / "reference.json").read_text())["instances"][1]["best_log10"] == pytest.approx(true_best)
    assert update_best(ref, [details]) == []  # nothing better any more


def test_reference_errors_are_organiser_errors(project_data, tmp_path):

    ref = tmp_path / "ref"
    shutil.copytree(project_data / "reference_data" / "uai.pr", ref)
    data = json.loads((ref / "reference.json").read_text())
    data["instances"][0]["trivial_log10_z"] = None
    (ref / "reference.json").write_text(json.dumps(data))
    with pytest.raises(ReferenceDataError, match="trivial_log10_z must be a finite number"):
        TASKS["uai.pr"].load_reference(ref, {})


def test_generation_is_deterministic(project_data, tmp_path):
    task = TASKS["uai.mmap"]
    task.generate(tmp_path, dict(task.defaults), progress=lambda message: None)
    for path in (project_data / "reference_data" / "uai.mmap").rglob("*"):
        if path.is_file():
            twin = tmp_path / path.relative_to(project_data)
            assert twin.read_bytes() == path.read_bytes(), path.name


@pytest.mark.parametrize("name", ["uai.pr", "uai.mmap"])
def test_end_to_end_samples_through_the_runner(project_data, tmp_path, name):
    samples = project_data / "sample_submissions" / name
    exact = runner.run(name, samples / "exact", tmp_path / "exact", root=project_data)
    assert exact.scored and exact.scores["score"] == 100.0
    bad = runner.run(name, samples / "invalid_no_result_files", tmp_path / "bad", root=project_data)
    assert bad.exit_code == 1 and not bad.violations
    page = (tmp_path / "exact" / "scoring" / "output" / "detailed_results.html")
    if not page.exists():
        page = next((tmp_path / "exact").rglob("detailed_results.html"))
    assert "Per-instance scores" in page.read_text()


def test_code_submission_runs_the_solver_per_instance(project_data, tmp_path):
    name = "uai.mar"
    result = runner.run(name, project_data / "sample_submissions" / name / "code_loopy_bp", tmp_path / "code",
                        root=project_data)
    assert result.scored and result.scores["n_answered"] == 7 and result.scores["score"] > 50.0


def test_reference_cli_rebuilds_the_values_from_a_models_folder(project_data, tmp_path, capsys):
    from codascore.cli import main

    models = project_data / "reference_data" / "uai.mmap" / "models"
    assert main(["build-reference", "uai.mmap", str(models), str(tmp_path / "out")]) == 0
    assert "[7/7] uai.mmap" in capsys.readouterr().err  # progress: the standard error
    rebuilt = json.loads((tmp_path / "out" / "reference.json").read_text())["instances"]
    original = json.loads((project_data / "reference_data" / "uai.mmap" / "reference.json").read_text())["instances"]
    by_id = {r["id"]: r for r in original}
    for record in rebuilt:
        assert record["best_log10"] == pytest.approx(by_id[record["id"]]["best_log10"], abs=1e-12)
        assert record["trivial_log10"] == pytest.approx(by_id[record["id"]]["trivial_log10"], abs=1e-12)
    assert main(["build-reference", "uai.mmap", str(models), str(tmp_path / "small"), "--set", "max_table_size=4"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith("error: ") and "max_table_size = 4" in err and not (tmp_path / "small").exists()


def test_pr_minus_infinity_worse_than_trivial_and_mar_renormalisation(project_data, tmp_path):
    ref = json.loads((project_data / "reference_data" / "uai.pr" / "reference.json").read_text())["instances"]
    (tmp_path / "pr").mkdir()
    (tmp_path / "pr" / f"{ref[0]['id']}.uai.PR").write_text("PR\n-inf\n")
    worse = ref[1]["trivial_log10_z"] + (ref[1]["trivial_log10_z"] - ref[1]["log10_z"])  # twice the trivial error
    (tmp_path / "pr" / f"{ref[1]['id']}.uai.PR").write_text(result_files.format_pr(worse))
    result = score_folder(TASKS["uai.pr"], project_data, tmp_path / "pr")
    assert result.instances[0]["score"] == 0.0 and "Z = 0" in result.instances[0]["reason"]
    assert result.instances[1]["status"] == "ok" and result.instances[1]["score"] == 0.0
    assert result.instances[1]["error"] == pytest.approx(2 * result.instances[1]["max_error"])
    # An exact MAR answer scaled by 3 is renormalised: still 100, with a warning.
    exact = project_data / "sample_submissions" / "uai.mar" / "exact"
    (tmp_path / "mar").mkdir()
    for path in exact.iterdir():
        tokens = path.read_text().split()
        body, out, pos = tokens[2:], [tokens[2]], 1
        while pos < len(body):
            card = int(body[pos])
            out += [str(card)] + [repr(3 * float(x)) for x in body[pos + 1:pos + 1 + card]]
            pos += 1 + card
        (tmp_path / "mar" / path.name).write_text("MAR\n" + " ".join(out) + "\n")
    result = score_folder(TASKS["uai.mar"], project_data, tmp_path / "mar")
    assert result.scores["score"] == 100.0
    assert result.warnings and "renormalised" in result.warnings[0]


def test_ingestion_runs_run_sh_per_instance_and_reports_a_failing_solver(project_data, tmp_path):

    task = TASKS["uai.pr"]
    config = task.load_config({"time_limit": 10.0})
    input_dir = project_data / "input_data" / "uai.pr"
    code = tmp_path / "code"
    code.mkdir()
    # A shell solver: parses its arguments like the 2022 environment and answers log10 Z = 0.
    (code / "run.sh").write_text('while [ $# -gt 0 ]; do [ "$1" = --result ] && out=$2; shift; done\n'
                                 'printf "PR\\n-BEGIN-\\n0.0\\n" > "$out"\n')
    out = tmp_path / "out"
    task.ingest(input_dir, out, code, config)
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(f"{p.name}.PR" for p in (input_dir / "models").glob("*.uai"))
    assert result_files.parse_pr((out / names[0]).read_text()) == 0.0
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "solver.py").write_text("raise RuntimeError('no model support yet')\n")
    with pytest.raises(SubmissionError, match="no model support yet"):
        task.ingest(input_dir, tmp_path / "out2", broken, config)
    results_only = tmp_path / "results_only"
    results_only.mkdir()
    task.ingest(input_dir, tmp_path / "out3", results_only, config)  # a results submission: nothing to run
    assert not (tmp_path / "out3").exists()


def test_ingestion_warns_about_the_instances_its_solver_failed_on(project_data, tmp_path, capsys):
    task = TASKS["uai.pr"]
    input_dir = project_data / "input_data" / "uai.pr"
    code = tmp_path / "code"
    code.mkdir()
    # answers log10 Z = 0, except on bn_1, where it fails
    (code / "run.sh").write_text('while [ $# -gt 0 ]; do [ "$1" = --result ] && out=$2; shift; done\n'
                                 'case "$out" in *bn_1.uai.PR) exit 3;; esac\n'
                                 'printf "PR\\n-BEGIN-\\n0.0\\n" > "$out"\n')
    task.ingest(input_dir, tmp_path / "out", code, task.load_config({"time_limit": 10.0}))
    n = len(list((input_dir / "models").glob("*.uai")))
    err = capsys.readouterr().err
    assert f"WARNING: the solver failed on 1 of {n} instances (bn_1)" in err
    assert f"progress: instances solved {n}/{n}" in err


def test_mlc_instance_score_is_the_mean_line_score():
    """Each test line scores by the per-instance rule against its optimum; unreadable or zero-likelihood
    lines (Err = inf) score 0; the instance score is the plain mean."""
    assert metrics.mlc_instance_score([0.0, 1.0, math.inf, 3.0], [2.0, 2.0, 2.0, 2.0]) == pytest.approx(37.5)
    assert metrics.mlc_instance_score([1e-7, 0.5], [0.0, 1e-7]) == pytest.approx(50.0)  # MaxErr ~ 0 lines
    with pytest.raises(ValueError, match="one Err per MaxErr"):
        metrics.mlc_instance_score([0.1], [1.0, 1.0])


def _snapshot(value):
    """A comparable copy of reference or submission objects: arrays as bytes, objects by their fields."""
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, dict):
        return {k: _snapshot(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_snapshot(v) for v in value]
    if hasattr(value, "__dict__"):
        return (type(value).__name__, _snapshot(vars(value)))
    return value


@pytest.mark.parametrize("name", sorted(TASKS))
def test_score_changes_nothing_it_is_given_and_keeps_no_private_keys(project_data, name):
    task = TASKS[name]
    config = task.load_config({})
    reference = task.load_reference(project_data / "reference_data" / name, config)
    submission = task.load_submission(project_data / "sample_submissions" / name / "perturbed", reference, config)
    before = _snapshot([reference, submission, config])
    result = task.score(reference, submission, config)
    assert _snapshot([reference, submission, config]) == before
    assert _snapshot(task.score(reference, submission, config)) == _snapshot(result)  # no state carried over
    keys = set(result.details) | {k for record in result.instances for k in record}
    assert not [k for k in keys if k.startswith("_")]
    assert len(result.report_data["points"]) > 0


def test_mlc_records_carry_line_counts_and_no_made_up_error(project_data):
    task = TASKS["uai.mlc"]
    result = score_folder(task, project_data, project_data / "sample_submissions" / "uai.mlc" / "perturbed")
    for record in result.instances:
        assert "error" not in record and "max_error" not in record
        assert record["n_lines"] == record["n_valid_lines"] > 0
    assert len(result.report_data["points"]) == sum(r["n_lines"] for r in result.instances)


def test_update_best_command_errors(project_data, tmp_path, capsys):
    from codascore.cli import main

    bad = tmp_path / "details.json"
    bad.write_text("{not json")
    assert main(["uai", "update-best", str(project_data / "reference_data" / "uai.pr"), str(bad)]) == 2
    assert capsys.readouterr().err.startswith("error: ")
    ref = tmp_path / "ref"
    shutil.copytree(project_data / "reference_data" / "uai.mpe", ref)
    assert main(["uai", "update-best", str(ref), str(bad)]) == 2  # ReferenceDataError
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "details.json: not a details.json" in err and "ERROR" not in err


# A solver as 2022's Docker images ran it: no arguments read, only the requirements page's environment
# variables; it refuses to run without its memory limit, as solvers that size their caches from MEMKB do.
DOCKER_STYLE_RUN_SH = """set -eu
: "${MEMKB:?MEMKB is not set}" "${TIMESEC:?TIMESEC is not set}"
test -r "$MODEL" && test -r "$EVID"
printf 'PR\\n-BEGIN-\\n%s\\n' "$(( MEMKB % 1000 ))" > "$RESULT"
"""


def test_a_run_sh_solver_reading_memkb_is_scored_without_exec_bits(project_data, tmp_path):
    task = TASKS["uai.pr"]
    input_dir = project_data / "input_data" / "uai.pr"
    code = tmp_path / "code"
    code.mkdir()
    (code / "run.sh").write_text(DOCKER_STYLE_RUN_SH)
    (code / "run.sh").chmod(0o644)  # as unzipped: no execute bit
    out = tmp_path / "out"
    task.ingest(input_dir, out, code, task.load_config({"memory_kb": 4_000_123, "time_limit": 10.0}))
    answers = sorted(out.iterdir())
    assert len(answers) == len(list((input_dir / "models").glob("*.uai")))
    assert all(result_files.parse_pr(path.read_text()) == 123.0 for path in answers)  # MEMKB reached the solver
    # The same solver through the local runner, with the task.yaml's memory_kb (or its default 8000000).
    result = runner.run("uai.pr", code, tmp_path / "run", root=project_data)
    assert result.scored and result.scores["n_answered"] == len(answers)
    with pytest.raises(ReferenceDataError, match="memory_kb"):
        task.ingest(input_dir, tmp_path / "out2", code, task.load_config({"memory_kb": -1}))
