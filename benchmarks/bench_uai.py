"""UAI benchmarks: parsing and likelihood on the largest shared instance, then exact PR and MAR on the
UAI-2014 instances of min-fill width <= 20, side by side with pgmpy's VariableElimination on ten of them.

pgmpy is a benchmark-only extra, never a runtime dependency:  .venv/bin/pip install pgmpy
(without it the pgmpy columns read "n/a"). Needs ../shared/uai2014 beside the repository.

pgmpy columns: "PR" is one VariableElimination.query of one variable with the evidence (the same
elimination work as log Z; pgmpy returns the normalised result); "MAR" is one such query per unobserved
variable, timed on 12 of them and scaled (marked "~"). pgmpy gets our min-fill order.
"""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import median_time  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("CODASCORE_SHARED", REPO.parent / "shared")) / "uai2014"
PGMPY_INSTANCES = ["Grids_12", "CSP_12", "Promedus_24", "Promedus_26", "Promedus_29", "Promedus_30",
                   "Promedus_33", "Promedus_15", "Promedus_22", "Segmentation_11"]


def pgmpy_model(model, evidence):
    from pgmpy.factors.discrete import DiscreteFactor
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
    """pgmpy seconds for (one query = the work of log Z, all marginals). pgmpy is given our min-fill order
    so that the comparison is about inference, not ordering heuristics. All marginals are one query per
    variable (a joint=False query over every variable would build the full joint); they are timed on
    ``sample`` variables and scaled to all unobserved variables."""
    from pgmpy.inference import VariableElimination

    net, ev = pgmpy_model(model, evidence)
    infer = VariableElimination(net)
    names = [f"x{v}" for v in order]

    def query(name):
        return infer.query([name], evidence=ev, elimination_order=[u for u in names if u != name],
                           show_progress=False)

    pr = median_time(lambda: query(names[-1]), repeat=1, warmup=0)
    picked = names[:: max(1, len(names) // sample)][:sample]
    per_variable = median_time(lambda: [query(name) for name in picked], repeat=1, warmup=0) / len(picked)
    return pr, per_variable * len(names)


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
    header = f"{'instance':<22}{'w':>3}{'PR s':>9}{'MAR s':>9}{'pgmpy PR s':>12}{'pgmpy MAR s':>13}{'ratio PR':>10}{'ratio MAR':>11}"
    print(header)
    print("-" * len(header))
    ratios_pr, ratios_mar, ours_total = [], [], 0.0
    names = sorted({p.name[:-4] for p in (CORPUS / "MAR").glob("*.uai")} | {p.name[:-4] for p in (CORPUS / "PR").glob("*.uai")})
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
        cells = ["n/a"] * 4
        if have_pgmpy and name in PGMPY_INSTANCES:
            factors, _ = engine.reduce_evidence(m, ev)
            free = [v for v in range(m.n_vars) if v not in ev]
            order = engine.min_fill_order(engine.interaction_graph(factors, free), m.cards)[0]
            ppr, pmar = pgmpy_times(m, ev, order)
            ratios_pr.append(ppr / pr)
            ratios_mar.append(pmar / mar)
            cells = [f"{ppr:.3f}", f"~{pmar:.2f}", f"{ppr / pr:.1f}x", f"{pmar / mar:.1f}x"]
        print(f"{name:<22}{width:>3}{pr:9.3f}{mar:9.3f}{cells[0]:>12}{cells[1]:>13}{cells[2]:>10}{cells[3]:>11}",
              flush=True)
    print(f"\nexact PR + MAR on all width <= 20 instances: {ours_total:.1f} s")
    if ratios_pr:
        print(f"pgmpy / codascore on {len(ratios_pr)} instances: PR median {statistics.median(ratios_pr):.1f}x "
              f"(min {min(ratios_pr):.1f}x), MAR median {statistics.median(ratios_mar):.1f}x "
              f"(min {min(ratios_mar):.1f}x); target >= 10x")


if __name__ == "__main__":
    main()
