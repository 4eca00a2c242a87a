"""Readers and writers of the UAI file formats (spec/uai.md sections 1-4, 8.1).

``.uai`` models, ``.evid`` evidence (three variants), ``.query`` query sets, result files of every task
(``-BEGIN-`` blocks, last one counts) and the MLC ``.data``/``.test`` files. Readers only parse and
validate; they never compute scores. A malformed file raises :class:`FormatError` whose message names
the file, the line and the offending token.
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import numpy as np

from ..errors import AnswerError, FormatError

#: The task words of result files, and accepted aliases (spec 4.2: "MAP" is the UAI-2014 name of MPE).
TASK_WORDS = {"PR": "PR", "MAR": "MAR", "MPE": "MPE", "MAP": "MPE", "MMAP": "MMAP", "MLC": "MLC"}


@dataclasses.dataclass
class Model:
    """A discrete graphical model: L(x) = prod_f tables[f][x[scopes[f]]].

    kind:   "MARKOV" or "BAYES" (evaluated identically, spec 1).
    cards:  int64 array of the N domain sizes.
    scopes: one tuple of variable indices per factor, in file order.
    tables: one float64 array per factor, shaped by its scope's cardinalities (last variable fastest).
    """

    kind: str
    cards: np.ndarray
    scopes: list[tuple[int, ...]]
    tables: list[np.ndarray]
    name: str = "model"

    @property
    def n_vars(self) -> int:
        return int(len(self.cards))

    @property
    def n_factors(self) -> int:
        return len(self.scopes)


# ----------------------------------------------------------------------------------------------
# token streams with line numbers


class _Tokens:
    """The whitespace tokens of a text without its comment lines, with the line of each token."""

    def __init__(self, text: str, source: str, comments: bool = True):
        self.source = source
        tokens: list[str] = []
        counts: list[int] = []
        for line in text.splitlines():
            stripped = line.strip()
            if comments and stripped.startswith("c"):
                counts.append(0)
                continue
            parts = stripped.split()
            tokens.extend(parts)
            counts.append(len(parts))
        self.tokens = tokens
        self._line_end = np.cumsum(counts)

    def __len__(self) -> int:
        return len(self.tokens)

    def line_of(self, index: int) -> int:
        """1-based line number of token ``index`` (the last line for an index past the end)."""
        if index >= len(self.tokens):
            return max(1, len(self._line_end))
        return int(np.searchsorted(self._line_end, index, side="right")) + 1

    def error(self, index: int, message: str) -> FormatError:
        if index >= len(self.tokens):
            return FormatError(f"{self.source}: line {self.line_of(index)}: unexpected end of file: {message}")
        token = self.tokens[index]
        shown = token if len(token) <= 40 else token[:40] + "..."
        return FormatError(f"{self.source}: line {self.line_of(index)}, token {index + 1} {shown!r}: {message}")

    def numbers(self, start: int) -> np.ndarray:
        """Tokens from ``start`` on as float64 (one vectorised conversion); errors name the bad token."""
        try:
            return np.array(self.tokens[start:], dtype=np.float64)
        except ValueError:
            for i in range(start, len(self.tokens)):
                try:
                    float(self.tokens[i])
                except ValueError:
                    raise self.error(i, "not a number") from None
            raise

    def integer(self, values: np.ndarray, offset: int, index: int, what: str, minimum: int = 0) -> int:
        """values[index - offset] as an int, checked integral and >= minimum."""
        if index - offset >= len(values):
            raise self.error(index, f"expected {what}")
        value = values[index - offset]
        if not (math.isfinite(value) and value == int(value)):
            raise self.error(index, f"{what} must be an integer")
        if value < minimum:
            raise self.error(index, f"{what} must be >= {minimum}")
        return int(value)


def _read_text(path: Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{Path(path).name}: not UTF-8 text (byte {exc.start})") from None


# ----------------------------------------------------------------------------------------------
# .uai models


def parse_model(text: str, source: str = "model.uai") -> Model:
    """Parse the text of a ``.uai`` file (spec 1). Raises FormatError naming source, line and token."""
    tok = _Tokens(text, source)
    if not tok.tokens:
        raise FormatError(f"{source}: empty file, expected MARKOV or BAYES")
    kind = tok.tokens[0].upper()
    if kind not in ("MARKOV", "BAYES"):
        raise tok.error(0, "expected the graph type MARKOV or BAYES")
    values = tok.numbers(1)
    pos = 1
    n = tok.integer(values, 1, pos, "the number of variables N")
    pos += 1
    if pos - 1 + n > len(values):
        raise tok.error(len(tok), f"expected {n} cardinalities")
    cards = values[pos - 1:pos - 1 + n]
    bad = np.flatnonzero((cards < 1) | (cards != np.floor(cards)))
    if bad.size:
        raise tok.error(pos + int(bad[0]), f"cardinality of variable {int(bad[0])} must be an integer >= 1")
    cards = cards.astype(np.int64)
    pos += n
    m = tok.integer(values, 1, pos, "the number of functions M")
    pos += 1
    scopes: list[tuple[int, ...]] = []
    for f in range(m):
        arity = tok.integer(values, 1, pos, f"the arity of function {f}")
        if pos + arity > len(values):
            raise tok.error(len(tok), f"expected {arity} variable indices in the scope of function {f}")
        scope_values = values[pos:pos + arity]
        for j, v in enumerate(scope_values):
            if not (v == int(v) and 0 <= v < n):
                raise tok.error(pos + 1 + j, f"function {f}: variable index must be an integer in [0, {n - 1}]")
        scope = tuple(int(v) for v in scope_values)
        if len(set(scope)) != len(scope):
            raise tok.error(pos + 1, f"function {f}: a variable appears twice in its scope {scope}")
        scopes.append(scope)
        pos += 1 + arity
    tables: list[np.ndarray] = []
    for f, scope in enumerate(scopes):
        count = tok.integer(values, 1, pos, f"the entry count of table {f}")
        shape = tuple(int(cards[v]) for v in scope)
        expected = int(np.prod(shape, dtype=np.int64))
        if count != expected:
            raise tok.error(pos, f"table {f} has {count} entries, but its scope {scope} needs {expected}")
        if pos + count > len(values):
            raise tok.error(len(tok), f"table {f}: expected {count} entries")
        table = values[pos:pos + count]
        bad = np.flatnonzero(~np.isfinite(table) | (table < 0))
        if bad.size:
            raise tok.error(pos + 1 + int(bad[0]), f"table {f}: entries must be finite and >= 0")
        tables.append(table.reshape(shape).copy())
        pos += 1 + count
    if pos < len(tok):
        raise tok.error(pos, f"unexpected token after the {m} tables")
    return Model(kind=kind, cards=cards, scopes=scopes, tables=tables, name=source)


def read_model(path) -> Model:
    """Read a ``.uai`` model file (MARKOV or BAYES; ``c`` comment lines; any whitespace).

    The token stream is ``TYPE N d_0..d_{N-1} M`` then M scopes ``k v_1..v_k`` then M tables
    ``count x_1..x_count`` with the last scope variable changing fastest (spec/uai.md section 1).
    """
    path = Path(path)
    return parse_model(_read_text(path), path.name)


def format_model(model: Model) -> str:
    """The ``.uai`` text of a model (tables written with 17 significant digits, exact round trip)."""
    lines = [model.kind, str(model.n_vars), " ".join(str(int(c)) for c in model.cards), str(model.n_factors)]
    lines += [" ".join(str(x) for x in (len(s), *s)) for s in model.scopes]
    for table in model.tables:
        lines.append("")
        lines.append(str(table.size))
        lines.append(" ".join(repr(float(x)) for x in table.ravel()))
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------------
# .evid and .query


def _int_tokens(tok: _Tokens) -> list[int]:
    out = []
    for i, t in enumerate(tok.tokens):
        try:
            out.append(int(t))
        except ValueError:
            raise tok.error(i, "expected an integer") from None
    return out


def parse_evidence(text: str, source: str = "model.uai.evid", model: Model | None = None) -> dict[int, int]:
    """Parse an evidence file in any of the three variants of spec 2 ({} for an empty file or ``0``).

    Single sample ``k v1 x1 ... vk xk`` (2014+; identical to the pre-2010 ``k`` then k lines ``v x``) or
    the 2010 form ``1 k v1 x1 ...``. With ``model``, variables and values are checked against it.
    """
    tok = _Tokens(text, source, comments=False)
    t = _int_tokens(tok)
    if not t:
        return {}
    if len(t) == 1 + 2 * t[0] and t[0] >= 0:
        start = 1
    elif t[0] == 1 and len(t) >= 2 and len(t) == 2 + 2 * t[1] and t[1] >= 0:
        start = 2
    else:
        raise tok.error(0, f"{len(t)} tokens match no evidence layout: expected 'k v1 x1 ... vk xk' "
                           "(1 + 2k tokens) or '1 k v1 x1 ...' (2 + 2k); multi-sample files are not supported")
    evidence: dict[int, int] = {}
    for i in range(start, len(t), 2):
        var, val = t[i], t[i + 1]
        if model is not None:
            if not 0 <= var < model.n_vars:
                raise tok.error(i, f"evidence variable {var} is not in [0, {model.n_vars - 1}]")
            if not 0 <= val < model.cards[var]:
                raise tok.error(i + 1, f"value {val} of variable {var} is not below its cardinality "
                                       f"{int(model.cards[var])}")
        elif var < 0 or val < 0:
            raise tok.error(i, "variables and values must be >= 0")
        if var in evidence and evidence[var] != val:
            raise tok.error(i, f"variable {var} is given two different values ({evidence[var]} and {val})")
        evidence[var] = val
    return evidence


def read_evidence(path, model: Model | None = None) -> dict[int, int]:
    """Read an ``.evid`` file: {variable: observed value}. See :func:`parse_evidence`."""
    path = Path(path)
    return parse_evidence(_read_text(path), path.name, model)


def format_evidence(evidence: dict[int, int]) -> str:
    return " ".join(str(x) for x in [len(evidence)] + [y for v in sorted(evidence) for y in (v, evidence[v])]) + "\n"


def parse_query(text: str, source: str = "model.uai.query", model: Model | None = None,
                evidence: dict[int, int] | None = None) -> list[int]:
    """Parse a ``.query`` file ``q i1 ... iq`` (spec 3): distinct variables, none of them observed."""
    tok = _Tokens(text, source, comments=False)
    t = _int_tokens(tok)
    if not t:
        raise FormatError(f"{source}: empty query file")
    if t[0] < 0 or len(t) != 1 + t[0]:
        raise tok.error(0, f"query count {t[0]} does not match the {len(t) - 1} indices that follow")
    query = t[1:]
    seen: set[int] = set()
    for i, v in enumerate(query, start=1):
        if model is not None and not 0 <= v < model.n_vars:
            raise tok.error(i, f"query variable {v} is not in [0, {model.n_vars - 1}]")
        if v in seen:
            raise tok.error(i, f"query variable {v} is listed twice")
        if evidence and v in evidence:
            raise tok.error(i, f"query variable {v} is an evidence variable")
        seen.add(v)
    return query


def read_query(path, model: Model | None = None, evidence: dict[int, int] | None = None) -> list[int]:
    path = Path(path)
    return parse_query(_read_text(path), path.name, model, evidence)


def format_query(query) -> str:
    return " ".join(str(int(x)) for x in [len(query), *query]) + "\n"


# ----------------------------------------------------------------------------------------------
# result files (spec 4)


_BEGIN = re.compile(r"^\s*-BEGIN-\s*$", re.MULTILINE)


def split_result(text: str, task: str) -> tuple[list[str], list[int]]:
    """The tokens of the last solution block of a result file and the 1-based line of each token.

    The first non-empty line is the task word (case-insensitive; MAP = MPE); it must name ``task``.
    Blocks start after lines ``-BEGIN-``; only the last block counts (no fallback to earlier ones).
    """
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        raise AnswerError("empty result file")
    word = lines[first].strip().upper()
    if TASK_WORDS.get(word) != task:
        shown = lines[first].strip()[:40]
        raise AnswerError(f"line {first + 1}: task word {shown!r} does not name the task {task}")
    start = first + 1
    for i in range(first + 1, len(lines)):
        if lines[i].strip() == "-BEGIN-":
            start = i + 1
    tokens: list[str] = []
    line_of: list[int] = []
    for i in range(start, len(lines)):
        parts = lines[i].split()
        tokens += parts
        line_of += [i + 1] * len(parts)
    return tokens, line_of


def _ints(tokens: list[str], line_of: list[int], what: str) -> list[int]:
    out = []
    for t, line in zip(tokens, line_of):
        try:
            out.append(int(t))
        except ValueError:
            raise AnswerError(f"line {line}: token {t[:40]!r} in the {what} is not an integer") from None
    return out


def parse_pr(text: str) -> float:
    """The log10 Z of a PR result (one number, optional L/U flag, optional leading sample count 1)."""
    tokens, line_of = split_result(text, "PR")
    if len(tokens) == 3 and tokens[0] == "1" and tokens[2].upper() in ("L", "U"):
        tokens, line_of = tokens[1:2], line_of[1:2]
    elif len(tokens) == 2 and tokens[1].upper() in ("L", "U"):
        tokens, line_of = tokens[:1], line_of[:1]
    elif len(tokens) == 2 and tokens[0] == "1":
        tokens, line_of = tokens[1:], line_of[1:]
    if len(tokens) != 1:
        raise AnswerError(f"PR solution must be one number (log10 Z), found {len(tokens)} tokens")
    try:
        value = float(tokens[0])
    except ValueError:
        raise AnswerError(f"line {line_of[0]}: PR value {tokens[0][:40]!r} is not a number") from None
    if math.isnan(value) or value == math.inf:
        raise AnswerError(f"line {line_of[0]}: PR value {tokens[0]!r} is not a finite log10 Z (or -inf)")
    return value


def parse_mar(text: str, model: Model) -> list[np.ndarray]:
    """MAR marginals ``N card p_0..p_{card-1} ...`` for every variable (evidence variables included),
    each renormalised to sum 1 (:func:`mar_sums` gives the raw sums for the caller's warning)."""
    tokens, line_of = split_result(text, "MAR")
    n = model.n_vars
    expected = n + 1 + int(model.cards.sum())
    if len(tokens) == expected + 1 and tokens[0] == "1":
        tokens, line_of = tokens[1:], line_of[1:]
    if not tokens:
        raise AnswerError("empty MAR solution")
    if tokens[0] != str(n):
        raise AnswerError(f"line {line_of[0]}: MAR variable count {tokens[0][:40]!r} is not the model's N = {n}")
    if len(tokens) != expected:
        raise AnswerError(f"MAR solution has {len(tokens)} tokens, the model needs {expected}")
    try:
        values = np.array(tokens, dtype=np.float64)
    except ValueError:
        bad = next(i for i, t in enumerate(tokens) if not _is_float(t))
        raise AnswerError(f"line {line_of[bad]}: token {tokens[bad][:40]!r} is not a number") from None
    out = []
    pos = 1
    for v in range(n):
        card = int(model.cards[v])
        if values[pos] != card:
            raise AnswerError(f"line {line_of[pos]}: variable {v} has cardinality {card}, "
                              f"the answer says {tokens[pos][:40]}")
        p = values[pos + 1:pos + 1 + card]
        if not np.all(np.isfinite(p)) or np.any(p < 0):
            bad = int(np.flatnonzero(~np.isfinite(p) | (p < 0))[0])
            raise AnswerError(f"line {line_of[pos + 1 + bad]}: P(x{v} = {bad}) = {tokens[pos + 1 + bad][:40]} "
                              "is negative or not finite")
        total = p.sum()
        if not total > 0:
            raise AnswerError(f"line {line_of[pos]}: the probabilities of variable {v} sum to 0")
        out.append(p / total)
        pos += 1 + card
    return out


def mar_sums(text: str, model: Model) -> np.ndarray:
    """Sums of the raw MAR vectors of an already validated result (for the |sum - 1| > 1e-3 warning)."""
    tokens, _ = split_result(text, "MAR")
    if len(tokens) == model.n_vars + 2 + int(model.cards.sum()):
        tokens = tokens[1:]
    values = np.array(tokens, dtype=np.float64)
    sums, pos = [], 1
    for card in model.cards:
        sums.append(values[pos + 1:pos + 1 + card].sum())
        pos += 1 + int(card)
    return np.array(sums)


def _is_float(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _pairs(values: list[int], line_of: list[int], model: Model, what: str) -> dict[int, int]:
    out: dict[int, int] = {}
    for i in range(0, len(values), 2):
        var, val = values[i], values[i + 1]
        if not 0 <= var < model.n_vars:
            raise AnswerError(f"line {line_of[i]}: {what} variable {var} is not in [0, {model.n_vars - 1}]")
        if not 0 <= val < model.cards[var]:
            raise AnswerError(f"line {line_of[i + 1]}: value {val} of variable {var} is not in "
                              f"[0, {int(model.cards[var]) - 1}]")
        if var in out:
            raise AnswerError(f"line {line_of[i]}: variable {var} is assigned twice")
        out[var] = val
    return out


def parse_mpe_tokens(tokens: list[str], line_of: list[int], model: Model,
                     evidence: dict[int, int]) -> np.ndarray:
    """A full assignment from ``n v_0..v_{n-1}`` (n = N) or ``n`` (variable, value) pairs (spec 4.2)."""
    values = _ints(tokens, line_of, "MPE solution")
    n_model = model.n_vars
    for drop in (0, 1):
        body, lines = values[drop:], line_of[drop:]
        if drop and (not values or values[0] != 1):
            continue
        if not body:
            continue
        n = body[0]
        if n == n_model and len(body) == 1 + n:
            x = np.array(body[1:], dtype=np.int64)
            bad = np.flatnonzero((x < 0) | (x >= model.cards))
            if bad.size:
                v = int(bad[0])
                raise AnswerError(f"line {lines[1 + v]}: value {int(x[v])} of variable {v} is not in "
                                  f"[0, {int(model.cards[v]) - 1}]")
            break
        if n >= 0 and len(body) == 1 + 2 * n:
            pairs = _pairs(body[1:], lines[1:], model, "MPE")
            missing = [v for v in range(n_model) if v not in pairs and v not in evidence]
            if missing:
                raise AnswerError(f"MPE pairs leave {len(missing)} unobserved variable(s) unassigned, "
                                  f"e.g. variable {missing[0]}")
            x = np.zeros(n_model, dtype=np.int64)
            for v, val in evidence.items():
                x[v] = val
            for v, val in pairs.items():
                x[v] = val
            break
    else:
        raise AnswerError(f"MPE solution of {len(values)} tokens is neither 'N v_0..v_(N-1)' with N = {n_model} "
                          "nor 'n' followed by n (variable, value) pairs")
    for v, val in evidence.items():
        if x[v] != val:
            raise AnswerError(f"evidence variable {v} is observed at {val} but the answer sets it to {int(x[v])}")
    return x


def parse_mpe(text: str, model: Model, evidence: dict[int, int]) -> np.ndarray:
    tokens, line_of = split_result(text, "MPE")
    return parse_mpe_tokens(tokens, line_of, model, evidence)


def parse_mmap_tokens(tokens: list[str], line_of: list[int], model: Model, query: list[int],
                      warnings: list[str] | None = None) -> dict[int, int]:
    """An MMAP answer ``q`` + q (variable, value) pairs covering exactly the query set, or ``q`` + q values
    (Merlin) read in ascending variable order (with a warning)."""
    values = _ints(tokens, line_of, "MMAP solution")
    qset = set(query)
    for drop in (0, 1):
        if drop and (not values or values[0] != 1):
            continue
        body, lines = values[drop:], line_of[drop:]
        if not body:
            continue
        q = body[0]
        if q >= 0 and len(body) == 1 + 2 * q:
            answer = _pairs(body[1:], lines[1:], model, "MMAP")
            if set(answer) != qset:
                extra = sorted(set(answer) - qset)[:3]
                missing = sorted(qset - set(answer))[:3]
                raise AnswerError(f"MMAP variables differ from the query set (extra {extra}, missing {missing})")
            return answer
        if q == len(query) and len(body) == 1 + q:
            answer = {}
            for var, val, line in zip(sorted(query), body[1:], lines[1:]):
                if not 0 <= val < model.cards[var]:
                    raise AnswerError(f"line {line}: value {val} of variable {var} is not in "
                                      f"[0, {int(model.cards[var]) - 1}]")
                answer[var] = val
            if warnings is not None:
                warnings.append("MMAP answer written as values only; read in ascending query-variable order")
            return answer
    raise AnswerError(f"MMAP solution of {len(values)} tokens is not 'q' followed by q (variable, value) pairs "
                      f"for the {len(query)} query variables")


def parse_mmap(text: str, model: Model, query: list[int], warnings: list[str] | None = None) -> dict[int, int]:
    tokens, line_of = split_result(text, "MMAP")
    return parse_mmap_tokens(tokens, line_of, model, query, warnings)


def parse_mlc(text: str, model: Model, query: list[int], n_lines: int) -> list[dict[int, int] | AnswerError]:
    """One MMAP-format prediction per non-empty line of the last block; a bad line is an AnswerError in
    its slot (that line scores 0), missing trailing lines are AnswerErrors too."""
    tokens, line_of = split_result(text, "MLC")
    by_line: dict[int, list[str]] = {}
    for t, line in zip(tokens, line_of):
        by_line.setdefault(line, []).append(t)
    out: list = []
    for line in sorted(by_line):
        if len(out) == n_lines:
            break
        toks = by_line[line]
        try:
            out.append(parse_mmap_tokens(toks, [line] * len(toks), model, query))
        except AnswerError as exc:
            out.append(exc)
    while len(out) < n_lines:
        out.append(AnswerError(f"no prediction for test line {len(out) + 1}"))
    return out


def format_result(task: str, solution: str) -> str:
    """A result file with one ``-BEGIN-`` block."""
    return f"{task}\n-BEGIN-\n{solution.rstrip()}\n"


def format_pr(log10_z: float) -> str:
    return format_result("PR", repr(float(log10_z)))


def format_mar(marginals) -> str:
    parts = [str(len(marginals))]
    for p in marginals:
        parts.append(str(len(p)))
        parts += [repr(float(x)) for x in p]
    return format_result("MAR", " ".join(parts))


def format_mpe(assignment) -> str:
    return format_result("MPE", " ".join(str(int(x)) for x in [len(assignment), *assignment]))


def format_pairs(answer: dict[int, int]) -> str:
    return " ".join(str(int(x)) for x in [len(answer)] + [y for v in sorted(answer) for y in (v, answer[v])])


def format_mmap(answer: dict[int, int]) -> str:
    return format_result("MMAP", format_pairs(answer))


def format_mlc(answers: list[dict[int, int]]) -> str:
    return format_result("MLC", "\n".join(format_pairs(a) for a in answers))


# ----------------------------------------------------------------------------------------------
# MLC .data / .test files (spec 8.1)


@dataclasses.dataclass
class MLCData:
    """Variables partition and lines of an MLC ``.data`` (with query values and weights) or ``.test`` file."""

    evidence_vars: list[int]
    query_vars: list[int]
    hidden_vars: list[int]
    evidence: list[dict[int, int]]
    query: list[dict[int, int]] | None = None
    weights: list[float] | None = None


def parse_mlc_data(text: str, source: str, model: Model | None = None, with_labels: bool = True) -> MLCData:
    """Parse a ``.data`` (with_labels) or ``.test`` file: preamble N, |E| e.., |Q| q.., |H| h.., then T and
    T lines of evidence pairs (and, in .data, query pairs and the log10 weight)."""
    lines = [(i + 1, line.split()) for i, line in enumerate(text.splitlines()) if line.strip()]
    if len(lines) < 5:
        raise FormatError(f"{source}: expected the 4-line preamble and the line count")

    def ints(item, what):
        line, toks = item
        try:
            return [int(t) for t in toks]
        except ValueError:
            raise FormatError(f"{source}: line {line}: {what} must be integers") from None

    n = ints(lines[0], "N")
    parts = [ints(lines[k], name) for k, name in ((1, "E"), (2, "Q"), (3, "H"))]
    for k, p in enumerate(parts):
        if not p or p[0] != len(p) - 1:
            raise FormatError(f"{source}: line {lines[k + 1][0]}: count {p[:1]} does not match the indices")
    e_vars, q_vars, h_vars = (p[1:] for p in parts)
    if len(n) != 1 or (model is not None and n[0] != model.n_vars):
        raise FormatError(f"{source}: line {lines[0][0]}: N must be the model's number of variables")
    count = ints(lines[4], "T")
    if len(count) != 1 or count[0] != len(lines) - 5:
        raise FormatError(f"{source}: line {lines[4][0]}: T = {count} but {len(lines) - 5} lines follow")
    data = MLCData(e_vars, q_vars, h_vars, [], [] if with_labels else None, [] if with_labels else None)
    for line, toks in lines[5:]:
        try:
            if with_labels:
                weight = float(toks[-1])
                toks = toks[:-1]
            vals = [int(t) for t in toks]
        except (ValueError, IndexError):
            raise FormatError(f"{source}: line {line}: malformed line") from None
        k = vals[0] if vals else -1
        ev = dict(zip(vals[1:1 + 2 * k:2], vals[2:2 + 2 * k:2])) if k >= 0 else None
        if ev is None or sorted(ev) != sorted(e_vars):
            raise FormatError(f"{source}: line {line}: the evidence pairs must cover the evidence variables")
        data.evidence.append(ev)
        rest = vals[1 + 2 * k:]
        if with_labels:
            kq = rest[0] if rest else -1
            qv = dict(zip(rest[1::2], rest[2::2]))
            if kq != len(q_vars) or len(rest) != 1 + 2 * kq or sorted(qv) != sorted(q_vars):
                raise FormatError(f"{source}: line {line}: the query pairs must cover the query variables")
            data.query.append(qv)
            data.weights.append(weight)
        elif rest:
            raise FormatError(f"{source}: line {line}: unexpected tokens after the evidence pairs")
    return data


def format_mlc_data(data: MLCData, n_vars: int) -> str:
    head = [str(n_vars)] + [" ".join(str(x) for x in [len(v), *v])
                            for v in (data.evidence_vars, data.query_vars, data.hidden_vars)]
    lines = head + ["", str(len(data.evidence))]
    for i, ev in enumerate(data.evidence):
        line = format_pairs(ev)
        if data.query is not None:
            line += " " + format_pairs(data.query[i]) + f" {data.weights[i]:.6f}"
        lines.append(line)
    return "\n".join(lines) + "\n"
