"""The import rule of docs/architecture.md, read from the source with ``ast`` (every import statement,
module-level or inside a function):

- no import cycle anywhere in ``codascore/``;
- a family imports only the core modules task, board, plan, formats, errors, progress, validate, report and
  sandbox (and, to generate data, seeds), and its own modules; its ``cli`` sits on top and may import anything;
- a family's generation (``generate`` and what only generation imports) never imports its ``tasks``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from codascore.competition import project_root
from codascore.registry import FAMILIES

PACKAGE = project_root() / "codascore"
#: The core modules a family may import (seeds: the private seed's derivation, for its generators; the
#: formats the tools hand each other, codascore/formats/).
FAMILY_MAY_IMPORT = {"codascore.task", "codascore.board", "codascore.plan", "codascore.errors", "codascore.validate",
                     "codascore.report", "codascore.sandbox", "codascore.seeds", "codascore.progress", "codascore",
                     "codascore.formats",
                     "codascore.formats.details", "codascore.formats.outputs", "codascore.formats.atomic",
                     "codascore.formats.environment"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str) -> set[str]:
    """The codascore modules a module imports, anywhere in its body (``from . import x`` names module x)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "codascore"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "codascore":
                continue
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                found.add(candidate if candidate in MODULES else target)
    return {module for module in found if module in MODULES and module != name}


GRAPH = {name: imports_of(name) for name in MODULES}


def cycles() -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(GRAPH[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(GRAPH):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_anywhere():
    assert cycles() == []


def test_the_cycle_finder_finds_a_cycle():
    GRAPH["codascore.errors"].add("codascore.task")  # task imports errors: now a cycle
    try:
        assert any({"codascore.errors", "codascore.task"} <= set(cycle) for cycle in cycles())
    finally:
        GRAPH["codascore.errors"].discard("codascore.task")


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_family_imports_only_the_core_it_may_and_itself(family):
    prefix = f"codascore.{family}"
    wrong = {name: sorted(module for module in imports
                          if module != prefix and not module.startswith(prefix + ".")
                          and module not in FAMILY_MAY_IMPORT)
             for name, imports in GRAPH.items()
             if (name == prefix or name.startswith(prefix + ".")) and name != f"{prefix}.cli"}
    assert not {name: modules for name, modules in wrong.items() if modules}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_generation_never_imports_the_tasks(family):
    """Whatever a family's generate module reaches by its imports, the tasks module is not among it."""
    start, tasks = f"codascore.{family}.generate", f"codascore.{family}.tasks"
    seen, todo = set(), [start]
    while todo:
        name = todo.pop()
        if name in seen or name not in GRAPH:
            continue
        seen.add(name)
        todo += GRAPH[name]
    assert start in MODULES and tasks in MODULES
    assert tasks not in seen


#: The files every family has, each for the same role (docs/architecture.md#one-shape-for-every-family);
#: cli.py only where the family has verbs of its own.
ROLE_FILES = {"__init__.py", "metrics.py", "files.py", "tasks.py", "report.py", "ingest.py", "generate.py"}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_has_one_file_per_role_and_the_engines_the_architecture_names(family):
    present = {path.name for path in (PACKAGE / family).glob("*.py")}
    documented = (project_root() / "docs" / "architecture.md").read_text()
    assert ROLE_FILES <= present
    engines = present - ROLE_FILES - {"cli.py"}
    assert engines and all(f"`{family}/{name}`" in documented for name in engines)
