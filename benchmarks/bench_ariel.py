"""Ariel 2023: posterior score of 1000 planets with M = N = 5000, batched KS against the official approach
(a loop calling scipy.stats.ks_2samp 7 times per planet), and the builtin forward model's throughput."""

from __future__ import annotations

import numpy as np
import scipy.stats
from common import median_time, print_table

from codascore.ariel import TASKS
from codascore.ariel.forward_model import BuiltinForwardModel
from codascore.ariel.files import Posteriors, planet_name
from codascore.ariel.metrics import PRIOR_BOUNDS, normalise, posterior_target_scores_batch, systematic_indices
from codascore.ariel.tasks import ArielReference, ArielSubmission

N_PLANETS = 1000
M = 5000
SEED = 0


def make_planets(rng):
    """Correlated Gaussian submissions and GT per planet, partly outside the prior (clipping ties)."""
    width = PRIOR_BOUNDS[:, 1] - PRIOR_BOUNDS[:, 0]
    traces, weights, gt_traces, gt_weights = [], [], [], []
    for _ in range(N_PLANETS):
        centre = PRIOR_BOUNDS[:, 0] + width * rng.uniform(0.05, 0.95, 7)
        scale = width * rng.uniform(0.01, 0.2, 7)
        gt_traces.append(centre + scale * rng.standard_normal((M, 7)))
        gw = rng.gamma(2.0, size=M)
        gt_weights.append(gw / gw.sum())
        traces.append(centre + scale * (0.3 + rng.standard_normal((M, 7))))
        weights.append(np.full(M, 1.0 / M))
    return traces, weights, gt_traces, gt_weights


def official_loop(traces, weights, gt_traces, gt_weights):
    """The official way: per planet, resample both sides, normalise, np.resize the GT column to M and
    call scipy's ks_2samp for each of the 7 targets."""
    state = np.random.RandomState(SEED)
    scores = np.empty((len(traces), 7))
    for p in range(len(traces)):
        sub = normalise(traces[p][systematic_indices(weights[p], state.random_sample())])
        gt = normalise(gt_traces[p][systematic_indices(gt_weights[p], state.random_sample())])
        for t in range(7):
            column = np.resize(gt[:, t], sub.shape[0])
            scores[p, t] = (1.0 - scipy.stats.ks_2samp(sub[:, t], column).statistic) * 1000.0
    return scores


def main() -> None:
    planets = make_planets(np.random.default_rng(1))
    loop_scores = official_loop(*planets)
    batch_scores = posterior_target_scores_batch(*planets, seed=SEED)
    identical = bool(np.array_equal(loop_scores, batch_scores))
    loop_time = median_time(lambda: official_loop(*planets), repeat=3, warmup=0)
    batch_time = median_time(lambda: posterior_target_scores_batch(*planets, seed=SEED), repeat=5)

    names = [planet_name(p) for p in range(N_PLANETS)]
    task = TASKS["ariel.retrieval"]
    reference = ArielReference(names, Posteriors(names, planets[2], planets[3]), None, [], None)
    submission = ArielSubmission(Posteriors(names, planets[0], planets[1]))
    task_time = median_time(lambda: task.score(reference, submission, task.load_config({})), repeat=3)

    model = BuiltinForwardModel()
    rng = np.random.default_rng(2)
    k = 100_000
    params = PRIOR_BOUNDS[:, 0] + (PRIOR_BOUNDS[:, 1] - PRIOR_BOUNDS[:, 0]) * rng.random((k, 7))
    fm_time = median_time(lambda: model.spectra(params, 7e8, 1.9e27), repeat=7)
    print_table([
        (f"posterior score, {N_PLANETS} planets, M=N={M}: 7x ks_2samp loop", f"{loop_time:.2f} s", "-"),
        ("posterior score, same, batched KS", f"{batch_time:.2f} s",
         f"{loop_time / batch_time:.1f}x faster (target 5x); scores identical: {identical}"),
        ("ariel.retrieval score(): both posterior scores, same data", f"{task_time:.2f} s", "-"),
        (f"builtin forward model, {k} spectra x 52 bins", f"{fm_time:.3f} s",
         f"{k / fm_time:,.0f} spectra/s (target 100,000)"),
    ], ("benchmark", "median", "ratio"))
    if not identical:
        raise SystemExit("batched and loop posterior scores differ")


if __name__ == "__main__":
    main()
