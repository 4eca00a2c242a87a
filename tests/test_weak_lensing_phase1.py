"""Weak lensing Phase 1 metrics: official golden vectors (tests/data, one test per case), hand-checkable
values and properties."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from codascore.errors import SubmissionError
from codascore.weak_lensing import coverage, inference_score, metrics
from codascore.weak_lensing.files import read_phase1_result, write_result


VECTORS = "weak_lensing_phase1.json"


def _floats(value):
    """A case's numbers as float64; the file writes non-finite values as the strings 'NaN', 'Infinity'."""
    return np.array([[float(v) for v in row] for row in value], dtype=np.float64)


def test_golden_file_holds_the_official_cases(repo_root):
    vectors = json.loads((repo_root / "tests" / "data" / VECTORS).read_text())
    assert len(vectors["cases"]) >= 10 and len(vectors["invalid_cases"]) >= 9
    assert "b2f4afc" in vectors["provenance"]["file"]


@pytest.mark.golden(VECTORS, "cases")
def test_golden_vectors_inference_score_coverage_r_squared(golden):
    case = golden
    truth, means, errorbars = _floats(case["truth"]), _floats(case["means"]), _floats(case["errorbars"])
    assert inference_score(truth, means, errorbars) == pytest.approx(case["avg_score"], rel=1e-9, abs=0), case["name"]
    assert coverage(truth, means, errorbars) == pytest.approx(case["avg_coverage"], rel=1e-9, abs=0), case["name"]
    r2 = metrics.r_squared(truth, means)
    if case["R_squared"] is None:
        assert math.isnan(r2), case["name"]
    else:
        assert r2 == pytest.approx(case["R_squared"], rel=1e-9, abs=1e-15), case["name"]


@pytest.mark.golden(VECTORS, "invalid_cases")
def test_golden_invalid_cases_floor_like_the_official_code_and_are_refused(golden, tmp_path):
    """Non-finite inputs floor the metric as the official code does; wrong shapes raise naming ``means``;
    and the product's reader refuses every one of these submissions
    (docs/weak_lensing.md#what-the-project-refuses-that-the-official-code-scores)."""
    case = golden
    truth, means, errorbars = _floats(case["truth"]), _floats(case["means"]), _floats(case["errorbars"])
    if means.shape == truth.shape and errorbars.shape == truth.shape:
        expected = case.get("official_scores_json", {}).get("avg_score", case.get("_score_phase1_value"))
        assert inference_score(truth, means, errorbars) == expected, case["name"]
        if "official_scores_json" in case:
            assert coverage(truth, means, errorbars) == pytest.approx(
                case["official_scores_json"]["avg_coverage"], rel=1e-12), case["name"]
    else:
        with pytest.raises(ValueError, match="means"):
            inference_score(truth, means, errorbars)
    write_result(tmp_path, {"means": means.tolist(), "errorbars": errorbars.tolist()})
    with pytest.raises(SubmissionError, match="result.json: '?(means|errorbars)"):
        read_phase1_result(tmp_path, len(truth))


def test_hand_checkable_values_from_the_docs():
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
