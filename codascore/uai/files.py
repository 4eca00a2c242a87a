"""Readers and writers of the UAI instance files, and the reference index.

``.uai`` models, ``.evid`` evidence (three variants), ``.query`` query sets, the MLC ``.data``/``.test``
files (docs/uai.md#file-formats) and ``reference.json``. Readers only parse and validate; they never
compute scores. A malformed file raises :class:`FormatError` whose message names the file, the line and
the offending token. The participant's result files are :mod:`.result_files`.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np

from ..errors import FormatError



@dataclasses.dataclass
class Model:
    """A discrete graphical model: L(x) = prod_f tables[f][x[scopes[f]]].

    kind:   "MARKOV" or "BAYES" (evaluated identically, docs/uai.md#model-files).
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
    """Parse the text of a ``.uai`` file (docs/uai.md#model-files). Raises FormatError naming source, line and token."""
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
    ``count x_1..x_count`` with the last scope variable changing fastest (docs/uai.md#model-files).
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
    """Parse an evidence file in any of the three variants of docs/uai.md#evidence-files ({} for an empty file or ``0``).

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
    """Parse a ``.query`` file ``q i1 ... iq`` (docs/uai.md#query-files): distinct variables, none of them observed."""
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



def format_pairs(answer: dict[int, int]) -> str:
    """``n v1 x1 ... vn xn``, variables ascending (the result and evidence files' pairs)."""
    return " ".join([str(len(answer)), format_bare_pairs(answer)]).rstrip()


def format_bare_pairs(answer: dict[int, int]) -> str:
    """``v1 x1 ... vn xn`` without a count (the official MLC data and test lines)."""
    return " ".join(str(int(y)) for v in sorted(answer) for y in (v, answer[v]))

# ----------------------------------------------------------------------------------------------
# MLC .data / .test files (docs/uai.md#mlc-data-and-test-files)


@dataclasses.dataclass
class MLCData:
    """Variables partition and lines of an MLC ``.data`` (with query values and weights) or ``.test`` file."""

    evidence_vars: list[int]
    query_vars: list[int]
    hidden_vars: list[int]
    evidence: list[dict[int, int]]
    query: list[dict[int, int]] | None = None
    weights: list[float] | None = None


def _mlc_line_pairs(vals: list[int], n_labelled: int, source: str, line: int) -> list[int]:
    """The variable-value tokens of one MLC line, without the count prefix of the older layout.

    The official layout (``data-format.md``, ``test-format.md``) is the pairs alone: 2·n tokens for n =
    |E| (``.test``) or |E| + |Q| (``.data``, weight removed). The older layout puts a count before the
    evidence pairs and another before the label pairs: 2·n + 1 (``.test``) or 2·n + 2 tokens (``.data``).
    The preamble fixes n, so the token count alone tells the layouts apart; any other count is refused
    (docs/uai.md#mlc-data-and-test-files)."""
    n_evidence, n_query = n_labelled
    official = 2 * (n_evidence + n_query)
    if len(vals) == official:
        return vals
    prefixed = official + (2 if n_query else 1)
    if len(vals) == prefixed and vals[0] == n_evidence and (not n_query or vals[1 + 2 * n_evidence] == n_query):
        return vals[1:1 + 2 * n_evidence] + vals[2 + 2 * n_evidence:]
    layouts = (f"{official} tokens (variable-value pairs, the official layout) or {prefixed} "
               f"(the same with the counts {n_evidence}" + (f" and {n_query}" if n_query else "") + " in front)")
    raise FormatError(f"{source}: line {line}: {len(vals)} integer tokens match no layout: expected {layouts}")


def parse_mlc_data(text: str, source: str, model: Model | None = None, with_labels: bool = True) -> MLCData:
    """Parse a ``.data`` (with_labels) or ``.test`` file: preamble N, |E| e.., |Q| q.., |H| h.., then T and
    T lines of evidence pairs (and, in .data, label pairs and the log10 weight), in the official layout
    (pairs only) or the older count-prefixed one (:func:`_mlc_line_pairs`)."""
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
    e_set, q_set = set(e_vars), set(q_vars)
    data = MLCData(e_vars, q_vars, h_vars, [], [] if with_labels else None, [] if with_labels else None)
    for line, toks in lines[5:]:
        try:
            if with_labels:
                weight = float(toks[-1])
                toks = toks[:-1]
            vals = [int(t) for t in toks]
        except (ValueError, IndexError):
            raise FormatError(f"{source}: line {line}: malformed line") from None
        pairs = _mlc_line_pairs(vals, (len(e_vars), len(q_vars) if with_labels else 0), source, line)
        assignment = list(zip(pairs[::2], pairs[1::2]))
        ev = {v: x for v, x in assignment if v in e_set}
        qv = {v: x for v, x in assignment if v in q_set}
        if len(ev) != len(e_set) or len(ev) + len(qv) != len(assignment):
            raise FormatError(f"{source}: line {line}: the pairs must give each evidence variable "
                              + ("and each query variable " if with_labels else "") + "exactly one value")
        if with_labels and len(qv) != len(q_set):
            raise FormatError(f"{source}: line {line}: the query pairs must cover the query variables")
        data.evidence.append(ev)
        if with_labels:
            data.query.append(qv)
            data.weights.append(weight)
    return data


def format_mlc_data(data: MLCData, n_vars: int) -> str:
    """The official layout: evidence pairs, then (``.data``) label pairs and the weight, no counts."""
    head = [str(n_vars)] + [" ".join(str(x) for x in [len(v), *v])
                            for v in (data.evidence_vars, data.query_vars, data.hidden_vars)]
    lines = head + ["", str(len(data.evidence))]
    for i, ev in enumerate(data.evidence):
        line = format_bare_pairs(ev)
        if data.query is not None:
            line = " ".join(part for part in (line, format_bare_pairs(data.query[i]), f"{data.weights[i]:.6f}")
                            if part)
        lines.append(line)
    return "\n".join(lines) + "\n"


def dump_reference(task_name: str, records: list[dict]) -> str:
    """reference.json text: one instance per line (diffable, compact for long assignments)."""
    lines = ",\n".join(json.dumps(r) for r in records)
    return f'{{"task": {json.dumps(task_name)}, "instances": [\n{lines}\n]}}\n'
