"""The terminal view of ``codascore run`` (docs/codabench.md#what-the-terminal-shows): while each step runs,
its progress as the display's status line and each new warning once (codascore.progress: quiet hides the
status, never a warning). The runner itself prints nothing; the command line hands it a TerminalView as the
run's observer."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from ..progress import DISPLAY, LINE, Display
from .logs import MAX_LINE_CHARS, MAX_SHOWN_WARNINGS, is_warning, shown_line
from .steps import Observer, Step

#: Seconds a step runs before the terminal shows a counter, and between two plain lines off a terminal.
QUIET_SECONDS = 2.0
PLAIN_LINE_SECONDS = 5.0
POLL_SECONDS = 0.2
#: What is read of a log a participant's code may flood: the newest bytes only when it grew more between
#: two polls.
MAX_READ_BYTES = 1 << 20


class StepView:
    """What the terminal shows of a running step (docs/codabench.md#what-the-terminal-shows): it follows the
    step's stderr logs, echoes each new WARNING line once, and shows the latest progress line as a bar, or
    the seconds elapsed when the step has run QUIET_SECONDS without one, on the display's status line: a
    terminal redraws it; elsewhere a plain line is written at most every PLAIN_LINE_SECONDS, and the last
    one at the end. shown_warnings is shared by the steps of a run, so that a warning both steps log is
    echoed once."""

    def __init__(self, label: str, logs: list[Path], display: Display | None = None,
                 shown_warnings: list[str] | None = None, clock=time.monotonic):
        self.label, self.logs, self.clock = label, logs, clock
        self.display = display if display is not None else DISPLAY
        self.warnings = shown_warnings if shown_warnings is not None else []
        self.offsets = {path: 0 for path in logs}
        self.partial = {path: b"" for path in logs}
        self.latest: re.Match | None = None
        self.started = clock()
        self.shown_at: float | None = None
        self.flooded = False  # more than MAX_SHOWN_WARNINGS warnings came
        self.polled_at: float | None = None

    # ----- reading the logs
    def read_new_lines(self) -> list[str]:
        """The complete lines added to the logs since the last call."""
        lines = []
        for path in self.logs:
            try:
                with open(path, "rb") as handle:
                    size = handle.seek(0, os.SEEK_END)
                    if size - self.offsets[path] > MAX_READ_BYTES:  # skip a flood: only the newest counts
                        self.offsets[path], self.partial[path] = size - MAX_READ_BYTES, b""
                    handle.seek(self.offsets[path])
                    chunk = handle.read(MAX_READ_BYTES)
            except OSError:
                continue
            self.offsets[path] += len(chunk)
            *complete, rest = (self.partial[path] + chunk).split(b"\n")
            self.partial[path] = rest[:4 * MAX_LINE_CHARS]
            lines += [line.decode(errors="replace").rstrip("\r") for line in complete]
        return lines

    def take(self, line: str) -> None:
        """Note a log line: a progress line becomes the latest count, a new WARNING line is echoed."""
        line = shown_line(line)
        if (match := LINE.match(line)) is not None:
            self.latest = match
        elif is_warning(line) and line not in self.warnings:
            if len(self.warnings) < MAX_SHOWN_WARNINGS:
                self.warnings.append(line)
                self.display.tell(line)
            elif not self.flooded:
                self.flooded = True
                self.display.tell(f"(more than {MAX_SHOWN_WARNINGS} warnings: the rest are in the logs)")

    # ----- the terminal
    def status(self, finished: bool = False) -> str:
        seconds = self.clock() - self.started
        time_taken = f"finished in {seconds:.1f} s" if finished else f"{seconds:.0f} s"
        if self.latest is None:
            return f"[{self.label}] {time_taken if finished else 'running, ' + time_taken}"
        done, total = int(self.latest["done"]), int(self.latest["total"])
        filled = min(20, round(20 * done / total)) if total else 20
        return (f"[{self.label}] {self.latest['what']} [{'#' * filled}{'.' * (20 - filled)}] "
                f"{done}/{total}{self.latest['rest']}, {time_taken}")

    def show_status(self) -> None:
        now = self.clock()
        if self.display.hidden or now - self.started < QUIET_SECONDS:
            return
        if not self.display.tty and self.shown_at is not None and now - self.shown_at < PLAIN_LINE_SECONDS:
            return
        self.display.status(self.status())
        self.shown_at = now

    def poll(self) -> None:
        """Read what the step logged since the last poll and update the terminal (a few times a second:
        wait_all looks at the programs far more often)."""
        now = self.clock()
        if self.polled_at is not None and now - self.polled_at < POLL_SECONDS:
            return
        self.polled_at = now
        for line in self.read_new_lines():
            self.take(line)
        self.show_status()

    def finish(self) -> None:
        """After the step: the lines still unread, and the final status when a counter was shown."""
        lines = self.read_new_lines()
        lines += [part.decode(errors="replace") for part in self.partial.values() if part]  # no final newline
        self.partial = {path: b"" for path in self.logs}
        for line in lines:
            self.take(line)
        if self.shown_at is not None:
            self.display.status(self.status(finished=True), final=True)


class TerminalView(Observer):
    """The observer of a run on a terminal (or a log file): each program's command as it starts, then the
    step's StepView; a warning both steps log is shown once."""

    def __init__(self, display: Display | None = None):
        self.display = display if display is not None else DISPLAY
        self.shown_warnings: list[str] = []
        self.view: StepView | None = None

    def started(self, step: Step) -> None:
        for program in step.programs:
            self.display.say(program.announce)
        self.view = StepView(step.name, step.logs, display=self.display, shown_warnings=self.shown_warnings)

    def poll(self) -> None:
        if self.view is not None:
            self.view.poll()

    def finished(self, step: Step) -> None:
        if self.view is not None:
            self.view.finish()
        self.view = None
