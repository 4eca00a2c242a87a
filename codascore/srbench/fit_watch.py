"""What a code submission's run tells the ingestion while it runs, and how its fit is stopped
(docs/srbench.md#why-a-run-stopped).

The run's process writes its notes to a small file as it goes (one JSON object a line: a note for the log,
the method's own time budget, the moment the fit started, why it was stopped), so that the ingestion can
log them for every run, including one that was killed before it could reply. The parent reads the file as
data only (JSON lines, bounded), never as code.

The fit runs under 2022's SIGALRM at ``fit_time_limit`` (``evaluate_model.py`` lines 133–141). When the
alarm cannot end the fit (the method installed its own SIGALRM handler, cancelled or re-set the timer, or
catches the alarm's exception and carries on), a watchdog thread stops the process ``ALARM_GRACE`` seconds
after the limit (or at 1.5 times the limit when that comes first), after writing which of these happened. A fit
stuck in C code that holds the interpreter lock stops neither for the alarm nor for the watchdog: the
ingestion kills its process at the limit plus KILL_GRACE (ingest.py).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

from ..errors import FitTimeout
from ..validate import is_number

#: Seconds the fit may run past its limit when the alarm did not end it, before the watchdog stops the
#: process; never more than half the limit, so that the watchdog comes before the ingestion's kill at the
#: limit plus min(KILL_GRACE, limit).
ALARM_GRACE = 10.0
#: Parameter names (compared in lower case, the last part of a nested ``a__b`` name) read as the method's own
#: time budget in seconds, in est.get_params() before and after pre_train.
BUDGET_NAMES = ("time_limit", "timelimit", "max_time", "maxtime", "time", "timeout", "time_out", "budget",
                "time_budget", "max_runtime", "runtime", "max_seconds", "max_time_seconds", "walltime",
                "wall_time", "max_walltime", "time_left", "max_fit_time")
#: The longest notes file the parent reads (bytes), and the longest note it logs (characters).
MAX_NOTES_BYTES = 256 * 1024
MAX_NOTE_CHARS = 500


def raw_params(est) -> dict:
    """est.get_params() (without ``deep``, which some estimators lack), else its public attributes."""
    try:
        return dict(est.get_params())
    except Exception:  # not a scikit-learn estimator, or a broken get_params
        return {k: v for k, v in vars(est).items() if not k.startswith("_")} if hasattr(est, "__dict__") else {}


def budgets(params: dict) -> dict[str, float]:
    """{name: seconds} of the parameters whose name is one of BUDGET_NAMES and whose value is a number."""
    return {name: float(value) for name, value in params.items()
            if str(name).rsplit("__", 1)[-1].lower() in BUDGET_NAMES and is_number(value)}


def budget_text(before: dict, after: dict, limit: float) -> str | None:
    """The log's line on the method's own time budget (None when no parameter names one): each budget, who
    set it, and whether it exceeds the fit limit."""
    found = budgets(after)
    if not found:
        return None
    said = []
    for name, value in sorted(found.items()):
        origin = "" if before.get(name) == value else f" (set by pre_train, was {before.get(name, '(unset)')})"
        over = f", above the fit limit of {limit:g} s" if value > limit else ""
        said.append(f"{name} = {value:g}{origin}{over}")
    return "the method's own time budget: " + "; ".join(said)


class RunNotes:
    """The run process's side: each note appended to the notes file at once (so it survives a kill) and
    kept for the reply."""

    def __init__(self, path: str | None):
        self.path, self.lines = path, []
        self.started = time.monotonic()

    def record(self, **entry) -> None:
        if not self.path:
            return
        try:
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(entry) + "\n")
        except (OSError, TypeError, ValueError):
            pass  # the notes are for the log; a run never fails for them

    def add(self, text: str) -> None:
        self.lines.append(text)
        self.record(note=text)

    def since_start(self) -> float:
        return time.monotonic() - self.started


def read_notes(path: Path) -> dict:
    """The parent's side: {"notes": [str], "budget": str or None, "fit_started": seconds after the run
    began or None, "stopped": why the watchdog stopped the fit, or None, "fit_seconds": float or None}."""
    out = {"notes": [], "budget": None, "fit_started": None, "stopped": None, "fit_seconds": None}
    try:
        with open(path, "rb") as handle:
            text = handle.read(MAX_NOTES_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return out
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("note"), str):
            out["notes"].append(entry["note"][:MAX_NOTE_CHARS])
        for key in ("budget", "stopped"):
            if isinstance(entry.get(key), str):
                out[key] = entry[key][:MAX_NOTE_CHARS]
        for key in ("fit_started", "fit_seconds"):
            if is_number(entry.get(key)):
                out[key] = float(entry[key])
    return out


class FitWatch:
    """The fit's time limit: 2022's SIGALRM (its handler raises FitTimeout inside fit), and a watchdog
    thread that stops the process when the fit is still running ``grace`` seconds after the limit."""

    def __init__(self, limit: float, notes: RunNotes, grace: float | None = None):
        self.limit, self.notes = float(limit), notes
        self.grace = min(ALARM_GRACE, self.limit / 2) if grace is None else float(grace)
        self.fired = self.done = False
        self.timer: threading.Timer | None = None

    def _on_alarm(self, signum, frame):
        self.fired = True
        raise FitTimeout

    def __enter__(self) -> FitWatch:
        self.notes.record(fit_started=self.notes.since_start())
        signal.signal(signal.SIGALRM, self._on_alarm)
        signal.setitimer(signal.ITIMER_REAL, self.limit)
        self.timer = threading.Timer(self.limit + self.grace, self._stop)
        self.timer.daemon = True
        self.timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self.done = True
        signal.setitimer(signal.ITIMER_REAL, 0)
        if self.timer is not None:
            self.timer.cancel()

    def why(self) -> str:
        """Why the alarm did not end the fit."""
        handler = signal.getsignal(signal.SIGALRM)
        if getattr(handler, "__func__", None) is not FitWatch._on_alarm:
            return (f"the method replaced the SIGALRM handler (with {handler!r:.80}), so the fit's alarm at "
                    f"{self.limit:g} s could not stop it")
        if self.fired:
            return (f"the fit's alarm at {self.limit:g} s raised its exception, but the fit did not end within "
                    f"{self.grace:g} s: the method catches it and carries on")
        return (f"the fit's alarm at {self.limit:g} s never fired: the method cancelled or re-set the timer "
                "(signal.alarm or setitimer)")

    def _stop(self) -> None:
        if self.done:
            return
        self.notes.record(stopped=f"stopped at {self.limit + self.grace:g} s, {self.grace:g} s after the fit "
                                  f"limit: {self.why()}", fit_seconds=self.limit + self.grace)
        if os.getpgrp() == os.getpid():  # the run's own process group (workers.py): what it started too
            os.killpg(os.getpid(), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)
