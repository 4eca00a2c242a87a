"""The checks every family shares on what a participant controls: collecting problems, numbers that are
not booleans, and reading a participant's JSON file.

Readers and validators stay apart from metrics: a family's ``files.py`` reads and validates with these,
and its ``metrics.py`` receives only validated arrays.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import yaml

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


#: Limits of a participant's JSON file (docs/codabench.md#limits-of-participant-files): its size in bytes,
#: how deeply arrays and objects nest, and how many characters one number literal may have (Python's int()
#: refuses literals over 4,300 digits with a ValueError; the largest float64 written out in full as an
#: integer has 309 digits).
MAX_JSON_BYTES = 256 * 1024**2
MAX_JSON_DEPTH = 64
MAX_NUMBER_CHARS = 400

_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)


class _RefusedNumber:
    """Stands in the parsed data for a number literal that is refused; :func:`_refused_paths` finds it."""

    def __init__(self, literal: str, reason: str):
        self.literal, self.reason = literal, reason


def _parse_int(literal: str):
    if len(literal) > MAX_NUMBER_CHARS:
        return _RefusedNumber(literal, f"has {len(literal)} characters, more than {MAX_NUMBER_CHARS}")
    value = int(literal)
    try:
        float(value)
    except OverflowError:
        return _RefusedNumber(literal, "is beyond the range of a float64 (about ±1.8e308)")
    return value


def _parse_float(literal: str):
    if len(literal) > MAX_NUMBER_CHARS:
        return _RefusedNumber(literal, f"has {len(literal)} characters, more than {MAX_NUMBER_CHARS}")
    value = float(literal)
    if math.isinf(value):  # a literal such as 1e999: Python would read it as infinity, silently
        return _RefusedNumber(literal, "is beyond the range of a float64 (about ±1.8e308)")
    return value


def json_depth(raw: bytes) -> int:
    """How deeply the arrays and objects of a JSON text nest (brackets inside strings do not count)."""
    import numpy as np

    codes = np.frombuffer(_JSON_STRING.sub(b'""', raw), dtype=np.uint8)
    steps = np.isin(codes, (ord("["), ord("{"))).astype(np.int64) - np.isin(codes, (ord("]"), ord("}")))
    return int(np.cumsum(steps).max(initial=0))


def _refused_paths(data: Any) -> list[str]:
    """'field[index]... = literal reason' for every refused number in parsed data, in document order."""
    found: list[str] = []
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, _RefusedNumber):
            literal = value.literal if len(value.literal) <= 40 else value.literal[:30] + "..."
            found.append(f"{path or 'the value'} = {literal} {value.reason}")
        elif isinstance(value, dict):
            stack += [(f"{path}[{json.dumps(k)[:40]}]" if path or not k.isprintable() else k[:40], v)
                      for k, v in reversed(value.items())]
        elif isinstance(value, list):
            stack += [(f"{path}[{i}]", v) for i, v in reversed(list(enumerate(value)))]
    return found


def read_participant_json(path: Path, hint: str = "") -> Any:
    """Parse a participant's JSON file, or raise SubmissionError naming the file and the position.

    Within the limits above, each refusal with its own message: a file over MAX_JSON_BYTES, nesting
    deeper than MAX_JSON_DEPTH, a number literal longer than MAX_NUMBER_CHARS or beyond float64's range
    (named by its field and index). NaN and Infinity are read (the validators name them as not finite).
    hint completes the "file missing" message (for example where the file is expected)."""
    name = Path(path).name
    if not Path(path).is_file():
        raise SubmissionError(f"{name}: file missing from the submission{hint}")
    size = Path(path).stat().st_size
    if size > MAX_JSON_BYTES:
        raise SubmissionError(f"{name}: {size} bytes, more than the {MAX_JSON_BYTES} a JSON file may have")
    raw = Path(path).read_bytes()
    depth = json_depth(raw)
    if depth > MAX_JSON_DEPTH:
        raise SubmissionError(f"{name}: arrays and objects nested {depth} deep, more than {MAX_JSON_DEPTH}")
    refused_any: list[bool] = []

    def flagged(parse):  # the document is walked for refused numbers only when there is one
        def hook(literal: str):
            value = parse(literal)
            if isinstance(value, _RefusedNumber):
                refused_any.append(True)
            return value
        return hook

    try:
        data = json.loads(raw, parse_int=flagged(_parse_int), parse_float=flagged(_parse_float))
    except UnicodeDecodeError as exc:
        raise SubmissionError(f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise SubmissionError(f"{name}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise SubmissionError(f"{name}: JSON nested too deeply") from None
    refused = _refused_paths(data) if refused_any else []
    if refused:
        raise SubmissionError([f"{name}: {where}" for where in refused[:MAX_PROBLEMS]], total=len(refused))
    return data


#: Bounds on a YAML file a participant wrote (a submission's ``metadata``, a program's ``scores.txt``, and
#: ``res/metadata`` where a local run left it): docs/codabench.md#archives-and-run-folders.
MAX_YAML_BYTES = 64 * 1024
MAX_YAML_DEPTH = 20


class _PlainYamlLoader(yaml.SafeLoader):
    """A safe loader that refuses anchors and aliases (an alias bomb expands exponentially) and nesting
    deeper than MAX_YAML_DEPTH."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent) or getattr(self.peek_event(), "anchor", None):
            raise yaml.YAMLError("anchors and aliases are not allowed")
        self._depth = getattr(self, "_depth", 0) + 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise yaml.YAMLError(f"nested deeper than {MAX_YAML_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def read_participant_yaml(path: Path) -> Any:
    """Parse a YAML file a participant wrote, bounded: at most MAX_YAML_BYTES, no anchors or aliases, at
    most MAX_YAML_DEPTH levels; SubmissionError naming the file otherwise."""
    name = Path(path).name
    size = Path(path).stat().st_size
    if size > MAX_YAML_BYTES:
        raise SubmissionError(f"{name}: {size} bytes, over the limit of {MAX_YAML_BYTES}")
    try:
        return yaml.load(Path(path).read_bytes(), Loader=_PlainYamlLoader)
    except yaml.YAMLError as exc:
        raise SubmissionError(f"{name} is not plain YAML: {' '.join(str(exc).split())}") from None
