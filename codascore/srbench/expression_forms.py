"""The further forms of a model string that 2022's ``parse_expr`` read, built without ``eval``
(docs/srbench.md#forms-2022-accepted): Python's ``pow``, sympy's ``srepr`` constructors (``Symbol``,
``Integer``, ``Float``, ``Rational``, ``Add``, ``Mul``, ``Pow``) and ``Piecewise`` with its conditions,
written as ``srepr`` writes them or as ``str`` prints them.

2022's namespace was parse_expr's default one (sympy 1.10.1, ``parse_expr``): everything of
``from sympy import *``, then every builtin function of Python (so ``pow`` is Python's builtin), then
``max``/``min`` replaced by sympy's ``Max``/``Min``. Here only the forms below are read, each one checked
argument by argument on the :mod:`ast` tree; the functions take the expression builder of
``expressions.py`` (its ``build``, ``fail``, ``symbols``, ``strict``, ``dry`` and ``sympy``).
"""

from __future__ import annotations

import ast
import re

#: sympy's srepr constructors of numbers, symbols and operations, and Piecewise.
SREPR_NAMES = ("Symbol", "Integer", "Float", "Rational", "Add", "Mul", "Pow", "Piecewise", "ExprCondPair")
#: Relations of a Piecewise condition: srepr's class names and sympy's short names, as sympy's classes.
RELATION_NAMES = {"StrictLessThan": "StrictLessThan", "Lt": "StrictLessThan", "LessThan": "LessThan",
                  "Le": "LessThan", "StrictGreaterThan": "StrictGreaterThan", "Gt": "StrictGreaterThan",
                  "GreaterThan": "GreaterThan", "Ge": "GreaterThan", "Equality": "Equality", "Eq": "Equality",
                  "Unequality": "Unequality", "Ne": "Unequality"}
#: Connectives of a condition and their arities (None: one or more).
CONNECTIVE_ARITY = {"And": None, "Or": None, "Not": 1}
#: Truth values of a condition: srepr writes ``true``/``false``, str prints ``True``/``False``.
TRUTH_NAMES = {"true": True, "false": False}
CONDITION_NAMES = tuple(RELATION_NAMES) + tuple(CONNECTIVE_ARITY) + tuple(TRUTH_NAMES)
#: Python comparison operators of a plain-form condition, as sympy's relation classes.
_COMPARISONS = {ast.Lt: "StrictLessThan", ast.LtE: "LessThan", ast.Gt: "StrictGreaterThan",
                ast.GtE: "GreaterThan"}
#: Largest precision (bits) of ``Float('...', precision=N)`` (srepr writes 53 for a double).
MAX_FLOAT_PRECISION = 4096

#: Characters that may stand between the quotes of Symbol('...') and Float('...').
QUOTED_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+-")
#: Characters outside the plain whitelist that these forms use; each has its own rule (character_allowed).
FORM_CHARS = frozenset("'=<>&|~")
_SIGNED_FLOAT = re.compile(r"-?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][+-]?[0-9]+)?\Z")
_INTEGER = re.compile(r"[0-9]+\Z")
_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")


def _word_before(text: str, position: int, after_parenthesis: bool) -> str:
    """The identifier just before ``position`` (blanks skipped), or just before a ``(`` there."""
    j = position - 1
    while j >= 0 and text[j] in " \t":
        j -= 1
    if after_parenthesis:
        if j < 0 or text[j] != "(":
            return ""
        j -= 1
        while j >= 0 and text[j] in " \t":
            j -= 1
    end = j + 1
    while j >= 0 and (text[j].isalnum() or text[j] == "_"):
        j -= 1
    return text[j + 1:end]


def character_allowed(text: str, position: int) -> bool:
    """Whether a FORM_CHARS character is allowed where it stands: an opening quote only right after
    ``Symbol(`` or ``Float(`` (the closing quote is the caller's to pair), ``=`` only in ``precision=``,
    ``<=`` and ``>=``; ``< > & | ~`` anywhere (the tree check keeps them to Piecewise conditions)."""
    char = text[position]
    if char == "'":
        return _word_before(text, position, True) in ("Symbol", "Float")
    if char == "=":
        return text[position - 1:position] in ("<", ">") or _word_before(text, position, False) == "precision"
    return char in "<>&|~"


def character_hint(char: str) -> str:
    if char == "'":
        return " (quotes only around the name in Symbol('name') and the number in Float('number'))"
    if char == "=":
        return " (only in Float(..., precision=N), <= and >=; use Eq(a, b) for equality)"
    if char == "!":
        return " (use Ne(a, b) for inequality)"
    return ""


def build_pow(builder, node: ast.Call, depth: int):
    """Python's builtin ``pow``, as 2022's namespace had it: ``pow(a, b)`` is ``a**b``; ``pow(a, b, m)``
    is Python's three-argument pow on the sympy objects: an integer modular power for integers, else
    sympy's ``Mod(a**b, m)`` (sympy 1.10.1, ``Expr.__pow__`` with ``mod``); m = 0 fails."""
    if node.keywords or not 2 <= len(node.args) <= 3:
        builder.fail(node, "pow takes two or three arguments, without keywords")
    args = [builder.build(arg, depth + 1) for arg in node.args]
    if builder.dry:
        return None
    base, exponent = args[:2]
    if len(args) == 2 or not all(getattr(arg, "is_Integer", False) for arg in args):
        builder.check_power(node, base, exponent)
    if len(args) == 2:
        return base ** exponent
    result = pow(base, exponent, args[2])  # Python's pow on validated sympy objects, as 2022's eval did
    return result if isinstance(result, builder.sympy.Basic) else builder.sympy.Integer(result)


def build_srepr(builder, node: ast.Call, depth: int):
    """One of SREPR_NAMES called as srepr writes it; anything else refused (in the 2022-compatible mode,
    Integer, Float and Rational of other arguments are left to the caller: returns NotImplemented)."""
    name = node.func.id
    if name == "Symbol":
        return _symbol(builder, node)
    if name in ("Integer", "Rational", "Float"):
        return _number(builder, node, name)
    if name == "Piecewise":
        return _piecewise(builder, node, depth)
    if name == "ExprCondPair":
        builder.fail(node, "ExprCondPair only as an argument of Piecewise")
    if node.keywords or any(isinstance(arg, ast.Starred) for arg in node.args):
        builder.fail(node, f"{name} takes no keyword or starred arguments")
    if (name == "Pow" and len(node.args) != 2) or not node.args:
        builder.fail(node, f"wrong number of arguments for {name}")
    args = [builder.build(arg, depth + 1) for arg in node.args]
    if builder.dry:
        return None
    if name == "Pow":
        builder.check_power(node, *args)
    return getattr(builder.sympy, name)(*args)


def _quoted(builder, node: ast.AST, pattern: re.Pattern, what: str) -> str:
    """The text of a plain single-quoted string node matching ``pattern`` (no escapes, no prefix)."""
    segment = ast.get_source_segment(builder.text, node) or ""
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)
            and segment == f"'{node.value}'" and pattern.match(node.value)):
        builder.fail(node, f"expected {what} in single quotes")
    return node.value


def _symbol(builder, node: ast.Call):
    if node.keywords:
        builder.fail(node, "Symbol takes a name only (no assumptions)")
    if len(node.args) != 1:
        builder.fail(node, "Symbol takes exactly one quoted name")
    name = _quoted(builder, node.args[0], _IDENTIFIER, "Symbol('name'): a column name")
    if name in builder.symbols:
        return builder.symbols[name]
    if builder.strict:
        builder.fail(node, "unknown name in Symbol (not a column of this dataset)")
    if builder.dry:  # 2022-compatible mode: a new Symbol, as Symbol('name') made one in 2022
        return None
    symbol = builder.sympy.Symbol(name)
    builder.symbols[name] = symbol
    return symbol


def _signed_integer(builder, node: ast.AST) -> int | None:
    """The value of an integer literal, optionally negated, or None for any other node."""
    negative = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
    literal = node.operand if negative else node
    if not (isinstance(literal, ast.Constant) and type(literal.value) is int):
        return None
    if not _INTEGER.match(ast.get_source_segment(builder.text, literal) or ""):
        return None
    return -literal.value if negative else literal.value


def _number(builder, node: ast.Call, name: str):
    if name == "Float":
        return _float(builder, node)
    values = [_signed_integer(builder, arg) for arg in node.args]
    arity = 1 if name == "Integer" else 2
    if node.keywords or len(values) != arity or None in values:
        if not builder.strict:
            return NotImplemented
        builder.fail(node, f"{name} takes {'one integer' if arity == 1 else 'two integers'}, as srepr writes it")
    if builder.dry:
        return None
    return getattr(builder.sympy, name)(*values)


def _float(builder, node: ast.Call):
    if not node.args or not isinstance(node.args[0], ast.Constant) or not isinstance(node.args[0].value, str):
        if not builder.strict:
            return NotImplemented
        builder.fail(node, "Float takes a quoted number, as srepr writes it: Float('1.5', precision=53)")
    if len(node.args) != 1 or any(keyword.arg != "precision" for keyword in node.keywords):
        builder.fail(node, "Float takes a quoted number and optionally precision=N only")
    text = _quoted(builder, node.args[0], _SIGNED_FLOAT, "Float('number'): a decimal number")
    precision = None
    if node.keywords:
        precision = _signed_integer(builder, node.keywords[0].value)
        if precision is None or not 1 <= precision <= MAX_FLOAT_PRECISION:
            builder.fail(node.keywords[0].value, f"precision must be an integer from 1 to {MAX_FLOAT_PRECISION}")
    if builder.dry:
        return None
    return builder.sympy.Float(text) if precision is None else builder.sympy.Float(text, precision=precision)


def _piecewise(builder, node: ast.Call, depth: int):
    if node.keywords or not node.args or any(isinstance(arg, ast.Starred) for arg in node.args):
        builder.fail(node, "Piecewise takes one or more (expression, condition) pairs")
    pairs = []
    for arg in node.args:
        if isinstance(arg, ast.Tuple) and len(arg.elts) == 2:
            parts = arg.elts
        elif (isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name) and arg.func.id == "ExprCondPair"
              and len(arg.args) == 2 and not arg.keywords):
            parts = arg.args
        else:
            builder.fail(arg, "a Piecewise piece must be (expression, condition) or ExprCondPair(expression, "
                              "condition)")
        pairs.append((builder.build(parts[0], depth + 2), condition(builder, parts[1], depth + 2)))
    return None if builder.dry else builder.sympy.Piecewise(*pairs)


def condition(builder, node: ast.AST, depth: int):
    """A Piecewise condition: a truth value, a relation of two expressions (srepr's classes, sympy's
    Lt Le Gt Ge Eq Ne, or one Python comparison < <= > >=), And/Or/Not or & | ~ of conditions."""
    if depth > builder.max_depth:
        builder.fail(node, f"expression is nested deeper than {builder.max_depth} levels")
    sympy = None if builder.dry else builder.sympy
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return None if builder.dry else (sympy.true if node.value else sympy.false)
    if isinstance(node, ast.Name) and node.id in TRUTH_NAMES and node.id not in builder.symbols:
        return None if builder.dry else (sympy.true if TRUTH_NAMES[node.id] else sympy.false)
    if isinstance(node, ast.Compare):
        return _comparison(builder, node, depth)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr)):
        left, right = condition(builder, node.left, depth + 1), condition(builder, node.right, depth + 1)
        return None if builder.dry else (sympy.And if isinstance(node.op, ast.BitAnd) else sympy.Or)(left, right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
        operand = condition(builder, node.operand, depth + 1)
        return None if builder.dry else sympy.Not(operand)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id not in builder.symbols:
        return _condition_call(builder, node, depth)
    builder.fail(node, "not a condition (use a comparison, Eq, Ne, And, Or, Not, True or False)")


def _comparison(builder, node: ast.Compare, depth: int):
    if len(node.ops) != 1:
        builder.fail(node, "chained comparisons are not allowed (2022's parse_expr failed on them too)")
    kind = type(node.ops[0])
    if kind not in _COMPARISONS:
        builder.fail(node, "comparison not allowed (use < <= > >=, or Eq(a, b) and Ne(a, b))")
    left = builder.build(node.left, depth + 1)
    right = builder.build(node.comparators[0], depth + 1)
    return None if builder.dry else getattr(builder.sympy, _COMPARISONS[kind])(left, right)


def _condition_call(builder, node: ast.Call, depth: int):
    name = node.func.id
    if name not in RELATION_NAMES and name not in CONNECTIVE_ARITY:
        builder.fail(node.func, "not a condition (use a comparison, Eq, Ne, And, Or, Not, True or False)")
    if node.keywords or any(isinstance(arg, ast.Starred) for arg in node.args):
        builder.fail(node, f"{name} takes no keyword or starred arguments")
    arity = 2 if name in RELATION_NAMES else CONNECTIVE_ARITY[name]
    if (arity is not None and len(node.args) != arity) or not node.args:
        builder.fail(node, f"wrong number of arguments for {name}")
    if name in RELATION_NAMES:
        args = [builder.build(arg, depth + 1) for arg in node.args]
        return None if builder.dry else getattr(builder.sympy, RELATION_NAMES[name])(*args)
    args = [condition(builder, arg, depth + 1) for arg in node.args]
    return None if builder.dry else getattr(builder.sympy, name)(*args)


__all__ = ["SREPR_NAMES", "CONDITION_NAMES", "RELATION_NAMES", "MAX_FLOAT_PRECISION", "build_pow",
           "build_srepr", "condition", "character_allowed", "character_hint"]
