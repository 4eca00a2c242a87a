"""Rules 10-14: the phases (their tasks, dates, order and time limits, the files they name)."""

from __future__ import annotations

import datetime as dt

from .base import CheckerBase
from .schema import ISO_DATE, PUBLIC_QUEUE_LIMIT, hashable, platform_datetime


class PhaseRules(CheckerBase):
    def phases_in_platform_order(self) -> list[tuple[int, dict]]:
        phases = [(i, p) for i, p in self.items("phases") if isinstance(p, dict)]
        index = lambda item: item[1].get("index") if isinstance(item[1].get("index"), int) else 0  # noqa: E731
        return sorted(phases, key=index)

    def rule_phases(self) -> None:
        phases = self.yaml.get("phases")
        if isinstance(phases, list) and not phases:
            self.error(10, "phases", "Unable to find any phases for this competition")
        defined = set(self.task_positions())
        for i, phase in self.items("phases"):
            at = f"phases[{i}]"
            if not self.check_fields("phase", phase, at):
                continue
            tasks = phase.get("tasks")
            if isinstance(tasks, list) and not tasks:
                self.error(10, f"{at}.tasks", "an empty list: Codabench accepts the phase, but no task can be "
                                              "submitted to (\"Phases must contain at least one task to be "
                                              "valid\")", platform=False)
            for j, index in enumerate(tasks if isinstance(tasks, list) else []):
                if not hashable(index) or index not in defined:
                    self.error(10, f"{at}.tasks[{j}]", f"unknown task index {index!r} (tasks define "
                                                       f"{sorted(defined, key=str)}): \"Unpacking the bundle "
                                                       "failed\"")
            start, end = (self.stored_date(phase, key, f"{at}.{key}") for key in ("start", "end"))
            if start is not None and end is not None and end <= start:
                self.error(11, f"{at}.end", f"ends ({end}) before it starts ({start}), as Codabench stores the "
                                            "dates", platform=False)
            limit = phase.get("execution_time_limit")
            if isinstance(limit, (int, float)) and not isinstance(limit, bool):
                if limit <= 0:
                    self.error(14, f"{at}.execution_time_limit", f"{limit} is not a positive number of seconds")
                elif limit > PUBLIC_QUEUE_LIMIT and "queue" not in self.yaml:
                    self.warn(14, f"{at}.execution_time_limit",
                              f"{limit} s: the public queue caps every step at 600-1200 s")
            positions = self.task_positions()
            phase_tasks = [self.yaml["tasks"][positions[t]] for t in (tasks if isinstance(tasks, list) else [])
                           if hashable(t) and t in positions]
            for key in ("starting_kit", "public_data"):
                if isinstance(phase.get(key), str) and not self.absent_ok(phase[key], key, None, f"{at}.{key}",
                                                                          phase_tasks):
                    self.resolve(phase[key], f"{at}.{key}")
                    self.check_folder_slash(phase[key], f"{at}.{key}")
        ordered = self.phases_in_platform_order()
        if ordered and ordered[0][1].get("auto_migrate_to_this_phase"):
            self.error(13, f"phases[{ordered[0][0]}].auto_migrate_to_this_phase",
                       "You cannot auto migrate to the first phase of a competition")
        for (i, phase), (j, after) in zip(ordered, ordered[1:]):
            name = phase.get("name")
            end, next_start = self.stored_date(phase, "end"), self.stored_date(after, "start")
            if not phase.get("end"):
                self.error(11, f"phases[{i}].end", f"Phase: {name} must have an end time because it has a "
                                                   "phase after it.")
                continue
            if end is None or next_start is None:
                continue
            if next_start < end:
                self.error(11, f"phases[{j}].start", f"Phases must be sequential: {after.get('name')} starts "
                                                     f"({next_start}) before {name} ends ({end}), as Codabench "
                                                     "stores the dates")
            elif next_start == end:
                self.error(11, f"phases[{j}].start", f"Phases dates conflict: {after.get('name')} starts "
                                                     f"exactly when {name} ends ({end}); start it later")

    def stored_date(self, phase: dict, key: str, at: str | None = None) -> dt.datetime | None:
        """The phase's start or end as Codabench stores it (:func:`platform_datetime`), or None when it is
        absent or unreadable. With ``at``, the value's findings (rule 12) are recorded."""
        value = phase.get(key)
        try:
            stored = platform_datetime(value)
        except ValueError as exc:
            if at is not None:
                self.error(12, at, f"{value!r}: Codabench cannot read it as a date ({exc}); write YYYY-MM-DD "
                                   "or a quoted \"YYYY-MM-DD HH:MM:SS\"", platform=True)
            return None
        if at is None or stored is None:
            return stored
        if isinstance(value, str) and not ISO_DATE.match(value.strip()):
            self.error(12, at, f"{value!r} is not an ISO date: Codabench reads it with dateutil, month-first, "
                               f"as {stored}; write YYYY-MM-DD or a quoted \"YYYY-MM-DD HH:MM:SS\"")
        elif isinstance(value, dt.datetime) and value.time() != dt.time():
            self.warn(12, at, f"unquoted timestamp {value}: Codabench keeps only its day and stores {stored} "
                              f"(UTC); quote it to keep the time: {key}: \"{value}\"")
        elif key == "end" and not (isinstance(value, str) and ":" in value):
            self.warn(12, at, f"the phase closes at {stored} UTC, the very start of that day; to include the "
                              f"day, write {key}: \"{stored.date()} 23:59:59\"")
        return stored
