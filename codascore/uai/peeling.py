"""Eliminations that need no order: evidence reduction, and peeling (leaves and nested factors).

Evidence is applied first by slicing every table. For log10 Z alone, :func:`peel` then sums out every
variable that occurs in a single factor and multiplies every factor whose scope lies inside another's
into it, without any ordering: most of the variables of Promedus-like instances go this way
(docs/uai.md#exact-inference-engine).
"""

from __future__ import annotations

import math

import numpy as np

from .contraction import Factor, peak_of
from .files import Model


def reduce_evidence(model: Model, evidence: dict[int, int] | None, scaled: bool = True) -> tuple[list[Factor], float]:
    """Factors restricted to the evidence values, over the unobserved variables, and the log10 product
    of the factors that became constants (-inf if one of them is 0).

    ``scaled=False`` leaves every table as read (views of the model's tables, scale 0), for peel, which
    checks the peak of everything it builds."""
    evidence = evidence or {}
    factors: list[Factor] = []
    constant = 0.0
    for scope, table in zip(model.scopes, model.tables):
        if any(v in evidence for v in scope):
            index = tuple(evidence.get(v, slice(None)) for v in scope)
            table = table[index]
            scope = tuple(v for v in scope if v not in evidence)
        if not scope:
            value = float(table)
            constant += math.log10(value) if value > 0 else -math.inf
            continue
        if not scaled:
            factors.append(Factor(scope, table))
            continue
        f = Factor.normalised(scope, table)
        if f.log10_scale == -math.inf:
            constant = -math.inf
        else:
            constant += f.log10_scale
            f.log10_scale = 0.0
            factors.append(f)
    return factors, constant


#: A table peel builds is rescaled when its peak leaves the first range (one max per step instead of
#: a max and a division), and peeling is abandoned when a peak leaves the second: underflow or
#: overflow could then have cost precision (and Z = 0 is left to the plain elimination to report).
_PEEL_RANGE = (1e-30, 1e30)
_PEEL_SAFE = (1e-280, 1e280)
#: Tables up to this many entries keep summed-out axes pending until their next einsum.
_PENDING_AXES = 256


def peel(factors: list[Factor]) -> tuple[list[Factor], float, list[int]] | None:
    """Sum out every variable that occurs in a single factor and multiply every factor whose scope lies
    inside another's into that one, until neither applies: (remaining factors, log10 of what was summed
    out completely, the variables summed out in the order they were), or None when a table's peak left
    _PEEL_SAFE (then the caller runs the plain elimination on scaled tables instead).

    Both steps are eliminations that add no fill-in and build no table larger than one already held, so
    they need no ordering and no size check; they remove most of the variables of instances with many
    leaves (Promedus_26: 585 of 608), where per-variable ordering and per-bucket calls dominated log Z.
    Numpy calls are what it costs (most tables hold 2 to 8 entries), so: single-variable factors go
    into their hosts in batches (_absorb_singles); a factor's leaves are summed in the same einsum call
    that multiplies it into its host, and stay pending axes of a small table until then. Takes the
    tables unscaled (reduce_evidence(scaled=False)) and checks the peak of everything it builds; the
    remaining ones come back scaled to max 1 as reduce_evidence(scaled=True) leaves them.
    """
    add = np.add.reduce
    low, high = _PEEL_RANGE
    floor, ceiling = _PEEL_SAFE
    scopes = {i: f.vars for i, f in enumerate(factors)}
    values = {i: f.values for i, f in enumerate(factors)}
    scales = {i: f.log10_scale for i, f in enumerate(factors)}
    occurs: dict[int, set[int]] = {}
    for i, scope in scopes.items():
        for v in scope:
            occurs.setdefault(v, set()).add(i)
    constant = 0.0
    peeled: list[int] = []

    def store(j, table, scale):
        """Keep table (a fresh array) as factor j, rescaled if its peak left the range; False if the
        peak is outside the safe range."""
        peak = float(peak_of(table, axis=None))
        if not low <= peak <= high:
            if not floor <= peak <= ceiling:
                return False
            table /= peak
            scale += math.log10(peak)
        values[j], scales[j] = table, scale
        return True

    if not _absorb_singles(scopes, values, scales, occurs):
        return None

    def sum_pending(i):
        """Sum factor i's pending axes out now; False if the peak left the safe range."""
        scope = scopes[i]
        scopes[i] = tuple(v for v in scope if v in occurs)
        return store(i, add(values[i], axis=tuple(k for k, v in enumerate(scope) if v not in occurs)), scales[i])

    pending = list(scopes)
    while pending:
        i = pending.pop()
        scope = scopes.get(i)
        if scope is None:
            continue
        # A summed-out variable leaves occurs at once but may stay an axis of its small table
        # ("pending", see below) until the table's next einsum.
        kept = [v for v in scope if v in occurs and len(occurs[v]) > 1]
        leafy = len(kept) < len(scope)
        if leafy:
            for v in scope:
                if v in occurs and len(occurs[v]) == 1:
                    del occurs[v]
                    peeled.append(v)
            if not kept:
                total = float(add(values.pop(i), axis=None))
                del scopes[i]
                if not floor <= total <= ceiling:
                    return None
                constant += scales.pop(i) + math.log10(total)
                continue
        hosts = set.intersection(*[occurs[v] for v in kept]) if len(kept) > 1 else occurs[kept[0]]
        j, size = -1, math.inf
        for h in hosts:
            if h != i and values[h].size < size:
                j, size = h, values[h].size
        if j < 0:
            # Without a host, a small table keeps its summed-out axes pending: they are summed in the
            # einsum that later multiplies it into a host, one numpy call (and one peak) fewer.
            if leafy and values[i].size > _PENDING_AXES:
                if not sum_pending(i):
                    return None
            continue
        host, table = scopes[j], values[i]
        if leafy and (len(host) + len(scope) > 52 or values[j].size * table.size > _PENDING_AXES ** 2):
            # einsum's label limit, or a fused call that would loop over too many entries: sum apart
            table = add(table, axis=tuple(k for k, v in enumerate(scope) if v not in occurs))
            scope = kept
        if len(scope) == 1 and not leafy:  # broadcasting, the commonest case: cheaper than einsum
            shape = [1] * len(host)
            shape[host.index(scope[0])] = table.size
            product = values[j] * table.reshape(shape)
        elif len(kept) == len(scope) and _in_order(scope, host):
            product = values[j] * table.reshape([table.shape[scope.index(v)] if v in scope else 1 for v in host])
        else:
            axis = {v: k for k, v in enumerate(host)}
            labels = list(range(len(host)))
            product = np.einsum(values[j], labels, table,
                                [axis[v] if v in axis else len(host) + k for k, v in enumerate(scope)], labels)
        if not store(j, product, scales[j] + scales.pop(i)):
            return None
        del scopes[i], values[i]
        for v in kept:
            occurs[v].discard(i)
        pending.append(j)  # the host may now hold the only occurrence of some of f's variables
    remaining = []
    lowest, highest = math.log10(floor), math.log10(ceiling)
    for i, scope in scopes.items():
        pending_axes = tuple(k for k, v in enumerate(scope) if v not in occurs)
        if pending_axes:  # summed and rescaled to max 1 with a single peak
            f = Factor.normalised(tuple(v for v in scope if v in occurs), add(values[i], axis=pending_axes),
                                  scales[i], owned=True)
        else:
            f = Factor.normalised(scope, values[i], scales[i])
        if not lowest <= f.log10_scale - scales[i] <= highest:
            return None
        remaining.append(f)
    return remaining, constant, peeled


def _absorb_singles(scopes, values, scales, occurs) -> bool:
    """peel's first step, batched: multiply every single-variable factor into the smallest larger
    factor holding its variable, with one numpy product and one peak computation for each group of
    hosts of the same shape and axis (Promedus_26 has 306 such factors). False when a peak left
    _PEEL_SAFE; the factors and occurrences are updated in place as peel's loop would."""
    low, high = _PEEL_RANGE
    floor, ceiling = _PEEL_SAFE
    guests: dict[int, list[int]] = {}
    for i, scope in scopes.items():
        if len(scope) == 1:
            hosts = [j for j in occurs[scope[0]] if len(scopes[j]) > 1]
            if hosts:
                guests.setdefault(min(hosts, key=lambda j: values[j].size), []).append(i)
    while guests:  # one guest per host and round: a host's table is replaced once per batch
        batches: dict[tuple, list[tuple[int, int]]] = {}
        for j, waiting in guests.items():
            i = waiting.pop()
            batches.setdefault((values[j].shape, scopes[j].index(scopes[i][0])), []).append((j, i))
        guests = {j: waiting for j, waiting in guests.items() if waiting}
        for (shape, axis), pairs in batches.items():
            broadcast = [len(pairs)] + [1] * len(shape)
            broadcast[1 + axis] = shape[axis]
            products = (np.stack([values[j] for j, _ in pairs])
                        * np.stack([values[i] for _, i in pairs]).reshape(broadcast))
            peaks = peak_of(products.reshape(len(pairs), -1), axis=1).tolist()
            for (j, i), product, peak in zip(pairs, products, peaks):
                scales[j] += scales.pop(i)
                if not low <= peak <= high:
                    if not floor <= peak <= ceiling:
                        return False
                    product = product / peak
                    scales[j] += math.log10(peak)
                values[j] = product
                occurs[scopes[i][0]].discard(i)
                del scopes[i], values[i]
    return True


def _in_order(inner: tuple[int, ...], outer: tuple[int, ...]) -> bool:
    """Whether the variables of inner appear in outer in the same relative order."""
    position = -1
    for v in inner:
        nxt = outer.index(v)
        if nxt < position:
            return False
        position = nxt
    return True

