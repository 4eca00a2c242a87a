"""What codascore shows while it works, in one way for every verb, the runner's view and the families'
long loops (docs/architecture.md#progress).

Everything goes to the standard error, so that the standard output holds only what was asked for. A
:class:`Display` writes three kinds of text: progress lines that stay (:meth:`Display.say`: a unit judged, a
file downloaded), one status line (:meth:`Display.status`: a counter, a step's bar) that a terminal redraws
in place and that a pipe or a log receives as plain lines, and notes that are not progress
(:meth:`Display.tell`: warnings). Quiet (``codascore --quiet``) hides the first two, as pip's ``--quiet``
does; warnings, errors and results still print.

A :class:`Counter` is the status of a long loop, in the line format a step's log carries to the runner
(docs/codabench.md#progress-lines)::

    progress: <what> <done>/<total>[ <unit>][ (<failed> failed)][; <note>]

:data:`LINE` reads it back. This module imports nothing of codascore: the families' steps use it too.
"""

from __future__ import annotations

import contextlib
import re
import sys
import time
from typing import Callable, Iterable, Iterator

#: The start of a counter's line, and the line read back (the runner's view of a step's log).
PREFIX = "progress: "
LINE = re.compile(r"^progress: (?P<what>.*?) (?P<done>\d+)/(?P<total>\d+)(?P<rest>.*)$")
#: Seconds at least between two lines of one counter (its first and last count are always written).
INTERVAL = 0.5
#: Erases the line a terminal shows, the cursor back at its start.
ERASE = "\r\x1b[K"

#: Whether this process shows progress: codascore --quiet sets it (:func:`quiet`) for the command it runs.
_quiet = False


@contextlib.contextmanager
def quiet(hidden: bool = True) -> Iterator[None]:
    """Within the block, every Display that was not told otherwise shows no progress."""
    global _quiet
    before, _quiet = _quiet, bool(hidden)
    try:
        yield
    finally:
        _quiet = before


class Display:
    """One stream's progress (the standard error unless told): lines, one status line, notes. stream None
    and hidden None are read when a line is written: the standard error as it is then (a test's capture),
    and the process's --quiet."""

    def __init__(self, stream=None, hidden: bool | None = None):
        self._stream, self._hidden = stream, hidden
        self.drawn = ""  # the status a terminal shows, without its newline

    @property
    def stream(self):
        return self._stream if self._stream is not None else sys.stderr

    @property
    def hidden(self) -> bool:
        return _quiet if self._hidden is None else self._hidden

    @property
    def tty(self) -> bool:
        return bool(getattr(self.stream, "isatty", lambda: False)())

    def write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()

    def clear(self) -> None:
        """Erase the status a terminal shows, so that a line that stays takes its place."""
        if self.drawn:
            self.write(ERASE)
            self.drawn = ""

    def say(self, text: str) -> None:
        """A progress line that stays."""
        if not self.hidden:
            self.tell(text)

    def tell(self, text: str) -> None:
        """A line shown even when quiet: a warning, a note on what was not done."""
        self.clear()
        self.write(f"{text}\n")

    def status(self, text: str, final: bool = False) -> None:
        """The status line: redrawn in place on a terminal (when it changed; final leaves it there), a plain
        line elsewhere, as often as the caller writes one."""
        if self.hidden:
            return
        if not self.tty:
            self.write(f"{text}\n")
        elif final:
            self.write(f"{ERASE}{text}\n")
            self.drawn = ""
        elif text != self.drawn:
            self.write(ERASE + text)
            self.drawn = text


#: The display of this process: what the families' loops and every command write to.
DISPLAY = Display()


def counter_line(what: str, done: int, total: int | None, unit: str = "", failed: int = 0, note: str = "") -> str:
    """A counter's line: ``progress: <what> <done>/<total>[ <unit>][ (<failed> failed)][; <note>]`` (the
    total left out when it is unknown)."""
    count = f"{int(done)}" if total is None else f"{int(done)}/{int(total)}"
    return (f"{PREFIX}{what} {count}" + (f" {unit}" if unit else "") + (f" ({failed} failed)" if failed else "")
            + (f"; {note}" if note else ""))


class Counter:
    """A long loop's count on a display's status line (docs/codabench.md#progress-lines). A line is written
    at most every INTERVAL seconds and only when the count has grown by 1 % of the total since the last
    line, so a step's log holds about a hundred lines at most; the first count and the last are always
    written. unit: what is counted when it is not the things themselves (``bytes``); keep: the last line
    stays on a terminal (else the next line takes its place)."""

    def __init__(self, what: str, total: int | None, display: Display | None = None, unit: str = "",
                 keep: bool = True, clock: Callable[[], float] = time.monotonic):
        self.what, self.total, self.unit, self.keep, self.clock = what, total, unit, keep, clock
        self.display = display if display is not None else DISPLAY
        self.written_at: float | None = None
        self.written_count = -1

    def line(self, done: int, failed: int = 0) -> str:
        return counter_line(self.what, done, self.total, self.unit, failed)

    def due(self, done: int) -> bool:
        """Whether a line for done is written now (the last count always is)."""
        if self.total is not None and done >= self.total:
            return done != self.written_count
        if self.written_at is None:
            return True
        step = max(1, -(-(self.total or 0) // 100))  # 1 % of the total, rounded up
        return self.clock() - self.written_at >= INTERVAL and done - self.written_count >= step

    def update(self, done: int, failed: int = 0) -> bool:
        """Show the count if it is due; returns whether a line was written."""
        if not self.due(done):
            return False
        self.written_at, self.written_count = self.clock(), int(done)
        last = self.total is not None and done >= self.total
        self.display.status(self.line(done, failed), final=last and self.keep)
        return True


def counted(items: Iterable, what: str, total: int | None = None) -> Iterator:
    """The items of a loop, counted on the status line as they are taken: ``for x in counted(xs, "instances
    solved")``. An item counts as done when the loop asks for the next one."""
    items = list(items) if total is None and not hasattr(items, "__len__") else items
    counter = Counter(what, len(items) if total is None else total)
    done = 0
    counter.update(0)
    for item in items:
        yield item
        done += 1
        counter.update(done)
