"""Weak lensing report pages: the figures the issue asks for, drawn from aggregates only."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from codascore.weak_lensing import metrics
from codascore.weak_lensing.report import MIN_BIN_COUNT, coarse_roc, phase1_report, phase2_report


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
    assert sum(s.html.count("data:image/png;base64,") for s in sections) == 2


def test_single_class_reference_has_no_roc_section():
    sections = phase2_report(np.zeros(50, dtype=np.int8), np.full(50, 0.9), np.full(50, 0.1), 1e-15,
                             "1 - p_ind")
    assert "ROC curve" not in [s.title for s in sections]


@settings(max_examples=100, deadline=None)
@given(st.integers(20, 300), st.integers(0, 2**32 - 1))
def test_coarse_roc_samples_the_official_curve_every_ten_ind_maps(n, seed):
    rng = np.random.default_rng(seed)
    is_ood = np.r_[0, 1, rng.integers(0, 2, n - 2)]
    scores = rng.normal(is_ood, 1.0).round(1)  # ties included
    grid, tpr = coarse_roc(is_ood, scores)
    n_ind = int((is_ood == 0).sum())
    steps = np.round(np.diff(grid * n_ind), 9)
    assert grid[0] == 0 and grid[-1] == 1
    assert np.all(steps[:-1] == MIN_BIN_COUNT) and 0 < steps[-1] <= MIN_BIN_COUNT
    fpr, full_tpr = metrics.roc(is_ood, scores)
    assert np.allclose(tpr, np.interp(grid, fpr, full_tpr))
