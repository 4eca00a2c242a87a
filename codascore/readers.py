"""Readers shared by every family for files a participant controls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .task import SubmissionError


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
