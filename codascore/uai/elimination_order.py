"""Elimination orders on the interaction graph: greedy min-fill (optionally constrained, for MMAP),
greedy min-degree (cheap, for sums whose clusters stay small) and the MMD+ treewidth lower bound.

Every function takes the interaction graph as an adjacency dict {variable: set of neighbours}
(:func:`interaction_graph`) and the cardinalities; none builds a table (docs/uai.md#elimination-orders).
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from ..errors import WidthExceeded


def interaction_graph(factors: list, variables) -> dict[int, set[int]]:
    """Adjacency {variable: neighbours} of variables, two variables adjacent when a factor (anything with a
    ``vars`` tuple, such as a contraction.Factor) holds both."""
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


def min_degree_order(adjacency: dict[int, set[int]], cards, max_work: float = CHEAP_ORDER_WORK):
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

