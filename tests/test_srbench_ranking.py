"""SRBench 2022 ranking against the golden tables of the 2022 notebook (tests/data/srbench_ranking_visible.json,
with its provenance), plus properties of the rules."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codascore.srbench import rank_methods
from codascore.srbench.metrics import harmonic_mean_of_ranks, rank_per_dataset

VECTORS_FILE = "srbench_ranking_visible.json"


def _frame(rows):
    return pd.DataFrame(rows).astype({"r2_test": float, "simplicity": float, "property": float})


@pytest.mark.golden(VECTORS_FILE, "tables")
def test_golden_final_scores_with_mean(golden):
    table = golden
    final = rank_methods(_frame(table["rows"]), aggregate="mean")
    assert set(final.index) == set(table["final"])
    for algorithm, expected in table["final"].items():
        assert math.isclose(final.loc[algorithm, "score"], expected, rel_tol=1e-9, abs_tol=1e-12)


@pytest.mark.golden(VECTORS_FILE, "tables")
def test_golden_per_dataset_ranks_with_mean(golden):
    table = golden
    got = rank_per_dataset(_frame(table["rows"]), aggregate="mean").set_index(["algorithm", "dataset"])
    assert len(got) == len(table["per_dataset"])
    for row in table["per_dataset"]:
        mine = got.loc[(row["algorithm"], row["dataset"])]
        for column in ("r2_rank", "simplicity_rank", "property_rank"):
            if row[column] is None:
                assert np.isnan(mine[column])
            else:
                assert mine[column] == row[column]
        assert math.isclose(mine["hmean"], row["hmean"], rel_tol=1e-9, abs_tol=1e-12)


def _toy():
    rows = []
    for name, r2, simp, prop in [("A", 0.9, -1.0, 1.0), ("B", 0.8, -1.2, 0.5), ("C", 0.7, -1.4, 0.2),
                                 ("D", 0.6, -1.6, 0.1)]:
        rows.append({"algorithm": name, "dataset": "d1", "run": 0, "r2_test": r2, "simplicity": simp,
                     "property": prop})
    return pd.DataFrame(rows)


def test_toy_table_ranks_best_first_and_zero_rank_zeroes_hmean():
    table = rank_per_dataset(_toy(), aggregate="median")
    assert list(table["r2_rank"]) == [3, 2, 1, 0]
    assert table["hmean"].iloc[-1] == 0


def test_seed_profile_penalises_missing_dataset_and_official_does_not():
    frame = _toy()
    extra = frame.copy()
    extra["dataset"] = "d2"
    frame = pd.concat([frame, extra[extra["algorithm"] != "A"]], ignore_index=True)
    seed = rank_methods(frame, aggregate="median")
    official = rank_methods(frame, aggregate="mean")
    assert seed.loc["A", "n_datasets"] == 2 and official.loc["A", "n_datasets"] == 1
    assert seed.loc["A", "score"] == pytest.approx(official.loc["A", "score"] / 2)


def test_median_is_the_default_and_differs_from_mean():
    rows = []
    for run, r2 in enumerate([0.0, 0.9, 0.9]):
        rows.append({"algorithm": "A", "dataset": "d", "run": run, "r2_test": r2, "simplicity": -1,
                     "property": 1})
    rows += [{"algorithm": "B", "dataset": "d", "run": run, "r2_test": 0.7, "simplicity": -1, "property": 1}
             for run in range(3)]
    frame = pd.DataFrame(rows)
    assert rank_per_dataset(frame).set_index("algorithm").loc["A", "r2_rank"] == 1
    assert rank_per_dataset(frame, aggregate="mean").set_index("algorithm").loc["A", "r2_rank"] == 0


@pytest.mark.parametrize("kwargs, match", [({"aggregate": "max"}, "aggregate"), ({"profile": "x"}, "profile")])
def test_rank_methods_rejects_bad_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        rank_methods(_toy(), **kwargs)


def test_rank_methods_rejects_missing_column_and_infinity():
    with pytest.raises(ValueError, match="property"):
        rank_methods(_toy().drop(columns="property"))
    frame = _toy()
    frame.loc[2, "r2_test"] = np.inf
    with pytest.raises(ValueError, match="r2_test.*row 2"):
        rank_methods(frame)


def test_harmonic_mean_rejects_negative():
    with pytest.raises(ValueError, match=r"ranks\[1\]"):
        harmonic_mean_of_ranks([1, -1, 2])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(-1, 1), st.floats(-3, 0), st.floats(0, 1)), min_size=2, max_size=6))
def test_ranks_are_bounded_and_best_gets_n_minus_one(values):
    frame = pd.DataFrame([{"algorithm": f"m{i}", "dataset": "d", "run": 0, "r2_test": a, "simplicity": s,
                           "property": p} for i, (a, s, p) in enumerate(values)])
    table = rank_per_dataset(frame)
    n = len(values)
    for column in ("r2_rank", "simplicity_rank", "property_rank"):
        assert table[column].max() == n - 1
        assert table[column].min() >= 0
    assert ((table["hmean"] >= 0) & (table["hmean"] <= n - 1 + 1e-9)).all()
    # relabelling the methods does not change anyone's score
    renamed = frame.assign(algorithm=frame["algorithm"].str.upper())
    again = rank_methods(renamed)
    base = rank_methods(frame)
    for name in base.index:
        assert again.loc[name.upper(), "score"] == pytest.approx(base.loc[name, "score"])
