"""Weak lensing Phase 2 metrics: the official TPR-at-low-FPR golden vectors and properties of the
seed's log-likelihood score."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from codascore.weak_lensing import ood_score, tpr_at_low_fpr

EPS = 1e-15


VECTORS = "weak_lensing_phase2_tpr.json"


def test_golden_file_holds_the_official_cases(repo_root):
    vectors = json.loads((repo_root / "tests" / "data" / VECTORS).read_text())
    assert len(vectors["cases"]) >= 8 and len(vectors["invalid_cases"]) >= 4
    assert "922c32c" in vectors["provenance"]["file"]


@pytest.mark.golden(VECTORS, "cases")
def test_golden_vectors_tpr_at_low_fpr(golden):
    case = golden
    value = tpr_at_low_fpr(np.array(case["is_ood"]), np.array(case["ood_scores"], dtype=np.float64))
    assert value == pytest.approx(case["tpr_score"], rel=1e-9, abs=0), case["name"]


@pytest.mark.golden(VECTORS, "invalid_cases")
def test_golden_single_class_gives_nan_and_non_finite_scores_raise(golden):
    case = golden
    scores = np.array([float(v) for v in case["ood_scores"]])
    if "official_score" in case:
        assert math.isnan(tpr_at_low_fpr(np.array(case["is_ood"]), scores)), case["name"]
    else:
        index = int(np.flatnonzero(~np.isfinite(scores))[0])
        with pytest.raises(ValueError, match=rf"ood_scores\[{index}\]"):
            tpr_at_low_fpr(np.array(case["is_ood"]), scores)


def test_tpr_anchors_from_the_docs():
    is_ood = np.r_[np.zeros(700), np.ones(300)]
    assert tpr_at_low_fpr(is_ood, is_ood * 2.0) == 1.0
    assert tpr_at_low_fpr(is_ood, -is_ood) == 0.0
    assert tpr_at_low_fpr(is_ood, np.zeros(1000)) == pytest.approx(0.012657, abs=1e-6)


def test_tpr_depends_only_on_the_order_of_scores():
    rng = np.random.default_rng(3)
    is_ood = rng.integers(0, 2, 500)
    scores = rng.normal(is_ood, 1.0)
    assert tpr_at_low_fpr(is_ood, scores) == tpr_at_low_fpr(is_ood, np.exp(scores) * 3 + 1)


def test_tpr_validates_arguments_by_name():
    with pytest.raises(ValueError, match=r"is_ood\[1\] = 2.0"):
        tpr_at_low_fpr([0, 2], [0.1, 0.2])
    with pytest.raises(ValueError, match="ood_scores has 3 values"):
        tpr_at_low_fpr([0, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="fpr_min"):
        tpr_at_low_fpr([0, 1], [0.1, 0.2], fpr_min=0.1, fpr_max=0.05)


def test_ood_score_anchors_from_the_docs():
    y = np.array([1, 0, 1, 1, 0])
    assert ood_score(y, y.astype(float)) == pytest.approx(-1e-15, abs=1e-15)
    assert ood_score(y, 1.0 - y) == pytest.approx(math.log(EPS), rel=1e-12)
    assert ood_score(y, np.full(5, 0.5)) == pytest.approx(math.log(0.5), rel=1e-15)
    pi = 0.6  # the best constant is the InD fraction, giving minus the entropy in nats
    assert ood_score(y, np.full(5, pi)) == pytest.approx(pi * math.log(pi) + (1 - pi) * math.log(1 - pi))


def test_ood_score_eps_is_configurable():
    assert ood_score([1], [0.0], eps=1e-6) == pytest.approx(math.log(1e-6))


@pytest.mark.parametrize("p, message", [
    ([0.2, 1.5], r"p_ind\[1\] = 1.5"),
    ([-0.1, 0.5], r"p_ind\[0\] = -0.1"),
    ([0.2, float("nan")], r"p_ind\[1\] = nan"),
    ([float("inf"), 0.2], r"p_ind\[0\] = inf"),
    ([0.2], "p_ind has 1 values"),
    ([[0.2, 0.3]], "1-d"),
])
def test_ood_score_rejects_invalid_probabilities(p, message):
    with pytest.raises(ValueError, match=message):
        ood_score([1, 0], p)


labelled = st.integers(1, 60).flatmap(lambda n: st.tuples(
    arrays(np.int64, n, elements=st.integers(0, 1)),
    arrays(np.float64, n, elements=st.floats(0.0, 1.0))))


@settings(max_examples=200, deadline=None)
@given(labelled)
def test_perfect_answers_reach_zero_up_to_eps(case):
    y, _ = case
    assert -2 * EPS <= ood_score(y, y.astype(np.float64)) <= 0.0


@settings(max_examples=200, deadline=None)
@given(labelled)
def test_half_everywhere_gives_log_half(case):
    y, _ = case
    assert ood_score(y, np.full(len(y), 0.5)) == pytest.approx(math.log(0.5), rel=1e-12)


@settings(max_examples=300, deadline=None)
@given(labelled)
def test_clipping_bounds_the_worst_case_at_log_eps(case):
    y, p = case
    value = ood_score(y, p)
    assert math.log(EPS) - 1e-9 <= value <= 0.0
    assert ood_score(y, 1.0 - y) == pytest.approx(math.log(EPS), rel=1e-12)


@settings(max_examples=200, deadline=None)
@given(labelled)
def test_ood_score_equals_minus_scikit_learn_log_loss_where_clipping_does_not_act(case):
    from sklearn.metrics import log_loss

    y, p = case
    p = np.clip(p, 1e-9, 1 - 1e-9)
    expected = -log_loss(y, p, labels=[0, 1])
    assert ood_score(y, p) == pytest.approx(expected, rel=1e-9, abs=1e-12)


# Scores drawn from a few values, so that ties (one ROC point per tie block) are frequent.
roc_cases = st.integers(2, 300).flatmap(lambda n: st.tuples(
    arrays(np.int8, n, elements=st.integers(0, 1)),
    arrays(np.float64, n, elements=st.sampled_from([-1.5, 0.0, 0.25, 0.3, 2.0, 7.0]) | st.floats(-1e3, 1e3))))


@settings(max_examples=300, deadline=None)
@given(roc_cases)
def test_roc_points_equal_scikit_learn_roc_curve(case):
    from sklearn.metrics import roc_curve

    from codascore.weak_lensing.metrics import roc

    is_ood, scores = case
    assume(is_ood.min() != is_ood.max())  # one class has no ROC curve (tpr_at_low_fpr gives NaN first)
    expected_fpr, expected_tpr, _ = roc_curve(is_ood, scores)
    fpr, tpr = roc(is_ood, scores)
    np.testing.assert_array_equal(fpr, expected_fpr)
    np.testing.assert_array_equal(tpr, expected_tpr)
