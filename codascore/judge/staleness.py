"""Which recorded results are stale, and why (``codascore judge --status``, docs/judge.md#resume).

A finished unit is stale when something it was judged with has changed since on disk: the team's
submission, the reference or input data, a program, codascore itself (fingerprint.on_disk). The store
records each unit's inputs, and where the last judgement of each task read its teams and data (its
context); this module digests those again and names what differs. What the command line sets (a budget, a
time limit) is the next judgement's to compare: a judge that found units changed left them pending with
the reason, which is named too.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from ..errors import CodascoreError
from ..formats.judgement import FINISHED, Judgement
from ..runner import find_layout
from .fingerprint import Sources, on_disk
from .teams import read_teams


def stale_lines(judgement: Judgement) -> list[str]:
    """Lines naming, per task and team, the units to be judged again and why (none when all stand)."""
    lines = []
    for task, context in sorted(judgement.contexts().items()):
        rows = judgement.rows(task)
        found: Counter = Counter()
        for row in rows:
            if row["state"] not in FINISHED and row["stale"]:
                found[(row["team"], f"{row['stale']} changed")] += 1
        try:
            current = inputs_on_disk(task, context)
        except (CodascoreError, OSError) as exc:
            lines.append(f"{task}: whether its results are stale was not checked: {exc}")
            current = None
        for row in rows if current is not None else ():
            if row["state"] not in FINISHED:
                continue
            recorded = json.loads(row["inputs"] or "{}")
            now = current.get(row["team"])
            if not recorded:
                why = "judged before its inputs were recorded"
            elif now is None:
                why = "the team's submission is gone"
            else:
                changed = [name for name in now if name in recorded and recorded[name] != now[name]]
                why = f"{', '.join(changed)} changed" if changed else ""
            if why:
                found[(row["team"], why)] += 1
        for (team, why), count in sorted(found.items()):
            lines.append(f"stale {task} / {team}: {count} unit{'s' * (count > 1)} to judge again ({why})")
    return lines


def inputs_on_disk(task: str, context: dict) -> dict[str, dict[str, str]]:
    """team -> the digests of its units' on-disk inputs now, from where the judgement read them."""
    submissions, root = Path(context["submissions"]), Path(context["root"])
    for what, path in (("submissions folder", submissions), ("project folder", root)):
        if not path.is_dir():
            raise FileNotFoundError(f"its {what} {path} is not here")
    sources = Sources.of(find_layout(root, task))
    teams, _ = read_teams(submissions)
    return {team.name: on_disk(team.sha256, sources) for team in teams}
