"""What a person sees while a judgement runs (one line per change: done, running, failed, rate, time left)
and without running anything (:func:`status_table`: the states per team and per state)."""

from __future__ import annotations

import time

from ..formats.judgement import DONE, FAILED, INFRASTRUCTURE, PENDING, QUEUED, RUNNING, STATES, Judgement


class Progress:
    """Counts of this judgement's units; ``line()`` says where it stands. The rate counts only the units
    finished by this judge (those judged before are not work done now)."""

    def __init__(self, total: int, already: int):
        self.total, self.already = total, already
        self.finished = {DONE: 0, FAILED: 0, INFRASTRUCTURE: 0}
        self.running = 0  # started by a worker
        self.queued = 0  # handed to the cluster, not yet started
        self.requeued = 0  # lost before a worker started them: queued again, no attempt counted
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
        requeued = f" ({self.requeued} requeued unstarted)" if self.requeued else ""
        return (f"{self.already + finished_now}/{self.total} units finished ({self.finished[DONE]} done, "
                f"{self.finished[FAILED]} failed{infrastructure} now; {self.already} before), "
                f"{self.running} running, {self.queued} queued{requeued}, {rate:.1f} units/min, {left}")


def format_duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def status_table(store: Judgement) -> str:
    """The units per task and team in each state, the totals, and the entries skipped with their reasons."""
    rows = store.rows()
    if not rows:
        return "no units recorded yet"
    table: dict[tuple[str, str], dict[str, int]] = {}
    for row in rows:
        counts = table.setdefault((row["task"], row["team"]), dict.fromkeys(STATES, 0))
        counts[row["state"]] += 1
    width = max(len(f"{task} / {team}") for task, team in table) + 2
    header = f"{'task / team':<{width}}" + "".join(f"{state:>22}" for state in STATES)
    lines = [header]
    for (task, team), counts in sorted(table.items()):
        lines.append(f"{task + ' / ' + team:<{width}}" + "".join(f"{counts[s]:>22}" for s in STATES))
    totals = store.counts()
    lines.append(f"{'total':<{width}}" + "".join(f"{totals[s]:>22}" for s in STATES))
    unfinished = totals[PENDING] + totals[QUEUED] + totals[RUNNING] + totals[INFRASTRUCTURE]
    lines.append(f"{sum(totals.values())} units, {unfinished} to run by the next judgement")
    lines += [f"skipped {entry['task']} / {entry['name']}: {entry['reason']}" for entry in store.skipped()]
    return "\n".join(lines)
