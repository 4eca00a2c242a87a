"""Readers and writers of the participant's result files, one per instance: ``<id>.uai.<TASK>``.

The first non-empty line is the task word, solutions follow ``-BEGIN-`` lines and only the last one
counts; PR, MAR, MPE, MMAP and MLC solutions each have their own token layout
(docs/uai.md#result-files). A malformed answer raises :class:`AnswerError` naming the line and token;
the scorer turns it into a score of 0 with that reason.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import AnswerError
from .files import Model, format_pairs

#: Result files larger than this are not read (an answer of any real instance is far smaller). Reading
#: one takes about 30 times its size in memory (a Python string and a line number per token), so that
#: this bound keeps the scorer well under 1 GiB (docs/uai.md#result-files).
MAX_RESULT_BYTES = 16 * 1024**2

#: The task words of result files, and accepted aliases ("MAP" is the UAI 2014 name of MPE).
TASK_WORDS = {"PR": "PR", "MAR": "MAR", "MPE": "MPE", "MAP": "MPE", "MMAP": "MMAP", "MLC": "MLC"}


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


#: Integer tokens (variables, values, counts) must fit an int64, as every index of the model does
#: (docs/uai.md#integer-tokens).
INT64_RANGE = (-2**63, 2**63 - 1)


def _ints(tokens: list[str], line_of: list[int], what: str) -> list[int]:
    out = []
    for t, line in zip(tokens, line_of):
        try:
            # 20 characters hold every int64; int() of a longer token would only be refused below, or
            # raise its own ValueError past 4,300 digits.
            value = int(t) if len(t) <= 20 else None
        except ValueError:
            raise AnswerError(f"line {line}: token {t[:40]!r} in the {what} is not an integer") from None
        if value is None or not INT64_RANGE[0] <= value <= INT64_RANGE[1]:
            raise AnswerError(f"line {line}: token {t[:40]!r} in the {what} is not an integer of at most 64 "
                              "bits")
        out.append(value)
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


def check_result_text(text: str, task: str) -> None:
    """What a result file's text can be checked for without its model (``codascore validate``): the task
    word, a non-empty last solution, a PR value in full, and tokens that are numbers (MAR) or integers
    (MPE, MMAP, MLC). The counts per variable need the model: scoring checks them."""
    if task == "PR":
        parse_pr(text)
        return
    tokens, line_of = split_result(text, task)
    if not tokens:
        raise AnswerError(f"the {task} solution is empty")
    if task != "MAR":
        _ints(tokens, line_of, f"{task} solution")
        return
    bad = next((k for k, t in enumerate(tokens) if not _is_float(t)), None)
    if bad is not None:
        raise AnswerError(f"line {line_of[bad]}: token {tokens[bad][:40]!r} in the MAR solution is not a number")


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
        # Scaled by the largest first: values near 1e308 are valid but their plain sum overflows to inf.
        largest = p.max()
        if not largest > 0:
            raise AnswerError(f"line {line_of[pos]}: the probabilities of variable {v} sum to 0")
        p = p / largest
        out.append(p / p.sum())
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
    """A full assignment from ``n v_0..v_{n-1}`` (n = N) or ``n`` (variable, value) pairs (docs/uai.md#mpe-answers)."""
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


def format_mmap(answer: dict[int, int]) -> str:
    return format_result("MMAP", format_pairs(answer))


def format_mlc(answers: list[dict[int, int]]) -> str:
    return format_result("MLC", "\n".join(format_pairs(a) for a in answers))
