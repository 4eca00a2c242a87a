"""SRBench report pages: rank chart labels inside the figure, tables that fit Codabench's iframe, the
accuracy-against-complexity figure with the pool's Pareto front, and each track's guide."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codascore.report import render_page
from codascore.registry import get_task
from codascore.srbench import report as srbench_report
from codascore.srbench.report import MODEL_SHOWN_CHARS, pareto_front, realworld_report, synthetic_report
from codascore.srbench.tasks import accuracy_complexity
from codascore.task import Result
from figure_text import overlapping_tick_labels, record_figures, texts_outside

LONG_METHOD = "a_rather_long_reference_method_name_v2"


def _synthetic_result() -> Result:
    datasets = ["exact_formula_easier", "featureselection_medium"]
    per_dataset = [{"dataset": d, "r2": 0.9, "simplicity": -1.5, "property": 1.0, "r2_rank": 2.0,
                    "simplicity_rank": 1.0, "property_rank": 2.0, "hmean": 1.5} for d in datasets]
    points = {d: {"oracle": [1.0, -1.5], LONG_METHOD: [0.5, -0.5], "constant_mean": [-250.0, 0.0],
                  "submission": [0.9, -2.0]} for d in datasets}
    model = "<script>x</script>" + " + x1" * 3000
    instances = [{"id": f"{d}/2082", "nodes": 12, "r2_test": 0.9, "simplified": model} for d in datasets]
    return Result(scores={"score": 1.5}, instances=instances,
                  details={"aggregate": "median", "profile": "seed", "accuracy_source": "string",
                           "pool": {"oracle": 2.5, LONG_METHOD: 1.25, "submission": 1.5, "constant_mean": 0.5},
                           "per_dataset": per_dataset},
                  report_data={"accuracy_complexity": points})


def test_synthetic_page_draws_every_label_inside_and_cuts_long_models(monkeypatch):
    drawn = record_figures(monkeypatch, srbench_report)
    sections = synthetic_report(_synthetic_result())
    titles = [s.title for s in sections]
    assert titles == ["Per dataset", "Accuracy against complexity", "Rank against the reference pool",
                      "Every run"]
    # the pooled figure, one panel per dataset, the rank chart: no text outside any of them
    assert sorted(fig.axes[0].get_title() for fig in drawn) == [
        "", "exact_formula_easier", "featureselection_medium", "mean over datasets"]  # "": the rank chart
    assert [texts_outside(fig) for fig in drawn] == [[]] * 4
    assert [overlapping_tick_labels(fig) for fig in drawn] == [[]] * 4
    tradeoff = sections[1].html
    assert tradeoff.count("data:image/png;base64,") == 3 and "<div class='figures'>" in tradeoff
    models = sections[3].html
    assert "&lt;script&gt;" in models and "<script>" not in models
    assert f"({len('<script>x</script>') + 5 * 3000} characters)" in models
    assert " + x1" * 40 not in models  # cut at MODEL_SHOWN_CHARS
    assert MODEL_SHOWN_CHARS < 200
    # values and their ranks share a column: five columns fit the iframe
    assert "<th>R² (rank)</th>" in sections[0].html and "<td>0.9 (2)</td>" in sections[0].html


def test_realworld_page_has_the_figure_and_a_five_column_table(monkeypatch):
    drawn = record_figures(monkeypatch, srbench_report)
    result = Result(scores={}, details={
        "accuracy_source": "string", "pool": {"submission": 1.0, "linear_regression": 2.0},
        "table": [("value_cases", 0.97, -2.7, 3.0, 1.0, 0.0, 1.0, 0.0)], "table_header": ["unused"]},
        report_data={"accuracy_complexity": {"value_cases": {"submission": [0.97, -2.7],
                                                             "linear_regression": [0.97, -2.7]}}})
    sections = realworld_report(result)
    assert [s.title for s in sections] == ["Per target", "Accuracy against complexity",
                                           "Rank against the reference pool", "Every run"]
    assert sections[0].html.count("<th>") == 5 and "<td>3 (1)</td>" in sections[0].html
    assert drawn and all(not texts_outside(fig) for fig in drawn)


def test_pareto_front_keeps_the_non_dominated_methods_by_complexity():
    points = {"a": (0.9, 3.0), "b": (0.5, 1.0), "c": (0.4, 2.0), "d": (0.9, 4.0), "e": (0.95, 5.0)}
    assert pareto_front(points) == ["b", "a", "e"]


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=3),
                       st.tuples(st.integers(-5, 5).map(lambda v: v / 5), st.integers(0, 6).map(float)),
                       min_size=1, max_size=8))
def test_pareto_front_members_are_undominated_and_the_rest_dominated(points):
    front = pareto_front(points)

    def dominates(p, q):
        return p[0] >= q[0] and p[1] <= q[1] and p != q

    assert front
    for name, point in points.items():
        beaten = any(dominates(other, point) for other in points.values())
        assert (name in front) == (not beaten)
    assert [points[n][1] for n in front] == sorted(points[n][1] for n in front)


def test_accuracy_complexity_groups_the_ranked_table_by_dataset():
    frame = pd.DataFrame([{"algorithm": "oracle", "dataset": "d1", "r2": 1.0, "simplicity": -1.5},
                          {"algorithm": "submission", "dataset": "d1", "r2": float("nan"), "simplicity": -2.0},
                          {"algorithm": "oracle", "dataset": "d2", "r2": 0.5, "simplicity": -1.0}])
    assert accuracy_complexity(frame) == {"d1": {"oracle": [1.0, -1.5], "submission": [None, -2.0]},
                                          "d2": {"oracle": [0.5, -1.0]}}


@pytest.mark.parametrize("name, words", [
    ("srbench.synthetic", ["median over the dataset's runs", "log₅", "n_algs − 1"]),
    ("srbench.qualification", ["rank(LinearRegression)", "above 0 qualifies"]),
    ("srbench.realworld", ["representative run", "expert"]),
])
def test_guides_state_each_track_rule(name, words):
    task = get_task(name)
    guide = task.score_guide(task.load_config({}))
    text = " ".join(g.formula for g in guide)
    assert all(word in text for word in words), text
    page = render_page("t", name, {"score": 1.0}, [], [], guide=guide)
    assert "How to read this page" in page


def test_qualification_page_draws_both_methods_r2_per_dataset(monkeypatch):
    from codascore.srbench.report import table_report

    drawn = record_figures(monkeypatch, srbench_report)
    rows = [("friedman1_standin", 0.85, 0.68, -1.0), ("a_dataset_with_a_long_long_name", -1e6, 0.5, 1.0)]
    result = Result(scores={}, details={"accuracy_source": "string", "table": rows,
                                        "table_header": ["dataset", "mean R² (submission)",
                                                         "mean R² (LinearRegression)", "median rank difference"]})
    section = table_report(result)[0]
    assert "median of d over the seeds" in section.html and section.html.count("data:image/png;base64,") == 1
    assert len(drawn) == 1 and not texts_outside(drawn[0]), texts_outside(drawn[0])
