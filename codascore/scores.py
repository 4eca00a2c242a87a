"""scores.json: what Codabench can store, and the contract every scoring step's output keeps.

Written once and used by both sides: the scorer (:mod:`codascore.codabench`) makes its scores storable with
:func:`clean_scores` and checks them with :func:`scores_problems` before it writes them; the runner
(:func:`codascore.runner.collect`) holds any scoring program's output to :func:`output_problems`, which
applies the same check to the scores.json it finds (docs/codabench.md#the-compute-worker).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Iterable

from .errors import SubmissionError
from .formats.outputs import DETAILS, PAGE, SCORES, SCORES_YAML, WORKER_METADATA
from .outcomes import Outcome, scoring_outcome
from .task import Task
from .validate import read_participant_yaml, shown

#: Codabench stores scores as Decimal(20, 10): every stored value has |v| < 1e10 ...
MAX_ABS_SCORE = 1e10
#: ... so a value beyond this bound is clipped to it, with a warning naming the true value.
MAX_STORABLE_SCORE = MAX_ABS_SCORE - 1
#: What links a page to something outside itself (Codabench shows detailed_results.html alone).
_LINK = re.compile(r"""(?:src|href)\s*=\s*["']?([^"'\s>]+)""")


def clean_scores(scores: dict[str, Any], task: Task) -> tuple[dict[str, float], list[str], dict[str, float],
                                                           list[str]]:
    """Plain-float copy of scores that Codabench can store, and what was changed to get it.

    Codabench stores every leaderboard value as ``DecimalField(max_digits=20, decimal_places=10)``, so a
    stored value must be finite with |v| < 1e10 (docs/bundles.md, "Storable scores"). A valid submission,
    however bad, must still be scored, so a value outside that range (R², MSE, a property or a
    log-likelihood of a very bad submission, an infinity included) is clipped to ±(1e10 - 1) and reported;
    a NaN secondary value is left out (its column shows n/a).

    Returns (scores, omitted keys, clipped keys with their true values, warnings). A key the task does not
    declare, a non-number, or a missing or NaN primary ``score`` is a bug in the task: RuntimeError."""
    cleaned: dict[str, float] = {}
    omitted: list[str] = []
    clipped: dict[str, float] = {}
    warnings: list[str] = []
    for key, value in scores.items():
        if key not in task.score_keys:
            raise RuntimeError(f"task {task.name} wrote undeclared score key {key!r}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
            raise RuntimeError(f"task {task.name}: score {key!r} is not a number: {shown(value)}")
        number = float(value)
        if math.isnan(number):
            omitted.append(key)
            warnings.append(f"score {key!r} is not a number (NaN) and was left out of scores.json")
            continue
        if abs(number) > MAX_STORABLE_SCORE:
            clipped[key] = number
            number = math.copysign(MAX_STORABLE_SCORE, number)
            warnings.append(f"score {key!r} = {clipped[key]:.6g} is beyond what Codabench can store "
                            f"(|value| < 1e10): clipped to {number:.10g}")
        cleaned[key] = number
    if "score" not in cleaned:
        raise RuntimeError(f"task {task.name} produced no primary 'score' that is a number")
    return cleaned, omitted, clipped, warnings


def scores_problems(scores: object, required: Iterable[str], name: str = SCORES) -> list[str]:
    """What keeps scores (the content of a scores.json, or of the worker's scores.txt fallback) from being
    stored by Codabench: not a flat mapping, a value that is no finite number below 1e10, a leaderboard
    column key missing. [] when it keeps the contract."""
    if not isinstance(scores, dict):
        return [f"{name} is not a flat mapping of scores"]
    problems = []
    for key, value in scores.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            problems.append(f"{name}: {key!r} is not a number ({type(value).__name__})")
        elif not math.isfinite(value) or abs(value) >= MAX_ABS_SCORE:
            problems.append(f"{name}: {key!r} = {value} is not a finite number below 1e10")
    problems += [f"{name} lacks the column key {key!r}" for key in sorted(set(required) - set(scores))]
    return problems


def required_keys(task: Task, leaderboard_keys: Iterable[str] | None, omitted: Iterable[str]) -> set[str]:
    """The keys a scores.json of task must hold: the task's, narrowed to the leaderboard's columns when a
    competition names them, less the secondary ones the scorer left out as NaN (details.json's
    omitted_scores); the primary ``score`` always."""
    keys = set(task.score_keys)
    if leaderboard_keys is not None:
        keys &= set(leaderboard_keys)
    return (keys - set(omitted)) | {"score"}


def output_problems(output: Path, exit_code: int | None, task: Task,
                    leaderboard_keys: Iterable[str] | None = None) -> tuple[dict, list[str]]:
    """The Codabench contract on a scoring step's output folder, given the step's exit code: returns (the
    scores found, the problems). The worker's own file (metadata) must not be there; scores.json only
    after exit 0, and then storable (:func:`scores_problems`, scores.txt read as YAML being the worker's
    fallback); detailed_results.html self-contained."""
    output = Path(output)
    problems = []
    if (output / WORKER_METADATA).exists():
        problems.append("the scoring program wrote output/metadata (the worker's file): Codabench fails the run")
    scores_path = output / SCORES
    if scoring_outcome(exit_code) is not Outcome.SCORED:
        if scores_path.exists():
            problems.append(f"exit code {exit_code} but scores.json was written")
        return {}, problems
    scores, read_problems = _read_scores(output)
    if read_problems:
        return {}, problems + read_problems
    try:
        omitted = json.loads((output / DETAILS).read_text()).get("omitted_scores", [])
    except (OSError, ValueError, AttributeError):
        omitted = []
    name = SCORES if scores_path.is_file() else SCORES_YAML
    problems += scores_problems(scores, required_keys(task, leaderboard_keys, omitted), name)
    page = output / PAGE
    if page.is_file():
        for match in _LINK.finditer(page.read_text(errors="replace")):
            if not match.group(1).startswith(("data:", "#")):
                problems.append(f"detailed_results.html links to {match.group(1)[:60]!r}: not self-contained")
                break
    return (scores if isinstance(scores, dict) else {}), problems


def _read_scores(output: Path) -> tuple[Any, list[str]]:
    """scores.json, or the worker's fallback scores.txt read as YAML when there is no scores.json."""
    scores_path = output / SCORES
    if scores_path.is_file():
        try:
            return json.loads(scores_path.read_text(), parse_constant=float), []
        except json.JSONDecodeError as exc:
            return None, [f"scores.json is not valid JSON: {exc}"]
    if (output / SCORES_YAML).is_file():
        try:
            return read_participant_yaml(output / SCORES_YAML), []
        except (SubmissionError, OSError) as exc:
            return None, [" ".join(str(exc).split())]
    return None, ["exit code 0 but no scores.json (nor scores.txt): Codabench fails the run"]
