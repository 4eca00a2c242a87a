"""Task registry: task name -> Task object, imported lazily per family.

Families are imported only when one of their tasks is asked for, so that scoring weak lensing never
imports sympy or h5py.
"""

from __future__ import annotations

import importlib

from .errors import ReferenceDataError
from .task import Task

#: family name -> module exposing TASKS (a dict name -> Task instance)
FAMILIES = {
    "weak_lensing": "codascore.weak_lensing",
    "ariel": "codascore.ariel",
    "srbench": "codascore.srbench",
    "uai": "codascore.uai",
}


#: Library files that only generate data (generators, simulators, dataset formula tables, sample sources,
#: seed derivation), relative to the package folder. A bundle's program folders leave them out, so that
#: nothing a participant downloads rebuilds the answers; scoring and ingestion never import them.
GENERATION_MODULES = (
    "seeds.py",
    "weak_lensing/generate.py", "weak_lensing/simulator.py", "weak_lensing/baseline_model.py",
    "weak_lensing/broken_model.py",
    "ariel/generate.py", "ariel/ensemble_sampler.py",
    "srbench/generate.py", "srbench/datasets.py", "srbench/baselines.py",
    "uai/generate.py", "uai/trivial_solvers.py", "uai/lbp_solver.py",
)


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
