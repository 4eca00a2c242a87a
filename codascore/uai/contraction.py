"""Table contraction: the product of factors summed onto some of their variables, on scaled tables.

A :class:`Factor` holds ``values * 10**log10_scale`` with max(values) = 1, the usual log-space scaling of
exact solvers: products and sums run on plain float64 arrays (numpy einsum, BLAS-backed where the axes
allow) while magnitudes that overflow doubles (Alchemy's log10 Z = 606) live in the scales
(docs/uai.md#exact-inference-engine). :func:`contract` is the one operation the elimination engine and
the trivial PR bound build on.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

#: Default bound on the number of entries of one table (2**27 float64 = 1 GiB).
DEFAULT_MAX_TABLE_SIZE = 2**27


#: ndarray.max without its Python-level wrapper: the engine calls it once per table on tiny tables.
peak_of = np.maximum.reduce


class Factor:
    """A table over ``vars`` whose true value is ``values * 10**log10_scale``."""

    __slots__ = ("vars", "values", "log10_scale")

    def __init__(self, vars: tuple[int, ...], values: np.ndarray, log10_scale: float = 0.0):
        self.vars = vars
        self.values = values
        self.log10_scale = log10_scale

    @classmethod
    def normalised(cls, vars, values, log10_scale=0.0, owned=False) -> "Factor":
        """The factor rescaled to max 1; ``owned``: values is a fresh array that may be divided in place."""
        peak = float(peak_of(values, axis=None)) if values.size else 0.0
        if peak == 1.0:  # already scaled (many CPTs): skip the division and the copy
            return cls(tuple(vars), values, log10_scale)
        if peak > 0 and math.isfinite(peak):
            if owned:
                values /= peak
            else:
                values = values / peak
            return cls(tuple(vars), values, log10_scale + math.log10(peak))
        return cls(tuple(vars), values, -math.inf if peak == 0 else log10_scale)



def _absorb(factors: list[Factor]) -> list[Factor]:
    """Multiply every factor whose scope is inside another's into the smallest such factor (fewer einsum
    operands, and no pass over a large message for each small table).

    The guests of a large host are multiplied together first, the two smallest at a time, and into the
    host once: one pass over the host instead of one per guest (Alchemy_11's marginals put 38 pairwise
    tables into a message of 2**19 entries, again and again; 1.4 of its 2.2 s went to those passes)."""
    factors = sorted(factors, key=lambda f: -f.values.size)
    kept: list[Factor] = []
    guests: dict[int, list[Factor]] = {}
    for f in factors:
        fs = set(f.vars)
        for i in sorted(range(len(kept)), key=lambda j: kept[j].values.size):
            if fs <= set(kept[i].vars):
                guests.setdefault(i, []).append(f)
                break
        else:
            kept.append(f)
    for i, group in guests.items():
        host = kept[i]
        axis = {v: k for k, v in enumerate(host.vars)}
        if host.values.size > SMALL_CLUSTER and len(group) > 1:
            heap = [(g.values.size, k, g.vars, g.values) for k, g in enumerate(group)]
            heapq.heapify(heap)
            while len(heap) > 1:
                _, _, a_vars, a = heapq.heappop(heap)
                _, k, b_vars, b = heapq.heappop(heap)
                union = sorted(set(a_vars) | set(b_vars), key=axis.__getitem__)
                product = np.einsum(a, [axis[v] for v in a_vars], b, [axis[v] for v in b_vars],
                                    [axis[v] for v in union])
                heapq.heappush(heap, (product.size, k, tuple(union), product))
            _, _, scope, table = heap[0]
            products = [(scope, table)]
        else:
            products = [(g.vars, g.values) for g in group]
        values, labels = host.values, list(range(len(host.vars)))
        for scope, table in products:
            values = np.einsum(values, labels, table, [axis[v] for v in scope], labels)
        kept[i] = Factor(host.vars, values, host.log10_scale + math.fsum(g.log10_scale for g in group))
    return kept


#: Clusters up to this many entries are contracted in one einsum call without a contraction path.
SMALL_CLUSTER = 4096


def _card_of(factors: list[Factor]) -> dict[int, int]:
    """The domain size of every variable of the factors."""
    sizes: dict[int, int] = {}
    for f in factors:
        sizes.update(zip(f.vars, f.values.shape))
    return sizes


def _cluster_size(factors: list[Factor]) -> float:
    return float(math.prod(_card_of(factors).values()))


def contract(factors: list[Factor], out_vars, max_size: int) -> Factor:
    """sum over every variable not in out_vars of the product of the factors, normalised."""
    if len(factors) > 2:  # with one or two factors, one einsum call does what absorbing would
        factors = _absorb(factors)
    labels: dict[int, int] = {}
    operands: list = []
    scale = 0.0
    for f in factors:
        operands.append(f.values)
        operands.append([labels.setdefault(v, len(labels)) for v in f.vars])
        scale += f.log10_scale
    out = [labels[v] for v in out_vars]
    if len(factors) == 1 and out == operands[1]:
        return Factor.normalised(tuple(out_vars), factors[0].values, scale)
    # small clusters: one C loop, cheaper than any plan (with two factors the product of their sizes
    # bounds the cluster, so most calls skip _cluster_size)
    if ((len(factors) <= 2 and math.prod(f.values.size for f in factors) <= SMALL_CLUSTER)
            or (len(factors) <= 30 and _cluster_size(factors) <= SMALL_CLUSTER)):
        values = np.einsum(*operands, out)
    elif len(factors) <= 2:
        # einsum's own loop over a large two-table cluster ran at up to 65 ns an entry (Pedigree_12:
        # 17 ms for one 2**19 cluster); the optimised call hands it to (batched) BLAS: 0.07 ms there
        # (its result can be a transposed view: made C-ordered so that the layout of later tables, which
        # einsum copies from its inputs, stays plain)
        values = _c_ordered(np.einsum(*operands, out, optimize=True))
    else:
        # a bucket's sum (one variable out, held by every factor: only products before the last step)
        # gets the cheap plan; where several variables go (downward messages, beliefs), summing early
        # matters more than the order of products, and numpy's greedy search weighs every pair
        summed = set(labels).difference(out_vars)
        steps = (_pairwise_plan([f.vars for f in factors], tuple(out_vars), _card_of(factors), max_size)
                 if len(summed) == 1 and all(summed.issubset(f.vars) for f in factors) else None)
        if steps is not None:
            values = _run_plan(steps, [f.values for f in factors], [f.vars for f in factors], tuple(out_vars))
        else:
            path = np.einsum_path(*operands, out, optimize=("greedy", max_size))[0]
            values = np.einsum(*operands, out, optimize=path)
    return Factor.normalised(tuple(out_vars), np.asarray(values, dtype=np.float64), scale,
                             owned=isinstance(values, np.ndarray) and values.ndim > 0 and values.flags.owndata)


def _pairwise_plan(scopes: list[tuple[int, ...]], out_vars: tuple[int, ...], card: dict[int, int],
                   max_size: int) -> list[tuple[int, int, tuple[int, ...]]] | None:
    """Steps (i, j, kept) that contract the tables two at a time: table i with table j into a table over
    kept (their variables less those no other table and no output holds), appended as a new table.

    Each step takes the smallest table and the partner whose product with it grows least over that
    partner: products of small tables first, a balanced tree, planned in one scan per step where
    numpy's greedy path weighed every pair in Python (50 of DBN_11's 130 ms). Made for a bucket's sum,
    where no variable can go before the last step, so summing early is not weighed. None when a step
    would build a table above max_size."""
    out = {v: k for k, v in enumerate(out_vars)}

    def rank(v):
        """Summed variables lead, then out_vars' order: every intermediate is laid out like the result."""
        return (1, out[v]) if v in out else (0, v)

    held: dict[int, int] = {}
    for scope in scopes:
        for v in scope:
            held[v] = held.get(v, 0) + 1

    def result(a, b):
        """The variables of a times b that stay: in the output, or in a third table."""
        return [v for v in a | b if v in out or held[v] > (v in a) + (v in b)]

    live = {k: (math.prod(card[v] for v in scope), set(scope)) for k, scope in enumerate(scopes)}
    steps = []
    while len(live) > 1:
        i = min(live, key=lambda k: live[k][0])
        a = live.pop(i)[1]
        j = min(live, key=lambda k: (math.prod(card[v] for v in result(a, live[k][1])) - live[k][0], live[k][0]))
        b = live.pop(j)[1]
        kept = tuple(sorted(result(a, b), key=rank))
        size = math.prod(card[v] for v in kept)
        if size > max_size:
            return None
        for v in a:
            held[v] -= 1
        for v in b:
            held[v] -= 1
        for v in kept:
            held[v] += 1
        steps.append((i, j, kept))
        live[len(scopes) + len(steps) - 1] = (size, set(kept))
    return steps


def _run_plan(steps, tables: list[np.ndarray], scopes: list[tuple[int, ...]], out_vars: tuple[int, ...]) -> np.ndarray:
    """Carry out _pairwise_plan's steps; a step that sums goes to einsum's optimised two-operand call
    (batched BLAS where the axes allow), a plain product to einsum's loop; every result C-ordered."""
    tables, scopes = list(tables), list(scopes)
    label: dict[int, int] = {}
    for scope in scopes:
        for v in scope:
            label.setdefault(v, len(label))
    for i, j, kept in steps:
        sums = len(kept) < len(set(scopes[i]) | set(scopes[j]))
        product = np.einsum(tables[i], [label[v] for v in scopes[i]], tables[j], [label[v] for v in scopes[j]],
                            [label[v] for v in kept], optimize=sums, order="C")
        tables.append(_c_ordered(product))
        scopes.append(kept)
        tables[i] = tables[j] = None
    table, scope = tables[-1], scopes[-1]
    if scope != out_vars:
        table = _c_ordered(np.einsum(table, [label[v] for v in scope], [label[v] for v in out_vars]))
    return table


def _c_ordered(values) -> np.ndarray:
    """values as a C-ordered array (einsum's optimised call can return a transposed view, and einsum
    gives later results the layout of their inputs); 0-d stays 0-d, unlike np.ascontiguousarray."""
    values = np.asarray(values)
    return values if values.flags.c_contiguous else values.copy(order="C")

