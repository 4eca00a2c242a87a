"""Reading a step's logs, which a participant's code may flood or fill with escape sequences: the lines a
person may be shown (docs/codabench.md#what-the-terminal-shows) and the warnings a run reports. Its
progress lines (docs/codabench.md#progress-lines) are read with codascore.progress.LINE."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

#: A line is cut at this length, and at most this many warnings are kept of a run.
MAX_LINE_CHARS = 500
MAX_SHOWN_WARNINGS = 50
#: The bytes of a log read for its warnings: a flood beyond them is not read at all.
MAX_SCANNED_BYTES = 16 << 20


def printable(line: str) -> str:
    """A log line as a person may see it: control characters (a participant's escape sequences could
    rewrite the terminal) become '?', and the line is cut at MAX_LINE_CHARS."""
    text = "".join(c if c.isprintable() else "?" for c in line[:MAX_LINE_CHARS])
    return text + (" ..." if len(line) > MAX_LINE_CHARS else "")


def shown_line(raw: str) -> str:
    """A raw log line as it is shown: what a carriage return left on screen, made printable."""
    return printable(raw.rstrip("\r\n").rsplit("\r", 1)[-1])


def is_warning(line: str) -> bool:
    return line.startswith("WARNING")


def log_warnings(logs: Iterable[Path], limit: int = MAX_SHOWN_WARNINGS) -> list[str]:
    """The WARNING lines of the logs, each once, in order, shown_line'd; at most limit of them, each log
    read up to MAX_SCANNED_BYTES."""
    found: list[str] = []
    for path in logs:
        try:
            handle = open(path, "rb")
        except OSError:
            continue
        with handle:
            while handle.tell() < MAX_SCANNED_BYTES and (raw := handle.readline(4 * MAX_LINE_CHARS)):
                line = shown_line(raw.decode(errors="replace"))
                if is_warning(line) and line not in found:
                    found.append(line)
                    if len(found) >= limit:
                        return found
    return found
