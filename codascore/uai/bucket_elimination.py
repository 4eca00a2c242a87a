"""Exact inference by bucket (variable) elimination, for building and checking reference data and for
the exact MMAP/MLC value V(q) the scorer needs (docs/uai.md#exact-inference-engine).

- Evidence is sliced out first (:mod:`.peeling`); log10 Z alone then peels the variables that need no
  order (leaves, nested factors).
- The remaining variables follow a greedy min-fill order, constrained for MMAP (summed variables first,
  query variables last); sums use a min-degree order instead while its clusters stay small
  (:mod:`.elimination_order`).
- Each bucket is one contraction of scaled tables (:mod:`.contraction`): log10 Z is one upward pass; all
  single-variable marginals come from a second, downward pass over the bucket tree; MPE and MMAP use max
  buckets and decode the argmax backwards.
- ``max_table_size`` bounds the entries of any table the engine builds: beyond it, TableTooLarge is
  raised before any work instead of exhausting memory.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import TableTooLarge
from .contraction import DEFAULT_MAX_TABLE_SIZE, Factor, contract
from .elimination_order import (CHEAP_ORDER_WORK, CHEAP_ORDER_WORK_PER_VARIABLE, interaction_graph,
                                min_degree_order, min_fill_order)
from .files import Model
from .peeling import peel as peel_factors
from .peeling import reduce_evidence


def induced_width(model: Model, evidence: dict[int, int] | None = None, max_width: int | None = None) -> int:
    """Induced width of the min-fill order on the model's graph with the evidence variables removed."""
    factors, _ = reduce_evidence(model, evidence)
    free = [v for v in range(model.n_vars) if v not in (evidence or {})]
    return min_fill_order(interaction_graph(factors, free), model.cards, max_width=max_width)[1]


class _Bucket:
    __slots__ = ("var", "op", "factors", "children", "message", "parent", "pi")

    def __init__(self, var, op):
        self.var = var
        self.op = op
        self.factors: list[Factor] = []
        self.children: list[int] = []
        self.message: Factor | None = None
        self.parent: int | None = None
        self.pi: Factor | None = None


def _reduce(model, evidence, peel=False) -> tuple[list[Factor], float, list[int], list[int]]:
    """(factors, log10 constant, variables left to order, variables peeled in their order).

    ``peel`` (log Z only, where no bucket is kept for a second pass): also sum out the variables that
    need no ordering (see peeling.peel), falling back to the scaled tables if peel gives up."""
    evidence = evidence or {}
    free = [v for v in range(model.n_vars) if v not in evidence]
    if peel:
        factors, constant = reduce_evidence(model, evidence, scaled=False)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):  # peel checks every peak
            peeled = peel_factors(factors) if constant != -math.inf else None
        if peeled is not None:
            factors, peeled_constant, order = peeled
            done = set(order)
            return factors, constant + peeled_constant, [v for v in free if v not in done], order
    factors, constant = reduce_evidence(model, evidence)
    return factors, constant, free, []


def _plan(model, evidence, query=None, max_table_size=DEFAULT_MAX_TABLE_SIZE, op="sum", peel=False):
    """Reduce the evidence (and peel, see _reduce), order the remaining variables and check the table
    sizes before any work that can build a table larger than the model's own."""
    factors, constant, free, _ = _reduce(model, evidence, peel)
    adjacency = interaction_graph(factors, free)
    qset = set(query) if query is not None else None
    first = None if qset is None else set(free) - qset
    if query is None and op == "sum":
        cheap_work = max(CHEAP_ORDER_WORK, CHEAP_ORDER_WORK_PER_VARIABLE * len(free))
        cheap = min_degree_order(adjacency, model.cards, cheap_work)
        # every cluster of a cheap order is below cheap_work: check it only under a lower limit
        if cheap is not None and (max_table_size >= cheap_work
                                  or _oversized(model, *cheap, op, qset, max_table_size) is None):
            return factors, constant, cheap[0]
    neighbourhoods: list[tuple[int, ...]] = []
    order, _, _ = min_fill_order(adjacency, model.cards, first=first, neighbourhoods=neighbourhoods)
    problem = _oversized(model, order, neighbourhoods, op, qset, max_table_size)
    if problem:
        raise TableTooLarge(problem)
    return factors, constant, order


def _oversized(model, order, neighbourhoods, op, qset, max_table_size) -> str | None:
    """Why the elimination along order would build a table above max_table_size, or None. A sum bucket
    stores its message, a max bucket its whole cluster."""
    cards = model.cards.tolist()
    for v, nb in zip(order, neighbourhoods):
        is_max = op == "max" or (qset is not None and v in qset)
        cluster = [v, *nb] if is_max else list(nb)
        size = math.prod(cards[u] for u in cluster)
        if size > max_table_size:
            return (f"{model.name}: eliminating variable {v} needs a table of {size:.3g} entries over "
                    f"{len(cluster)} variables, above max_table_size = {max_table_size} "
                    f"(min-fill order; raise the limit or use an approximate solver)")
    return None


def _eliminate(model, factors, order, ops, max_table_size) -> tuple[float, dict[int, _Bucket]]:
    """Upward pass: returns (log10 of the total, buckets) with each bucket's message and parent."""
    position = {v: i for i, v in enumerate(order)}
    buckets = {v: _Bucket(v, ops(v)) for v in order}
    total = 0.0
    for f in factors:
        buckets[min(f.vars, key=position.__getitem__)].factors.append(f)
    for v in order:
        bucket = buckets[v]
        if not bucket.factors:  # a variable in no factor: sum gives its cardinality, max gives 1
            if bucket.op == "sum":
                total += math.log10(int(model.cards[v]))
            continue
        cluster = sorted(set().union(*(f.vars for f in bucket.factors)), key=position.__getitem__)
        rest = [u for u in cluster if u != v]
        if bucket.op == "sum":
            message = contract(bucket.factors, rest, max_table_size)
        else:
            joint = contract(bucket.factors, cluster, max_table_size)
            message = Factor.normalised(tuple(rest), joint.values.max(axis=cluster.index(v)), joint.log10_scale,
                                        owned=len(rest) > 0)
        if message.log10_scale == -math.inf:
            return -math.inf, buckets
        bucket.message = message
        if rest:
            bucket.parent = rest[0]
            buckets[rest[0]].factors.append(message)
            buckets[rest[0]].children.append(v)
        else:
            total += message.log10_scale + math.log10(float(message.values))
    return total, buckets


# ----------------------------------------------------------------------------------------------
# public entry points


def _check_evidence(model: Model, evidence) -> dict[int, int]:
    if not isinstance(model, Model):
        raise ValueError(f"model must be a codascore.uai Model, got {type(model).__name__}")
    evidence = dict(evidence or {})
    for v, x in evidence.items():
        if not 0 <= int(v) < model.n_vars:
            raise ValueError(f"evidence: variable {v} is not in [0, {model.n_vars - 1}]")
        if not 0 <= int(x) < model.cards[v]:
            raise ValueError(f"evidence: value {x} of variable {v} is not below its cardinality {model.cards[v]}")
    return {int(v): int(x) for v, x in evidence.items()}


def log10_partition(model: Model, evidence: dict[int, int] | None = None,
                    max_table_size: int = DEFAULT_MAX_TABLE_SIZE) -> float:
    """Exact log10 Z(e) = log10 sum_{x'} prod_f f(x', e) by bucket elimination (docs/uai.md#tasks).

    Returns -inf when Z(e) = 0. Raises TableTooLarge when the min-fill order needs a table larger than
    max_table_size entries.
    """
    evidence = _check_evidence(model, evidence)
    factors, constant, order = _plan(model, evidence, max_table_size=max_table_size, peel=True)
    if constant == -math.inf:
        return -math.inf
    total, _ = _eliminate(model, factors, order, lambda v: "sum", max_table_size)
    return constant + total


def marginals(model: Model, evidence: dict[int, int] | None = None,
              max_table_size: int = DEFAULT_MAX_TABLE_SIZE) -> list[np.ndarray]:
    """Exact P(X_i | e) for every variable i (point masses for evidence variables).

    Two passes over the bucket tree of the elimination order: the upward pass of :func:`log10_partition`
    stores each bucket's message; the downward pass sends each bucket the product of everything outside
    its subtree. A variable's marginal is the belief of the smallest separator holding it (the product
    of the two messages across it), or of its own bucket's cluster for a leaf bucket.
    Raises ValueError when Z(e) = 0 (the conditional marginals are undefined).
    """
    return partition_and_marginals(model, evidence, max_table_size)[1]


def partition_and_marginals(model: Model, evidence: dict[int, int] | None = None,
                            max_table_size: int = DEFAULT_MAX_TABLE_SIZE) -> tuple[float, list[np.ndarray]]:
    """(log10 Z(e), marginals) from one upward and one downward pass; see :func:`marginals`."""
    evidence = _check_evidence(model, evidence)
    factors, constant, order = _plan(model, evidence, max_table_size=max_table_size)
    total, buckets = (-math.inf, {}) if constant == -math.inf else _eliminate(
        model, factors, order, lambda v: "sum", max_table_size)
    if total == -math.inf:
        raise ValueError(f"{model.name}: Z(e) = 0, the marginals given this evidence are undefined")
    for v in reversed(order):
        bucket = buckets[v]
        own = [f for f in bucket.factors if not _is_message(f, bucket, buckets)]
        incoming = {c: buckets[c].message for c in bucket.children}
        base = own + ([bucket.pi] if bucket.pi is not None else [])
        for c in bucket.children:
            ops = base + [m for d, m in incoming.items() if d != c]
            sep = buckets[c].message.vars
            # A separator variable may appear only in the child's own message: pi is flat along it.
            covered = set().union(*(f.vars for f in ops)) if ops else set()
            flat = tuple(u for u in sep if u not in covered)
            if flat:
                ops.append(Factor(flat, np.ones([int(model.cards[u]) for u in flat])))
            buckets[c].pi = contract(ops, sep, max_table_size)
    out: list[np.ndarray] = []
    for v in range(model.n_vars):
        card = int(model.cards[v])
        if v in evidence:
            p = np.zeros(card)
            p[evidence[v]] = 1.0
        elif not buckets[v].factors:
            p = np.full(card, 1.0 / card)
        else:
            bucket = buckets[v]
            if bucket.children:
                # v is in the separator of each child (the child's message goes to v's bucket), and a
                # separator's belief is the product of the two messages across it: far cheaper than the
                # belief of v's whole cluster.
                c = min(bucket.children, key=lambda d: buckets[d].message.values.size)
                ops = [buckets[c].message, buckets[c].pi]
            else:
                ops = bucket.factors + ([bucket.pi] if bucket.pi is not None else [])
            belief = contract(ops, (v,), max_table_size).values
            total_mass = belief.sum()
            if not total_mass > 0:
                raise ValueError(f"{model.name}: the belief of variable {v} underflowed to 0")
            p = belief / total_mass
        out.append(p)
    return constant + total, out


def _is_message(f: Factor, bucket: _Bucket, buckets) -> bool:
    return any(buckets[c].message is f for c in bucket.children)


def _decode(model, buckets, order, evidence, assignment, decode_vars):
    for v in reversed(order):
        if v not in decode_vars:
            continue
        bucket = buckets[v]
        scores = np.ones(int(model.cards[v]))
        for f in bucket.factors:
            index = tuple(slice(None) if u == v else assignment[u] for u in f.vars)
            scores = scores * f.values[index]
        assignment[v] = int(np.argmax(scores))
    return assignment


def mpe(model: Model, evidence: dict[int, int] | None = None,
        max_table_size: int = DEFAULT_MAX_TABLE_SIZE) -> tuple[float, np.ndarray]:
    """Exact MPE: (max_x log10 L(x, e), a maximising full assignment with the evidence values).

    Max-product bucket elimination, then backward decoding (first value on ties). log10 value is -inf
    (with an arbitrary assignment) when every assignment has zero likelihood.
    """
    evidence = _check_evidence(model, evidence)
    factors, constant, order = _plan(model, evidence, max_table_size=max_table_size, op="max")
    assignment = np.zeros(model.n_vars, dtype=np.int64)
    for v, x in evidence.items():
        assignment[v] = x
    if constant == -math.inf:
        return -math.inf, assignment
    total, buckets = _eliminate(model, factors, order, lambda v: "max", max_table_size)
    if total == -math.inf:
        return -math.inf, assignment
    _decode(model, buckets, order, evidence, assignment, set(order))
    return constant + total, assignment


def mmap(model: Model, query, evidence: dict[int, int] | None = None,
         max_table_size: int = DEFAULT_MAX_TABLE_SIZE) -> tuple[float, dict[int, int]]:
    """Exact marginal MAP: max_q log10 V(q) with V(q) = sum_{x_S} prod_f f(q, x_S, e).

    Constrained bucket elimination: the non-query variables are summed out first (min-fill among
    them), then the query variables are maximised and decoded backwards.
    """
    evidence = _check_evidence(model, evidence)
    query = [int(q) for q in query]
    qset = set(query)
    if qset & set(evidence):
        raise ValueError(f"query: variables {sorted(qset & set(evidence))} are evidence variables")
    factors, constant, order = _plan(model, evidence, query=query, max_table_size=max_table_size)
    assignment = np.zeros(model.n_vars, dtype=np.int64)
    if constant == -math.inf:
        return -math.inf, {q: 0 for q in query}
    total, buckets = _eliminate(model, factors, order, lambda v: "max" if v in qset else "sum", max_table_size)
    if total == -math.inf:
        return -math.inf, {q: 0 for q in query}
    _decode(model, buckets, order, evidence, assignment, qset)
    return constant + total, {q: int(assignment[q]) for q in query}


def log10_mmap_value(model: Model, answer: dict[int, int], evidence: dict[int, int] | None = None,
                     max_table_size: int = DEFAULT_MAX_TABLE_SIZE) -> float:
    """log10 V(q) = log10 sum_{x_S} prod_f f(q, x_S, e): the partition function with the query
    assignment clamped as extra evidence (docs/uai.md#mmap-value)."""
    clamped = dict(evidence or {})
    for v, x in answer.items():
        if v in clamped and clamped[v] != x:
            raise ValueError(f"answer: variable {v} = {x} contradicts the evidence value {clamped[v]}")
        clamped[v] = x
    return log10_partition(model, clamped, max_table_size=max_table_size)

