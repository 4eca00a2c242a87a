"""UAI benchmarks: parsing and likelihood on the largest shared instance, then exact PR and MAR on the
UAI-2014 instances of min-fill width <= 20, side by side with pgmpy's VariableElimination on ten of them.

pgmpy is a benchmark-only extra, never a runtime dependency:  .venv/bin/pip install pgmpy
(without it the pgmpy columns read "n/a"). Needs ../shared/uai2014 beside the repository.

pgmpy columns: "pgmpy PR" is one VariableElimination.query of one variable with the evidence and pgmpy's
own MinFill ordering (the elimination work of log Z; pgmpy returns the normalised result); "(our ord)"
is the same query given our min-fill order, compared with our elimination alone ("PR x ord": both
skip ordering and evidence reduction); "pgmpy MAR" is one such query per
unobserved variable with our order, timed on 12 variables and scaled (marked "~"). Our times include
our ordering.
"""

from __future__ import annotations

import math
import os
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import median_time  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("CODASCORE_SHARED", REPO.parent / "shared")) / "uai2014"
OWN_ORDER_LIMIT = 60.0  # seconds for pgmpy with its own ordering (it can run for many minutes)
PGMPY_INSTANCES = ["Grids_12", "CSP_12", "Promedus_24", "Promedus_26", "Promedus_29", "Promedus_30",
                   "Promedus_33", "Promedus_15", "Promedus_22", "Segmentation_11"]


def pgmpy_model(model, evidence):
    from pgmpy.factors.discrete import DiscreteFactor
    try:
        from pgmpy.models import DiscreteMarkovNetwork as MarkovNetwork
    except ImportError:  # pgmpy < 1.0
        from pgmpy.models import MarkovNetwork

    net = MarkovNetwork()
    net.add_nodes_from([f"x{v}" for v in range(model.n_vars)])
    for scope, table in zip(model.scopes, model.tables):
        if not scope:
            continue
        names = [f"x{v}" for v in scope]
        net.add_edges_from([(a, b) for i, a in enumerate(names) for b in names[i + 1:]])
        net.add_factors(DiscreteFactor(names, [int(model.cards[v]) for v in scope], table.ravel()))
    return net, {f"x{v}": int(x) for v, x in evidence.items()}


def pgmpy_times(model, evidence, order, sample=12):
    """pgmpy seconds for one query with its own MinFill ordering (its default use; the work of log Z), the
    same query given our min-fill order (inference alone), and all marginals: one query per unobserved
    variable with our order (a joint=False query over every variable would build the full joint), timed
    on ``sample`` variables and scaled to all of them."""
    from pgmpy.inference import VariableElimination

    net, ev = pgmpy_model(model, evidence)
    infer = VariableElimination(net)
    names = [f"x{v}" for v in order]

    def query(name, own_order=False):
        elimination = "MinFill" if own_order else [u for u in names if u != name]
        return infer.query([name], evidence=ev, elimination_order=elimination, show_progress=False)

    from codascore.sandbox import ParticipantCodeError, TimeLimitExceeded, call_with_time_limit

    try:  # pgmpy's own MinFill order can need tables of 100+ GiB (CSP_12) or minutes (Grids_12)
        pr_own = call_with_time_limit(lambda: median_time(lambda: query(names[-1], own_order=True), repeat=1,
                                                          warmup=0), timeout=OWN_ORDER_LIMIT, label="pgmpy")
    except TimeLimitExceeded:
        pr_own = math.inf
    except ParticipantCodeError:  # MemoryError inside the child
        pr_own = None
    pr = median_time(lambda: query(names[-1]), repeat=1, warmup=0)
    picked = names[:: max(1, len(names) // sample)][:sample]
    per_variable = median_time(lambda: [query(name) for name in picked], repeat=1, warmup=0) / len(picked)
    return pr_own, pr, per_variable * len(names)


def main() -> None:
    sys.path.insert(0, str(REPO))
    from codascore.uai import engine, formats, log10_likelihood

    if not CORPUS.is_dir():
        print(f"shared corpus not found ({CORPUS.name}); nothing to benchmark")
        return
    try:
        import pgmpy  # noqa: F401
        have_pgmpy = True
    except ImportError:
        have_pgmpy = False
        print("pgmpy not installed (.venv/bin/pip install pgmpy): pgmpy columns are n/a")

    largest = max(CORPUS.glob("*/*.uai"), key=lambda p: p.stat().st_size)
    parse = median_time(lambda: formats.read_model(largest), repeat=3, warmup=0)
    model = formats.read_model(largest)
    batch = np.random.default_rng(0).integers(0, model.cards, size=(100, model.n_vars))
    like = median_time(lambda: log10_likelihood(model, batch[0]), repeat=5, warmup=0)
    like_batch = median_time(lambda: log10_likelihood(model, batch), repeat=5, warmup=0)
    print(f"{'largest instance':<28}{largest.name} ({largest.stat().st_size / 1e6:.2f} MB, "
          f"{model.n_vars} variables, {model.n_factors} factors)")
    print(f"{'parse .uai':<28}{parse:10.4f} s")
    print(f"{'log10_likelihood x1':<28}{like:10.6f} s")
    print(f"{'log10_likelihood x100':<28}{like_batch:10.6f} s")
    print()
    header = (f"{'instance':<20}{'w':>3}{'PR s':>8}{'MAR s':>8}{'pgmpy PR':>10}{'(our ord)':>10}"
              f"{'pgmpy MAR':>11}{'PR x':>7}{'PR x ord':>9}{'MAR x':>8}")
    print(header)
    print("-" * len(header))
    ratios: dict[str, list[float]] = {"PR": [], "PR same order": [], "MAR": []}
    ours_total = 0.0
    pgmpy_failed: list[str] = []
    names = sorted({p.name[:-4] for p in (CORPUS / "MAR").glob("*.uai")} | {p.name[:-4] for p in (CORPUS / "PR").glob("*.uai")},
                   key=lambda n: (n not in PGMPY_INSTANCES, n))  # the pgmpy comparisons first
    for name in names:
        folder = "MAR" if (CORPUS / "MAR" / f"{name}.uai").exists() else "PR"
        m = formats.read_model(CORPUS / folder / f"{name}.uai")
        ev = formats.read_evidence(CORPUS / folder / f"{name}.uai.evid", m)
        try:
            width = engine.induced_width(m, ev, max_width=20)
        except engine.WidthExceeded:
            continue
        pr = median_time(lambda: engine.log10_partition(m, ev), repeat=1, warmup=0)
        mar = median_time(lambda: engine.marginals(m, ev), repeat=1, warmup=0)
        ours_total += pr + mar
        cells = ["n/a"] * 6
        if have_pgmpy and name in PGMPY_INSTANCES:
            factors, _ = engine.reduce_evidence(m, ev)
            free = [v for v in range(m.n_vars) if v not in ev]
            order = engine.min_fill_order(engine.interaction_graph(factors, free), m.cards)[0]
            p_own, p_pr, p_mar = pgmpy_times(m, ev, order)
            # Same order for both: our elimination alone (evidence reduction and ordering excluded).
            factors, _, plan_order = engine._plan(m, ev)
            elim = median_time(lambda: engine._eliminate(m, factors, plan_order, lambda v: "sum",
                                                         engine.DEFAULT_MAX_TABLE_SIZE), repeat=3, warmup=0)
            if p_own is not None and math.isfinite(p_own):
                ratios["PR"].append(p_own / pr)
            else:
                pgmpy_failed.append(f"{name} ({'out of memory' if p_own is None else f'> {OWN_ORDER_LIMIT:.0f} s'})")
            ratios["PR same order"].append(p_pr / elim)
            ratios["MAR"].append(p_mar / mar)
            own = "OOM" if p_own is None else f">{OWN_ORDER_LIMIT:.0f}" if p_own == math.inf else f"{p_own:.3f}"
            own_ratio = "-" if p_own is None else f">{OWN_ORDER_LIMIT / pr:.0f}x" if p_own == math.inf \
                else f"{p_own / pr:.0f}x"
            cells = [own, f"{p_pr:.3f}", f"~{p_mar:.2f}", own_ratio, f"{p_pr / elim:.1f}x", f"{p_mar / mar:.0f}x"]
        print(f"{name:<20}{width:>3}{pr:8.3f}{mar:8.3f}{cells[0]:>10}{cells[1]:>10}{cells[2]:>11}{cells[3]:>7}"
              f"{cells[4]:>9}{cells[5]:>8}", flush=True)
    print(f"\nexact PR + MAR on all width <= 20 instances: {ours_total:.1f} s")
    if pgmpy_failed:
        print(f"pgmpy with its own MinFill order did not finish on {len(pgmpy_failed)} of the ten: "
              + ", ".join(pgmpy_failed))
    for key, values in ratios.items():
        if values:
            print(f"pgmpy / codascore, {key}, {len(values)} instances: median {statistics.median(values):.1f}x, "
                  f"min {min(values):.1f}x (target >= 10x)")


if __name__ == "__main__":
    main()
