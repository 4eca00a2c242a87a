"""Weak lensing report pages: the figures the issue asks for, drawn from aggregates only."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from codascore.registry import get_task
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
