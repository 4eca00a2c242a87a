"""Task registry: task name -> Task object, imported lazily per family.

Families are imported only when one of their tasks is asked for, so that scoring weak lensing never
imports sympy or h5py.
"""

from __future__ import annotations

import importlib

from .task import ReferenceDataError, Task

#: family name -> module exposing TASKS (a dict name -> Task instance)
FAMILIES = {
    "weak_lensing": "codascore.weak_lensing",
    "ariel": "codascore.ariel",
    "srbench": "codascore.srbench",
    "uai": "codascore.uai",
}


def family_tasks(family: str) -> dict[str, Task]:
    module = importlib.import_module(FAMILIES[family])
    return dict(module.TASKS)


def get_task(name: str) -> Task:
    """The task called ``name``, e.g. ``weak_lensing.phase1``; ReferenceDataError if there is none."""
    family = str(name).split(".", 1)[0]
    if family not in FAMILIES:
        raise ReferenceDataError(f"unknown task {name!r}: no family {family!r} (known: {sorted(FAMILIES)})")
    try:
        tasks = family_tasks(family)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("codascore."):
            raise ReferenceDataError(f"task {name!r}: family {family!r} is not installed") from exc
        raise
    if name not in tasks:
        raise ReferenceDataError(f"unknown task {name!r} (known: {sorted(tasks)})")
    return tasks[name]


def all_tasks() -> dict[str, Task]:
    """Every task of every family that is present in this build, in a stable order."""
    tasks: dict[str, Task] = {}
    for family in FAMILIES:
        try:
            tasks.update(family_tasks(family))
        except ModuleNotFoundError as exc:
            if exc.name != FAMILIES[family]:
                raise
    return dict(sorted(tasks.items()))
