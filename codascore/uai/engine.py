"""Exact inference by bucket (variable) elimination, for building and checking reference data.

Tables are kept in scaled form, value = values * 10**log10_scale with max(values) = 1, which is the
usual "log-space scaling" of exact solvers: products and sums run on plain float64 arrays (numpy
einsum with BLAS-backed contraction paths) while the magnitudes, which overflow doubles on instances
such as Alchemy (log10 Z = 606), live in the log10 scales.

- Evidence is applied first by slicing every table (evidence reduction).
- The elimination order is greedy min-fill (ties: fewer neighbours, then smaller index), optionally
  constrained (MMAP: summed variables first, query variables last). For sums (log Z, marginals) a
  greedy min-degree order replaces it when its clusters are small in all (CHEAP_ORDER_WORK, or
  CHEAP_ORDER_WORK_PER_VARIABLE times the variables to order), where the elimination it may lengthen
  costs less than min-fill's own cost.
- log10 Z alone first peels: variables in a single factor are summed out, and factors inside another's
  scope multiplied into it, without ordering (most of the variables of Promedus-like instances).
- log10 Z is one upward pass; all single-variable marginals come from a second, downward pass over the
  bucket tree; MPE and MMAP use max buckets and decode the argmax backwards.
- ``max_table_size`` bounds the entries of any table the engine builds: beyond it, TableTooLarge is
  raised before any work instead of exhausting memory.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from ..errors import TableTooLarge, WidthExceeded
from .formats import Model

#: Default bound on the number of entries of one table (2**27 float64 = 1 GiB).
DEFAULT_MAX_TABLE_SIZE = 2**27


#: ndarray.max without its Python-level wrapper: the engine calls it once per table on tiny tables.
_peak_of = np.maximum.reduce


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
        peak = float(_peak_of(values, axis=None)) if values.size else 0.0
        if peak == 1.0:  # already scaled (many CPTs): skip the division and the copy
            return cls(tuple(vars), values, log10_scale)
        if peak > 0 and math.isfinite(peak):
            if owned:
                values /= peak
            else:
                values = values / peak
            return cls(tuple(vars), values, log10_scale + math.log10(peak))
        return cls(tuple(vars), values, -math.inf if peak == 0 else log10_scale)


# ----------------------------------------------------------------------------------------------
# evidence reduction and graph


def reduce_evidence(model: Model, evidence: dict[int, int] | None, scaled: bool = True) -> tuple[list[Factor], float]:
    """Factors restricted to the evidence values, over the unobserved variables, and the log10 product
    of the factors that became constants (-inf if one of them is 0).

    ``scaled=False`` leaves every table as read (views of the model's tables, scale 0), for _peel, which
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


#: A table _peel builds is rescaled when its peak leaves the first range (one max per step instead of
#: a max and a division), and peeling is abandoned when a peak leaves the second: underflow or
#: overflow could then have cost precision (and Z = 0 is left to the plain elimination to report).
_PEEL_RANGE = (1e-30, 1e30)
_PEEL_SAFE = (1e-280, 1e280)
#: Tables up to this many entries keep summed-out axes pending until their next einsum.
_PENDING_AXES = 256


def _peel(factors: list[Factor]) -> tuple[list[Factor], float, list[int]] | None:
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
        peak = float(_peak_of(table, axis=None))
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
    """_peel's first step, batched: multiply every single-variable factor into the smallest larger
    factor holding its variable, with one numpy product and one peak computation for each group of
    hosts of the same shape and axis (Promedus_26 has 306 such factors). False when a peak left
    _PEEL_SAFE; the factors and occurrences are updated in place as _peel's loop would."""
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
            peaks = _peak_of(products.reshape(len(pairs), -1), axis=1).tolist()
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


def interaction_graph(factors: list[Factor], variables) -> dict[int, set[int]]:
    adjacency: dict[int, set[int]] = {v: set() for v in variables}
    for f in factors:
        for v in f.vars:
            adjacency[v].update(f.vars)
    for v in adjacency:
        adjacency[v].discard(v)
    return adjacency


def min_fill_order(adjacency: dict[int, set[int]], cards, first=None, max_width: int | None = None,
                   neighbourhoods: list | None = None) -> tuple[list[int], int, float]:
    """Greedy min-fill elimination order (ties: fewer neighbours, then smaller index).

    ``first``: if given, a set of variables that must all be eliminated before the others (constrained
    order for MMAP). Returns (order, induced width, log2 of the largest cluster table). Raises
    WidthExceeded as soon as a cluster has more than max_width + 1 variables.

    Neighbourhoods are bit masks (Python ints, bit k for the k-th smallest variable): a fill count is
    then one AND and one popcount per neighbour instead of a set difference, which made min-fill the
    larger part of log Z on instances such as Promedus_15 and Segmentation_11.
    """
    if max_width is not None and minor_min_width(adjacency) > max_width:
        raise WidthExceeded(f"treewidth exceeds {max_width} (MMD+ lower bound)")
    names = sorted(adjacency)
    position = {v: k for k, v in enumerate(names)}
    mask = [0] * len(names)
    for v, around in adjacency.items():
        m = 0
        for u in around:
            m |= 1 << position[u]
        mask[position[v]] = m
    group = [0 if first is None or v in first else 1 for v in names]
    log2_card = [math.log2(int(cards[v])) for v in names]

    def members(m):
        """The bit positions of m, lowest first."""
        out = []
        while m:
            low = m & -m
            out.append(low.bit_length() - 1)
            m ^= low
        return out

    def key(k):
        nb = mask[k]
        degree = nb.bit_count()
        if max_width is not None and degree > max_width:
            # Picking k would exceed the limit anyway: skip its O(degree) fill count (dense cnf graphs).
            return (group[k], math.inf, degree, names[k])
        # each neighbour a misses |nb - adj(a)| - 1 edges to the others (a is in nb, not in adj(a));
        # every missing edge is counted from both ends
        missing = 0
        m = nb
        while m:
            low = m & -m
            missing += (nb & ~mask[low.bit_length() - 1]).bit_count()
            m ^= low
        return (group[k], (missing - degree) // 2, degree, names[k])

    current = [key(k) for k in range(len(names))]
    heap = [(kk, k) for k, kk in enumerate(current)]
    heapq.heapify(heap)
    order: list[int] = []
    width = 0
    log2_cluster = 0.0
    done = [False] * len(names)
    while heap:
        kk, k = heapq.heappop(heap)
        if done[k] or current[k] != kk:
            continue
        nb = mask[k]
        around = members(nb)
        if max_width is not None and len(around) > max_width:
            raise WidthExceeded(f"min-fill width exceeds {max_width} (a cluster of {len(around) + 1} variables)")
        width = max(width, len(around))
        log2_cluster = max(log2_cluster, sum(log2_card[a] for a in around) + log2_card[k])
        order.append(names[k])
        if neighbourhoods is not None:
            neighbourhoods.append(tuple(names[a] for a in around))
        done[k] = True
        gone = 1 << k
        fill_in = False
        for a in around:
            old = mask[a]
            new = (old | nb) & ~((1 << a) | gone)
            if new | gone != old:
                fill_in = True
            mask[a] = new
        mask[k] = 0
        touched = nb
        if fill_in:
            # A fill-in edge (a, b) changes the fill of the common neighbours of a and b only.
            for a in around:
                for w in members(mask[a] & ~touched):
                    if (mask[w] & nb).bit_count() >= 2:
                        touched |= 1 << w
        for u in members(touched):
            current[u] = key(u)
            heapq.heappush(heap, (current[u], u))
    return order, width, log2_cluster


#: Total entries of all clusters up to which a min-degree order is used instead of min-fill (log Z and
#: marginals): below it the elimination costs about as much whichever order (measured on UAI-2014:
#: Grids_12 95k entries with min-degree against 66k with min-fill, 1.8 against 2.0 ms), while min-fill
#: itself costs several times more (3.8 against 0.25 ms on Grids_12).
CHEAP_ORDER_WORK = 2**17
#: ... or up to this many entries per variable to order: min-fill costs about 15 us per variable
#: (Promedus_22: 3.3 ms for 197), the elimination about 3 ns per cluster entry, so a min-degree order
#: that costs Promedus_22 0.2 ms more in elimination (260k entries against 63k) saves 3 ms in all.
CHEAP_ORDER_WORK_PER_VARIABLE = 2048


def _min_degree_order(adjacency: dict[int, set[int]], cards, max_work: float = CHEAP_ORDER_WORK):
    """Greedy min-degree order (ties: smaller index) and each variable's neighbours when eliminated, or
    None as soon as the clusters hold more than max_work entries in all.

    No fill counts: several times cheaper per variable than min_fill_order; used where the order's
    quality cannot matter much (see CHEAP_ORDER_WORK)."""
    log2_card = np.log2(np.asarray(cards, dtype=np.float64)).tolist()
    adj = {v: set(n) for v, n in adjacency.items()}
    heap = [(len(n), v) for v, n in adj.items()]
    heapq.heapify(heap)
    order: list[int] = []
    neighbourhoods: list[tuple[int, ...]] = []
    work, max_log2 = 0.0, math.log2(max_work)
    while heap:
        d, v = heapq.heappop(heap)
        if v not in adj or d != len(adj[v]):
            continue
        nb = adj.pop(v)
        log2_cluster = sum(log2_card[u] for u in nb) + log2_card[v]
        if log2_cluster > max_log2:  # also keeps 2.0 ** log2_cluster from overflowing on dense graphs
            return None
        work += 2.0 ** log2_cluster
        if work > max_work:
            return None
        order.append(v)
        neighbourhoods.append(tuple(nb))
        for a in nb:
            around = adj[a]
            around.discard(v)
            around |= nb
            around.discard(a)
            heapq.heappush(heap, (len(around), a))
    return order, neighbourhoods


def minor_min_width(adjacency: dict[int, set[int]]) -> int:
    """MMD+ treewidth lower bound (Bodlaender and Koster): repeatedly take a vertex of minimum degree,
    record that degree, and contract it into its neighbour of minimum degree. A graph minor never has a
    larger treewidth, and a graph's minimum degree is at most its treewidth; used to reject wide
    instances cheaply before min-fill."""
    adj = {v: set(n) for v, n in adjacency.items()}
    heap = [(len(n), v) for v, n in adj.items()]
    heapq.heapify(heap)
    best = 0
    while heap:
        d, v = heapq.heappop(heap)
        if v not in adj or d != len(adj[v]):
            continue
        best = max(best, d)
        nb = adj.pop(v)
        if nb:
            u = min(nb, key=lambda w: (len(adj[w]), w))
            for w in nb:
                adj[w].discard(v)
                if w != u:
                    adj[w].add(u)
                    adj[u].add(w)
            for w in nb:
                heapq.heappush(heap, (len(adj[w]), w))
    return best


def induced_width(model: Model, evidence: dict[int, int] | None = None, max_width: int | None = None) -> int:
    """Induced width of the min-fill order on the model's graph with the evidence variables removed."""
    factors, _ = reduce_evidence(model, evidence)
    free = [v for v in range(model.n_vars) if v not in (evidence or {})]
    return min_fill_order(interaction_graph(factors, free), model.cards, max_width=max_width)[1]


# ----------------------------------------------------------------------------------------------
# table operations


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
    need no ordering (see _peel), falling back to the scaled tables if _peel gives up."""
    evidence = evidence or {}
    free = [v for v in range(model.n_vars) if v not in evidence]
    if peel:
        factors, constant = reduce_evidence(model, evidence, scaled=False)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):  # _peel checks every peak
            peeled = _peel(factors) if constant != -math.inf else None
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
        cheap = _min_degree_order(adjacency, model.cards, cheap_work)
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
    """Exact log10 Z(e) = log10 sum_{x'} prod_f f(x', e) by bucket elimination (spec/uai.md section 5).

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
    assignment clamped as extra evidence (spec 6.2)."""
    clamped = dict(evidence or {})
    for v, x in answer.items():
        if v in clamped and clamped[v] != x:
            raise ValueError(f"answer: variable {v} = {x} contradicts the evidence value {clamped[v]}")
        clamped[v] = x
    return log10_partition(model, clamped, max_table_size=max_table_size)
