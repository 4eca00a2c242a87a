"""The statistics of a leaderboard, from the official rule's (and each alternative rule's) scores on the
full evidence and on every paired bootstrap replicate (docs/leaderboard.md#the-statistics).

Ranks are scipy.stats.rankdata's with ties ``min`` (equal scores share the better rank), rank 1 the best.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from typing import Callable

import numpy as np
import pandas as pd
import scipy.stats

from ..board import Board, Design, Evidence
from .resample import Resampler

#: The level of every interval, and of the "cannot be told apart" and significance decisions.
LEVEL = 0.95
ALPHA = 1 - LEVEL
#: Fewer independent draws than this and the intervals are crude (docs/leaderboard.md#few-units): with n
#: draws a replicate is one of at most C(2n - 1, n) multisets (10 for n = 3), and the bootstrap's variance
#: of a mean is (n - 1)/n of the usual estimate, so its percentile intervals are too narrow.
FEW_UNITS = 10


@dataclasses.dataclass
class Replicates:
    """rule -> scores on the full evidence (teams,) and on each replicate (replicates, teams)."""

    full: dict[str, np.ndarray]
    drawn: dict[str, np.ndarray]
    seed: int
    count: int


def rules_of(board: Board, evidence: Evidence) -> list[str]:
    """The rules the board ranks this evidence by, the official one first ("score" when it names none)."""
    return board.rules_for(evidence) or ["score"]


def bootstrap(board: Board, evidence: Evidence, replicates: int, seed: int,
              progress: Callable[[str], None] | None = None) -> Replicates:
    """Board.scores for every rule on the full evidence and on ``replicates`` paired bootstrap replicates
    of the board's design, drawn by ``numpy.random.default_rng(seed)``."""
    rules = rules_of(board, evidence)
    full = {rule: scores_of(board, evidence, rule) for rule in rules}
    drawn = {rule: np.empty((replicates, len(evidence.teams))) for rule in rules}
    rng = np.random.default_rng(seed)
    resampler = Resampler(evidence.units, board.design)
    started = last = time.monotonic()
    for r in range(replicates):
        index, units = resampler.draw(rng)
        replicate = evidence.take(index, units)
        for rule in rules:
            drawn[rule][r] = scores_of(board, replicate, rule)
        if progress and (time.monotonic() - last > 2 or r + 1 == replicates):
            last = time.monotonic()
            progress(f"replicates {r + 1}/{replicates} ({last - started:.1f} s)")
    return Replicates(full, drawn, seed, replicates)


def scores_of(board: Board, evidence: Evidence, rule: str) -> np.ndarray:
    """Board.scores, held to its contract: one score per team, never NaN (a NaN would rank first)."""
    scores = np.asarray(board.scores(evidence, rule), dtype=float)
    if scores.shape != (len(evidence.teams),) or np.isnan(scores).any():
        raise RuntimeError(f"{evidence.task}: the board's rule {rule!r} gave {scores.shape} scores with NaN at "
                           f"{np.flatnonzero(np.isnan(scores)).tolist()[:5]} for {len(evidence.teams)} teams")
    return scores


def ranks(scores: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """Ranks along the last axis, 1 the best, ties 'min': scipy.stats.rankdata(method='min')'s definition,
    1 + the number of teams with a strictly better score, counted for all replicates at once (scipy 1.11's
    rankdata with an axis loops in Python over the rows: 1,000 replicates cost it a second)."""
    oriented = -scores if higher_is_better else scores
    return 1 + (oriented[..., None, :] < oriented[..., :, None]).sum(axis=-1)


@dataclasses.dataclass
class Ranking:
    """Per team (aligned with Evidence.teams), for one rule."""

    score: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    rank: np.ndarray
    rank_low: np.ndarray
    rank_high: np.ndarray
    median_rank: np.ndarray
    p_win: np.ndarray
    p_top3: np.ndarray
    rank_counts: np.ndarray  # (teams, ranks 1..k): replicates with each rank
    beats: np.ndarray  # (teams, teams): P(row beats column)
    tied_with_winner: np.ndarray


def ranking(full: np.ndarray, drawn: np.ndarray, higher_is_better: bool) -> Ranking:
    """Every statistic of one rule.

    - score interval: the 2.5% and 97.5% percentiles of the replicates' scores (the percentile bootstrap,
      as scipy.stats.bootstrap(method='percentile') computes it: numpy's linear percentile);
    - rank interval: the 2.5% (lower) and 97.5% (higher) order statistics of the replicates' ranks;
    - P(win): the share of replicates ranking the team first, a first place shared by m tied teams
      counting 1/m each (so that k identical teams get 1/k); P(top 3): rank <= 3;
    - P(A beats B): the share of replicates where A's score is better, a tie counting 1/2;
    - tied with the winner: a winner (rank 1 on the full data), or a team with P(team beats a winner) >=
      5%: the bootstrap does not show, one-sided at 5%, that the winner is better.
    """
    k = len(full)
    full_rank, drawn_ranks = ranks(full, higher_is_better), ranks(drawn, higher_is_better)
    firsts = drawn_ranks == 1
    sign = 1.0 if higher_is_better else -1.0
    difference = sign * (drawn[:, :, None] - drawn[:, None, :])
    beats = (difference > 0).mean(axis=0) + 0.5 * (difference == 0).mean(axis=0)
    np.fill_diagonal(beats, np.nan)
    winners = np.flatnonzero(full_rank == 1)
    tied = (full_rank == 1) | (np.nanmax(beats[:, winners], axis=1, initial=0.0) >= ALPHA)
    counts = np.stack([(drawn_ranks == r).sum(axis=0) for r in range(1, k + 1)], axis=1)
    return Ranking(
        score=full, ci_low=np.quantile(drawn, ALPHA / 2, axis=0), ci_high=np.quantile(drawn, 1 - ALPHA / 2, axis=0),
        rank=full_rank, rank_low=np.quantile(drawn_ranks, ALPHA / 2, axis=0, method="lower").astype(int),
        rank_high=np.quantile(drawn_ranks, 1 - ALPHA / 2, axis=0, method="higher").astype(int),
        median_rank=np.median(drawn_ranks, axis=0),
        p_win=(firsts / firsts.sum(axis=1, keepdims=True)).mean(axis=0), p_top3=(drawn_ranks <= 3).mean(axis=0),
        rank_counts=counts, beats=beats, tied_with_winner=tied)


def team_order(analysis) -> list[int]:
    """The teams (indices into Evidence.teams) by official rank, then by name: the order of every output."""
    official = analysis.rankings[analysis.official]
    return sorted(range(len(analysis.evidence.teams)), key=lambda t: (official.rank[t], analysis.evidence.teams[t]))


def kendall_taus(full_rank: np.ndarray, drawn_ranks: np.ndarray) -> np.ndarray:
    """Kendall's tau-b (scipy.stats.kendalltau) between the full ranking and each replicate's; NaN where
    either ranking is constant (every team tied)."""
    taus = np.full(len(drawn_ranks), np.nan)
    if len(full_rank) < 2 or np.all(full_rank == full_rank[0]):
        return taus
    for r, replicate in enumerate(drawn_ranks):
        if not np.all(replicate == replicate[0]):
            taus[r] = scipy.stats.kendalltau(full_rank, replicate).statistic
    return taus


@dataclasses.dataclass
class Pairwise:
    """The Wilcoxon signed-rank test of every pair (i < j) of teams on the per-unit quantity the official
    rule aggregates (Board.paired_values), with Holm's correction over all pairs."""

    pairs: list[tuple[int, int]]
    statistic: np.ndarray
    p: np.ndarray
    p_holm: np.ndarray
    units: np.ndarray  # the paired units each test used

    def significant(self) -> np.ndarray:
        return self.p_holm < ALPHA


def wilcoxon_pairs(values: np.ndarray) -> Pairwise:
    """scipy.stats.wilcoxon (two-sided, zero differences dropped: 'wilcox') of the differences on the units
    both teams have (neither NaN); a pair with no nonzero difference gets statistic 0 and p 1.

    An infinite value (weak lensing's per-map score of a non-finite answer) is the most extreme: equal
    infinities differ by 0, and an infinite difference takes the largest |difference| (scipy returns NaN
    on infinities; the signed-rank test reads only the order of the |differences|)."""
    k = values.shape[0]
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    statistic, p, used = np.zeros(len(pairs)), np.ones(len(pairs)), np.zeros(len(pairs), dtype=int)
    for n, (i, j) in enumerate(pairs):
        both = ~np.isnan(values[i]) & ~np.isnan(values[j])
        used[n] = both.sum()
        difference = differences(values[i][both], values[j][both])
        if np.any(difference != 0):
            with warnings.catch_warnings():  # a few units: scipy warns that its normal approximation is rough
                warnings.simplefilter("ignore", UserWarning)
                result = scipy.stats.wilcoxon(difference)
            statistic[n], p[n] = result.statistic, result.pvalue
    return Pairwise(pairs, statistic, p, holm(p), used)


def differences(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a - b, 0 where equal (infinities included), an infinite difference replaced by one larger in size
    than every finite one (the same sign): the signed ranks are those of the infinite differences."""
    with np.errstate(invalid="ignore"):
        difference = np.where(a == b, 0.0, a - b)
    infinite = ~np.isfinite(difference)
    if infinite.any():
        largest = np.max(np.abs(difference[~infinite]), initial=0.0)
        difference[infinite] = np.sign(difference[infinite]) * (2 * largest + 1)
    return difference


def resampled_units(units: pd.DataFrame, design: Design) -> int:
    """How many independent draws a replicate makes: the clusters of a two-level design (SRBench's datasets),
    else the units, summed over the strata."""
    if design.cluster:
        keys = [*design.strata, design.cluster]
        return int(units.drop_duplicates(keys).shape[0])
    return len(units)


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm 1979): the i-th smallest of m is multiplied by m - i + 1
    (i from 1), made non-decreasing in that order, and capped at 1."""
    m = len(p)
    if m == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    adjusted = np.minimum(1.0, np.maximum.accumulate(p[order] * (m - np.arange(m))))
    out = np.empty(m)
    out[order] = adjusted
    return out
