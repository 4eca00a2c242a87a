"""The shape of the code, read from the source with ``ast``: every module of ``codascore/`` is under
MODULE_LINES lines, and every function or method (nested ones included) at most FUNCTION_LINES lines, but for
the numerics in LONG_NUMERICS, which follow an algorithm step by step and read best as one piece.

A function's length is ``end_lineno - lineno + 1``: from its ``def`` line (decorators not counted) to its
last line, its docstring included.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from codascore.competition import project_root

PACKAGE = project_root() / "codascore"
#: A module has fewer lines than this.
MODULE_LINES = 600
#: A function has at most this many lines.
FUNCTION_LINES = 80
#: (module, function) -> why it may be longer: each follows a published algorithm step by step.
LONG_NUMERICS = {
    ("codascore/ariel/spectral_summaries.py", "argsort_numpy123"):
        "numpy 1.23's introsort re-implemented step by step, so that ties order as the official scorer's do",
    ("codascore/uai/elimination_order.py", "min_fill_order"):
        "greedy min-fill elimination on bit-mask neighbourhoods, one loop over the eliminations",
    ("codascore/uai/peeling.py", "peel"):
        "the leaf and subsumed-factor eliminations as one loop, whose state the steps share",
}


def module_lines(source: str) -> int:
    return len(source.splitlines())


def long_functions(source: str, limit: int = FUNCTION_LINES) -> dict[str, int]:
    """Qualified name (``Class.method``, ``outer.inner``) -> lines, for every function of source over limit."""
    found: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef) and child.end_lineno - child.lineno + 1 > limit:
                    found[name] = child.end_lineno - child.lineno + 1
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


SOURCES = {path.relative_to(PACKAGE.parent).as_posix(): path.read_text()
           for path in sorted(PACKAGE.rglob("*.py"))}


def test_every_module_is_under_the_limit():
    over = {name: module_lines(source) for name, source in SOURCES.items()
            if module_lines(source) >= MODULE_LINES}
    assert not over, f"modules of {MODULE_LINES} lines or more (split them by what they do): {over}"


def test_every_function_is_within_the_limit():
    over = {f"{name} {function}": lines for name, source in SOURCES.items()
            for function, lines in long_functions(source).items() if (name, function) not in LONG_NUMERICS}
    assert not over, (f"functions over {FUNCTION_LINES} lines (split them into named steps, or, for a numeric "
                      f"that follows an algorithm step by step, list it in LONG_NUMERICS with its reason): {over}")


def test_the_allowed_numerics_are_still_long():
    """Each entry of LONG_NUMERICS names a function that exists and still needs the exception."""
    for (name, function), reason in LONG_NUMERICS.items():
        assert reason
        assert function in long_functions(SOURCES[name]), f"{name} {function}: remove it from LONG_NUMERICS"


def _function(name: str, body_lines: int, indent: int = 0) -> str:
    body = "\n".join(f"    x{i} = {i}" for i in range(body_lines - 1))
    return textwrap.indent(f"def {name}():\n{body}\n", " " * indent)


def test_the_helpers_flag_what_is_too_long():
    assert long_functions(_function("short", FUNCTION_LINES)) == {}
    assert long_functions(_function("long", FUNCTION_LINES + 1)) == {"long": FUNCTION_LINES + 1}
    nested = "class Checker:\n" + _function("rule", FUNCTION_LINES + 5, indent=4)
    nested += "def outer():\n" + _function("inner", FUNCTION_LINES + 2, indent=4) + "    return inner\n"
    assert long_functions(nested) == {"Checker.rule": FUNCTION_LINES + 5, "outer": FUNCTION_LINES + 4,
                                      "outer.inner": FUNCTION_LINES + 2}
    assert module_lines("x = 1\n" * MODULE_LINES) == MODULE_LINES
