"""Task registry: task name -> Task object, imported lazily per family.

Families are imported only when one of their tasks is asked for, so that scoring weak lensing never
imports sympy or h5py.
"""

from __future__ import annotations

import difflib
import importlib

from .errors import ReferenceDataError, UnknownTaskError
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
    """The task called ``name``, e.g. ``weak_lensing.phase1``; UnknownTaskError, naming the closest known
    task and listing them all, if there is none."""
    family = str(name).split(".", 1)[0]
    if family not in FAMILIES:
        raise unknown_task(name)
    try:
        tasks = family_tasks(family)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("codascore."):
            raise ReferenceDataError(f"task {name!r}: family {family!r} is not installed") from exc
        raise
    if name not in tasks:
        raise unknown_task(name)
    return tasks[name]


def did_you_mean(name: str, known: list[str]) -> str:
    """' (did you mean X?)' with the known name closest to name (difflib's ratio), or '' if none is close."""
    close = difflib.get_close_matches(str(name), known, n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def unknown_task(name: str) -> UnknownTaskError:
    """The error for a task name no family defines: the closest known name, then every known one."""
    known: list[str] = []
    for family in FAMILIES:
        try:
            known += family_tasks(family)
        except ImportError:  # a family this build lacks, or one that cannot load here: list the others
            continue
    known.sort()
    return UnknownTaskError(f"unknown task {str(name)!r}{did_you_mean(name, known)}; "
                            f"the tasks are {', '.join(known)}")


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
