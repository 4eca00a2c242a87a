"""The contract between the Codabench layer and a family's tasks.

A family module exposes ``TASKS``, a dict from task name (``"<family>.<task>"``) to a :class:`Task`.
The Codabench layer (:mod:`codascore.codabench`) does every file write, exit code and page; a task only
reads its own inputs, validates them and computes numbers.
"""

from __future__ import annotations

import abc
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from .errors import ReferenceDataError, UsageError
from .progress import DISPLAY

if TYPE_CHECKING:
    from .board import Board
    from .plan import JudgePlan


def log(message: str) -> None:
    """A line for the step's log (stderr, flushed at once): warnings, errors, what a step did. Codabench
    shows it to the participant; scores.json and the page are the only other outputs. A long loop's count
    is a codascore.progress.Counter (docs/codabench.md#progress-lines)."""
    DISPLAY.tell(message)


@dataclasses.dataclass
class Section:
    """One part of detailed_results.html: a title and an HTML body built with codascore.report helpers."""

    title: str
    html: str


@dataclasses.dataclass(frozen=True)
class ScoreGuide:
    """One line of a page's "how to read this page" block (docs/codabench.md#reports).

    key:     the scores.json key (or a column of a per-instance table) it explains.
    formula: how it is computed, in a line (symbols allowed: Σ, ², ≤).
    better:  "higher" or "lower".
    range:   the values it can take, e.g. "0 to 100" or "−∞ to 1".
    """

    key: str
    formula: str
    better: str
    range: str


@dataclasses.dataclass(frozen=True)
class CodeEntry:
    """How a task's ingestion imports a code submission (what ``codascore pack`` proves under the image's
    Python, and what a team's environment is checked with): the entry file at the submission's root, and
    the ingestion's loader (``module:function``) called with the entry's path and ``arguments``."""

    file: str
    loader: str
    arguments: tuple[str, ...] = ()


@dataclasses.dataclass
class Result:
    """What a task's score() returns.

    scores:    the keys written to scores.json, as computed: the Codabench layer clips a value Codabench
               cannot store (|v| >= 1e10, infinities) to ±(1e10 - 1) with a warning, and leaves out a
               NaN secondary value; the primary ``score`` must never be NaN.
    instances: one record per instance, each with an ``"id"`` and its per-instance metrics (details.json).
    warnings:  messages for the participant (page, details.json, stderr).
    details:   further JSON-able content for details.json (for example new best MPE values).
    report_data: what report() needs beyond the above (arrays for figures, per-view summaries); never
               written anywhere. score() returns it here instead of storing it on the reference or the
               submission, which stay as load_reference and load_submission made them.
    """

    scores: dict[str, float]
    instances: list[dict] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)
    details: dict = dataclasses.field(default_factory=dict)
    report_data: dict = dataclasses.field(default_factory=dict)


class Task(abc.ABC):
    """Base class of a scoring task: one instance per task, in its family's ``TASKS``. The contract, with
    what the Codabench layer does around it: docs/architecture.md#the-task-contract.

    A task must set ``name`` and write (``abc.abstractmethod``: a class missing one cannot be instantiated)::

        load_reference(ref_dir, config) -> reference         read ref/; ReferenceDataError on anything wrong
        load_submission(res_dir, reference, config) -> sub   read and validate res/; SubmissionError
        score(reference, sub, config) -> Result              the scores from validated inputs, purely
        ingest(input_dir, output_dir, submission_dir, config)   only when has_ingestion is True (a class
                                                             setting it without ingest is a TypeError)

    A task may set (default):

        title ("": pages show name)        score_keys (("score",))       result_files ((): res/ as is)
        has_ingestion (False)              defaults ({}: no parameter)   answer_samples (())
        max_scores ({})                    failing_sample_prefixes (("invalid", "broken"))
        board_settings (())                code_entry (None: no import of a code submission)

    A task may override (what the default does):

        report             no section after the score table
        score_guide        no "how to read this page" block
        validate_format    UsageError: no check without the reference data
        data_inventory     None: the folder says nothing to compare
        generate           UsageError: the task makes no demo data
        write_perfect_submission   False: no submission repeats the truth
        build_reference    UsageError: no reference data from an organiser's own files
        load_config        task.yaml over defaults; an unknown key is a ReferenceDataError
        judge_plan         None: the judge runs a submission as one pipeline (codascore/plan.py)
        final_board        None: the task has no final ranking (codascore leaderboard; codascore/board.py)

    The attributes:

    name:          "<family>.<task>", the value of ``task:`` in ref/task.yaml.
    title:         human-readable title for pages and tables.
    score_keys:    every key scores.json may hold, primary ``"score"`` first (the bundle checker
                   compares them with the leaderboard's columns).
    result_files:  file names (or glob patterns) of a result submission; used to find the submission
                   root when a participant zipped a wrapper folder.
    has_ingestion: whether code submissions are run by the ingestion program.
    defaults:      task.yaml parameters and their defaults; load_config() fills them in.
    answer_samples: the sample submissions generate() makes from the truth (or from anything only the
                   reference data holds). They stay in the demo and the tests: the bundle builder leaves
                   them out of every starting kit, and the checker fails a starting kit holding one.
    max_scores:    score keys whose best value only a submission knowing the answers reaches (higher is
                   better): key -> that value when it is a documented bound (R² <= 1), or None for what
                   the perfect submission (write_perfect_submission) scores. ``codascore check --run``
                   fails a starting-kit sample that reaches one.
    failing_sample_prefixes: sample submissions whose name starts with one of these must fail (exit 1, no
                   scores.json); the demo and ``codascore check --run`` hold every task to it.
    board_settings: the task.yaml parameters the final board's formula depends on: the scorer writes them
                   in details.json's ``settings``, and ``codascore leaderboard`` refuses teams scored with
                   different values.
    code_entry:    how the ingestion imports a code submission (CodeEntry), for ``codascore pack`` and a
                   team's environment; None when code submissions are commands (UAI's solver) or absent.
    """

    name: str = ""
    title: str = ""
    score_keys: tuple[str, ...] = ("score",)
    result_files: tuple[str, ...] = ()
    has_ingestion: bool = False
    defaults: dict[str, Any] = {}
    answer_samples: tuple[str, ...] = ()
    max_scores: dict[str, float | None] = {}
    failing_sample_prefixes: tuple[str, ...] = ("invalid", "broken")
    board_settings: tuple[str, ...] = ()
    code_entry: CodeEntry | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.has_ingestion and cls.ingest is Task.ingest:
            raise TypeError(f"{cls.__qualname__} sets has_ingestion = True but does not write ingest(): a task "
                            f"that takes code submissions must run them (docs/architecture.md#the-task-contract)")

    def expected_to_fail(self, sample_name: str) -> bool:
        """Whether the sample submission called sample_name must be refused (exit 1, no scores.json)."""
        return sample_name.startswith(self.failing_sample_prefixes)

    # ----- scoring: required -----
    @abc.abstractmethod
    def load_reference(self, ref_dir: Path, config: dict) -> Any:
        """Read ref/ (raise ReferenceDataError on anything wrong)."""

    @abc.abstractmethod
    def load_submission(self, res_dir: Path, reference: Any, config: dict) -> Any:
        """Read and validate the submission in res_dir (raise SubmissionError listing every problem)."""

    def validate_format(self, res_dir: Path, config: dict) -> str:
        """``codascore validate TASK SUBMISSION``: check the submission in res_dir with no reference data (file
        names, structure, types, finite values, shapes the format fixes) and return a one-line summary of
        what was checked and what only scoring checks (counts and names the reference holds). Raise
        SubmissionError listing every problem (file, field, index, value). docs/participants.md#checking-a-submission"""
        raise UsageError(f"{self.name}: no reference-free check is written for this task; "
                         f"codascore run checks a submission with the reference data")

    @abc.abstractmethod
    def score(self, reference: Any, submission: Any, config: dict) -> Result:
        """Compute the scores from validated inputs: a pure function. No file I/O, no change to reference,
        submission or config, no cache kept on them: everything the report needs is in the Result."""

    def score_guide(self, config: dict) -> list[ScoreGuide]:
        """The "how to read this page" block of detailed_results.html: one ScoreGuide per key of
        score_keys (tests/test_report_guide.py holds every task to it), in score_keys' order."""
        return []

    def report(self, result: Result, reference: Any, submission: Any, config: dict) -> list[Section]:
        """Sections of detailed_results.html after the score table (figures, tables). No file I/O."""
        return []

    # ----- agreement of reference data, input data and starting kit (codascore check, rule 31) -----
    def data_inventory(self, folder: Path, role: str, config: dict) -> dict[str, tuple[int, ...]] | None:
        """What a folder of this task's data holds, for ``codascore check`` (docs/bundles.md#the-checker,
        rule 31): item id (an instance, a planet, a dataset, or a named array such as "test maps") -> its
        shape (``()`` when only its presence matters). role is "reference" (ref/), "input" (input_data/) or
        "sample" (a starting-kit result submission). The reference and the input data must list the same
        items with the same shapes; a sample may answer only items of the reference, with their shapes.
        None: this folder says nothing to compare (a code sample, a task that does not report).
        Raise ReferenceDataError when the folder cannot be read."""
        return None

    # ----- data generation (codascore reference TASK) -----
    def generate(self, root: Path, config: dict, progress: Callable[[str], None] = print,
                 seed: int | None = None) -> None:
        """Write reference_data/<name>/, input_data/<name>/ (if any) and sample_submissions/<name>/<sample>/
        below root, deterministically. Samples the task expects to fail (expected_to_fail) must fail.

        seed: None writes the demo's data from the family's fixed public seeds; an organiser's private
        master seed writes a bundle's data, every random stream derived from it (codascore.seeds). The
        master seed itself goes into no file: codascore.bundle_data records it.

        Default: UsageError, the task makes no demo data (its reference data comes from build_reference or
        from the organiser's own folder)."""
        raise UsageError(f"{self.name}: this task makes no demo data (it does not write generate())")

    def build_reference(self, source: Path, out: Path, config: dict,
                        progress: Callable[[str], None] = print) -> None:
        """``codascore build-reference TASK SOURCE OUT``: write the task's reference data into out from
        an organiser's own files in source (the formats docs/hosting.md gives). Raise ReferenceDataError
        naming the file, field and value when source is wrong, before anything is written."""
        raise UsageError(f"{self.name}: reference data from your own files is not available for this task")

    def write_perfect_submission(self, ref_dir: Path, out_dir: Path, config: dict) -> bool:
        """Write into out_dir the result submission that scores the maximum, made from the reference data in
        ref_dir alone (config as load_config returns it): the generators write the demo's truth sample with
        it, and the checker scores it to know the maximum. Return False when no submission can repeat the
        truth (real-world data, whose answer is no formula); max_scores then holds documented bounds only."""
        return False

    # ----- the final judgement (codascore judge) -----
    def judge_plan(self) -> "JudgePlan | None":
        """How ``codascore judge`` judges this task as its organisers did: its budget profiles, its groups and
        a code submission's parts (codascore.plan.JudgePlan; docs/judge.md#plans). None (the default): one
        pipeline unit per submission, as ``codascore run`` runs it."""
        return None

    # ----- the final leaderboard (codascore leaderboard) -----
    def final_board(self, config: dict) -> "Board | None":
        """The task's official final ranking: its formula, its unit of evidence and how that evidence is
        resampled (codascore.board.Board; docs/leaderboard.md). None (the default): the task is not ranked."""
        return None

    # ----- ingestion (code submissions) -----
    def ingest(self, input_dir: Path, output_dir: Path, submission_dir: Path, config: dict) -> None:
        """Run the participant's code found in submission_dir on input_dir under the configured time
        limit and write exactly the files a result submission would hold into output_dir.
        Raise SubmissionError when the code fails (its traceback in the message).

        Required when has_ingestion is True (enforced when the class is made); the default, reached only by
        a task without ingestion, is a UsageError."""
        raise UsageError(f"{self.name}: takes result submissions only; there is no code to run")

    def load_config(self, raw: dict) -> dict:
        """task.yaml content merged over the defaults; unknown keys are an organiser error."""
        unknown = sorted(set(raw) - set(self.defaults) - {"task"})
        if unknown:
            raise ReferenceDataError(
                f"task.yaml: unknown parameter(s) {unknown} for task {self.name}; "
                f"known: {sorted(self.defaults)}")
        return {**self.defaults, **raw}

    def write_task_yaml(self, folder: Path, config: dict, keys: Iterable[str] | None = None) -> Path:
        """Write folder/task.yaml naming this task, with config's values of keys (default: every parameter
        in defaults, sorted), in that order; the generators write reference and input data's with it."""
        import yaml

        chosen = sorted(self.defaults) if keys is None else list(keys)
        path = Path(folder) / "task.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump({"task": self.name, **{k: config[k] for k in chosen}}, sort_keys=False))
        return path
