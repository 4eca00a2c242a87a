"""The five UAI 2022 scoring tasks (one Codabench task per inference type): uai.pr, uai.mar, uai.mpe,
uai.mmap and uai.mlc.

Reference data (``ref/``): ``task.yaml``, ``reference.json`` (per instance: files, family, truth or best
known answer, the trivial answer and its error) and ``models/`` (``<id>.uai``, ``.evid``, ``.query``,
MLC ``.data``/``.test``). A result submission holds ``<id>.uai.<TASK>`` per instance at its root
(docs/uai.md#result-files). Per instance Score = max(0, 100 (1 - Err / MaxErr)); the task score is the
mean over all reference instances, a missing or invalid answer counting 0 with its reason recorded
(docs/uai.md#scoring).

One UAITask class serves the five tasks; what differs between them (the reference values, the answer's
reader and grade, the perfect answer) is each task's AnswerRules, private to the family. Folding reported
better answers back into reference data is uai/best_known.py's.
"""

from __future__ import annotations

import abc
import dataclasses
import json
import math
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import AnswerError, FormatError, ReferenceDataError, TableTooLarge, TrivialAnswerError
from ..progress import counted
from ..task import Result, ScoreGuide, Section, Task
from ..validate import Problems, is_finite_number, shown
from . import files, metrics, result_files
from .bucket_elimination import log10_mmap_value, mmap
from .report import reading_guide, report_sections


@dataclasses.dataclass
class Instance:
    """One reference instance as load_reference reads it; score() only reads it."""

    id: str
    family: str
    model: files.Model
    evidence: dict[int, int]
    record: dict                      # the instance's entry of reference.json, as read
    query: list[int] | None = None
    test: files.MLCData | None = None
    max_error: float | None = None    # MaxErr where it does not depend on the answer (PR, MAR)
    truth: list[np.ndarray] | None = None  # MAR: the exact marginals as arrays


@dataclasses.dataclass
class Answer:
    """One instance's parsed answer, or the reason it is invalid (answer is None)."""

    answer: Any = None
    reason: str | None = None
    missing: bool = False
    warnings: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Grade:
    """What one valid answer scores: its instance score, Err and MaxErr (None where the task has no single
    pair, MLC), the task's own record fields, a better-than-best answer, and the (MaxErr, Err) points of
    the report's figure (one per MLC test line)."""

    score: float
    error: float | None = None
    max_error: float | None = None
    fields: dict = dataclasses.field(default_factory=dict)
    new_best: dict | None = None
    points: list[tuple[float, float]] = dataclasses.field(default_factory=list)


def _finite(record: dict, key: str, where: str) -> float:
    value = record.get(key)
    if not is_finite_number(value):
        raise ReferenceDataError(f"{where}: {key} must be a finite number, got {shown(value)}")
    return float(value)


def _gap_grade(err: float, max_err: float, tolerance: float) -> Grade:
    """The Grade of an answer with one Err and MaxErr (every task but MLC)."""
    score = metrics.instance_score(err, max_err, tolerance)
    points = [(max_err, err)] if math.isfinite(err) else []
    return Grade(score, err if math.isfinite(err) else None, max_err, points=points)


class AnswerRules(abc.ABC):
    """What one UAI task's answers are: how its reference values are checked, its answers parsed and graded,
    and its perfect answer written. Private to the UAI family: one per UAITask, which the Codabench layer
    sees through the Task contract only."""

    kind = ""                     # PR, MAR, MPE, MMAP, MLC (result file extension and task word)
    needs_query = False           # the instance has a .query file (MMAP)
    zero_reason = "zero likelihood: the answer hits a zero table entry (log10 value -inf)"

    @abc.abstractmethod
    def check_record(self, inst: Instance, models: Path, where: str) -> None:
        """Validate the stored truth and trivial values of one instance (ReferenceDataError), and set the
        Instance fields derived from them (reading any further file of the instance in models)."""

    @abc.abstractmethod
    def parse(self, text: str, inst: Instance, warnings: list[str]) -> Any:
        """One result file's answer (AnswerError when it is invalid); warnings collects what was repaired."""

    @abc.abstractmethod
    def grade(self, inst: Instance, answer: Any, config: dict) -> Grade:
        """The Grade of a valid answer; Err = inf (score 0) for a zero-likelihood answer."""

    @abc.abstractmethod
    def perfect_answer(self, inst: Instance, config: dict) -> str:
        """The result file text of one instance's true or best known answer."""


class UAITask(Task):
    """Shared reading, validation and scoring of the UAI tasks; its AnswerRules define the answer and its
    grade."""

    score_keys = ("score", "n_answered", "n_perfect")
    has_ingestion = True
    # memory_kb: the MEMKB a solver is told (the 2022 requirements page passed 8000000)
    board_settings = ("tolerance",)
    defaults = {"tolerance": metrics.DEFAULT_TOLERANCE, "time_limit": 20.0, "memory_kb": 8_000_000,
                "max_table_size": 2**25, "trivial_ibound": 2}
    # the exact answers, and answers halfway between them and the trivial ones
    answer_samples = ("exact", "perturbed")
    # None: the answers follow from the public models by exact inference, so a solver may reach 100
    # without them (the sample loopy BP solver does on some small instance sets).
    max_scores: dict = {}

    def __init__(self, name: str, title: str, rules: AnswerRules):
        self.name, self.title, self.rules = name, title, rules
        self.kind = rules.kind
        self.result_files = (f"*.uai.{rules.kind}",)

    # ----- reference -----
    def load_reference(self, ref_dir: Path, config: dict) -> list[Instance]:
        index = Path(ref_dir) / "reference.json"
        try:
            data = json.loads(index.read_text())
            records = data["instances"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ReferenceDataError(f"reference.json: cannot read the instance list ({exc})") from None
        if not records:
            raise ReferenceDataError("reference.json: no instances")
        instances = []
        for k, record in enumerate(records):
            where = f"reference.json instances[{k}]"
            try:
                instances.append(self._load_instance(Path(ref_dir) / "models", record, where))
            except (FormatError, OSError, KeyError, TypeError) as exc:
                raise ReferenceDataError(f"{where}: {exc}") from None
        ids = [i.id for i in instances]
        if len(set(ids)) != len(ids):
            raise ReferenceDataError("reference.json: duplicate instance ids")
        return instances

    def _load_instance(self, models: Path, record: dict, where: str) -> Instance:
        name = str(record["id"])
        if "/" in name or name.startswith("."):
            raise ReferenceDataError(f"{where}: bad instance id {name!r}")
        model = files.read_model(models / f"{name}.uai")
        evid = models / f"{name}.uai.evid"
        evidence = files.read_evidence(evid, model) if evid.exists() else {}
        inst = Instance(name, str(record.get("family", "")), model, evidence, record)
        if self.rules.needs_query:
            inst.query = files.read_query(models / f"{name}.uai.query", model, evidence)
        self.rules.check_record(inst, models, where)
        return inst

    def data_inventory(self, folder: Path, role: str, config: dict) -> dict[str, tuple[int, ...]] | None:
        """Instance ids: reference.json's in ref/, the models' in input_data/models/, the result files' in a
        sample (a code sample holds none, so says nothing)."""
        folder = Path(folder)
        if role == "reference":
            try:
                records = json.loads((folder / "reference.json").read_text())["instances"]
                return {str(record["id"]): () for record in records}
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise ReferenceDataError(f"reference.json: cannot read the instance list ({exc})") from None
        if role == "input":
            return {path.name[:-len(".uai")]: () for path in (folder / "models").glob("*.uai")}
        suffix = f".uai.{self.kind}"
        answered = {path.name[:-len(suffix)]: () for path in folder.glob(f"*{suffix}") if path.is_file()}
        return answered or None

    # ----- submission -----
    def load_submission(self, res_dir: Path, reference: list[Instance], config: dict) -> dict[str, Answer]:
        res_dir = Path(res_dir)
        expected = {f"{inst.id}.uai.{self.kind}": inst for inst in reference}
        present = {p.name for p in res_dir.iterdir() if p.is_file()} if res_dir.is_dir() else set()
        if not present & set(expected):
            problems = Problems()
            found = sorted(present - {"metadata"})[:10]
            problems.add(f"no result file for any of the {len(expected)} instances: expected names such as "
                         f"{sorted(expected)[:3]} (one '<instance>.uai.{self.kind}' per instance at the zip "
                         f"root); found {found or 'no files'}")
            problems.raise_if_any()
        answers: dict[str, Answer] = {}
        for filename, inst in expected.items():
            if filename not in present:
                answers[inst.id] = Answer(reason=f"missing result file {filename}", missing=True)
                continue
            path = res_dir / filename
            if path.stat().st_size > result_files.MAX_RESULT_BYTES:
                answers[inst.id] = Answer(reason=f"{filename}: larger than {result_files.MAX_RESULT_BYTES} bytes")
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                answers[inst.id] = Answer(reason=f"{filename}: not UTF-8 text")
                continue
            warnings: list[str] = []
            try:
                answers[inst.id] = Answer(self.rules.parse(text, inst, warnings), warnings=warnings)
            except AnswerError as exc:
                answers[inst.id] = Answer(reason=f"{filename}: {exc}")
        return answers

    def validate_format(self, res_dir: Path, config: dict) -> str:
        """Every ``*.uai.<KIND>`` file at the root checked without its model; a malformed one is listed (scoring
        would give that instance 0, not refuse the submission)."""
        paths = sorted(p for p in Path(res_dir).glob(f"*.uai.{self.kind}") if p.is_file())
        problems = Problems()
        if not paths:
            found = sorted(p.name for p in Path(res_dir).iterdir() if p.name != "metadata")[:10]
            problems.add(f"no result file: expected one '<instance>.uai.{self.kind}' per instance at the zip root; "
                         f"found {found or 'no files'}")
        for path in paths:
            try:
                if path.stat().st_size > result_files.MAX_RESULT_BYTES:
                    raise AnswerError(f"larger than {result_files.MAX_RESULT_BYTES} bytes")
                result_files.check_result_text(path.read_text(encoding="utf-8"), self.kind)
            except UnicodeDecodeError:
                problems.add(f"{path.name}: not UTF-8 text (scoring gives this instance 0)")
            except AnswerError as exc:
                problems.add(f"{path.name}: {exc} (scoring gives this instance 0)")
        problems.raise_if_any()
        return (f"{len(paths)} {self.kind} result files, each with its task word and a well-formed solution; "
                f"scoring checks the instance names and the values per variable against each model")

    # ----- scoring -----
    def score(self, reference: list[Instance], submission: dict[str, Answer], config: dict) -> Result:
        records, warnings, new_best, points = [], [], [], []
        for inst in counted(reference, "instances scored"):
            ans = submission.get(inst.id) or Answer(reason="missing", missing=True)
            record = {"id": inst.id, "family": inst.family}
            if ans.reason is not None:
                record.update(status="missing" if ans.missing else "invalid", score=0.0, reason=ans.reason)
            else:
                grade = self.rules.grade(inst, ans.answer, config)
                record.update(status="ok", score=grade.score)
                if grade.max_error is not None:
                    record.update(error=grade.error, max_error=grade.max_error)
                if grade.error is None and grade.max_error is not None:
                    record.update(status="invalid", reason=self.rules.zero_reason)
                record.update(grade.fields)
                if grade.new_best is not None:
                    new_best.append(grade.new_best)
                points += [(max_err, err, inst.family) for max_err, err in grade.points]
            warnings += [f"{inst.id}: {w}" for w in ans.warnings]
            records.append(record)
        warnings += partial_answer_warnings(records)
        scores = [r["score"] for r in records]
        result_scores = {
            "score": float(np.mean(scores)),
            "n_answered": float(sum(r["status"] == "ok" for r in records)),
            "n_perfect": float(sum(s >= 100.0 for s in scores)),  # Err within the tolerance
        }
        details = {"new_best": new_best} if new_best else {}
        return Result(scores=result_scores, instances=records, warnings=warnings, details=details,
                      report_data={"points": points})

    # ----- report -----
    def score_guide(self, config: dict) -> list[ScoreGuide]:
        return reading_guide(self.kind, config)

    def report(self, result: Result, reference, submission, config: dict) -> list[Section]:
        return report_sections(self.kind, result)

    # ----- data generation and ingestion -----
    def generate(self, root: Path, config: dict, progress: Callable[[str], None] = print,
                 seed: int | None = None) -> None:
        from .generate import generate_task

        generate_task(self, Path(root), config, progress, seed)

    def build_reference(self, source: Path, out: Path, config: dict,
                        progress: Callable[[str], None] = print) -> None:
        """Reference data from a folder of .uai models with their .evid (and .query, MLC .data/.test)
        files: the exact (or best) answers and the trivial answers (docs/uai.md)."""
        from .generate import build_reference, specs_from_dir

        if not Path(source).is_dir():
            raise ReferenceDataError(f"{source}: no such folder of .uai models")
        try:
            specs = specs_from_dir(self, Path(source))
            if not specs:
                raise ReferenceDataError(f"{source}: holds no .uai model")
            build_reference(self, specs, Path(out), config, progress=progress)
        except (FormatError, FileNotFoundError, TableTooLarge, TrivialAnswerError) as exc:
            raise ReferenceDataError(str(exc)) from exc
        progress(f"reference data for {len(specs)} instances built")

    def write_perfect_submission(self, ref_dir: Path, out_dir: Path, config: dict) -> bool:
        """One result file per instance holding its true (PR, MAR) or best known (MPE, MMAP) answer from
        reference.json; MLC's optimum of each test line is computed exactly from the model."""
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        for inst in self.load_reference(Path(ref_dir), config):
            (out_dir / f"{inst.id}.uai.{self.kind}").write_text(self.rules.perfect_answer(inst, config))
        return True

    def ingest(self, input_dir: Path, output_dir: Path, submission_dir: Path, config: dict) -> None:
        from .ingest import run_solver_submission

        run_solver_submission(self, Path(input_dir), Path(output_dir), Path(submission_dir), config)

    def final_board(self, config: dict):
        """The final leaderboard's formula (uai/leaderboard.py; docs/uai.md#final-leaderboard)."""
        from .leaderboard import board_for

        return board_for(self.name, self.kind, config)

    def judge_plan(self):
        """One solver run per instance and time limit, each time limit scored apart (uai/judge_plan.py)."""
        from .judge_plan import UAIPlan

        return UAIPlan(self)


def partial_answer_warnings(records: list[dict]) -> list[str]:
    """The instances a submission left unanswered, or answered invalidly: each scores 0."""
    def ids(chosen: list[dict]) -> str:
        return ", ".join(r["id"] for r in chosen[:10]) + (", ..." if len(chosen) > 10 else "")

    warnings = []
    missing = [r for r in records if r["status"] == "missing"]
    invalid = [r for r in records if r["status"] == "invalid" and "error" not in r]
    if missing:
        warnings.append(f"answered {len(records) - len(missing)} of {len(records)} instances; the {len(missing)} "
                        f"other(s) score 0: ids {ids(missing)}")
    if invalid:
        warnings.append(f"{len(invalid)} answer(s) could not be read and score 0 (reasons in the per-instance "
                        f"table): ids {ids(invalid)}")
    return warnings


class PRRules(AnswerRules):
    kind = "PR"
    zero_reason = "log10 Z = -inf (Z = 0) but the true Z is positive"

    def check_record(self, inst, models, where):
        truth = _finite(inst.record, "log10_z", where)
        trivial = _finite(inst.record, "trivial_log10_z", where)
        inst.max_error = abs(truth - trivial)

    def parse(self, text, inst, warnings):
        return result_files.parse_pr(text)

    def grade(self, inst, answer, config):
        return _gap_grade(metrics.pr_error(inst.record["log10_z"], answer), inst.max_error,
                          float(config["tolerance"]))

    def perfect_answer(self, inst, config):
        return result_files.format_pr(inst.record["log10_z"])


class MARRules(AnswerRules):
    kind = "MAR"

    def check_record(self, inst, models, where):
        truth = inst.record.get("marginals")
        if not isinstance(truth, list) or len(truth) != inst.model.n_vars:
            raise ReferenceDataError(f"{where}: marginals must list the {inst.model.n_vars} variables")
        try:
            inst.truth = [np.asarray(p, dtype=float) for p in truth]
            # The stored trivial error takes precedence (docs/uai.md#mar-trivial-answer); the uniform
            # answer's error otherwise.
            stored = inst.record.get("trivial_error")
            inst.max_error = _finite(inst.record, "trivial_error", where) if stored is not None else \
                metrics.mean_hellinger(inst.truth, [np.ones(int(c)) for c in inst.model.cards], inst.evidence)
        except ValueError as exc:
            raise ReferenceDataError(f"{where}: marginals: {exc}") from None
        for v, p in enumerate(inst.truth):
            if p.shape != (inst.model.cards[v],):
                raise ReferenceDataError(f"{where}: marginals[{v}] has {p.size} entries, "
                                         f"the variable has {inst.model.cards[v]}")

    def parse(self, text, inst, warnings):
        answer = result_files.parse_mar(text, inst.model)
        sums = result_files.mar_sums(text, inst.model)
        off = [v for v in range(inst.model.n_vars) if v not in inst.evidence and abs(sums[v] - 1) > 1e-3]
        if off:
            warnings.append(f"{len(off)} marginal(s) do not sum to 1 (e.g. variable {off[0]}: "
                            f"{sums[off[0]]:.6g}); renormalised")
        return answer

    def grade(self, inst, answer, config):
        return _gap_grade(metrics.mean_hellinger(inst.truth, answer, inst.evidence), inst.max_error,
                          float(config["tolerance"]))

    def perfect_answer(self, inst, config):
        return result_files.format_mar(inst.record["marginals"])


class BestKnownRules(AnswerRules):
    """MPE and MMAP: error against the best known value, improved by the submission itself
    (docs/uai.md#better-than-the-best-known-answer)."""

    best_key = ""                 # the reference.json key of the best known answer

    def check_record(self, inst, models, where):
        best = _finite(inst.record, "best_log10", where)
        trivial = _finite(inst.record, "trivial_log10", where)
        if trivial > best + 1e-9:
            raise ReferenceDataError(f"{where}: the trivial value exceeds the best known value")

    @abc.abstractmethod
    def value(self, inst: Instance, answer: Any, config: dict) -> float:
        """The log10 value of a valid answer, recomputed on the model (best_known.update_best re-checks
        reported answers with it)."""

    @staticmethod
    @abc.abstractmethod
    def jsonable(answer: Any) -> Any:
        """The answer as details.json and reference.json store it."""

    @staticmethod
    @abc.abstractmethod
    def from_json(answer: Any) -> Any:
        """The answer that jsonable stored."""

    def grade(self, inst, answer, config):
        value = self.value(inst, answer, config)
        stored = inst.record["best_log10"]
        best = max(stored, value)
        grade = _gap_grade(metrics.gap_error(best, value), max(0.0, best - inst.record["trivial_log10"]),
                           float(config["tolerance"]))
        # The raw values, so that the final leaderboard can re-normalise against the best answer any team
        # found (docs/uai.md#final-leaderboard); Err and MaxErr already give them away to the answer's owner.
        grade.fields = {"log10_value": value, "best_log10": stored, "trivial_log10": inst.record["trivial_log10"]}
        if value > stored + float(config["tolerance"]):
            # the answer and its value only: no reference value goes into details.json
            grade.new_best = {"id": inst.id, "log10_value": value, "answer": self.jsonable(answer)}
        return grade


class MPERules(BestKnownRules):
    kind = "MPE"
    best_key = "best_assignment"

    def parse(self, text, inst, warnings):
        return result_files.parse_mpe(text, inst.model, inst.evidence)

    def value(self, inst, answer, config):
        return metrics.log10_likelihood(inst.model, answer, inst.evidence)

    def perfect_answer(self, inst, config):
        return result_files.format_mpe(_best(inst, self.best_key))

    @staticmethod
    def jsonable(answer):
        return [int(x) for x in answer]

    @staticmethod
    def from_json(answer):
        return np.asarray(answer, dtype=np.int64)


class MMAPRules(BestKnownRules):
    kind = "MMAP"
    best_key = "best_answer"
    needs_query = True

    def parse(self, text, inst, warnings):
        return result_files.parse_mmap(text, inst.model, inst.query, warnings)

    def value(self, inst, answer, config):
        try:
            return log10_mmap_value(inst.model, answer, inst.evidence, int(config["max_table_size"]))
        except TableTooLarge as exc:
            raise ReferenceDataError(f"{inst.id}: cannot evaluate V(q) exactly: {exc}") from None

    def perfect_answer(self, inst, config):
        return result_files.format_mmap({int(v): int(x) for v, x in _best(inst, self.best_key).items()})

    @staticmethod
    def jsonable(answer):
        return {str(k): int(v) for k, v in sorted(answer.items())}

    @staticmethod
    def from_json(answer):
        return {int(k): int(v) for k, v in answer.items()}


class MLCRules(AnswerRules):
    kind = "MLC"

    def check_record(self, inst, models, where):
        inst.test = files.parse_mlc_data((models / f"{inst.id}.uai.test").read_text(),
                                         f"{inst.id}.uai.test", inst.model, with_labels=False)
        inst.query = inst.test.query_vars
        if len(inst.record.get("lines", [])) != len(inst.test.evidence):
            raise ReferenceDataError(f"{where}: 'lines' must hold one entry per test line")
        for k, line in enumerate(inst.record["lines"]):
            opt = _finite(line, "optimum_log10", f"{where} lines[{k}]")
            if _finite(line, "trivial_log10", f"{where} lines[{k}]") > opt + 1e-9:
                raise ReferenceDataError(f"{where} lines[{k}]: trivial value above the optimum")

    def parse(self, text, inst, warnings):
        return result_files.parse_mlc(text, inst.model, inst.query, len(inst.test.evidence))

    def grade(self, inst, answer, config):
        """Each test line has its own Err and MaxErr; the instance score is the mean line score
        (docs/uai.md#mlc-instance-score), with no single Err or MaxErr of its own."""
        limit = int(config["max_table_size"])
        errors, max_errors = [], []
        for k, (pred, line) in enumerate(zip(answer, inst.record["lines"])):
            max_errors.append(max(0.0, line["optimum_log10"] - line["trivial_log10"]))
            if isinstance(pred, AnswerError):
                errors.append(math.inf)  # an unreadable line scores 0, as a zero-likelihood one
                continue
            value = log10_mmap_value(inst.model, pred, inst.test.evidence[k], limit)
            errors.append(metrics.gap_error(line["optimum_log10"], value))
        score = metrics.mlc_instance_score(errors, max_errors, float(config["tolerance"]))
        valid = sum(math.isfinite(e) for e in errors)
        points = [(m, e) for e, m in zip(errors, max_errors) if math.isfinite(e)]
        return Grade(score, fields={"n_lines": len(errors), "n_valid_lines": valid}, points=points)

    def perfect_answer(self, inst, config):
        limit = int(config["max_table_size"])
        return result_files.format_mlc([mmap(inst.model, inst.query, evidence, limit)[1]
                                        for evidence in inst.test.evidence])


def _best(inst: Instance, key: str):
    """The best known answer stored with an instance (ReferenceDataError when the reference has none)."""
    if key not in inst.record:
        raise ReferenceDataError(f"reference.json: instance {inst.id} has no {key}: no perfect submission")
    return inst.record[key]


TASKS = {t.name: t for t in (
    UAITask("uai.pr", "UAI 2022 PR (log10 partition function)", PRRules()),
    UAITask("uai.mar", "UAI 2022 MAR (marginals, mean Hellinger error)", MARRules()),
    UAITask("uai.mpe", "UAI 2022 MPE (most probable explanation)", MPERules()),
    UAITask("uai.mmap", "UAI 2022 MMAP (marginal MAP)", MMAPRules()),
    UAITask("uai.mlc", "UAI 2022 MLC (multi-label classification)", MLCRules()),
)}
