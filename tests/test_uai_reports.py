"""UAI report pages: the score formula on the page, and Err against the trivial solver's error per instance
family (docs/uai.md#scoring)."""

from __future__ import annotations

import pytest

from codascore import report as html_report
from codascore.report import render_page
from codascore.uai.report import report_sections
from codascore.uai.tasks import TASKS
from figure_text import overlapping_tick_labels, record_figures, texts_outside


def _score(project_data, name, sample):
    task = TASKS[name]
    config = task.load_config({})
    reference = task.load_reference(project_data / "reference_data" / name, config)
    submission = task.load_submission(project_data / "sample_submissions" / name / sample, reference, config)
    return task, config, task.score(reference, submission, config)


@pytest.mark.parametrize("name", sorted(TASKS))
def test_page_states_the_formula_and_draws_err_per_family(project_data, monkeypatch, name):
    drawn = record_figures(monkeypatch, html_report)
    task, config, result = _score(project_data, name, "perturbed")
    families = {r["family"] for r in result.instances}
    assert {p[2] for p in result.report_data["points"]} == families  # each point knows its family
    sections = task.report(result, None, None, config)
    page = render_page(task.title, name, result.scores, result.warnings, sections, guide=task.score_guide(config))
    assert "max(0, 100·(1 − Err/MaxErr))" in page.split("Per-instance scores")[0]  # in the guide
    assert "max(0, 100·(1 − Err/MaxErr))" in page.split("Per-instance scores")[1]  # and in the section
    figure = next(s for s in sections if s.title == "Error against the trivial solver, per instance family")
    assert figure.html.count("data:image/png;base64,") == 1
    for family in families:
        assert f"<td>{family}</td>" in figure.html  # the per-family table
    assert len(drawn) == 1 and not texts_outside(drawn[0]) and not overlapping_tick_labels(drawn[0])


def test_family_table_counts_answers_and_means_scores():
    from codascore.task import Result

    instances = [{"id": "a", "family": "grid", "status": "ok", "score": 80.0, "error": 0.2, "max_error": 1.0},
                 {"id": "b", "family": "grid", "status": "missing", "score": 0.0, "reason": "missing"},
                 {"id": "c", "family": "<bn>", "status": "ok", "score": 100.0, "error": 0.0, "max_error": 2.0}]
    result = Result(scores={}, instances=instances,
                    report_data={"points": [(1.0, 0.2, "grid"), (2.0, 0.0, "<bn>")]})
    section = next(s for s in report_sections("PR", result) if s.title.startswith("Error against"))
    assert "<tr><td>grid</td><td>2</td><td>1</td><td>40</td></tr>" in section.html
    assert "&lt;bn&gt;" in section.html and "<bn>" not in section.html


def test_guide_names_each_task_error():
    assert "Hellinger" in TASKS["uai.mar"].score_guide(TASKS["uai.mar"].load_config({}))[0].formula
    assert "log10 Z" in TASKS["uai.pr"].score_guide(TASKS["uai.pr"].load_config({}))[0].formula
    assert "test line" in TASKS["uai.mlc"].score_guide(TASKS["uai.mlc"].load_config({}))[0].formula


def test_without_valid_answers_the_family_table_stays_and_no_figure_is_drawn(monkeypatch):
    from codascore.task import Result

    drawn = record_figures(monkeypatch, html_report)
    result = Result(scores={}, instances=[{"id": "a", "family": "grid", "status": "missing", "score": 0.0,
                                           "reason": "missing result file a.uai.PR"}], report_data={"points": []})
    section = next(s for s in report_sections("PR", result) if s.title.startswith("Error against"))
    assert not drawn and "no error to plot" in section.html
    assert "<tr><td>grid</td><td>1</td><td>0</td><td>0</td></tr>" in section.html


def test_long_family_names_stay_inside_the_figure(monkeypatch):
    from codascore.task import Result

    drawn = record_figures(monkeypatch, html_report)
    families = ["ObjectDetection_with_a_very_long_suffix", "Promedas"]
    instances = [{"id": f, "family": f, "status": "ok", "score": 50.0, "error": 0.5, "max_error": 1.0}
                 for f in families]
    result = Result(scores={}, instances=instances, report_data={"points": [(1.0, 0.5, f) for f in families]})
    report_sections("PR", result)
    assert len(drawn) == 1 and not texts_outside(drawn[0]), texts_outside(drawn[0])
