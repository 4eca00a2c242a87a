"""Weak lensing report pages: the figures the issue asks for, drawn from aggregates only."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from codascore.registry import get_task
from codascore.weak_lensing import metrics
from codascore.weak_lensing.report import (MIN_BIN_COUNT, _bin_edges_in_ranking, blocked_roc, phase1_report,
                                           phase2_report, roc_envelope)


def test_phase1_report_has_the_calibration_curve():
    rng = np.random.default_rng(0)
    truth = np.column_stack([rng.uniform(0.1, 0.6, 500), rng.uniform(0.68, 0.95, 500)])
    sigma = np.tile([0.04, 0.03], (500, 1))
    sections = phase1_report(truth, truth + sigma * rng.standard_normal((500, 2)), sigma)
    coverage = next(s for s in sections if s.title == "Coverage")
    assert "Calibration curve" in coverage.html and coverage.html.count("data:image/png;base64,") == 1


def test_phase2_report_has_roc_reliability_and_histograms():
    rng = np.random.default_rng(1)
    is_ood = (rng.uniform(size=600) < 0.3).astype(np.int8)
    p_ind = np.clip(rng.normal(0.75 - 0.5 * is_ood, 0.2), 0, 1)
    sections = phase2_report(is_ood, p_ind, 1 - p_ind, 1e-15, "1 - p_ind")
    titles = [s.title for s in sections]
    assert titles == ["Scores explained", "ROC curve", "Calibration of p_ind"]
    assert "1e-15" in sections[0].html
    # The ROC, then the reliability diagram and the class histograms side by side.
    assert [s.html.count("data:image/png;base64,") for s in sections] == [0, 1, 2]


def test_single_class_reference_has_no_roc_section():
    sections = phase2_report(np.zeros(50, dtype=np.int8), np.full(50, 0.9), np.full(50, 0.1), 1e-15,
                             "1 - p_ind")
    assert "ROC curve" not in [s.title for s in sections]


def test_a_constant_submission_is_told_its_ranking_is_one_block():
    is_ood = np.tile(np.array([0, 0, 1], dtype=np.int8), 100)
    roc = next(s for s in phase2_report(is_ood, np.full(300, 0.5), np.full(300, 0.5), 1e-15, "1 - p_ind")
               if s.title == "ROC curve")
    assert "the ranking is a single block" in roc.html and "0 cut(s)" not in roc.html


def _ranked_scores(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    is_ood = np.r_[0, 1, rng.integers(0, 2, n - 2)]
    return is_ood, rng.normal(is_ood, 1.0).round(1)  # ties included


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 300), st.integers(0, 2**32 - 1))
def test_each_roc_block_covers_k_maps_and_never_splits_a_tie(n, seed):
    is_ood, scores = _ranked_scores(seed, n)
    cuts, fpr, tpr = blocked_roc(is_ood, scores)
    ranked = np.sort(scores)[::-1]
    assert cuts[0] == 0 and cuts[-1] == n and (fpr[0], tpr[0], fpr[-1], tpr[-1]) == (0, 0, 1, 1)
    if n >= MIN_BIN_COUNT:
        assert np.all(np.diff(cuts) >= MIN_BIN_COUNT)
    assert all(ranked[c - 1] != ranked[c] for c in cuts[1:-1])
    # Each point is the class counts of the maps ranked above its cut.
    order = np.argsort(-scores, kind="stable")
    for c, f, t in zip(cuts, fpr, tpr):
        above = is_ood[order[:c]]
        assert np.isclose(t, above.sum() / is_ood.sum()) and np.isclose(f, (above == 0).sum() / (is_ood == 0).sum())


@settings(max_examples=100, deadline=None)
@given(st.integers(30, 300), st.integers(0, 2**32 - 1), st.data())
def test_one_maps_label_moves_the_roc_by_at_most_one_map(n, seed, data):
    """The privacy rule: the cuts do not depend on the labels, and flipping one map's label changes each
    point's counts by at most one map of each class."""
    is_ood, scores = _ranked_scores(seed, n)
    flipped = is_ood.copy()
    i = data.draw(st.integers(0, n - 1))
    flipped[i] = 1 - flipped[i]
    if flipped.min() == flipped.max():
        return
    cuts, fpr, tpr = blocked_roc(is_ood, scores)
    cuts2, fpr2, tpr2 = blocked_roc(flipped, scores)
    np.testing.assert_array_equal(cuts, cuts2)
    tp, tp2 = tpr * is_ood.sum(), tpr2 * flipped.sum()
    fp, fp2 = fpr * (n - is_ood.sum()), fpr2 * (n - flipped.sum())
    assert np.all(np.abs(tp - tp2) <= 1 + 1e-9) and np.all(np.abs(fp - fp2) <= 1 + 1e-9)


@settings(max_examples=100, deadline=None)
@given(st.integers(20, 400), st.integers(0, 2**32 - 1))
def test_the_roc_boxes_hold_the_official_curve_and_its_score(n, seed):
    """Honesty: at every FPR of the band, the official ROC (metrics.roc, numpy interp) lies between the
    boxes' edges, so tpr_low_fpr lies between the bounds the page prints."""
    is_ood, scores = _ranked_scores(seed, n)
    _, fpr, tpr = blocked_roc(is_ood, scores)
    grid = np.r_[np.logspace(-3, np.log10(0.05), 100), np.linspace(0, 1, 101)]
    lower, upper = roc_envelope(fpr, tpr, grid)
    official = np.interp(grid, *metrics.roc(is_ood, scores))
    assert np.all(lower <= official + 1e-12) and np.all(official <= upper + 1e-12)


@settings(max_examples=100, deadline=None)
@given(st.integers(30, 400), st.integers(0, 2**32 - 1), st.booleans())
def test_roc_cuts_keep_away_from_the_published_p_ind_bins(n, seed, reverse):
    """When the ROC ranks the maps in p_ind's order (1 - p_ind, or the reverse), the p_ind bins' counts are
    published too: no cut falls within k maps of a bin edge, so no difference of the two figures' counts
    isolates fewer than k maps."""
    rng = np.random.default_rng(seed)
    is_ood = np.r_[0, 1, rng.integers(0, 2, n - 2)]
    p_ind = np.clip(rng.normal(0.7 - 0.4 * is_ood, 0.25), 0, 1).round(2)
    counts = np.bincount(np.clip(np.digitize(p_ind, np.linspace(0, 1, 11)) - 1, 0, 9), minlength=10)
    scores = p_ind if reverse else 1 - p_ind
    edges = _bin_edges_in_ranking(p_ind, scores, counts)
    # The edges are where the bins end in the ranking: each bin is the run of maps between two edges.
    order = np.argsort(-scores, kind="stable")
    bins_in_ranking = np.clip(np.digitize(p_ind[order], np.linspace(0, 1, 11)) - 1, 0, 9)
    np.testing.assert_array_equal(np.unique(np.r_[edges, 0, n]),
                                  np.unique(np.r_[0, np.flatnonzero(np.diff(bins_in_ranking)) + 1, n]))
    cuts, _, _ = blocked_roc(is_ood, scores, avoid=edges)
    assert all(np.abs(edges - c).min() >= MIN_BIN_COUNT for c in cuts[1:-1])
    # Scores in another order than p_ind's publish no bin edge in the ranking.
    assert _bin_edges_in_ranking(p_ind, rng.permutation(n).astype(float), counts).size == 0


def test_roc_points_are_dense_in_the_band_when_the_data_allow():
    rng = np.random.default_rng(3)
    is_ood = np.r_[np.zeros(2000, dtype=np.int8), np.ones(1000, dtype=np.int8)]
    scores = rng.normal(2.0 * is_ood, 1.0)
    _, fpr, _ = blocked_roc(is_ood, scores)
    assert ((fpr >= 1e-3) & (fpr <= 0.05)).sum() >= 5
    # The page says so, with the interval the boxes allow and the score itself.
    section = next(s for s in phase2_report(is_ood, None, scores, 1e-15, "ood_scores", "deployed")
                   if s.title == "ROC curve")
    in_band = int(((fpr >= 1e-3) & (fpr <= 0.05)).sum())
    assert f"{in_band} of them inside the FPR band" in section.html
    assert f"{metrics.tpr_at_low_fpr(is_ood, scores):.4f}" in section.html


def _frozen_copy(value):
    """A deep copy of a dict of arrays (or None), to compare with after score() and report()."""
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in value.items()}


def _assert_unchanged(before: dict, after: dict) -> None:
    assert before.keys() == after.keys()
    for key, value in before.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(after[key], value)
        elif isinstance(value, tuple):
            for old, new in zip(value, after[key]):
                np.testing.assert_array_equal(new, old)
        else:
            assert after[key] == value


def test_score_and_report_change_nothing_they_are_given():
    """score() is pure (docs of codascore.task): the reference, the submission and the config come back as
    they went in, and the report is drawn from them and the Result alone."""
    rng = np.random.default_rng(2)
    truth = np.column_stack([rng.uniform(0.1, 0.6, 200), rng.uniform(0.68, 0.95, 200)])
    sigma = np.tile([0.04, 0.03], (200, 1))
    is_ood = (rng.uniform(size=200) < 0.3).astype(np.int8)
    p_ind = np.clip(rng.normal(0.75 - 0.5 * is_ood, 0.2), 0, 1)
    cases = {
        "weak_lensing.phase1": ({"truth": truth, "scaler": (np.array([0.3, 0.8]), np.array([0.15, 0.08]))},
                                {"means": truth + sigma * rng.standard_normal((200, 2)), "errorbars": sigma}),
        "weak_lensing.phase2": ({"is_ood": is_ood}, {"p_ind": p_ind, "ood_scores": None}),
    }
    for name, (reference, submission) in cases.items():
        task = get_task(name)
        config = task.load_config({})
        before = (_frozen_copy(reference), _frozen_copy(submission), dict(config))
        result = task.score(reference, submission, config)
        sections = task.report(result, reference, submission, config)
        assert sections and all(section.html for section in sections)
        _assert_unchanged(before[0], reference)
        _assert_unchanged(before[1], submission)
        assert config == before[2]
        assert not [key for key in result.details if key.startswith("_")]
        assert not [key for record in result.instances for key in record if key.startswith("_")]


def test_no_text_leaves_a_figure_and_no_tick_labels_overlap(monkeypatch):
    from codascore.weak_lensing import report as wl_report
    from figure_text import overlapping_tick_labels, record_figures, texts_outside

    figures = record_figures(monkeypatch, wl_report)
    rng = np.random.default_rng(4)
    truth = np.column_stack([rng.uniform(0.1, 0.6, 500), rng.uniform(0.68, 0.95, 500)])
    sigma = np.tile([0.04, 0.03], (500, 1))
    sections = phase1_report(truth, truth + sigma * rng.standard_normal((500, 2)), sigma)
    is_ood = (rng.uniform(size=600) < 0.3).astype(np.int8)
    p_ind = np.clip(rng.normal(0.75 - 0.5 * is_ood, 0.2), 0, 1)
    phase2_report(is_ood, p_ind, 1 - p_ind, 1e-15, "1 - p_ind")
    assert len(figures) == 2 + 2 + 1 + 3  # Phase 1: two per-parameter rows and the calibration; Phase 2
    for fig in figures:
        assert texts_outside(fig) == [] and overlapping_tick_labels(fig) == []
    # Phase 1's per-parameter figures sit side by side in a wrapping row, each narrow enough for 760 px.
    for section in sections[:2]:
        assert section.html.count("<div class='figures'>") == 1 and section.html.count("data:image/png") == 2
    assert all(fig.get_figwidth() * 90 <= 760 for fig in figures[:5])


def test_each_phase_explains_its_scores_for_its_ranking():
    for name, first in (("weak_lensing.phase2", "log_likelihood (this phase ranks by"),
                        ("weak_lensing.phase2_deployed", "tpr_low_fpr (this phase ranks as")):
        task = get_task(name)
        guide = task.score_guide(task.load_config({}))
        assert guide[0].formula.startswith(first)
        assert guide[2].range == "ln ε = -34.5388 to 0"
    phase1 = get_task("weak_lensing.phase1")
    guide = {g.key: g for g in phase1.score_guide(phase1.load_config({}))}
    assert guide["MSE"].better == "lower" and "λ = 1000" in guide["score"].formula
