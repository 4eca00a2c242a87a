"""Safe reading of participant model strings into sympy expressions.

SRBench 2022 read a model with ``sympy.parse_expr``, which ends in Python's ``eval``: any string could run
code. Here a string is first checked character by character, then parsed by Python's :mod:`ast` (parsing
runs nothing) and walked node by node against a whitelist; the sympy expression is then built from the
validated tree by this module itself. No participant text is ever handed to ``eval``, ``exec``,
``sympify`` or ``parse_expr``.

The build reproduces what ``parse_expr`` with its default transformations would produce for every
accepted string (docs/srbench.md#safe-parsing): integer literals become ``Integer(text)``, other number literals
``Float(text)``, operators are applied with Python's own semantics to those sympy objects, and ``abs``,
``max`` and ``min`` mean ``Abs``, ``Max`` and ``Min`` as in ``parse_expr``'s namespace. The further forms
2022 read (Python's ``pow``, sympy's ``srepr`` constructors, ``Piecewise``) are built by expression_forms.py
on the same tree (docs/srbench.md#forms-2022-accepted).
"""

from __future__ import annotations

import ast
import keyword
import re
from typing import Iterable

from ..errors import ModelSyntaxError
from ..validate import is_number
from . import expression_forms as forms

#: Longest model string accepted (docs/srbench.md#model-strings).
MAX_LENGTH = 10_000
#: Deepest expression tree accepted (sympy recurses over the tree; 2022 models are far shallower).
MAX_DEPTH = 100
#: A purely numeric power whose exact value would need more bits than this is refused (10**10**10).
MAX_POWER_BITS = 100_000

#: Functions of the whitelist (docs/srbench.md#model-strings) and the extra names 2022's parse_expr
#: namespace gave them (docs/srbench.md#names-parse_expr-accepted).
FUNCTION_NAMES = ("sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "exp", "log",
                  "sqrt", "Abs", "sign", "erf")
COMPAT_FUNCTION_NAMES = ("abs", "max", "min", "Max", "Min", "pow")
CONSTANT_NAMES = ("pi", "E")
#: Further sympy functions and constants 2022's parse_expr namespace offered; accepted only in the
#: 2022-compatible mode (strict=False) of the library functions, never in submissions.
LENIENT_FUNCTION_NAMES = ("ln", "floor", "ceiling", "atan2", "cot", "sec", "csc", "acot", "asinh", "acosh",
                          "atanh", "Heaviside", "gamma", "erfc", "re", "im", "cbrt", "root", "Add", "Mul",
                          "Pow", "Rational", "Integer", "Float")
LENIENT_CONSTANT_NAMES = ("I", "oo", "zoo", "nan", "EulerGamma", "GoldenRatio", "Catalan")

_ALLOWED_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_+-*/()., \t\n\r")
_INTEGER = re.compile(r"[0-9]+\Z")
_FLOAT = re.compile(r"([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][+-]?[0-9]+)?\Z")
_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")


def _functions() -> dict:
    import sympy

    table = {name: getattr(sympy, name) for name in FUNCTION_NAMES}
    table.update(abs=sympy.Abs, max=sympy.Max, min=sympy.Min, Max=sympy.Max, Min=sympy.Min)
    return table


def _arity_ok(name: str, n_args: int) -> bool:
    if name in ("max", "min", "Max", "Min") or name in LENIENT_FUNCTION_NAMES:
        return n_args >= 1  # sympy checks the lenient functions' arity itself (TypeError below)
    if name == "log":
        return n_args in (1, 2)
    return n_args == 1


def check_feature_names(feature_names: Iterable[str]) -> list[str]:
    """The dataset's column names as a list; ValueError if one cannot be a model variable."""
    names = list(feature_names)
    for index, name in enumerate(names):
        if not isinstance(name, str) or not _IDENTIFIER.match(name) or keyword.iskeyword(name):
            raise ValueError(f"feature_names[{index}] = {name!r} is not a valid variable name "
                             "(letters, digits and _, starting with a letter)")
    return names


def _quote(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


class _Builder:
    def __init__(self, text: str, symbols: dict, strict: bool, dry: bool = False):
        self.text = text
        self.symbols = symbols
        self.strict = strict
        # dry: validate only (no sympy object is made), for checking many submissions quickly
        self.dry = dry
        self.max_depth = MAX_DEPTH
        function_names = FUNCTION_NAMES + COMPAT_FUNCTION_NAMES + (() if strict else LENIENT_FUNCTION_NAMES)
        constant_names = CONSTANT_NAMES + (() if strict else LENIENT_CONSTANT_NAMES)
        if dry:
            self.functions = dict.fromkeys(function_names)
            self.constants = dict.fromkeys(constant_names)
        else:
            import sympy

            self.sympy = sympy
            self.functions = {**_functions(), **{n: getattr(sympy, n) for n in function_names
                                                 if n not in FUNCTION_NAMES + COMPAT_FUNCTION_NAMES}}
            self.constants = {name: getattr(sympy, name) for name in constant_names}

    def fail(self, node: ast.AST, why: str):
        segment = ast.get_source_segment(self.text, node) or type(node).__name__
        raise ModelSyntaxError(f"{why}: {_quote(segment)}")

    def build(self, node: ast.AST, depth: int = 0):
        if depth > MAX_DEPTH:
            self.fail(node, f"expression is nested deeper than {MAX_DEPTH} levels")
        if isinstance(node, ast.BinOp):
            operations = {ast.Add: "__add__", ast.Sub: "__sub__", ast.Mult: "__mul__",
                          ast.Div: "__truediv__", ast.Pow: "__pow__"}
            kind = type(node.op)
            if kind not in operations:
                hint = " (use ** for powers)" if kind is ast.BitXor else ""
                self.fail(node, f"operator not allowed{hint}")
            left = self.build(node.left, depth + 1)
            right = self.build(node.right, depth + 1)
            if self.dry:
                return None
            if kind is ast.Pow:
                self.check_power(node, left, right)
            return _apply(operations[kind], left, right)
        if isinstance(node, ast.UnaryOp):
            if self.dry and isinstance(node.op, (ast.USub, ast.UAdd)):
                return self.build(node.operand, depth + 1) and None
            if isinstance(node.op, ast.USub):
                return -self.build(node.operand, depth + 1)
            if isinstance(node.op, ast.UAdd):
                return +self.build(node.operand, depth + 1)
            self.fail(node, "operator not allowed")
        if isinstance(node, ast.Constant):
            return self._number(node)
        if isinstance(node, ast.Name):
            return self._name(node)
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        if isinstance(node, ast.Attribute):
            self.fail(node, "attribute access is not allowed")
        if isinstance(node, ast.Compare):
            self.fail(node, "comparisons are allowed only in a Piecewise condition")
        if isinstance(node, ast.Lambda):
            self.fail(node, "lambda is not allowed")
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            self.fail(node, "comprehensions are not allowed")
        self.fail(node, f"{type(node).__name__} is not allowed in a model")

    def _number(self, node: ast.Constant):
        value = node.value
        segment = ast.get_source_segment(self.text, node) or ""
        if not is_number(value):  # complex literals and True/False are Constants too
            self.fail(node, "only numbers, variables, + - * / ** and whitelisted functions are allowed")
        if isinstance(value, int) and _INTEGER.match(segment):
            return None if self.dry else self.sympy.Integer(segment)
        if _FLOAT.match(segment):
            return None if self.dry else self.sympy.Float(segment)
        self.fail(node, "number format not allowed (plain decimal numbers only)")

    def _name(self, node: ast.Name):
        name = node.id
        if name in self.symbols:
            return self.symbols[name]
        if name in self.constants:
            return self.constants[name]
        if name.startswith("_"):
            self.fail(node, "names starting with an underscore are not allowed")
        if name in self.functions:
            self.fail(node, "function used without arguments")
        if self.strict or not _IDENTIFIER.match(name):
            self.fail(node, "unknown name (not a column of this dataset nor an allowed constant)")
        # 2022 behaviour (parse_expr's auto_symbol): any other plain name became a Symbol.
        if self.dry:
            return None
        symbol = self.sympy.Symbol(name)
        self.symbols[name] = symbol
        return symbol

    def _call(self, node: ast.Call, depth: int):
        if not isinstance(node.func, ast.Name):
            self.fail(node.func, "only calls of whitelisted functions by name are allowed")
        name = node.func.id
        if name in self.symbols:
            self.fail(node.func, "a column name cannot be called as a function")
        if name == "pow":
            return forms.build_pow(self, node, depth)
        if name in forms.CONDITION_NAMES:
            self.fail(node.func, "allowed only in a Piecewise condition")
        if name in forms.SREPR_NAMES:
            built = forms.build_srepr(self, node, depth)
            if built is not NotImplemented:
                return built
        if name not in self.functions:
            self.fail(node.func, "function not allowed (allowed: "
                      + ", ".join(FUNCTION_NAMES + COMPAT_FUNCTION_NAMES) + ")")
        if node.keywords or any(isinstance(arg, ast.Starred) for arg in node.args):
            self.fail(node, "keyword or starred arguments are not allowed")
        if not _arity_ok(name, len(node.args)):
            self.fail(node, f"wrong number of arguments for {name}")
        args = [self.build(arg, depth + 1) for arg in node.args]
        return None if self.dry else self.functions[name](*args)

    def check_power(self, node: ast.AST, base, exponent):
        if not (getattr(base, "is_Rational", False) and getattr(exponent, "is_Rational", False)):
            return
        if base in (0, 1, -1):
            return
        bits = max(abs(base.p).bit_length(), abs(base.q).bit_length())
        if abs(exponent) * bits > MAX_POWER_BITS:
            self.fail(node, "numeric power too large")


def _apply(method: str, left, right):
    result = getattr(left, method)(right)
    if result is NotImplemented:  # only sympy objects reach here; kept for completeness
        raise ModelSyntaxError("unsupported operand combination")
    return result


def check_model(text: str, feature_names: Iterable[str], strict: bool = True,
                max_length: int = MAX_LENGTH) -> None:
    """Validate a model string as parse_model does, without making any sympy object (fast, no sympy
    import); the numeric-power bound is checked later, when the expression is built."""
    _parse(text, feature_names, strict, max_length, dry=True)


def parse_model(text: str, feature_names: Iterable[str], strict: bool = True,
                max_length: int = MAX_LENGTH):
    """Validate a model string and build its sympy expression (no simplification).

    text:          the participant's model, e.g. ``"0.4*x1*x2 - 1.5*x1 + 2.5*x2 + 1"``.
    feature_names: the dataset's column names; each becomes a plain ``sympy.Symbol`` (no assumptions).
    strict:        True (scoring submissions): every name must be a column or ``pi``/``E``.
                   False (2022 judging semantics): other plain names become Symbols, as parse_expr did.

    Accepted: decimal numbers, names, ``+ - * / **``, parentheses, calls of sin cos tan asin acos atan
    sinh cosh tanh exp log sqrt Abs sign erf (and abs max min Max Min, which parse_expr mapped to sympy's
    Abs Max Min), Python's ``pow`` with two or three arguments, sympy's srepr form and Piecewise
    (docs/srbench.md#forms-2022-accepted). Everything else raises ModelSyntaxError quoting the offending
    token.
    """
    return _parse(text, feature_names, strict, max_length, dry=False)


def _check_characters(text: str) -> None:
    """Every character in the whitelist; quotes only around Symbol's name and Float's number, ``=`` only
    in ``precision=``, ``<=`` and ``>=`` (expression_forms.character_allowed)."""
    quoted = False
    for position, char in enumerate(text):
        if quoted:
            if char == "'":
                quoted = False
                continue
            if char in forms.QUOTED_CHARS:
                continue
        elif char in _ALLOWED_CHARS or (char in forms.FORM_CHARS and forms.character_allowed(text, position)):
            quoted = char == "'"
            continue
        hint = " (use ** for powers)" if char == "^" else forms.character_hint(char)
        if quoted:
            hint = " (inside quotes only a column name or a decimal number)"
        raise ModelSyntaxError(f"character {char!r} at position {position} is not allowed{hint}: "
                               f"{_quote(text[max(0, position - 20):position + 20])}")


def _parse(text, feature_names, strict: bool, max_length: int, dry: bool):
    if not isinstance(text, str):
        raise ModelSyntaxError(f"model must be a string, got {type(text).__name__}")
    if len(text) > max_length:
        raise ModelSyntaxError(f"model is {len(text)} characters long, more than the limit {max_length}")
    _check_characters(text)
    if not text.strip():
        raise ModelSyntaxError("model is empty")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ModelSyntaxError(f"not a valid expression ({exc.msg}): {_quote(text)}") from None
    except (RecursionError, MemoryError, ValueError):
        raise ModelSyntaxError(f"expression too deeply nested: {_quote(text)}") from None
    names = check_feature_names(feature_names)
    if dry:
        symbols = dict.fromkeys(names)
    else:
        import sympy

        symbols = {name: sympy.Symbol(name) for name in names}
    builder = _Builder(text.strip(), symbols, strict, dry)
    try:
        return builder.build(tree.body)
    except RecursionError:
        raise ModelSyntaxError(f"expression too deeply nested: {_quote(text)}") from None
    except (TypeError, ValueError, ArithmeticError) as exc:
        if isinstance(exc, ModelSyntaxError):
            raise
        raise ModelSyntaxError(f"cannot build the expression ({type(exc).__name__}: {exc}): "
                               f"{_quote(text)}") from None


def used_names(expr) -> set[str]:
    """Names of the free symbols of a built expression."""
    return {str(symbol) for symbol in expr.free_symbols}


__all__ = ["ModelSyntaxError", "parse_model", "check_model", "check_feature_names", "FUNCTION_NAMES",
           "COMPAT_FUNCTION_NAMES", "CONSTANT_NAMES", "MAX_LENGTH", "MAX_DEPTH", "used_names"]

