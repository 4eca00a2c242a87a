"""Weak lensing Phase 1 metrics: official golden vectors, hand-checkable values and properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import load_vectors
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from codascore.weak_lensing import coverage, inference_score, metrics


def _cases():
    return load_vectors("weak_lensing_phase1.json")["cases"]


def _floats(value):
    return np.array(value, dtype=np.float64)


def test_golden_vectors_inference_score_coverage_r_squared():
    cases = _cases()
    assert len(cases) >= 10
    for case in cases:
        truth, means, errorbars = _floats(case["truth"]), _floats(case["means"]), _floats(case["errorbars"])
        assert inference_score(truth, means, errorbars) == pytest.approx(case["avg_score"], rel=1e-9, abs=0), case["name"]
        assert coverage(truth, means, errorbars) == pytest.approx(case["avg_coverage"], rel=1e-9, abs=0), case["name"]
        r2 = metrics.r_squared(truth, means)
        if case["R_squared"] is None:
            assert math.isnan(r2), case["name"]
        else:
            assert r2 == pytest.approx(case["R_squared"], rel=1e-9, abs=1e-15), case["name"]


def test_golden_vectors_non_finite_inputs_floor_like_the_official_code():
    for case in load_vectors("weak_lensing_phase1.json")["invalid_cases"]:
        expected = case.get("official_scores_json", {}).get("avg_score", case.get("_score_phase1_value"))
        if expected is None:
            continue
        to_float = lambda rows: np.array([[float(v) for v in row] for row in rows])
        truth, means, errorbars = to_float(case["truth"]), to_float(case["means"]), to_float(case["errorbars"])
        if means.shape != truth.shape or errorbars.shape != truth.shape:
            continue
        assert inference_score(truth, means, errorbars) == expected, case["name"]
        if "official_scores_json" in case:
            assert coverage(truth, means, errorbars) == pytest.approx(
                case["official_scores_json"]["avg_coverage"], rel=1e-12), case["name"]


def test_hand_checkable_values_from_the_spec():
    truth = np.array([[0.3, 0.8]])
    assert inference_score(truth, truth, np.full((1, 2), 0.01)) == pytest.approx(18.420681, abs=1e-6)
    assert inference_score(truth, truth + 0.01, np.full((1, 2), 0.01)) == pytest.approx(16.220681, abs=1e-6)


def test_floor_applies_to_the_mean_and_to_non_finite_means():
    truth = np.zeros((2, 2))
    assert inference_score(truth, truth + 100, np.full((2, 2), 1e-3)) == -1e6
    assert inference_score(truth, truth, np.zeros((2, 2))) == -1e6  # 0/0


def test_shapes_are_validated_with_the_argument_named():
    with pytest.raises(ValueError, match="means"):
        inference_score(np.zeros((3, 2)), np.zeros((3, 3)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="errorbars"):
        coverage(np.zeros((3, 2)), np.zeros((3, 2)), np.ones((2, 2)))


finite_pairs = st.integers(2, 40).flatmap(lambda n: st.tuples(
    arrays(np.float64, (n, 2), elements=st.floats(-5, 5)),
    arrays(np.float64, (n, 2), elements=st.floats(-5, 5))))


@settings(max_examples=200, deadline=None)
@given(finite_pairs)
def test_r_squared_equals_scikit_learn(pair):
    from sklearn.metrics import r2_score

    truth, means = pair
    assert metrics.r_squared(truth, means) == pytest.approx(r2_score(truth, means), rel=1e-9, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(finite_pairs, st.floats(1e-3, 1.0))
def test_best_sigma_for_a_known_error_is_the_error(pair, scale):
    truth, means = pair
    d = np.abs(means - truth) + 1e-3
    best = inference_score(truth, truth + d, d)
    for factor in (0.5, 2.0):
        assert inference_score(truth, truth + d, d * factor) <= best + 1e-9


@settings(max_examples=100, deadline=None)
@given(finite_pairs)
def test_standardised_mse_equals_scikit_learn_after_standard_scaling(pair):
    from sklearn.metrics import mean_squared_error

    truth, means = pair
    mean, scale = np.array([0.3, 0.8]), np.array([0.15, 0.08])
    expected = mean_squared_error((truth - mean) / scale, (means - mean) / scale)
    assert metrics.standardised_mse(truth, means, mean, scale) == pytest.approx(expected, rel=1e-9, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(finite_pairs)
def test_coverage_is_a_fraction_and_full_for_wide_errorbars(pair):
    truth, means = pair
    assert 0.0 <= coverage(truth, means, np.full(truth.shape, 0.1)) <= 1.0
    assert coverage(truth, means, np.abs(means - truth) + 1.0) == 1.0
