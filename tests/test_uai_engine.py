"""The exact engine (bucket elimination, elimination orders, contraction) against brute force, the greedy
rule and plain einsum; the trivial PR bound against the exact value (docs/uai.md#exact-inference-engine)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codascore.uai import bucket_elimination, contraction, files, log10_likelihood, trivial_solvers
from codascore.uai.elimination_order import min_fill_order


@st.composite
def small_models(draw):
    n = draw(st.integers(1, 5))
    cards = draw(st.lists(st.integers(1, 3), min_size=n, max_size=n))
    m = draw(st.integers(1, 6))
    scopes, tables = [], []
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    for _ in range(m):
        k = draw(st.integers(0, min(3, n)))
        scope = tuple(draw(st.permutations(range(n)))[:k])
        table = rng.gamma(0.7, 1.0, [cards[v] for v in scope]) * draw(st.sampled_from([1e-30, 1.0, 1e30]))
        if draw(st.booleans()):
            table = table * (rng.random(table.shape) > 0.2)
        scopes.append(scope)
        tables.append(np.asarray(table, dtype=float))
    model = files.Model("MARKOV", np.array(cards, dtype=np.int64), scopes, tables)
    ev = {v: draw(st.integers(0, cards[v] - 1)) for v in range(n) if draw(st.integers(0, 3)) == 0}
    return model, ev


def brute_force(model, evidence):
    states = [x for x in itertools.product(*[range(c) for c in model.cards])
              if all(x[v] == val for v, val in evidence.items())]
    logs = np.array([log10_likelihood(model, np.array(x)) for x in states])
    return states, logs


@settings(max_examples=60, deadline=None)
@given(small_models())
def test_engine_matches_brute_force(case):
    model, evidence = case
    states, logs = brute_force(model, evidence)
    finite = logs[np.isfinite(logs)]
    if finite.size == 0:
        assert bucket_elimination.log10_partition(model, evidence) == -math.inf
        return
    shift = finite.max()
    z = shift + math.log10(np.sum(10.0 ** (finite - shift)))
    assert bucket_elimination.log10_partition(model, evidence) == pytest.approx(z, abs=1e-9)
    best, x = bucket_elimination.mpe(model, evidence)
    assert best == pytest.approx(shift, abs=1e-9)
    assert log10_likelihood(model, x, evidence) == pytest.approx(shift, abs=1e-9)
    weights = np.where(np.isfinite(logs), 10.0 ** (logs - shift), 0.0)
    marg = bucket_elimination.marginals(model, evidence)
    for v in range(model.n_vars):
        expected = np.bincount([s[v] for s in states], weights=weights, minlength=model.cards[v])
        assert np.allclose(marg[v], expected / expected.sum(), atol=1e-9)
    assert trivial_solvers.trivial_pr(model, evidence) >= z - 1e-9  # the trivial PR answer is an upper bound
    query = [v for v in range(model.n_vars) if v not in evidence][:2]
    if query:
        value, answer = bucket_elimination.mmap(model, query, evidence)
        by_q: dict = {}
        for s, w in zip(states, weights):
            key = tuple(s[q] for q in query)
            by_q[key] = by_q.get(key, 0.0) + w
        assert value == pytest.approx(shift + math.log10(max(by_q.values())), abs=1e-9)
        assert bucket_elimination.log10_mmap_value(model, answer, evidence) == pytest.approx(value, abs=1e-9)


@pytest.mark.parametrize("scale", [1e-3, 1e-250, 1e250])
def test_log_partition_of_long_chains_far_outside_double_range(scale):
    """Peeling (every variable of a chain is a leaf in turn) keeps the scales in log10, and falls back to
    the plain elimination when raw tables are too extreme to multiply: Z = 2 (a + b)^(n-1) c^n with
    pairwise tables [[a, b], [b, a]] and unary tables [c, c], far below or above the double range."""
    n, a, b, c = 300, 1.0 * scale, 2.0 * scale, 0.01 * scale
    scopes = [(i, i + 1) for i in range(n - 1)] + [(i,) for i in range(n)]
    tables = [np.array([[a, b], [b, a]])] * (n - 1) + [np.array([c, c])] * n
    model = files.Model("MARKOV", np.full(n, 2, dtype=np.int64), scopes, tables)
    expected = math.log10(2) + (n - 1) * math.log10(a + b) + n * math.log10(c)
    assert bucket_elimination.log10_partition(model) == pytest.approx(expected, abs=1e-9)
    assert bucket_elimination.partition_and_marginals(model)[0] == pytest.approx(expected, abs=1e-9)


@st.composite
def graphs(draw):
    """A random interaction graph, domain sizes, and optionally a set to eliminate first (MMAP)."""
    n = draw(st.integers(1, 16))
    density = draw(st.sampled_from([0.1, 0.2, 0.3, 0.5]))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    adjacency = {v: set() for v in range(n)}
    for a, b in itertools.combinations(range(n), 2):
        if rng.random() < density:
            adjacency[a].add(b)
            adjacency[b].add(a)
    cards = np.array(draw(st.lists(st.integers(2, 4), min_size=n, max_size=n)), dtype=np.int64)
    first = draw(st.none() | st.sets(st.integers(0, n - 1)))
    return adjacency, cards, first


def greedy_min_fill(adjacency, cards, first):
    """The rule min_fill_order implements, without its heap, incremental updates or bit masks: each step
    eliminates the variable with the smallest (outside ``first``, fill-in edges, degree, index)."""
    adj = {v: set(n) for v, n in adjacency.items()}
    order, width, log2_cluster = [], 0, 0.0
    while adj:
        def key(u):
            nb = adj[u]
            missing = sum(1 for a in nb for b in nb if a < b and b not in adj[a])
            return (0 if first is None or u in first else 1, missing, len(nb), u)
        v = min(adj, key=key)
        nb = adj.pop(v)
        width = max(width, len(nb))
        log2_cluster = max(log2_cluster, sum(math.log2(cards[u]) for u in nb | {v}))
        for a in nb:
            adj[a] |= nb - {a}
            adj[a].discard(v)
        order.append(v)
    return order, width, log2_cluster


@settings(max_examples=200, deadline=None)
@given(graphs())
def test_min_fill_order_is_the_greedy_rule(case):
    adjacency, cards, first = case
    neighbourhoods: list = []
    order, width, log2_cluster = min_fill_order(adjacency, cards, first=first, neighbourhoods=neighbourhoods)
    expected = greedy_min_fill(adjacency, cards, first)
    assert (order, width) == expected[:2]
    assert log2_cluster == pytest.approx(expected[2])
    assert max((len(nb) for nb in neighbourhoods), default=0) == width


@st.composite
def large_clusters(draw):
    """Factors over 13 to 15 variables (clusters above contraction.SMALL_CLUSTER), with the variables to keep:
    half of them buckets (one variable in every factor, the only one summed), which contract plans itself,
    the others sums of several variables, which go to numpy's path."""
    n = draw(st.integers(13, 15))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    cards = rng.integers(2, 4, size=n) if draw(st.booleans()) else np.full(n, 2)
    order = [int(v) for v in rng.permutation(n)]
    scopes = [tuple(order[k:k + 4]) for k in range(0, n, 4)]  # every variable in some factor
    scopes += [tuple(int(v) for v in rng.permutation(n)[:draw(st.integers(1, 5))]) for _ in range(draw(st.integers(1, 8)))]
    if draw(st.booleans()):  # a bucket: one variable in every factor, summed out, the others kept
        eliminated = order[0]
        scopes = [scope if eliminated in scope else (eliminated,) + scope for scope in scopes]
        out = tuple(int(v) for v in rng.permutation(n) if v != eliminated)
    else:
        out = tuple(int(v) for v in rng.permutation(n)[:draw(st.integers(0, 8))])
    factors = [contraction.Factor(scope, rng.random([int(cards[v]) for v in scope]) + 0.1) for scope in scopes]
    return factors, out


@settings(max_examples=60, deadline=None)
@given(large_clusters(), st.sampled_from([contraction.DEFAULT_MAX_TABLE_SIZE, 64]))
def test_contract_of_large_clusters_equals_one_einsum(case, max_size):
    """The pairwise plan (and numpy's greedy path, under a small max_size or for several summed variables)
    gives the plain sum of products over out_vars in their order."""
    factors, out = case
    assert contraction._cluster_size(factors) > contraction.SMALL_CLUSTER
    label = {v: k for k, v in enumerate(sorted({v for f in factors for v in f.vars}))}
    operands = [x for f in factors for x in (f.values, [label[v] for v in f.vars])]
    expected = np.einsum(*operands, [label[v] for v in out])
    result = contraction.contract(factors, out, max_size)
    assert result.vars == out
    assert np.allclose(result.values * 10.0 ** result.log10_scale, expected, rtol=1e-10, atol=0)


@settings(max_examples=30, deadline=None)
@given(small_models())
def test_model_text_round_trip_and_batched_likelihood(case):
    model, _ = case
    again = files.parse_model(files.format_model(model))
    assert again.scopes == model.scopes
    assert all(np.array_equal(a, b) for a, b in zip(again.tables, model.tables))
    states = np.array(list(itertools.product(*[range(c) for c in model.cards])))
    batch = log10_likelihood(model, states)
    assert np.array_equal(batch, [log10_likelihood(model, s) for s in states])
