"""The one map of exit codes and outcomes (codascore/outcomes.py), and the rule that keeps it the only one:
no exit-code literal anywhere else in the library or the programs, read from the source with ``ast``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from codascore import errors
from codascore.competition import project_root
from codascore.outcomes import (ERROR_EXIT_CODES, OUTCOME_EXIT_CODES, ExitCode, Outcome, exit_code_of,
                                exit_code_of_error, one_line, scoring_outcome)

ROOT = project_root()
#: Every exit code codascore gives: 0 ok, 1 invalid, 2 organiser's error, 3 bug, 130 interrupted.
EXIT_LITERALS = {int(code) for code in ExitCode}
#: Names that hold an exit code, compared with a literal only through the map.
CODE_NAMES = ("exit_code", "returncode")


def checked_files() -> list[Path]:
    """The library's modules and the two programs' scripts, the map itself left out."""
    files = sorted((ROOT / "codascore").rglob("*.py"))
    files += sorted((ROOT / "scoring_program").glob("*.py")) + sorted((ROOT / "ingestion_program").glob("*.py"))
    return [path for path in files if path != ROOT / "codascore" / "outcomes.py"]


def exit_literals(node: ast.AST | None) -> list[int]:
    """The exit-code literals node is, or chooses between (``1 if failed else 0``), or lists (``(0, None)``)."""
    if isinstance(node, ast.Constant) and type(node.value) is int and node.value in EXIT_LITERALS:
        return [node.value]
    if isinstance(node, ast.IfExp):
        return exit_literals(node.body) + exit_literals(node.orelse)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [value for element in node.elts for value in exit_literals(element)]
    return []


def commands_module(path: Path) -> bool:
    """Whether every function of the module returns exit codes: the command line, its commands, the
    programs' entry points and the demo."""
    parts = path.relative_to(ROOT).parts
    return (path.stem.startswith(("cli", "commands")) or "commands" in parts or path.stem in ("codabench", "demo")
            or parts[0] in ("scoring_program", "ingestion_program"))


def entry_function(name: str) -> bool:
    return "main" in name or name == "run"


def named_code(node: ast.AST) -> bool:
    """Whether node is a name or attribute that holds an exit code."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name == "code" or any(part in name for part in CODE_NAMES)


def call_name(node: ast.Call) -> str:
    return node.func.id if isinstance(node.func, ast.Name) else node.func.attr if isinstance(node.func, ast.Attribute) else ""


class ExitLiteralFinder(ast.NodeVisitor):
    """Every use of an exit-code literal as an exit code in one module: returned by an entry function (or
    by any function of a command module), given to exit() or SystemExit, or compared with a code."""

    def __init__(self, every_function_is_an_entry: bool):
        self.every_function_is_an_entry = every_function_is_an_entry
        self.functions: list[str] = []
        self.found: list[tuple[int, str]] = []

    def visit_FunctionDef(self, node) -> None:
        self.functions.append(node.name)
        self.generic_visit(node)
        self.functions.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node) -> None:  # a lambda's value is no exit code
        self.functions.append("<lambda>")
        self.generic_visit(node)
        self.functions.pop()

    def visit_Return(self, node) -> None:
        function = self.functions[-1] if self.functions else ""
        if (self.every_function_is_an_entry or entry_function(function)) and exit_literals(node.value):
            self.found.append((node.lineno, f"return {ast.unparse(node.value)} in {function}()"))
        self.generic_visit(node)

    def visit_Call(self, node) -> None:
        if call_name(node) in ("exit", "_exit", "SystemExit") and node.args and exit_literals(node.args[0]):
            self.found.append((node.lineno, ast.unparse(node)))
        self.generic_visit(node)

    def visit_Compare(self, node) -> None:
        sides = [node.left, *node.comparators]
        if any(named_code(side) for side in sides) and any(exit_literals(side) for side in sides):
            self.found.append((node.lineno, ast.unparse(node)))
        self.generic_visit(node)


def exit_literal_uses(source: str, every_function_is_an_entry: bool = False) -> list[tuple[int, str]]:
    finder = ExitLiteralFinder(every_function_is_an_entry)
    finder.visit(ast.parse(source))
    return finder.found


def uses_in(path: Path) -> list[str]:
    return [f"{path.relative_to(ROOT)}:{line}: {text}"
            for line, text in exit_literal_uses(path.read_text(), commands_module(path))]


#: The runner reads the scorer's exit code with literals until its rewrite (the lead's branch) is merged.


def test_no_exit_code_literal_outside_the_one_map():
    files = checked_files()
    assert len(files) > 50 and ROOT / "codascore" / "runner" / "__init__.py" in files
    assert [use for path in files for use in uses_in(path)] == []


@pytest.mark.parametrize("snippet", [
    "def main(argv):\n    return 2\n",
    "def cmd_check(args):\n    return 1 if failed else 0\n",
    "class Run:\n    def run(self, args):\n        return 0\n",
    "import sys\nsys.exit(1)\n",
    "raise SystemExit(3)\n",
    "parser.exit(2, 'usage')\n",
    "if result.exit_code == 0:\n    pass\n",
    "ok = probe.returncode != 0\n",
    "failed = result.exit_code in (0, None)\n",
    "if code == 130:\n    pass\n",
], ids=["return-in-main", "return-ifexp", "return-in-run", "sys.exit", "SystemExit", "parser.exit",
        "exit_code-compare", "returncode-compare", "in-tuple", "code-compare"])
def test_the_rule_catches_every_kind_of_exit_literal(snippet):
    assert exit_literal_uses(snippet, every_function_is_an_entry=False) or "cmd_" in snippet
    assert exit_literal_uses(snippet, every_function_is_an_entry=True)


@pytest.mark.parametrize("snippet", [
    "def main(argv):\n    return ExitCode.ORGANISER_ERROR\n",
    "def weight(x):\n    return 1\n",
    "def main(argv):\n    return 0.0\n",
    "def main(argv):\n    return True\n",
    "def main(argv):\n    key = lambda item: 0\n",
    "if result.exit_code == ExitCode.OK:\n    pass\n",
    "if count == 0:\n    pass\n",
    "sys.exit(main())\n",
], ids=["named", "other-function", "float", "bool", "lambda", "compare-named", "not-a-code", "exit-of-call"])
def test_the_rule_leaves_alone_what_is_no_exit_literal(snippet):
    assert exit_literal_uses(snippet) == []


def test_the_rule_reads_a_command_modules_every_return():
    assert commands_module(ROOT / "codascore" / "commands" / "run.py")
    assert commands_module(ROOT / "codascore" / "uai" / "cli.py") and commands_module(ROOT / "codascore" / "demo.py")
    assert not commands_module(ROOT / "codascore" / "uai" / "metrics.py")
    assert exit_literal_uses("def helper():\n    return 2\n", every_function_is_an_entry=True)


# --------------------------------------------------------------------------- the map


@pytest.mark.parametrize("error, code", [
    (errors.UsageError("x"), ExitCode.ORGANISER_ERROR),
    (errors.ReferenceDataError("x"), ExitCode.ORGANISER_ERROR),
    (errors.UnknownTaskError("x"), ExitCode.ORGANISER_ERROR),
    (errors.SubmissionError("x"), ExitCode.INVALID),
    (errors.RunnerError("x"), ExitCode.INVALID),
    (errors.BundleError("x"), ExitCode.INVALID),
    (errors.FormatError("x"), ExitCode.INVALID),
    (errors.CodascoreError("x"), ExitCode.INVALID),
    (FileNotFoundError(2, "No such file or directory", "x.zip"), ExitCode.INVALID),
    (KeyboardInterrupt(), ExitCode.INTERRUPTED),
    (KeyError("surprise"), ExitCode.BUG),
    (ModuleNotFoundError("No module named 'x'", name="x"), ExitCode.BUG),
], ids=lambda value: type(value).__name__ if isinstance(value, BaseException) else None)
def test_exit_code_of_error_for_each_kind_of_error(error, code):
    assert exit_code_of_error(error) is code


def test_every_error_class_of_codascore_has_a_code_and_none_is_a_bug():
    classes = [value for value in vars(errors).values()
               if isinstance(value, type) and issubclass(value, errors.CodascoreError)]
    assert len(classes) > 10
    for kind in classes:
        error = kind("x")
        assert exit_code_of_error(error) in (ExitCode.INVALID, ExitCode.ORGANISER_ERROR, ExitCode.TRY_AGAIN), kind
    assert all(code is not ExitCode.OK for kind, code in ERROR_EXIT_CODES)


def test_every_outcome_has_an_exit_code():
    assert set(OUTCOME_EXIT_CODES) == set(Outcome)
    assert exit_code_of(Outcome.SCORED) is ExitCode.OK
    assert exit_code_of(Outcome.INVALID) is ExitCode.INVALID
    assert all(exit_code_of(outcome) is not ExitCode.OK for outcome in Outcome if outcome is not Outcome.SCORED)


@pytest.mark.parametrize("code, outcome", [(None, Outcome.TIMED_OUT), (0, Outcome.SCORED), (1, Outcome.INVALID),
                                           (2, Outcome.FAILED), (3, Outcome.FAILED), (137, Outcome.FAILED),
                                           (-9, Outcome.FAILED)])
def test_scoring_outcome_of_the_scorers_exit_code(code, outcome):
    assert scoring_outcome(code) is outcome


def test_the_exit_codes_are_the_documented_numbers():
    assert [(code.name, int(code)) for code in ExitCode] == [("OK", 0), ("INVALID", 1), ("ORGANISER_ERROR", 2),
                                                              ("BUG", 3), ("TRY_AGAIN", 75), ("INTERRUPTED", 130)]


def test_one_line_tells_an_os_error_without_its_errno_and_folds_any_other_message():
    assert one_line(FileNotFoundError(2, "No such file or directory", "a.zip")) == "a.zip: No such file or directory"
    assert one_line(OSError(18, "Invalid cross-device link", "a", None, "b")) == "a -> b: Invalid cross-device link"
    assert one_line(errors.UsageError("wrong\n  twice")) == "wrong twice"
    assert one_line(KeyError()) == "KeyError"
