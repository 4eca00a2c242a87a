"""SRBench's judging plan (codascore/srbench/judge_plan.py): the whole ingestion and its parts, one
(dataset, seed) each, run one by one and merged from their outcomes, write the same models.json and
predictions.json; a failed part is a missing run; the fit's limit follows the training rows as in 2022; the
budget's seeds are checked.
A reduced generated bundle (2 datasets x 2 seeds, 40 rows) keeps the module near 30 s."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from codascore.codabench import ingest_main
from codascore.errors import ReferenceDataError, SubmissionError
from codascore.formats.outputs import INGESTION_ERROR
from codascore.judge.parts import part_outcome
from codascore.plan import DEFAULT_MEMORY, Part
from codascore.registry import get_task
from codascore.srbench import files

PLAN = get_task("srbench.synthetic").judge_plan()

TASK = "srbench.synthetic"
SMALL = {"datasets": ["exact_formula_easier", "extrapolation_easy"], "seeds": [2082, 3946], "max_rows": 40}
PROFILE = {"seeds": 2, "fit_time_limit_small": 20, "fit_time_limit_large": 40, "large_above_rows": 1000,
           "memory": 2 * 1024**3, "cores": 1, "accuracy_source": "predictions"}
#: A regressor whose fit fails on one-feature datasets (extrapolation_easy), or on every dataset.
FAILING = """from sklearn.linear_model import LinearRegression


class Picky(LinearRegression):
    def fit(self, X, y):
        if {condition}:
            raise RuntimeError("this fit always fails here")
        return super().fit(X, y)


est = Picky()


def model(est, X=None):
    return " + ".join([f"{{est.intercept_:.6g}}"] + [f"{{w:.6g}}*{{n}}" for w, n in zip(est.coef_, X.columns)])
"""


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("srparts")
    get_task(TASK).generate(root, get_task(TASK).load_config(SMALL), progress=lambda message: None)
    return root


def _submission(tmp_path: Path, condition: str | None, root: Path) -> Path:
    if condition is None:
        return root / "sample_submissions" / TASK / "code_linear_regression"
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / files.REGRESSOR_FILE).write_text(FAILING.format(condition=condition))
    return folder


def _whole_input(root: Path, tmp_path: Path, settings: dict) -> Path:
    """The input data with the profile's settings in its task.yaml: what a whole ingestion under the profile
    reads (every dataset here has fewer than 1,000 training rows, so one fit limit)."""
    whole = tmp_path / "whole_input"
    shutil.copytree(root / "input_data" / TASK, whole)
    raw = yaml.safe_load((whole / "task.yaml").read_text())
    (whole / "task.yaml").write_text(yaml.safe_dump({**raw, **settings}, sort_keys=False))
    return whole


def _judge_in_parts(root: Path, tmp_path: Path, submission: Path, profile: dict) -> tuple[list, dict]:
    """The parts under the budget, each ingested on its own input data; (parts, part key -> its outcome as
    the judge hands it to the merge)."""
    input_dir = root / "input_data" / TASK
    parts = PLAN.parts(input_dir, {}, PLAN.budget(None, profile))
    outcomes = {}
    for part in parts:
        part_input, output = tmp_path / "in" / part.key, tmp_path / "out" / part.key
        PLAN.write_part_input(input_dir, part, part_input)
        code = ingest_main([str(part_input), str(output), str(tmp_path), str(submission)])
        outcomes[part.key] = part_outcome({"part": part.as_data(), "output": str(output), "outcome": "DONE",
                                           "exit_code": code, "messages": []})
    return parts, outcomes


def _whole(root: Path, tmp_path: Path, submission: Path, parts: list) -> tuple[int, Path]:
    whole_out = tmp_path / "whole_output"
    code = ingest_main([str(_whole_input(root, tmp_path, parts[0].config)), str(whole_out), str(tmp_path),
                        str(submission)])
    return code, whole_out


def test_parts_merged_equal_the_whole_ingestion(root, tmp_path):
    submission = _submission(tmp_path, None, root)
    parts, outputs = _judge_in_parts(root, tmp_path, submission, PROFILE)
    assert [p.key for p in parts] == [f"dataset={d},seed={s}" for d in SMALL["datasets"] for s in SMALL["seeds"]]
    assert all(p.config == {"fit_memory_limit": 2048, "accuracy_source": "predictions", "fit_time_limit": 20.0}
               and p.cores == 1 and p.memory == 2 * 1024**3 and p.time_limit == 20 + 20 + 240 for p in parts)
    part_input = tmp_path / "in" / parts[0].key
    meta = json.loads((part_input / files.DATASETS_FILE).read_text())
    assert meta["seeds"] == [2082] and [d["name"] for d in meta["datasets"]] == ["exact_formula_easier"]
    assert sorted(p.relative_to(part_input).as_posix() for p in part_input.rglob("*.csv")) == \
        ["test/exact_formula_easier/2082.csv", "train/exact_formula_easier/2082.csv"]
    code, whole_out = _whole(root, tmp_path, submission, parts)
    assert code == 0
    merged = tmp_path / "merged"
    PLAN.merge(list(outputs.values()), merged, {})
    for name in (files.MODELS_FILE, files.PREDICTIONS_FILE):
        assert (merged / name).read_bytes() == (whole_out / name).read_bytes(), name
    assert len(json.loads((merged / files.MODELS_FILE).read_text())) == 4


def test_a_failed_part_is_a_missing_run_as_in_the_whole_ingestion(root, tmp_path):
    submission = _submission(tmp_path, "X.shape[1] == 1", root)
    profile = {**PROFILE, "accuracy_source": "string", "seeds": [3946]}
    parts, outputs = _judge_in_parts(root, tmp_path, submission, profile)
    assert [p.key for p in parts] == ["dataset=exact_formula_easier,seed=3946", "dataset=extrapolation_easy,seed=3946"]
    assert (outputs[parts[1].key].output / INGESTION_ERROR).is_file()
    assert [o.status for o in outputs.values()] == ["done", "failed"]
    assert "this fit always fails here" in outputs[parts[1].key].reason
    merged = tmp_path / "merged"
    PLAN.merge(list(outputs.values()), merged, {})
    models = json.loads((merged / files.MODELS_FILE).read_text())
    assert list(models) == ["exact_formula_easier/3946"] and not (merged / files.PREDICTIONS_FILE).exists()


def test_every_part_failed_is_the_whole_ingestions_error(root, tmp_path):
    submission = _submission(tmp_path, "True", root)
    profile = {**PROFILE, "accuracy_source": "string", "seeds": 1}
    parts, outputs = _judge_in_parts(root, tmp_path, submission, profile)
    with pytest.raises(SubmissionError) as merged:
        PLAN.merge(list(outputs.values()), tmp_path / "merged", {})
    code, whole_out = _whole(root, tmp_path, submission, parts)
    assert code == 1
    whole_text = (whole_out / INGESTION_ERROR).read_text()
    assert merged.value.problems[0] == "regressor.py: every fit failed; the first (exact_formula_easier/2082):"
    assert "\n".join(merged.value.problems) + "\n" == whole_text
    assert not (tmp_path / "merged" / files.MODELS_FILE).exists()


def _tiny_input(folder: Path, rows: dict[str, int]) -> Path:
    """An input data folder of one-feature datasets with the given training rows, seeds 1, 2 and 3."""
    folder.mkdir(parents=True, exist_ok=True)
    files.write_datasets(folder, {"seeds": [1, 2, 3], "datasets": [{"name": n, "feature_names": ["x1"]} for n in rows]})
    for name, n in rows.items():
        for seed in (1, 2, 3):
            path = folder / "train" / name / f"{seed}.csv"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("x1,y\n" + "".join(f"{i},{2 * i}\n" for i in range(n)))
    get_task(TASK).write_task_yaml(folder, get_task(TASK).load_config({}), keys=files.INGESTION_KEYS)
    return folder


def test_the_fit_limit_follows_the_training_rows(tmp_path):
    folder = _tiny_input(tmp_path, {"small": 1000, "large": 1001})
    profile = {"seeds": 1, "fit_time_limit_small": 3600, "fit_time_limit_large": 36000, "large_above_rows": 1000}
    small, large = PLAN.parts(folder, {}, profile)
    assert (small.config["fit_time_limit"], small.time_limit) == (3600, 3600 + 60 + 240)
    assert (large.config["fit_time_limit"], large.time_limit) == (36000, 36000 + 60 + 240)
    capped = PLAN.parts(folder, {}, {**profile, "walltime": 3900})
    assert [p.time_limit for p in capped] == [3900, 3900]
    plain = PLAN.parts(folder, {}, {})  # no profile: every seed, task.yaml's fit_time_limit
    assert len(plain) == 6 and {p.config["fit_time_limit"] for p in plain} == {300.0}
    assert "fit_memory_limit" not in plain[0].config and plain[0].memory == DEFAULT_MEMORY
    assert plain[0].item == {"dataset": "small", "seed": 1}


@pytest.mark.parametrize("profile, message", [
    ({"seeds": 4}, "asks for 4 seeds; the input data's datasets.json lists 3: [1, 2, 3]"),
    ({"seeds": [2, 7]}, "seeds [7] are not among the input data's datasets.json seeds [1, 2, 3]"),
    ({"seed": 2}, "unknown budget key(s) ['seed']"),
    ({"memory": -1}, "memory = -1 must be a positive number"),
])
def test_a_profile_the_input_data_cannot_meet_is_an_organiser_error(tmp_path, profile, message):
    folder = _tiny_input(tmp_path, {"small": 10})
    with pytest.raises(ReferenceDataError) as error:
        PLAN.parts(folder, {}, PLAN.budget(None, profile))
    assert message in str(error.value)


def test_a_part_the_plan_did_not_make_is_refused(tmp_path):
    folder = _tiny_input(tmp_path / "in", {"small": 10})
    with pytest.raises(ReferenceDataError, match="no run small/9"):
        PLAN.write_part_input(folder, Part("dataset=small,seed=9", item={"dataset": "small", "seed": 9}),
                              tmp_path / "out")
    with pytest.raises(ReferenceDataError, match="names no dataset and seed"):
        PLAN.write_part_input(folder, Part("small/1"), tmp_path / "out")
    with pytest.raises(ReferenceDataError, match="not a plain name"):
        PLAN.write_part_input(folder, Part("x", item={"dataset": "../up", "seed": 1}), tmp_path / "out")


def test_the_official2022_entries_give_2022s_budgets(tmp_path):
    folder = _tiny_input(tmp_path, {"small": 1000, "large": 1001})
    for name in ("srbench.qualification", "srbench.realworld", "srbench.synthetic"):
        plan = get_task(name).judge_plan()
        entry = plan.budget("official2022", {"seeds": 1})
        small, large = PLAN.parts(folder, {}, entry)
        assert small.config == {"fit_memory_limit": 16384, "accuracy_source": "predictions", "fit_time_limit": 3600}
        assert large.config["fit_time_limit"] == 36000 and small.time_limit == 3900
        assert large.time_limit == (3900 if name == "srbench.synthetic" else 36300)
        assert small.cores == (4 if name == "srbench.qualification" else 8) and small.memory == 16 * 1024**3
