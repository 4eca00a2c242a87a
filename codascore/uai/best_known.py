"""Better-than-best answers folded back into reference data (``codascore uai update-best``): the MPE and
MMAP answers a scorer reported in details.json (``new_best``), re-checked on the reference model before
reference.json keeps them (docs/uai.md#better-than-the-best-known-answer).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import ReferenceDataError, UsageError
from ..validate import shown
from . import files
from .tasks import TASKS, BestKnownRules


def update_best(ref_dir: Path, details_files: list[Path]) -> list[str]:
    """Fold the ``new_best`` answers of scoring outputs (details.json) into ref_dir/reference.json.

    Each answer is re-evaluated on the reference model (a details.json is not trusted) and kept only if
    it beats the stored best. Returns one line per change; reference.json is rewritten atomically.
    UsageError for a reference folder of another task, ReferenceDataError for an unreadable details.json.
    """
    import yaml

    ref_dir = Path(ref_dir)
    raw = yaml.safe_load((ref_dir / "task.yaml").read_text())
    name = raw.get("task") if isinstance(raw, dict) else None
    task = TASKS.get(name)
    if task is None or not isinstance(task.rules, BestKnownRules):
        raise UsageError(f"{ref_dir}: update-best applies to uai.mpe and uai.mmap, not {name!r}")
    rules = task.rules
    config = task.load_config(raw)
    instances = {inst.id: inst for inst in task.load_reference(ref_dir, config)}
    data = json.loads((ref_dir / "reference.json").read_text())
    by_id = {r["id"]: r for r in data["instances"]}
    changes = []
    for path in details_files:
        try:
            details = json.loads(Path(path).read_text())
        except ValueError as exc:
            raise ReferenceDataError(f"{path}: not a details.json ({exc})") from None
        if not isinstance(details, dict) or details.get("task") not in (None, name):
            task_name = details.get("task") if isinstance(details, dict) else None
            raise ReferenceDataError(f"{path}: scores task {task_name!r}, the reference is {name!r}")
        for k, entry in enumerate(details.get("new_best", [])):
            inst = instances.get(str(entry.get("id")))
            if inst is None:
                continue
            try:
                answer = rules.from_json(entry["answer"])
                value = rules.value(inst, answer, config)
            except (KeyError, TypeError, AttributeError, ValueError) as exc:
                raise ReferenceDataError(f"{path}: new_best[{k}] (instance {inst.id}): not a valid answer "
                                         f"({exc})") from None
            record = by_id[inst.id]
            if value > record["best_log10"] + float(config["tolerance"]):
                changes.append(f"{inst.id}: best log10 {shown(record['best_log10'])} -> {shown(value)}")
                record["best_log10"] = value
                record[rules.best_key] = rules.jsonable(answer)
                record["trivial_error"] = value - record["trivial_log10"]
                inst.record["best_log10"] = value
    if changes:
        tmp = ref_dir / "reference.json.tmp"
        tmp.write_text(files.dump_reference(name, data["instances"]))
        tmp.replace(ref_dir / "reference.json")
    return changes
