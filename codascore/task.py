"""The contract between the Codabench layer and a family's tasks.

A family module exposes ``TASKS``, a dict from task name (``"<family>.<task>"``) to a :class:`Task`.
The Codabench layer (:mod:`codascore.codabench`) does every file write, exit code and page; a task only
reads its own inputs, validates them and computes numbers.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable

#: At most this many problems are listed for one invalid submission (the rest are counted).
MAX_PROBLEMS = 20


class SubmissionError(Exception):
    """The participant's files are invalid: the scorer exits 1 and writes no scores.json."""

    def __init__(self, problems: str | list[str], total: int | None = None):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        self.total = max(total or 0, len(self.problems))
        super().__init__("; ".join(self.problems))


class ReferenceDataError(Exception):
    """Reference data or task configuration is broken (an organiser's error): the scorer exits 2."""


class Problems:
    """Collects validation problems so that one run reports all of them (up to MAX_PROBLEMS).

    >>> problems = Problems()
    >>> problems.add("result.json: means[3][1] is NaN")
    >>> problems.raise_if_any()
    Traceback (most recent call last):
    codascore.task.SubmissionError: result.json: means[3][1] is NaN
    """

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.total = 0

    def add(self, message: str) -> None:
        self.total += 1
        if len(self.messages) < MAX_PROBLEMS:
            self.messages.append(message)

    def __bool__(self) -> bool:
        return self.total > 0

    def raise_if_any(self) -> None:
        if self.total:
            raise SubmissionError(self.messages, total=self.total)


@dataclasses.dataclass
class Section:
    """One part of detailed_results.html: a title and an HTML body built with codascore.report helpers."""

    title: str
    html: str


@dataclasses.dataclass
class Result:
    """What a task's score() returns.

    scores:    the keys written to scores.json, as computed: the Codabench layer clips a value Codabench
               cannot store (|v| >= 1e10, infinities) to ±(1e10 - 1) with a warning, and leaves out a
               NaN secondary value; the primary ``score`` must never be NaN.
    instances: one record per instance, each with an ``"id"`` and its per-instance metrics (details.json).
    warnings:  messages for the participant (page, details.json, stderr).
    details:   further JSON-able content for details.json (for example new best MPE values).
    """

    scores: dict[str, float]
    instances: list[dict] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)
    details: dict = dataclasses.field(default_factory=dict)


class Task:
    """Base class of a scoring task. Subclasses set the class attributes and implement the methods.

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
    """

    name: str = ""
    title: str = ""
    score_keys: tuple[str, ...] = ("score",)
    result_files: tuple[str, ...] = ()
    has_ingestion: bool = False
    defaults: dict[str, Any] = {}
    answer_samples: tuple[str, ...] = ()
    max_scores: dict[str, float | None] = {}

    # ----- scoring -----
    def load_reference(self, ref_dir: Path, config: dict) -> Any:
        """Read ref/ (raise ReferenceDataError on anything wrong)."""
        raise NotImplementedError

    def load_submission(self, res_dir: Path, reference: Any, config: dict) -> Any:
        """Read and validate the submission in res_dir (raise SubmissionError listing every problem)."""
        raise NotImplementedError

    def score(self, reference: Any, submission: Any, config: dict) -> Result:
        """Compute the scores from validated inputs. No file I/O."""
        raise NotImplementedError

    def report(self, result: Result, reference: Any, submission: Any, config: dict) -> list[Section]:
        """Sections of detailed_results.html after the score table (figures, tables). No file I/O."""
        return []

    # ----- data generation (codascore reference TASK) -----
    def generate(self, root: Path, config: dict, progress: Callable[[str], None] = print,
                 seed: int | None = None) -> None:
        """Write reference_data/<name>/, input_data/<name>/ (if any) and sample_submissions/<name>/<sample>/
        below root, deterministically. Sample names starting with ``invalid`` or ``broken`` must fail.

        seed: None writes the demo's data from the family's fixed public seeds; an organiser's private
        master seed writes a bundle's data, every random stream derived from it (codascore.seeds). The
        master seed itself goes into no file: codascore.bundle_data records it."""
        raise NotImplementedError

    def write_perfect_submission(self, ref_dir: Path, out_dir: Path, config: dict) -> bool:
        """Write into out_dir the result submission that scores the maximum, made from the reference data in
        ref_dir alone (config as load_config returns it): the generators write the demo's truth sample with
        it, and the checker scores it to know the maximum. Return False when no submission can repeat the
        truth (real-world data, whose answer is no formula); max_scores then holds documented bounds only."""
        return False

    # ----- ingestion (code submissions) -----
    def ingest(self, input_dir: Path, output_dir: Path, submission_dir: Path, config: dict) -> None:
        """Run the participant's code found in submission_dir on input_dir under the configured time
        limit and write exactly the files a result submission would hold into output_dir.
        Raise SubmissionError when the code fails (its traceback in the message)."""
        raise NotImplementedError

    def load_config(self, raw: dict) -> dict:
        """task.yaml content merged over the defaults; unknown keys are an organiser error."""
        unknown = sorted(set(raw) - set(self.defaults) - {"task"})
        if unknown:
            raise ReferenceDataError(
                f"task.yaml: unknown parameter(s) {unknown} for task {self.name}; "
                f"known: {sorted(self.defaults)}")
        return {**self.defaults, **raw}
