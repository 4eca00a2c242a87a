"""codascore leaderboard's statistics and resampling, on tiny synthetic boards (tests/leaderboard_boards.py):
the properties of issue 26 (identical teams share the win, a team better on every unit always wins, the 95%
score intervals cover a known truth about 95% of the time), the paired bootstrap's design (strata sizes,
two-level draws with relabelled clusters), Holm's correction and the Wilcoxon pairs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from codascore.board import Design
from codascore.leaderboard import analyse
from codascore.leaderboard.resample import Resampler
from codascore.leaderboard.statistics import bootstrap, holm, ranking, ranks, wilcoxon_pairs

from leaderboard_boards import MeanBoard, MeanOnlyBoard, evidence_of


@settings(max_examples=15, deadline=None)
@given(k=st.integers(2, 6), n=st.integers(3, 25), seed=st.integers(0, 2**16))
def test_identical_teams_share_the_win(k, n, seed):
    values = np.tile(np.random.default_rng(seed).normal(size=n), (k, 1))
    analysis = analyse(MeanBoard(), evidence_of(values), replicates=60, seed=seed)
    official = analysis.rankings["mean"]
    assert np.allclose(official.p_win, 1 / k)
    assert np.all(official.rank == 1) and np.all(official.rank_high == 1)
    off_diagonal = official.beats[~np.eye(k, dtype=bool)]
    assert np.allclose(off_diagonal, 0.5)
    assert np.all(official.tied_with_winner)


@settings(max_examples=15, deadline=None)
@given(k=st.integers(2, 6), n=st.integers(2, 25), seed=st.integers(0, 2**16), best=st.integers(0, 5),
       higher=st.booleans())
def test_a_team_better_on_every_unit_always_wins(k, n, seed, best, higher):
    rng = np.random.default_rng(seed)
    values = rng.normal(size=(k, n))
    best %= k
    others = np.delete(values, best, axis=0)
    values[best] = (others.max(axis=0) + rng.uniform(0.01, 1, n)) if higher else (others.min(axis=0) - rng.uniform(0.01, 1, n))
    analysis = analyse(MeanBoard(higher_is_better=higher), evidence_of(values), replicates=80, seed=seed)
    official = analysis.rankings["mean"]
    assert (official.rank_low[best], official.rank_high[best]) == (1, 1)
    assert official.p_win[best] == 1.0
    assert official.tied_with_winner.sum() >= 1 and official.tied_with_winner[best]
    assert np.all(official.beats[best, np.arange(k) != best] == 1.0)


def test_score_intervals_cover_a_known_truth_about_95_percent_of_the_time():
    """200 simulated leaderboards of 3 teams whose per-unit values are drawn around a known mean: the share
    of the 600 intervals holding the truth."""
    rng = np.random.default_rng(2026)
    truth = np.array([0.0, 0.3, 1.0])
    board, covered, total = MeanOnlyBoard(), 0, 0
    for _ in range(200):
        values = truth[:, None] + rng.normal(size=(3, 80)) * np.array([[1.0], [2.0], [0.5]])
        drawn = bootstrap(board, evidence_of(values), replicates=300, seed=int(rng.integers(2**31)))
        result = ranking(drawn.full["mean"], drawn.drawn["mean"], True)
        covered += int(np.sum((result.ci_low <= truth) & (truth <= result.ci_high)))
        total += len(truth)
    assert 0.92 <= covered / total <= 0.98, covered / total


def test_the_intervals_are_scipys_percentile_bootstrap_on_a_plain_design():
    """Without strata or clusters the paired bootstrap of one team's mean is scipy.stats.bootstrap's
    percentile interval, up to Monte Carlo error."""
    rng = np.random.default_rng(5)
    values = rng.exponential(size=(1, 60))
    drawn = bootstrap(MeanBoard(), evidence_of(values), replicates=4000, seed=1)
    ours = ranking(drawn.full["mean"], drawn.drawn["mean"], True)
    theirs = scipy.stats.bootstrap((values[0],), np.mean, n_resamples=4000, method="percentile",
                                   random_state=np.random.default_rng(2)).confidence_interval
    assert ours.ci_low[0] == pytest.approx(theirs.low, abs=0.04)
    assert ours.ci_high[0] == pytest.approx(theirs.high, abs=0.04)


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(1, 9), min_size=1, max_size=5), seed=st.integers(0, 2**16))
def test_the_resampler_keeps_every_stratum_size(sizes, seed):
    strata = np.repeat([f"s{i}" for i in range(len(sizes))], sizes)
    units = pd.DataFrame({"unit": [f"u{j}" for j in range(len(strata))], "family": strata})
    resampler = Resampler(units, Design(strata=("family",)))
    rng = np.random.default_rng(seed)
    for _ in range(5):
        index, table = resampler.draw(rng)
        assert table is None
        assert sorted(units["family"].iloc[index]) == sorted(strata)  # each stratum's size, its own units


@settings(max_examples=25, deadline=None)
@given(clusters=st.lists(st.integers(1, 6), min_size=1, max_size=6), seed=st.integers(0, 2**16))
def test_the_two_level_resampler_draws_clusters_then_units_and_relabels_copies(clusters, seed):
    datasets = np.repeat([f"d{i}" for i in range(len(clusters))], clusters)
    units = pd.DataFrame({"unit": [f"{d}/{r}" for d, r in zip(datasets, range(len(datasets)))], "dataset": datasets})
    resampler = Resampler(units, Design(cluster="dataset"))
    rng = np.random.default_rng(seed)
    for _ in range(5):
        index, table = resampler.draw(rng)
        assert table["dataset"].nunique() == len(clusters)  # as many clusters as the data has, copies apart
        for label, group in table.groupby("dataset"):
            origin = group["dataset_origin"].iloc[0]
            assert (group["dataset_origin"] == origin).all()
            assert label == origin or label.startswith(f"{origin}#")
            assert len(group) == clusters[int(origin[1:])]  # a drawn cluster keeps its size
            assert set(units["dataset"].iloc[index[group.index]]) == {origin}  # its units are its own
        copies = table.drop_duplicates("dataset")["dataset_origin"].value_counts()
        assert all(f"{o}#{copies[o]}" in set(table["dataset"]) for o in copies.index if copies[o] > 1)


def test_a_cluster_drawn_twice_counts_twice_in_a_per_cluster_score():
    units = pd.DataFrame({"unit": ["a/0", "a/1", "b/0", "b/1"], "dataset": ["a", "a", "b", "b"]})
    values = np.array([[1.0, 1.0, 10.0, 10.0]])
    resampler = Resampler(units, Design(cluster="dataset"))
    rng = np.random.default_rng(0)
    board = MeanBoard(design=Design(cluster="dataset"))
    for _ in range(20):
        index, table = resampler.draw(rng)
        score = board.scores(evidence_of(values, units).take(index, table), "mean")[0]
        origins = table.drop_duplicates("dataset")["dataset_origin"]
        assert score == pytest.approx(np.mean([1.0 if o == "a" else 10.0 for o in origins]))


def test_the_same_seed_draws_the_same_replicates_and_another_seed_others():
    values = np.random.default_rng(3).normal(size=(4, 30))
    first, again = (bootstrap(MeanBoard(), evidence_of(values), 50, seed=11) for _ in range(2))
    other = bootstrap(MeanBoard(), evidence_of(values), 50, seed=12)
    assert np.array_equal(first.drawn["mean"], again.drawn["mean"])
    assert not np.array_equal(first.drawn["mean"], other.drawn["mean"])


@given(p=st.lists(st.floats(0, 1), min_size=1, max_size=12))
def test_holm_matches_its_step_down_definition(p):
    p = np.array(p)
    m, order = len(p), np.argsort(p, kind="stable")
    expected = np.empty(m)
    running = 0.0
    for i, j in enumerate(order):  # the definition, one step at a time
        running = max(running, min(1.0, (m - i) * p[j]))
        expected[j] = running
    assert np.allclose(holm(p), expected)
    assert np.all(holm(p) >= p)


def test_wilcoxon_pairs_use_the_units_both_teams_have():
    rng = np.random.default_rng(9)
    values = rng.normal(size=(3, 40))
    values[1] += 1.5
    values[2, :5] = np.nan
    tests = wilcoxon_pairs(values)
    assert tests.pairs == [(0, 1), (0, 2), (1, 2)]
    assert list(tests.units) == [40, 35, 35]
    expected = scipy.stats.wilcoxon(values[1, 5:], values[2, 5:])
    assert tests.p[2] == pytest.approx(expected.pvalue) and tests.statistic[2] == expected.statistic
    assert tests.significant()[0] and tests.significant()[2]
    identical = wilcoxon_pairs(np.ones((2, 5)))
    assert (identical.statistic[0], identical.p[0], identical.p_holm[0]) == (0.0, 1.0, 1.0)


def test_kendall_tau_is_one_when_no_replicate_reorders_the_teams():
    values = np.arange(4)[:, None] * 10.0 + np.random.default_rng(0).normal(scale=0.01, size=(4, 20))
    assert np.all(analyse(MeanBoard(), evidence_of(values), 50).kendall_tau == 1.0)
    close = np.random.default_rng(1).normal(size=(4, 20))
    assert np.nanmin(analyse(MeanBoard(), evidence_of(close), 200).kendall_tau) < 1.0


def test_every_rule_is_rerun_on_every_replicate():
    values = np.random.default_rng(4).normal(size=(3, 15))
    analysis = analyse(MeanBoard(), evidence_of(values), 40)
    assert list(analysis.rankings) == ["mean", "median"]
    assert np.allclose(analysis.replicates.full["median"], np.median(values, axis=1))
    assert analysis.replicates.drawn["median"].shape == (40, 3)


@given(scores=st.lists(st.lists(st.integers(0, 4), min_size=4, max_size=4), min_size=1, max_size=20),
       higher=st.booleans())
def test_ranks_are_rankdatas_min_ranks(scores, higher):
    scores = np.array(scores, dtype=float)
    expected = scipy.stats.rankdata(-scores if higher else scores, method="min", axis=1)
    assert np.array_equal(ranks(scores, higher), expected)


@settings(max_examples=20, deadline=None)
@given(layout=st.lists(st.lists(st.integers(1, 4), min_size=1, max_size=4), min_size=1, max_size=3),
       seed=st.integers(0, 2**16))
def test_strata_and_clusters_together_keep_each_stratums_clusters_and_units(layout, seed):
    """layout[s][c]: the units of cluster c of stratum s; a cluster's name is shared across strata."""
    rows = [{"unit": f"s{s}/c{c}/{u}", "stratum": f"s{s}", "dataset": f"c{c}"}
            for s, sizes in enumerate(layout) for c, size in enumerate(sizes) for u in range(size)]
    units = pd.DataFrame(rows)
    resampler = Resampler(units, Design(strata=("stratum",), cluster="dataset"))
    index, table = resampler.draw(np.random.default_rng(seed))
    assert list(table.columns) == ["unit", "stratum", "dataset", "dataset_origin"]
    assert (table["stratum"].to_numpy() == units["stratum"].to_numpy()[index]).all()
    for s, sizes in enumerate(layout):
        mine = table[table["stratum"] == f"s{s}"]
        assert mine["dataset"].nunique() == len(sizes)
        assert sorted(mine.groupby("dataset").size()) == sorted(
            sizes[int(o[1:])] for o in mine.drop_duplicates("dataset")["dataset_origin"])


def test_a_board_giving_nan_is_a_bug_named_by_its_rule():
    class Broken(MeanOnlyBoard):
        def scores(self, evidence, rule):
            return np.full(len(evidence.teams), np.nan)

    with pytest.raises(RuntimeError, match="rule 'mean'"):
        analyse(Broken(), evidence_of(np.ones((2, 3))), 5)


def test_infinite_values_are_the_most_extreme_and_equal_infinities_do_not_differ():
    """weak lensing's per-map score of a non-finite answer is −inf: an infinite difference ranks as the
    largest, two −inf differ by nothing (scipy would return NaN on either)."""
    finite = np.array([[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.5, 1.0, 4.0, 3.0, 4.5, 5.0, 6.0]])
    infinite = finite.copy()
    infinite[1, 0], infinite[0, 6], infinite[1, 6] = -np.inf, -np.inf, -np.inf
    tests = wilcoxon_pairs(infinite)
    expected = scipy.stats.wilcoxon(np.array([1e3, 1.0, -1.0, 1.0, 0.5, 1.0, 0.0]))  # the infinity as the largest
    assert tests.units[0] == 7 and (tests.statistic[0], tests.p[0]) == (expected.statistic, expected.pvalue)
    assert np.isfinite(wilcoxon_pairs(finite).p).all()


@pytest.mark.parametrize("units, crude", [(9, True), (10, False)])
def test_a_board_with_few_units_says_its_intervals_are_crude(tmp_path, units, crude):
    from codascore.leaderboard.outputs import write_outputs

    clustered = pd.DataFrame({"unit": [f"c{c}/{r}" for c in range(units) for r in range(3)],
                              "cluster": [f"c{c}" for c in range(units) for _ in range(3)]})
    values = np.random.default_rng(units).normal(size=(3, 3 * units))
    analysis = analyse(MeanBoard(Design(cluster="cluster")), evidence_of(values, clustered), 30)
    assert (analysis.resampled_units, analysis.crude) == (units, crude)
    write_outputs(analysis, tmp_path)
    rows = (tmp_path / "ranking.csv").read_text().splitlines()
    header = rows[0].split(",")
    assert {row.split(",")[header.index("crude_intervals")] for row in rows[1:]} == {"true" if crude else "false"}
    assert ("crude intervals: each replicate draws only" in (tmp_path / "leaderboard.html").read_text()) == crude
