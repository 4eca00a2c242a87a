"""The Task contract of docs/architecture.md#the-task-contract, held to its word: a task written from that
section alone (the toy family below uses nothing else) is found by the registry and scored by the scoring
program; a task missing a required method, or taking code submissions without ingest, is refused."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from codascore import registry
from codascore.codabench import score_main
from codascore.errors import ReferenceDataError, SubmissionError, UsageError
from codascore.task import Result, Task


def read_column(path: Path, error) -> dict[str, float]:
    """A two-column CSV (id,value with a header) as {id: value}; error(message) for anything else."""
    if not path.is_file():
        raise error(f"{path.name}: missing")
    rows: dict[str, float] = {}
    problems = []
    for number, line in enumerate(path.read_text().splitlines()[1:], 2):
        cells = line.split(",")
        try:
            rows[cells[0]] = float(cells[1])
        except (IndexError, ValueError):
            problems.append(f"{path.name} line {number}: expected 'id,value', got {line!r}")
    if problems:
        raise error(problems)
    return rows


class ToyMean(Task):
    """The mean absolute error of predicted values against true ones, per id."""

    name = "toy.mean"
    title = "Toy: mean absolute error"
    score_keys = ("score", "n_ids")
    result_files = ("prediction.csv",)

    def load_reference(self, ref_dir, config):
        return read_column(Path(ref_dir) / "truth.csv", ReferenceDataError)

    def load_submission(self, res_dir, reference, config):
        predicted = read_column(Path(res_dir) / "prediction.csv", SubmissionError)
        missing = sorted(set(reference) - set(predicted))
        if missing:
            raise SubmissionError([f"prediction.csv: no value for id {i!r}" for i in missing])
        return predicted

    def score(self, reference, submission, config):
        errors = {i: abs(submission[i] - truth) for i, truth in reference.items()}
        return Result(scores={"score": sum(errors.values()) / len(errors), "n_ids": float(len(errors))},
                      instances=[{"id": i, "error": e} for i, e in errors.items()])


@pytest.fixture
def toy_family(monkeypatch):
    """The family module "toy" exposing TASKS, registered as the contract section says (FAMILIES)."""
    module = types.ModuleType("codascore_test_toy_family")
    module.TASKS = {"toy.mean": ToyMean()}
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(registry.FAMILIES, "toy", module.__name__)
    return module


def write_input(root: Path, prediction: str) -> Path:
    ref, res = root / "input" / "ref", root / "input" / "res"
    ref.mkdir(parents=True)
    res.mkdir(parents=True)
    (ref / "task.yaml").write_text("task: toy.mean\n")
    (ref / "truth.csv").write_text("id,value\na,1.0\nb,2.0\n")
    (res / "prediction.csv").write_text(prediction)
    return root / "input"


def test_a_task_written_from_the_contract_alone_is_scored(toy_family, tmp_path):
    assert registry.get_task("toy.mean") is toy_family.TASKS["toy.mean"]
    output = tmp_path / "output"
    assert score_main([str(write_input(tmp_path, "id,value\na,1.5\nb,1.0\n")), str(output)]) == 0
    assert json.loads((output / "scores.json").read_text()) == {"score": 0.75, "n_ids": 2.0}
    details = json.loads((output / "details.json").read_text())
    assert details["task"] == "toy.mean" and details["status"] == "scored"
    assert [r["id"] for r in details["instances"]] == ["a", "b"]
    assert "Toy: mean absolute error" in (output / "detailed_results.html").read_text()


def test_an_invalid_submission_to_that_task_fails_with_no_scores(toy_family, tmp_path):
    output = tmp_path / "output"
    assert score_main([str(write_input(tmp_path, "id,value\na,one\n")), str(output)]) == 1
    assert not (output / "scores.json").exists()
    details = json.loads((output / "details.json").read_text())
    assert details["status"] == "invalid"
    assert any("prediction.csv line 2" in problem for problem in details["problems"])


def test_the_optional_hooks_have_their_documented_defaults(tmp_path):
    task = ToyMean()
    assert task.report(Result(scores={"score": 0.0}), {}, {}, {}) == []
    assert task.score_guide({}) == []
    assert task.data_inventory(tmp_path, "reference", {}) is None
    assert task.write_perfect_submission(tmp_path, tmp_path / "out", {}) is False
    assert task.load_config({"task": "toy.mean"}) == {"task": "toy.mean"}
    with pytest.raises(ReferenceDataError, match="unknown parameter"):
        task.load_config({"task": "toy.mean", "speed": 1})
    with pytest.raises(UsageError, match="toy.mean: this task makes no demo data"):
        task.generate(tmp_path, {})
    for call in (lambda: task.validate_format(tmp_path, {}),
                 lambda: task.build_reference(tmp_path, tmp_path / "out", {}),
                 lambda: task.ingest(tmp_path, tmp_path, tmp_path, {})):
        with pytest.raises(UsageError, match="toy.mean"):
            call()


@pytest.mark.parametrize("missing", ["load_reference", "load_submission", "score"])
def test_a_task_missing_a_required_method_cannot_be_instantiated(missing):
    methods = {name: getattr(ToyMean, name) for name in ("load_reference", "load_submission", "score")}
    del methods[missing]
    incomplete = type("Incomplete", (Task,), {"name": "toy.incomplete", **methods})
    with pytest.raises(TypeError, match=missing):
        incomplete()


def test_a_task_taking_code_submissions_must_write_ingest():
    with pytest.raises(TypeError, match="NoIngest.*has_ingestion.*ingest"):
        class NoIngest(ToyMean):
            has_ingestion = True

    class WithIngest(ToyMean):
        has_ingestion = True

        def ingest(self, input_dir, output_dir, submission_dir, config):
            (Path(output_dir) / "prediction.csv").write_text("id,value\n")

    assert WithIngest().has_ingestion


def test_every_registered_task_keeps_the_contract():
    for name, task in registry.all_tasks().items():
        assert isinstance(task, Task) and task.name == name and task.score_keys[0] == "score"
        assert isinstance(task.result_files, tuple)
        assert not task.has_ingestion or type(task).ingest is not Task.ingest, name
