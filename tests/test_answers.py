"""No answers reach participants: what each task declares (its answer samples, its perfect submission, the
scores only the answers reach), the private bundle seed, program folders without the generation modules,
and the checker's rules 29 and 30 on fixture bundles made here in code."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from bundle_fixture import PHASE1_KEYS, TASK, valid_yaml, write_bundle, zip_folder

from codascore import bundle, bundle_data, checker, competition, runner, seeds, zips
from codascore.competition import project_root
from codascore.errors import BundleError
from codascore.registry import GENERATION_MODULES, all_tasks, get_task

REPO_ROOT = project_root()

TASKS = sorted(all_tasks())
SEED_A, SEED_B = 2**100 + 20260101, 2**100 + 20260102


def task_config(ref_dir: Path, name: str) -> dict:
    return get_task(name).load_config(yaml.safe_load((ref_dir / "task.yaml").read_text()))


def tree(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in sorted(folder.rglob("*"))
            if path.is_file()}


# --------------------------------------------------------------------------- the Task contract

@pytest.mark.parametrize("name", TASKS)
def test_each_task_declares_its_answer_samples_and_what_only_the_answers_reach(project_data, tmp_path, name):
    task, ref = get_task(name), project_data / "reference_data" / name
    demo_samples = {p.name for p in (project_data / "sample_submissions" / name).iterdir() if p.is_dir()}
    assert set(task.answer_samples) <= demo_samples
    assert set(task.max_scores) <= set(task.score_keys)
    # Only UAI's answers follow from the public inputs (exact inference): nothing there is answers-only.
    assert bool(task.max_scores) != name.startswith("uai.")
    # A maximum measured on the perfect submission needs one.
    if None in task.max_scores.values():
        assert task.write_perfect_submission(ref, tmp_path / "perfect", task_config(ref, name))


@pytest.mark.parametrize("name, sample", [(n, "exact") for n in TASKS if n.startswith("uai.")]
                         + [("srbench.synthetic", "true_formulas"), ("ariel.retrieval", "ground_truth")])
def test_the_demo_truth_sample_is_the_tasks_perfect_submission(project_data, tmp_path, name, sample):
    ref = project_data / "reference_data" / name
    assert get_task(name).write_perfect_submission(ref, tmp_path / "perfect", task_config(ref, name))
    assert tree(tmp_path / "perfect") == tree(project_data / "sample_submissions" / name / sample)


#: What the perfect submission scores: the tasks' documented bounds, and UAI's 100 (which solvers reach too).
PERFECT_SCORES = {"weak_lensing.phase1": {"R_squared": 1.0}, "ariel.retrieval": {"posterior_exact": 1000.0},
                  **{name: {"score": 100.0} for name in TASKS if name.startswith("uai.")}}


@pytest.mark.parametrize("name", sorted(PERFECT_SCORES))
def test_the_perfect_submission_reaches_every_documented_bound(project_data, tmp_path, name):
    task, ref = get_task(name), project_data / "reference_data" / name
    bounds = {key: top for key, top in task.max_scores.items() if top is not None}
    assert bounds == ({} if name.startswith("uai.") else PERFECT_SCORES[name])
    assert task.write_perfect_submission(ref, tmp_path / "perfect", task_config(ref, name))
    result = runner.run(name, tmp_path / "perfect", tmp_path / "run", root=project_data)
    assert result.scored, result.error
    for key, top in PERFECT_SCORES[name].items():
        assert result.scores[key] == pytest.approx(top, abs=1e-9), key


def test_real_world_tracks_have_no_perfect_submission_only_the_r2_bound(project_data, tmp_path):
    for name in ("srbench.qualification", "srbench.realworld"):
        ref = project_data / "reference_data" / name
        assert get_task(name).write_perfect_submission(ref, tmp_path / name, task_config(ref, name)) is False
        assert get_task(name).max_scores == {"mean_r2": 1.0}


def test_the_weak_lensing_phase2_perfect_submission_beats_the_hedged_oracle(project_data, tmp_path):
    name, ref = "weak_lensing.phase2", project_data / "reference_data" / "weak_lensing.phase2"
    get_task(name).write_perfect_submission(ref, tmp_path / "perfect", task_config(ref, name))
    perfect = runner.run(name, tmp_path / "perfect", tmp_path / "p", root=project_data)
    oracle = runner.run(name, project_data / "sample_submissions" / name / "oracle", tmp_path / "o",
                        root=project_data)
    assert oracle.scores["score"] < perfect.scores["score"] <= 0


# --------------------------------------------------------------------------- seeds

def test_derived_seeds_are_reproducible_and_differ_by_master_task_and_purpose():
    state = lambda *args: seeds.sequence(*args).generate_state(4).tolist()  # noqa: E731
    assert state(SEED_A, "uai.pr") == state(SEED_A, "uai.pr")
    variants = [state(SEED_A, "uai.pr"), state(SEED_B, "uai.pr"), state(SEED_A, "uai.mar"),
                state(SEED_A, "uai.pr", "invalid samples"), state(SEED_A, "uai.pr", 2082)]
    assert len({tuple(v) for v in variants}) == len(variants)
    assert 0 <= seeds.integer(SEED_A, "srbench.synthetic", "noise_easy", 2082) < 2**32


def test_the_environment_seed_takes_precedence_and_its_value_is_never_said(tmp_path):
    (tmp_path / "bundle.seed").write_text("# a comment\n4242424242424242\n")
    said: list[str] = []
    assert bundle_data.private_seed(tmp_path, environ={"CODASCORE_BUNDLE_SEED": "987654321987"},
                                    say=said.append) == 987654321987
    assert said == [f"private bundle seed: from $CODASCORE_BUNDLE_SEED (it takes precedence over "
                    f"{tmp_path / 'bundle.seed'})"]
    assert bundle_data.private_seed(tmp_path, environ={}, say=said.append) == 4242424242424242
    assert said[1] == f"private bundle seed: from {tmp_path / 'bundle.seed'}"
    assert not any("987654321987" in line or "4242424242424242" in line for line in said)


def test_without_a_seed_one_is_drawn_into_a_private_file_and_reused(tmp_path):
    said: list[str] = []
    first = bundle_data.private_seed(tmp_path, environ={}, say=said.append)
    path = tmp_path / "bundle.seed"
    assert len(said) == 1 and "drew a new one" in said[0] and str(first) not in said[0]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert first.bit_length() > 64
    assert bundle_data.private_seed(tmp_path, environ={}, say=said.append) == first
    assert bundle_data.private_seed(tmp_path, seed_file=tmp_path / "other.seed", environ={},
                                    say=said.append) != first


@pytest.mark.parametrize("text", ["", "12 13\n", "-5\n", "0x1f\n", "seed: 12\n", "1\n2\n"])
def test_a_malformed_seed_is_an_error_naming_where_it_came_from(tmp_path, text):
    (tmp_path / "bundle.seed").write_text(text)
    with pytest.raises(BundleError, match="bundle.seed: expected one non-negative decimal integer"):
        bundle_data.private_seed(tmp_path, environ={}, say=lambda message: None)


def test_a_bundle_seed_file_is_git_ignored():
    assert "bundle.seed" in (REPO_ROOT / ".gitignore").read_text().splitlines()


#: Small generation settings (the same code paths as the bundle's, in seconds): the file the scorer
#: compares submissions with must change with the seed.
SMALL = {
    "weak_lensing.phase1": ({"n_test": 40, "n_train_cosmologies": 3, "n_train_realisations": 2}, "label_test.npy"),
    "weak_lensing.phase2": ({"n_test": 40, "n_train_cosmologies": 3, "n_train_realisations": 2},
                            "label_test_phase2.npy"),
    "weak_lensing.phase2_deployed": ({"n_test": 40, "n_train_cosmologies": 3, "n_train_realisations": 2},
                                     "label_test_phase2.npy"),
    "ariel.retrieval": ({}, "ground_truth.npz"),
    "srbench.qualification": ({}, "data/friedman1_standin.csv"),
    "srbench.realworld": ({}, "test/value_cases.csv"),
    "srbench.synthetic": ({"datasets": ["exact_formula_easier", "noise_easy"], "seeds": [2082, 3946]},
                          "test/noise_easy/2082.csv"),
    **{f"uai.{kind}": ({}, "reference.json") for kind in ("pr", "mar", "mpe", "mmap", "mlc")},
}


@pytest.mark.parametrize("name", TASKS)
def test_a_private_seed_gives_the_same_bytes_again_and_another_seed_other_answers(tmp_path, name):
    assert set(SMALL) == set(TASKS)
    task, (overrides, truth_file) = get_task(name), SMALL[name]
    config = {**task.defaults, **overrides}
    quiet = lambda message: None  # noqa: E731
    roots = {label: tmp_path / label for label in ("a", "a_again", "b", "demo")}
    for label, seed in (("a", SEED_A), ("a_again", SEED_A), ("b", SEED_B), ("demo", None)):
        task.generate(roots[label], dict(config), progress=quiet, seed=seed)
    a = {folder: tree(roots["a"] / folder / name) for folder in competition.DATA_FOLDERS}
    assert a == {folder: tree(roots["a_again"] / folder / name) for folder in competition.DATA_FOLDERS}
    truth = {label: (root / "reference_data" / name / truth_file).read_bytes() for label, root in roots.items()}
    assert len({truth["a"], truth["b"], truth["demo"]}) == 3
    # The master seed itself goes into no generated file (bundle_data records it in reference data only).
    for folder in a.values():
        assert not [path for path, data in folder.items() if str(SEED_A).encode() in data]


def test_bundle_data_records_the_seed_in_reference_data_only_and_caches_by_seed(tmp_path):
    said: list[str] = []
    root = bundle_data.generate(tmp_path, SEED_A, ["uai.pr", "no.such_task"], progress=said.append)
    assert root.parent == tmp_path / bundle_data.DATA_DIR
    provenance = yaml.safe_load((root / "reference_data" / "uai.pr" / bundle_data.PROVENANCE_FILE).read_text())
    assert provenance["seed"] == SEED_A and provenance["task"] == "uai.pr"
    assert provenance["codascore"] == __import__("codascore").__version__
    holding = [path for path in root.rglob("*") if path.is_file() and str(SEED_A).encode() in path.read_bytes()]
    assert holding == [root / "reference_data" / "uai.pr" / bundle_data.PROVENANCE_FILE]
    assert str(SEED_A) not in root.as_posix()
    said.clear()
    assert bundle_data.generate(tmp_path, SEED_A, ["uai.pr"], progress=said.append) == root
    assert said == [f"bundle data: 1 task(s) from the cache {root}"]
    assert bundle_data.generate(tmp_path, SEED_B, ["uai.pr"], progress=said.append) != root


def test_the_tasks_of_a_bundle_are_read_from_its_yaml():
    assert bundle_data.competition_tasks(REPO_ROOT, ["uai"]) == [f"uai.{k}" for k in ("pr", "mar", "mpe", "mmap",
                                                                                      "mlc")]
    assert set(bundle_data.competition_tasks(REPO_ROOT, ["suite"])) == set(TASKS)


# --------------------------------------------------------------------------- program folders

def test_every_generation_module_exists_and_no_program_folder_holds_one():
    library = {name for name, _ in zips.folder_entries(bundle.LIBRARY_DIR)}
    assert set(GENERATION_MODULES) <= library
    for program in ("scoring_program", "ingestion_program"):
        held = {name for name, _ in bundle.program_entries(REPO_ROOT / program)}
        assert not {f"codascore/{m}" for m in GENERATION_MODULES} & held
        organiser_only = {name for name in library if name.startswith(bundle.ORGANISER_PACKAGES)}
        assert not {f"codascore/{m}" for m in organiser_only} & held
        assert {f"codascore/{m}" for m in library - set(GENERATION_MODULES) - organiser_only} <= held


def test_every_module_of_a_program_folder_imports_without_the_generation_modules(tmp_path):
    """A module importing a generator at load time would fail here; the bundle tests then score and ingest
    every task's starting kit through such program folders."""
    runner.materialise(bundle.program_zip(REPO_ROOT / "scoring_program"), tmp_path / "program")
    modules = sorted(".".join(path.relative_to(tmp_path / "program").with_suffix("").parts)
                     for path in (tmp_path / "program" / "codascore").rglob("*.py"))
    modules = [m.removesuffix(".__init__") for m in modules if not m.endswith("__main__")]
    code = ("import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
            "assert all(m.__file__.startswith(sys.path[0]) for n, m in sys.modules.items() "
            "if n.startswith('codascore'))\n")
    done = subprocess.run([sys.executable, "-c", code, *modules], cwd=tmp_path / "program", capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(tmp_path / "program")})
    assert done.returncode == 0, done.stderr
    assert "codascore.uai.bucket_elimination" in modules and "codascore.weak_lensing.generate" not in modules


# --------------------------------------------------------------------------- checker rule 29

REFERENCE = f"reference_data/{TASK}/label_test.npy"
TRUTH = b"\x93NUMPY the private truth of the fixture"


def answers_bundle(tmp_path, files: dict) -> Path:
    data = valid_yaml()
    data["phases"][0]["starting_kit"] = f"sample_submissions/{TASK}"
    base = {REFERENCE: TRUTH, f"sample_submissions/{TASK}/dummy/result.json": '{"means": []}'}
    return write_bundle(tmp_path / "b", data, {**base, **files})


def rule_29(report) -> list[str]:
    return [str(f) for f in report.findings if f.rule == 29]


def test_the_fixture_without_answers_passes_rule_29(tmp_path):
    folder = answers_bundle(tmp_path, {})
    assert rule_29(checker.check_bundle(zip_folder(folder, tmp_path / "b.zip"))) == []


@pytest.mark.parametrize("copy, at", [
    (f"sample_submissions/{TASK}/dummy/labels.npy", "phases[0].starting_kit"),
    ("scoring_program/cached_truth.npy", "tasks[0].scoring_program"),
    ("pages/overview.md", "pages[0].file"),
])
def test_a_copy_of_a_reference_file_anywhere_participants_download_is_an_error(tmp_path, copy, at):
    report = checker.check_bundle(zip_folder(answers_bundle(tmp_path, {copy: TRUTH}), tmp_path / "b.zip"))
    assert any(f.rule == 29 and f.severity == "error" and f.path == at and f"is a copy of the reference file "
               f"{REFERENCE}" in f.message for f in report.findings), report.messages()


def test_a_copy_of_a_file_the_input_data_also_holds_is_not_a_secret(tmp_path):
    data = valid_yaml()
    data["tasks"][0]["input_data"] = f"input_data/{TASK}"
    data["phases"][0]["starting_kit"] = f"sample_submissions/{TASK}"
    shared = b"a model file that the participant's code receives anyway"
    folder = write_bundle(tmp_path / "b", data, {
        f"input_data/{TASK}/task.yaml": f"task: {TASK}\n", f"input_data/{TASK}/model.txt": shared,
        f"reference_data/{TASK}/model.txt": shared, f"sample_submissions/{TASK}/dummy/model.txt": shared})
    assert rule_29(checker.check_bundle(folder)) == []


def test_a_sample_the_task_declares_made_from_the_answers_is_an_error_in_a_zip(tmp_path):
    assert "calibrated" in get_task(TASK).answer_samples
    folder = answers_bundle(tmp_path, {f"sample_submissions/{TASK}/calibrated/result.json": '{"means": []}'})
    in_zip = checker.check_bundle(zip_folder(folder, tmp_path / "b.zip"))
    assert [(f.severity, f.path) for f in in_zip.findings if f.rule == 29] == [("error", "phases[0].starting_kit")]
    assert "weak_lensing.phase1/calibrated: made from the answers" in rule_29(in_zip)[0]
    # A source folder: the builder leaves it out, so the checker says so without failing.
    in_folder = checker.check_bundle(folder)
    assert [f.severity for f in in_folder.findings if f.rule == 29] == ["warning"]
    assert "`codascore bundle` leaves them out" in rule_29(in_folder)[0]


def test_a_program_folder_holding_a_generation_module_is_an_error(tmp_path):
    folder = answers_bundle(tmp_path, {"scoring_program/codascore/__init__.py": "",
                                       "scoring_program/codascore/weak_lensing/generate.py": "SEED = 1\n"})
    report = checker.check_bundle(zip_folder(folder, tmp_path / "b.zip"))
    assert any(f.rule == 29 and f.path == "tasks[0].scoring_program" and "generation modules "
               "(codascore/weak_lensing/generate.py)" in f.message for f in report.errors), report.messages()


def test_rules_29_and_30_are_listed():
    assert "holds the answers" in checker.RULES[29] and "only the answers reach" in checker.RULES[30]


# --------------------------------------------------------------------------- checker rule 30 (--run)

FAKE_SCORER = """\
import json, os, sys

inp, out = sys.argv[1], sys.argv[2]
submitted = json.load(open(os.path.join(inp, "res", "result.json")))
with open(os.path.join(out, "scores.json"), "w") as f:
    json.dump({"score": 1.0, "avg_coverage": 0.5, "R_squared": submitted["r2"], "MSE": 0.1}, f)
"""


def test_a_sample_reaching_a_documented_bound_is_an_error(tmp_path):
    assert get_task(TASK).max_scores == {"R_squared": 1.0} and "R_squared" in PHASE1_KEYS
    folder = answers_bundle(tmp_path, {"scoring_program/score.py": FAKE_SCORER,
                                       f"sample_submissions/{TASK}/dummy/result.json": '{"r2": 0.4}',
                                       f"sample_submissions/{TASK}/knows/result.json": '{"r2": 1.0}'})
    data = yaml.safe_load((folder / "competition.yaml").read_text())
    data["enable_detailed_results"] = False
    (folder / "competition.yaml").write_text(yaml.safe_dump(data))
    report = checker.check_bundle(folder, run=True)
    hits = [f for f in report.errors if f.rule == 30]
    assert [f.path for f in hits] == [f"phases[0].starting_kit ({TASK}/knows)"], report.messages()
    assert "R_squared = 1 reaches 1 (a documented bound)" in hits[0].message


def test_a_sample_scoring_like_the_perfect_submission_is_an_error(tmp_path):
    """weak_lensing.phase2's maximum is what its perfect submission scores: the checker writes it from the
    reference data and runs it with the bundle's own scoring program."""
    name = "weak_lensing.phase2"
    is_ood = np.array([0, 1, 0, 0, 1, 0, 1, 0], dtype=np.int8)
    data = valid_yaml()
    data["tasks"][0]["reference_data"] = f"reference_data/{name}"
    data["phases"] = data["phases"][:1]
    del data["phases"][0]["end"]
    data["phases"][0]["starting_kit"] = f"sample_submissions/{name}"
    data["enable_detailed_results"] = False
    files = {name: path for name, path in bundle.program_entries(REPO_ROOT / "scoring_program")}
    files = {f"scoring_program/{inner}": path.read_bytes() for inner, path in files.items()}
    folder = write_bundle(tmp_path / "b", data, {
        **files, f"reference_data/{TASK}/task.yaml": None, f"reference_data/{name}/task.yaml": f"task: {name}\n",
        f"sample_submissions/{name}/knows/result.json": '{"p_ind": %s}' % (1 - is_ood).tolist(),
        f"sample_submissions/{name}/hedged/result.json": '{"p_ind": %s}' % [0.9 - 0.8 * v for v in is_ood]})
    np.save(folder / "reference_data" / name / "label_test_phase2.npy", is_ood)
    report = checker.check_bundle(folder, run=True)
    hits = [f for f in report.findings if f.rule == 30]
    assert [f.path for f in hits] == [f"phases[0].starting_kit ({name}/knows)"], report.messages()
    assert "(the perfect submission's score), which only the answers reach" in hits[0].message
