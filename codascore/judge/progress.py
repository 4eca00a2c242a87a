"""What a person sees while a judgement runs: one line per change, in the counter format of
codascore.progress (units finished, failed, running, rate, time left). Where a judgement stands without
running anything is the reader's (codascore.formats.judgement.status_table)."""

from __future__ import annotations

import time

from ..formats.judgement import DONE, FAILED, INFRASTRUCTURE
from ..progress import counter_line


class Progress:
    """Counts of this judgement's units; ``line()`` says where it stands. The rate counts only the units
    finished by this judge (those judged before are not work done now)."""

    def __init__(self, total: int, already: int):
        self.total, self.already = total, already
        self.finished = {DONE: 0, FAILED: 0, INFRASTRUCTURE: 0}
        self.running = 0
        self.started = time.monotonic()

    def finish(self, state: str) -> None:
        self.finished[state] += 1

    @property
    def remaining(self) -> int:
        return self.total - self.already - sum(self.finished.values())

    def line(self) -> str:
        minutes = (time.monotonic() - self.started) / 60
        finished_now = sum(self.finished.values())
        rate = finished_now / minutes if minutes > 0 else 0.0
        left = f"about {format_duration(self.remaining / rate * 60)} left" if rate > 0 and self.remaining else \
            "nothing left" if not self.remaining else "time left unknown"
        infrastructure = f", {self.finished[INFRASTRUCTURE]} infrastructure errors" \
            if self.finished[INFRASTRUCTURE] else ""
        note = (f"{self.finished[DONE]} done, {self.finished[FAILED]} failed{infrastructure} now, {self.already} "
                f"before; {self.running} running or queued, {rate:.1f} units/min, {left}")
        return counter_line("units finished", self.already + finished_now, self.total, note=note)


def format_duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
