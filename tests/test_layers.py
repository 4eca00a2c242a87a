"""The layer order of docs/architecture.md#the-layers, read from that page: a core module imports only
modules on its own line or below it (or of its own package or family); and no core module holds a
family's data (a task's name, a family's name as a key: budgets, entry files), which lives on the family's
Task and judging plan."""

from __future__ import annotations

import ast
import re

import pytest

from codascore.competition import project_root
from codascore.registry import FAMILIES, all_tasks
from test_imports import GRAPH, MODULES

DOC = project_root() / "docs" / "architecture.md"


def layers() -> list[list[str]]:
    """The layers as the page draws them, top first: the names left of '│' on each line of the text block
    under '## The layers'."""
    section = DOC.read_text().split("## The layers", 1)[1]
    block = re.search(r"```text\n(.*?)```", section, re.S).group(1)
    return [line.split("│", 1)[0].split() for line in block.splitlines() if line.strip()]


LAYERS = layers()
LEVEL = {name: level for level, names in enumerate(LAYERS) for name in names}


def top_name(module: str) -> str:
    """The name a module has on the page: its top-level module or package below codascore; a family's cli
    sits with the command line, on top; the package itself (its version) and __main__ at their ends."""
    parts = module.split(".")
    if len(parts) == 1:
        return "errors"  # codascore/__init__.py: the version, imported from anywhere
    if parts[1] == "__main__":
        return "cli"
    if parts[1] in FAMILIES and parts[-1] == "cli":
        return "cli"
    return parts[1]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a module on a higher line than the importer's, as 'importer -> imported'."""
    wrong = []
    for name, imports in graph.items():
        for imported in imports:
            if top_name(imported) == top_name(name):
                continue
            if LEVEL[top_name(imported)] < LEVEL[top_name(name)]:
                wrong.append(f"{name} -> {imported}")
    return sorted(wrong)


def test_every_core_module_and_family_is_on_the_page():
    missing = sorted({top_name(name) for name in MODULES} - set(LEVEL))
    assert not missing, f"docs/architecture.md#the-layers does not place {missing}"
    assert set(FAMILIES) <= set(LEVEL)


def test_no_module_imports_upward():
    assert upward_imports(GRAPH) == []


def test_an_upward_import_is_found():
    GRAPH["codascore.platform._fetch"].add("codascore.judge.teams")  # the import this order once caught
    try:
        assert "codascore.platform._fetch -> codascore.judge.teams" in upward_imports(GRAPH)
    finally:
        GRAPH["codascore.platform._fetch"].discard("codascore.judge.teams")


def family_data(module: str) -> list[str]:
    """The string constants of a core module (docstrings left out) that are a task's name, or a family's
    name (how a table keyed by family looks)."""
    tree = ast.parse(MODULES[module].read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    names = set(all_tasks()) | set(FAMILIES)
    return sorted({node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
                   and isinstance(node.value, str) and node.value in names and id(node) not in docstrings})


CORE = sorted(name for name in MODULES if top_name(name) not in FAMILIES and name != "codascore.registry"
              and top_name(name) != "cli")


@pytest.mark.parametrize("module", CORE)
def test_the_core_holds_no_familys_data(module):
    assert family_data(module) == [], f"{module} names a family's task or keys data by family"


def test_a_familys_data_in_the_core_is_found(tmp_path, monkeypatch):
    fake = tmp_path / "profiles.py"
    fake.write_text('"""Budgets."""\nPROFILES = {"official2022": {"uai.pr": {"cores": 1}}}\n')
    monkeypatch.setitem(MODULES, "codascore.judge.fake_profiles", fake)
    assert family_data("codascore.judge.fake_profiles") == ["uai.pr"]
