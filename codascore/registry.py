"""Task registry: task name -> Task object, imported lazily per family.

Families are imported only when one of their tasks is asked for, so that scoring weak lensing never
imports sympy or h5py.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .errors import ReferenceDataError, UnknownTaskError

if TYPE_CHECKING:  # the command line's help reads this module: it imports no more than it must
    from .task import Task

#: family name -> module exposing TASKS (a dict name -> Task instance)
FAMILIES = {
    "weak_lensing": "codascore.weak_lensing",
    "ariel": "codascore.ariel",
    "srbench": "codascore.srbench",
    "uai": "codascore.uai",
}

#: family name -> the names of its TASKS, known without importing the family, so that the command line's
#: help lists them in a blink (importing every family takes seconds); tests/test_registry.py checks them.
TASK_NAMES = {
    "weak_lensing": ("weak_lensing.phase1", "weak_lensing.phase2", "weak_lensing.phase2_deployed"),
    "ariel": ("ariel.retrieval",),
    "srbench": ("srbench.synthetic", "srbench.qualification", "srbench.realworld"),
    "uai": ("uai.pr", "uai.mar", "uai.mpe", "uai.mmap", "uai.mlc"),
}

#: family name -> the summary of its own verbs (``codascore <family> <verb>``: the Group of the same name in
#: its cli.py's COMMANDS), for the families that have some; the help lists them without importing them.
FAMILY_VERBS = {
    "ariel": "Ariel Data Challenge 2023 helpers",
    "srbench": "SRBench 2022 organiser tools",
    "uai": "UAI 2022 tools: update best answers",
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
    import difflib

    close = difflib.get_close_matches(str(name), known, n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def task_names() -> list[str]:
    """Every task's name, sorted, without importing a family (TASK_NAMES)."""
    return sorted(name for names in TASK_NAMES.values() for name in names)


def unknown_task(name: str) -> UnknownTaskError:
    """The error for a task name no family defines: the closest known name, then every known one."""
    known = task_names()
    return UnknownTaskError(f"unknown task {str(name)!r}{did_you_mean(name, known)}; "
                            f"the tasks are {', '.join(known)}")


def all_tasks() -> dict[str, Task]:
    """Every task of every family that is present in this build, in a stable order."""
    tasks: dict[str, "Task"] = {}
    for family in FAMILIES:
        try:
            tasks.update(family_tasks(family))
        except ModuleNotFoundError as exc:
            if exc.name != FAMILIES[family]:
                raise
    return dict(sorted(tasks.items()))
