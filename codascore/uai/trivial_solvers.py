"""The project's trivial solvers (docs/uai.md#trivial-answers): the answers that define MaxErr.

They are deterministic, always valid (finite likelihood), and computed offline by the reference builder,
which stores them in the reference data; the scorer only reads the stored values.

- PR: the smaller of two guaranteed upper bounds on log10 Z: mini-bucket elimination (i-bound
  ``ibound``, min-fill order) and the closed form sum_f log10 max f + sum_{i unobserved} log10 d_i.
- MAR: uniform marginals.
- MPE: each unobserved variable at the argmax of the product of its unary factors (first value on ties),
  then deterministic ICM sweeps in index order while the likelihood is 0, then (deterministic models)
  a greedy pass fixing each variable to its first value that keeps Z > 0.
- MMAP: the same on the query variables, ICM moves scored by the exact V(q).
- MLC: per query variable the most frequent training value; the unary answer when V(q|e) = 0.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from ..errors import TrivialAnswerError
from .bucket_elimination import log10_mmap_value, log10_partition
from .contraction import DEFAULT_MAX_TABLE_SIZE, Factor, contract
from .elimination_order import interaction_graph, min_fill_order
from .files import Model
from .peeling import reduce_evidence
from .metrics import log10_likelihood

#: Default i-bound of the mini-bucket PR bound (largest mini-bucket scope: ibound + 1 variables).
DEFAULT_IBOUND = 2


def closed_form_pr_bound(model: Model, evidence: dict[int, int] | None = None) -> float:
    """sum_f log10(max of f over entries consistent with e) + sum_{i unobserved} log10 d_i (docs/uai.md#pr-trivial-bound)."""
    factors, constant = reduce_evidence(model, evidence)
    free = [v for v in range(model.n_vars) if v not in (evidence or {})]
    # reduce_evidence normalises every factor to max 1 and moves its max into ``constant``.
    return constant + float(np.sum(np.log10(model.cards[free]))) if free else constant


def mini_bucket_pr_bound(model: Model, evidence: dict[int, int] | None = None,
                         ibound: int = DEFAULT_IBOUND) -> float:
    """Mini-bucket upper bound on log10 Z(e) (Dechter and Rish 2003).

    Each bucket of the min-fill order is split first-fit into mini-buckets of at most ibound + 1
    variables; the first is summed over the bucket variable, the others are maximised, which can only
    increase the result.
    """
    evidence = evidence or {}
    factors, constant = reduce_evidence(model, evidence)
    if constant == -math.inf:
        return -math.inf
    free = [v for v in range(model.n_vars) if v not in evidence]
    order, _, _ = min_fill_order(interaction_graph(factors, free), model.cards)
    position = {v: i for i, v in enumerate(order)}
    buckets: dict[int, list[Factor]] = {v: [] for v in order}
    for f in factors:
        buckets[min(f.vars, key=position.__getitem__)].append(f)
    total = constant
    for v in order:
        items = sorted(buckets[v], key=lambda f: -len(f.vars))
        if not items:
            total += math.log10(int(model.cards[v]))
            continue
        minis: list[tuple[set, list[Factor]]] = []
        for f in items:
            for scope, group in minis:
                if len(scope | set(f.vars)) <= ibound + 1:
                    scope.update(f.vars)
                    group.append(f)
                    break
            else:
                minis.append((set(f.vars), [f]))
        for k, (scope, group) in enumerate(minis):
            cluster = sorted(scope, key=position.__getitem__)
            rest = [u for u in cluster if u != v]
            if k == 0:
                message = contract(group, rest, DEFAULT_MAX_TABLE_SIZE)
            else:
                joint = contract(group, cluster, DEFAULT_MAX_TABLE_SIZE)
                message = Factor.normalised(tuple(rest), joint.values.max(axis=cluster.index(v)),
                                            joint.log10_scale)
            if message.log10_scale == -math.inf:
                return -math.inf
            if rest:
                buckets[rest[0]].append(message)
            else:
                total += message.log10_scale + math.log10(float(message.values))
    return total


def trivial_pr(model: Model, evidence: dict[int, int] | None = None, ibound: int = DEFAULT_IBOUND) -> float:
    """The trivial PR answer: the tighter of the mini-bucket and closed-form upper bounds."""
    return min(mini_bucket_pr_bound(model, evidence, ibound), closed_form_pr_bound(model, evidence))


def trivial_mar(model: Model, evidence: dict[int, int] | None = None) -> list[np.ndarray]:
    """Uniform marginals (point masses for evidence variables, which the MAR error ignores)."""
    out = []
    for v, card in enumerate(model.cards):
        p = np.full(int(card), 1.0 / card)
        if evidence and v in evidence:
            p = np.zeros(int(card))
            p[evidence[v]] = 1.0
        out.append(p)
    return out


def unary_argmax(model: Model, variables, evidence: dict[int, int] | None = None) -> np.ndarray:
    """A full assignment: evidence values, and for each of ``variables`` the argmax of the product of its
    unary factors (first value on ties or without unary factors; PIC2011 default); others at 0."""
    x = np.zeros(model.n_vars, dtype=np.int64)
    for v, val in (evidence or {}).items():
        x[v] = val
    wanted = set(variables)
    scores = {v: np.zeros(int(model.cards[v])) for v in wanted}
    for scope, table in zip(model.scopes, model.tables):
        if len(scope) == 1 and scope[0] in wanted:
            with np.errstate(divide="ignore"):
                scores[scope[0]] = scores[scope[0]] + np.log10(table)
    for v in wanted:
        x[v] = int(np.argmax(scores[v]))
    return x


def trivial_mpe(model: Model, evidence: dict[int, int] | None = None, max_sweeps: int = 50) -> np.ndarray:
    """The trivial MPE answer (docs/uai.md#mpe-trivial-answer): unary argmax, then ICM sweeps while L = 0.

    Raises TrivialAnswerError when the likelihood stays 0.
    """
    evidence = evidence or {}
    free = [v for v in range(model.n_vars) if v not in evidence]
    x = unary_argmax(model, free, evidence)
    value = log10_likelihood(model, x)
    sweeps = 0
    while value == -math.inf and sweeps < max_sweeps:
        sweeps += 1
        changed = False
        for v in free:
            batch = np.repeat(x[None, :], int(model.cards[v]), axis=0)
            batch[:, v] = np.arange(int(model.cards[v]))
            values = log10_likelihood(model, batch)
            best = int(np.argmax(values))
            if values[best] > values[x[v]]:
                x[v] = best
                changed = True
        value = log10_likelihood(model, x)
        if not changed:
            break
    if value == -math.inf:
        x = greedy_lookahead(model, free, evidence)
        value = log10_likelihood(model, x)
    if value == -math.inf:
        raise TrivialAnswerError(f"{model.name}: the trivial MPE answer has zero likelihood after ICM "
                                 "and greedy look-ahead")
    return x


def greedy_lookahead(model: Model, variables, evidence: dict[int, int]) -> np.ndarray:
    """Fallback for deterministic models: fix ``variables`` one by one in index order, each to its first
    value that keeps Z(fixed values) > 0 (checked exactly). Every step keeps a completion with non-zero
    likelihood, so the result has L > 0 whenever Z(e) > 0; it ignores the magnitudes, so it stays weak."""
    fixed = dict(evidence)
    for v in sorted(variables):
        for val in range(int(model.cards[v])):
            if log10_partition(model, {**fixed, v: val}) > -math.inf:
                fixed[v] = val
                break
        else:
            break
    x = np.zeros(model.n_vars, dtype=np.int64)
    for v, val in fixed.items():
        x[v] = val
    return x


def trivial_mmap(model: Model, query, evidence: dict[int, int] | None = None,
                 max_sweeps: int = 20) -> dict[int, int]:
    """The trivial MMAP answer: unary argmax on the query variables, ICM on V(q) while V = 0."""
    x = unary_argmax(model, query, evidence)
    answer = {q: int(x[q]) for q in query}
    value = log10_mmap_value(model, answer, evidence)
    sweeps = 0
    while value == -math.inf and sweeps < max_sweeps:
        sweeps += 1
        changed = False
        for q in sorted(query):
            values = []
            for val in range(int(model.cards[q])):
                values.append(log10_mmap_value(model, {**answer, q: val}, evidence))
            best = int(np.argmax(values))
            if values[best] > values[answer[q]]:
                answer[q] = best
                changed = True
        value = log10_mmap_value(model, answer, evidence)
        if not changed:
            break
    if value == -math.inf:
        raise TrivialAnswerError(f"{model.name}: the trivial MMAP answer has V(q) = 0")
    return answer


def trivial_mlc(model: Model, query_vars, train_query: list[dict[int, int]],
                test_evidence: list[dict[int, int]]) -> list[dict[int, int]]:
    """Per query variable the most frequent training value (smallest value on ties), the same for every
    test line; a line where that gives V(q|e) = 0 takes the unary answer. Raises TrivialAnswerError if a
    line still has V = 0."""
    common = {}
    for q in query_vars:
        counts = Counter(line[q] for line in train_query)
        common[q] = min(counts, key=lambda val: (-counts[val], val)) if counts else 0
    answers = []
    for k, ev in enumerate(test_evidence):
        answer = dict(common)
        if log10_mmap_value(model, answer, ev) == -math.inf:
            x = unary_argmax(model, query_vars, ev)
            answer = {q: int(x[q]) for q in query_vars}
            if log10_mmap_value(model, answer, ev) == -math.inf:
                raise TrivialAnswerError(f"{model.name}: test line {k + 1}: the trivial MLC answer has V = 0")
        answers.append(answer)
    return answers
