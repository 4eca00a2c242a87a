"""The five UAI 2022 scoring tasks (one Codabench task per inference type): uai.pr, uai.mar, uai.mpe,
uai.mmap and uai.mlc.

Reference data (``ref/``): ``task.yaml``, ``reference.json`` (per instance: files, family, truth or best
known answer, the trivial answer and its error) and ``models/`` (``<id>.uai``, ``.evid``, ``.query``,
MLC ``.data``/``.test``). A result submission holds ``<id>.uai.<TASK>`` per instance at its root
(spec/uai.md 8.3). Per instance Score = max(0, 100 (1 - Err / MaxErr)); the task score is the mean
over all reference instances, a missing or invalid answer counting 0 with its reason recorded.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import AnswerError, FormatError, ReferenceDataError, TableTooLarge, TrivialAnswerError
from ..task import Result, Section, Task
from ..validate import Problems
from . import engine, formats, metrics

#: Result files larger than this are not read (an answer of any real instance is far smaller).
MAX_RESULT_BYTES = 64 * 1024**2


@dataclasses.dataclass
class Instance:
    id: str
    family: str
    model: formats.Model
    evidence: dict[int, int]
    record: dict                      # the instance's entry of reference.json
    query: list[int] | None = None
    test: formats.MLCData | None = None


@dataclasses.dataclass
class Answer:
    """One instance's parsed answer, or the reason it is invalid (answer is None)."""

    answer: Any = None
    reason: str | None = None
    missing: bool = False
    warnings: list[str] = dataclasses.field(default_factory=list)


def _finite(record: dict, key: str, where: str) -> float:
    value = record.get(key)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        raise ReferenceDataError(f"{where}: {key} must be a finite number, got {value!r}")
    return float(value)


class UAITask(Task):
    """Shared reading, validation, scoring and report of the UAI tasks; subclasses define the error."""

    kind = ""                     # PR, MAR, MPE, MMAP, MLC (result file extension and task word)
    score_keys = ("score", "n_answered", "n_perfect")
    has_ingestion = True
    defaults = {"tolerance": metrics.DEFAULT_TOLERANCE, "time_limit": 20.0,
                "max_table_size": 2**25, "trivial_ibound": 2}
    needs_query = False
    zero_reason = "zero likelihood: the answer hits a zero table entry (log10 value -inf)"
    # the exact answers, and answers halfway between them and the trivial ones
    answer_samples = ("exact", "perturbed")
    # None: the answers follow from the public models by exact inference, so a solver may reach 100
    # without them (the sample loopy BP solver does on some small instance sets).
    max_scores: dict = {}

    @property
    def result_files(self):  # type: ignore[override]
        return (f"*.uai.{self.kind}",)

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
        model = formats.read_model(models / f"{name}.uai")
        evid = models / f"{name}.uai.evid"
        evidence = formats.read_evidence(evid, model) if evid.exists() else {}
        inst = Instance(name, str(record.get("family", "")), model, evidence, record)
        if self.needs_query:
            inst.query = formats.read_query(models / f"{name}.uai.query", model, evidence)
        self.check_record(inst, where)
        return inst

    def check_record(self, inst: Instance, where: str) -> None:
        """Validate the stored truth and trivial values of one instance (ReferenceDataError)."""
        raise NotImplementedError

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
            if path.stat().st_size > MAX_RESULT_BYTES:
                answers[inst.id] = Answer(reason=f"{filename}: larger than {MAX_RESULT_BYTES} bytes")
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                answers[inst.id] = Answer(reason=f"{filename}: not UTF-8 text")
                continue
            warnings: list[str] = []
            try:
                answers[inst.id] = Answer(self.parse(text, inst, warnings), warnings=warnings)
            except AnswerError as exc:
                answers[inst.id] = Answer(reason=f"{filename}: {exc}")
        return answers

    def parse(self, text: str, inst: Instance, warnings: list[str]) -> Any:
        raise NotImplementedError

    # ----- scoring -----
    def errors(self, inst: Instance, answer: Any, config: dict, details: dict) -> tuple[float, float]:
        """(Err, MaxErr) of a valid answer; Err = inf for a zero-likelihood answer."""
        raise NotImplementedError

    def score(self, reference: list[Instance], submission: dict[str, Answer], config: dict) -> Result:
        tol = float(config["tolerance"])
        records, warnings, details = [], [], {}
        for inst in reference:
            ans = submission.get(inst.id) or Answer(reason="missing", missing=True)
            record = {"id": inst.id, "family": inst.family}
            if ans.reason is not None:
                record.update(status="missing" if ans.missing else "invalid", score=0.0, reason=ans.reason)
            else:
                err, max_err = self.errors(inst, ans.answer, config, details)
                record.update(status="ok", score=metrics.instance_score(err, max_err, tol),
                              error=err if math.isfinite(err) else None, max_error=max_err)
                if err == math.inf:
                    record.update(status="invalid", reason=self.zero_reason)
                for extra in self.line_summary(inst, ans.answer, details):
                    record.update(extra)
            warnings += [f"{inst.id}: {w}" for w in ans.warnings]
            records.append(record)
        scores = [r["score"] for r in records]
        result_scores = {
            "score": float(np.mean(scores)),
            "n_answered": float(sum(r["status"] == "ok" for r in records)),
            "n_perfect": float(sum(s >= 100.0 for s in scores)),  # Err within the tolerance
        }
        details.pop("_lines", None)
        return Result(scores=result_scores, instances=records, warnings=warnings, details=details)

    def line_summary(self, inst, answer, details) -> list[dict]:
        return []

    # ----- report -----
    def report(self, result: Result, reference, submission, config: dict) -> list[Section]:
        from .. import report as html

        rows = [(r["id"], r["family"], r["status"], round(r["score"], 3), r.get("error"), r.get("max_error"),
                 r.get("reason", "")) for r in result.instances]
        sections = [Section("Per-instance scores", html.table(
            rows, ["instance", "family", "status", "score", "Err", "MaxErr (trivial)", "reason"],
            max_rows=500))]
        pts = [(r["max_error"], r["error"]) for r in result.instances
               if r.get("error") is not None and r.get("max_error") is not None]
        if pts:
            fig, ax = html.new_figure(5.5, 4.0)
            trivial_err = np.array([p[0] for p in pts], dtype=float)
            err = np.array([p[1] for p in pts], dtype=float)
            floor = max(1e-12, 0.1 * min([v for v in np.r_[trivial_err, err] if v > 0], default=1e-6))
            ax.scatter(np.maximum(trivial_err, floor), np.maximum(err, floor), s=18)
            hi = max(float(np.max(trivial_err)), float(np.max(err)), floor * 10)
            ax.plot([floor, hi], [floor, hi], color="grey", lw=1, label="Err = MaxErr (score 0)")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("MaxErr: error of the trivial answer")
            ax.set_ylabel("Err: error of the submission")
            ax.set_title(f"{self.kind}: error against the trivial error")
            ax.legend(loc="best", fontsize=8)
            sections.append(Section("Error against the trivial solver", html.paragraph(
                "One point per validly answered instance; points below the grey line score above 0; "
                "errors of 0 are drawn at the lower or left edge.") + html.figure_html(fig, "Err vs MaxErr")))
        if result.details.get("new_best"):
            rows = [(b["id"], b["log10_value"]) for b in result.details["new_best"]]
            sections.append(Section("New best answers", html.paragraph(
                "These answers beat the stored best known value; organisers can fold them into the reference "
                "with 'codascore uai update-best'.") + html.table(rows, ["instance", "log10 value of the answer"])))
        return sections

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
        progress(f"reference data for {len(specs)} instances written to {out}")

    def write_perfect_submission(self, ref_dir: Path, out_dir: Path, config: dict) -> bool:
        """One result file per instance holding its true (PR, MAR) or best known (MPE, MMAP) answer from
        reference.json; MLC's optimum of each test line is computed exactly from the model."""
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        for inst in self.load_reference(Path(ref_dir), config):
            (out_dir / f"{inst.id}.uai.{self.kind}").write_text(self.perfect_answer(inst, config))
        return True

    def perfect_answer(self, inst: Instance, config: dict) -> str:
        """The result file text of one instance's true or best known answer."""
        raise NotImplementedError

    def ingest(self, input_dir: Path, output_dir: Path, submission_dir: Path, config: dict) -> None:
        from .ingest import run_solver_submission

        run_solver_submission(self, Path(input_dir), Path(output_dir), Path(submission_dir), config)


class PRTask(UAITask):
    name = "uai.pr"
    title = "UAI 2022 PR (log10 partition function)"
    kind = "PR"
    zero_reason = "log10 Z = -inf (Z = 0) but the true Z is positive"

    def check_record(self, inst, where):
        truth = _finite(inst.record, "log10_z", where)
        trivial = _finite(inst.record, "trivial_log10_z", where)
        inst.record["max_error"] = abs(truth - trivial)

    def parse(self, text, inst, warnings):
        return formats.parse_pr(text)

    def errors(self, inst, answer, config, details):
        return metrics.pr_error(inst.record["log10_z"], answer), inst.record["max_error"]

    def perfect_answer(self, inst, config):
        return formats.format_pr(inst.record["log10_z"])


class MARTask(UAITask):
    name = "uai.mar"
    title = "UAI 2022 MAR (marginals, mean Hellinger error)"
    kind = "MAR"

    def check_record(self, inst, where):
        truth = inst.record.get("marginals")
        if not isinstance(truth, list) or len(truth) != inst.model.n_vars:
            raise ReferenceDataError(f"{where}: marginals must list the {inst.model.n_vars} variables")
        try:
            inst.record["_truth"] = [np.asarray(p, dtype=float) for p in truth]
            # The stored trivial error takes precedence (spec 7); the uniform answer's error otherwise.
            stored = inst.record.get("trivial_error")
            inst.record["max_error"] = _finite(inst.record, "trivial_error", where) if stored is not None else \
                metrics.mean_hellinger(inst.record["_truth"], [np.ones(int(c)) for c in inst.model.cards],
                                       inst.evidence)
        except ValueError as exc:
            raise ReferenceDataError(f"{where}: marginals: {exc}") from None
        for v, p in enumerate(inst.record["_truth"]):
            if p.shape != (inst.model.cards[v],):
                raise ReferenceDataError(f"{where}: marginals[{v}] has {p.size} entries, "
                                         f"the variable has {inst.model.cards[v]}")

    def parse(self, text, inst, warnings):
        answer = formats.parse_mar(text, inst.model)
        sums = formats.mar_sums(text, inst.model)
        off = [v for v in range(inst.model.n_vars) if v not in inst.evidence and abs(sums[v] - 1) > 1e-3]
        if off:
            warnings.append(f"{len(off)} marginal(s) do not sum to 1 (e.g. variable {off[0]}: "
                            f"{sums[off[0]]:.6g}); renormalised")
        return answer

    def errors(self, inst, answer, config, details):
        return metrics.mean_hellinger(inst.record["_truth"], answer, inst.evidence), inst.record["max_error"]

    def perfect_answer(self, inst, config):
        return formats.format_mar(inst.record["marginals"])


class _BestKnownTask(UAITask):
    """MPE and MMAP: error against the best known value, improved by the submission itself."""

    def check_record(self, inst, where):
        best = _finite(inst.record, "best_log10", where)
        trivial = _finite(inst.record, "trivial_log10", where)
        if trivial > best + 1e-9:
            raise ReferenceDataError(f"{where}: the trivial value exceeds the best known value")

    def value(self, inst, answer, config) -> float:
        raise NotImplementedError

    def errors(self, inst, answer, config, details):
        value = self.value(inst, answer, config)
        stored = inst.record["best_log10"]
        best = max(stored, value)
        if value > stored + float(config["tolerance"]):
            details.setdefault("new_best", []).append(
                {"id": inst.id, "log10_value": value, "answer": self.jsonable(answer)})  # no reference value
        return metrics.gap_error(best, value), max(0.0, best - inst.record["trivial_log10"])


class MPETask(_BestKnownTask):
    name = "uai.mpe"
    title = "UAI 2022 MPE (most probable explanation)"
    kind = "MPE"

    def parse(self, text, inst, warnings):
        return formats.parse_mpe(text, inst.model, inst.evidence)

    def value(self, inst, answer, config):
        return metrics.log10_likelihood(inst.model, answer, inst.evidence)

    def perfect_answer(self, inst, config):
        return formats.format_mpe(_best(inst, "best_assignment"))

    @staticmethod
    def jsonable(answer):
        return [int(x) for x in answer]


class MMAPTask(_BestKnownTask):
    name = "uai.mmap"
    title = "UAI 2022 MMAP (marginal MAP)"
    kind = "MMAP"
    needs_query = True

    def parse(self, text, inst, warnings):
        return formats.parse_mmap(text, inst.model, inst.query, warnings)

    def value(self, inst, answer, config):
        try:
            return engine.log10_mmap_value(inst.model, answer, inst.evidence, int(config["max_table_size"]))
        except TableTooLarge as exc:
            raise ReferenceDataError(f"{inst.id}: cannot evaluate V(q) exactly: {exc}") from None

    def perfect_answer(self, inst, config):
        return formats.format_mmap({int(v): int(x) for v, x in _best(inst, "best_answer").items()})

    @staticmethod
    def jsonable(answer):
        return {str(k): int(v) for k, v in sorted(answer.items())}


class MLCTask(UAITask):
    name = "uai.mlc"
    title = "UAI 2022 MLC (multi-label classification)"
    kind = "MLC"

    def _load_instance(self, models, record, where):
        inst = super()._load_instance(models, record, where)
        inst.test = formats.parse_mlc_data((models / f"{inst.id}.uai.test").read_text(),
                                           f"{inst.id}.uai.test", inst.model, with_labels=False)
        inst.query = inst.test.query_vars
        if len(inst.record.get("lines", [])) != len(inst.test.evidence):
            raise ReferenceDataError(f"{where}: 'lines' must hold one entry per test line")
        for k, line in enumerate(inst.record["lines"]):
            opt = _finite(line, "optimum_log10", f"{where} lines[{k}]")
            if _finite(line, "trivial_log10", f"{where} lines[{k}]") > opt + 1e-9:
                raise ReferenceDataError(f"{where} lines[{k}]: trivial value above the optimum")
        return inst

    def check_record(self, inst, where):
        pass

    def parse(self, text, inst, warnings):
        return formats.parse_mlc(text, inst.model, inst.query, len(inst.test.evidence))

    def errors(self, inst, answer, config, details):
        tol = float(config["tolerance"])
        scores, valid = [], 0
        for k, (pred, line) in enumerate(zip(answer, inst.record["lines"])):
            if isinstance(pred, AnswerError):
                scores.append(0.0)
                continue
            ev = inst.test.evidence[k]
            value = engine.log10_mmap_value(inst.model, pred, ev, int(config["max_table_size"]))
            err = metrics.gap_error(line["optimum_log10"], value)
            scores.append(metrics.instance_score(err, max(0.0, line["optimum_log10"] - line["trivial_log10"]), tol))
            valid += value > -math.inf
        details.setdefault("_lines", {})[inst.id] = (valid, len(scores))
        # The instance score is the mean line score: report it as Err/MaxErr = 1 - mean/100.
        mean = float(np.mean(scores))
        return 1.0 - mean / 100.0, 1.0

    def perfect_answer(self, inst, config):
        limit = int(config["max_table_size"])
        return formats.format_mlc([engine.mmap(inst.model, inst.query, evidence, limit)[1]
                                   for evidence in inst.test.evidence])

    def line_summary(self, inst, answer, details):
        valid, total = details.get("_lines", {}).get(inst.id, (0, 0))
        return [{"n_lines": total, "n_valid_lines": valid}]


def _best(inst: Instance, key: str):
    """The best known answer stored with an instance (ReferenceDataError when the reference has none)."""
    if key not in inst.record:
        raise ReferenceDataError(f"reference.json: instance {inst.id} has no {key}: no perfect submission")
    return inst.record[key]


TASKS = {t.name: t for t in (PRTask(), MARTask(), MPETask(), MMAPTask(), MLCTask())}


def dump_reference(task_name: str, records: list[dict]) -> str:
    """reference.json text: one instance per line (diffable, compact for long assignments)."""
    lines = ",\n".join(json.dumps(r) for r in records)
    return f'{{"task": {json.dumps(task_name)}, "instances": [\n{lines}\n]}}\n'


def update_best(ref_dir: Path, details_files: list[Path]) -> list[str]:
    """Fold the ``new_best`` answers of scoring outputs (details.json) into ref_dir/reference.json.

    Each answer is re-evaluated on the reference model (a details.json is not trusted) and kept only if
    it beats the stored best. Returns one line per change; reference.json is rewritten atomically.
    """
    import yaml

    ref_dir = Path(ref_dir)
    name = yaml.safe_load((ref_dir / "task.yaml").read_text())["task"]
    task = TASKS.get(name)
    if not isinstance(task, _BestKnownTask):
        raise ValueError(f"update-best applies to uai.mpe and uai.mmap, not {name!r}")
    config = task.load_config(yaml.safe_load((ref_dir / "task.yaml").read_text()))
    instances = {inst.id: inst for inst in task.load_reference(ref_dir, config)}
    data = json.loads((ref_dir / "reference.json").read_text())
    by_id = {r["id"]: r for r in data["instances"]}
    changes = []
    for path in details_files:
        details = json.loads(Path(path).read_text())
        if details.get("task") not in (None, name):
            raise ValueError(f"{path}: scores task {details.get('task')!r}, the reference is {name!r}")
        for entry in details.get("new_best", []):
            inst = instances.get(str(entry.get("id")))
            if inst is None:
                continue
            if task.kind == "MPE":
                answer = np.asarray(entry["answer"], dtype=np.int64)
                value = metrics.log10_likelihood(inst.model, answer, inst.evidence)
            else:
                answer = {int(k): int(v) for k, v in entry["answer"].items()}
                value = task.value(inst, answer, config)
            record = by_id[inst.id]
            if value > record["best_log10"] + float(config["tolerance"]):
                changes.append(f"{inst.id}: best log10 {record['best_log10']!r} -> {value!r}")
                record["best_log10"] = value
                key = "best_assignment" if task.kind == "MPE" else "best_answer"
                record[key] = task.jsonable(answer)
                record["trivial_error"] = value - record["trivial_log10"]
                inst.record["best_log10"] = value
    if changes:
        tmp = ref_dir / "reference.json.tmp"
        tmp.write_text(dump_reference(name, data["instances"]))
        tmp.replace(ref_dir / "reference.json")
    return changes
