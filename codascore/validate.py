"""The checks every family shares on what a participant controls: collecting problems, numbers that are
not booleans, and reading a participant's JSON file.

Readers and validators stay apart from metrics: a family's ``files.py`` reads and validates with these,
and its ``metrics.py`` receives only validated arrays.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from .errors import SubmissionError

#: At most this many problems are listed for one invalid submission (the rest are counted).
MAX_PROBLEMS = 20


class Problems:
    """Collects validation problems so that one run reports all of them (up to MAX_PROBLEMS).

    >>> problems = Problems()
    >>> problems.add("result.json: means[3][1] is NaN")
    >>> problems.raise_if_any()
    Traceback (most recent call last):
    codascore.errors.SubmissionError: result.json: means[3][1] is NaN
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


def shown(value: Any, limit: int = 40) -> str:
    """A value as a message shows it: a number plainly (numpy 2 writes ``np.float64(-0.1)`` for a numpy
    scalar's repr, numpy 1.26 ``-0.1``: both become ``-0.1``), a string quoted and cut to limit characters,
    a list or tuple element by element, anything else as its repr cut to limit characters.

    >>> import numpy as np
    >>> shown(np.float64(-0.1)), shown(np.int64(3)), shown("x" * 50, limit=5), shown([np.float32(0.5), 1])
    ('-0.1', '3', "'xxxxx...'", '[0.5, 1]')
    """
    if getattr(value, "shape", None) == () and hasattr(value, "item"):  # a numpy scalar or 0-d array
        value = value.item()
    if isinstance(value, str):
        return repr(value if len(value) <= limit else value[:limit] + "...")
    if isinstance(value, (list, tuple)):
        text = ", ".join(shown(item, limit) for item in value[:limit])
        text = f"{text}, ..." if len(value) > limit else text
        return f"[{text}]" if isinstance(value, list) else f"({text})"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def is_number(value: Any) -> bool:
    """A JSON or YAML number: int or float, and not a bool (``True`` is an int to Python, not to a reader)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_finite_number(value: Any) -> bool:
    """A number (:func:`is_number`) that is neither NaN nor infinite."""
    return is_number(value) and math.isfinite(value)


def read_participant_json(path: Path, hint: str = "") -> Any:
    """Parse a participant's JSON file, or raise SubmissionError naming the file and the position.

    hint completes the "file missing" message (for example where the file is expected)."""
    name = Path(path).name
    if not Path(path).is_file():
        raise SubmissionError(f"{name}: file missing from the submission{hint}")
    try:
        return json.loads(Path(path).read_bytes())
    except UnicodeDecodeError as exc:
        raise SubmissionError(f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise SubmissionError(f"{name}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise SubmissionError(f"{name}: JSON nested too deeply") from None
