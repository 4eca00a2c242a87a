"""The ariel.retrieval page: units, the corner view, the explained spectral column, figures readable in
Codabench's ~760 px iframe (docs/ariel.md#report-page)."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from codascore.ariel import TASKS
from codascore.ariel import report as ariel_report
from codascore.report import render_page
from figure_text import overlapping_tick_labels, record_figures, texts_outside

TASK = TASKS["ariel.retrieval"]


def _score(project_data, sample: str):
    ref_dir = project_data / "reference_data" / TASK.name
    raw = yaml.safe_load((ref_dir / "task.yaml").read_text())
    raw.pop("task")
    config = TASK.load_config(raw)
    reference = TASK.load_reference(ref_dir, config)
    submission = TASK.load_submission(project_data / "sample_submissions" / TASK.name / sample, reference, config)
    return TASK.score(reference, submission, config), reference, submission, config


@pytest.fixture(scope="module")
def scored(project_data):
    return _score(project_data, "gaussian_baseline")


@pytest.fixture(scope="module")
def page(scored):
    """The sections, the figures they drew and the whole page."""
    result, reference, submission, config = scored
    with pytest.MonkeyPatch.context() as patch:
        figures = record_figures(patch, ariel_report)
        sections = TASK.report(result, reference, submission, config)
    html = render_page(TASK.title, TASK.name, result.scores, result.warnings, sections,
                       guide=TASK.score_guide(config))
    return sections, figures, html


def _texts(fig) -> str:
    import matplotlib.text

    return " ".join(t.get_text() for t in fig.findobj(matplotlib.text.Text))


def test_the_page_explains_every_score(page):
    html = page[2]
    assert "How to read this page" in html
    for key in TASK.score_keys:
        assert f"<code>{key}</code>" in html
    assert "0.8 × posterior_score + 0.2 × spectral_score" in html


def test_no_text_leaves_its_figure_and_no_tick_labels_overlap(page):
    figures = page[1]
    assert len(figures) == 1 + 3 + 1 + 3  # per target, 3 marginals, the corner view, 3 spectra
    for fig in figures:
        assert texts_outside(fig) == []
        assert overlapping_tick_labels(fig) == []


def test_point_masses_keep_the_figures_readable(project_data, monkeypatch):
    """1000 copies of one value per planet: the narrowest ranges, hence the longest tick labels."""
    result, reference, submission, config = _score(project_data, "point_mass")
    figures = record_figures(monkeypatch, ariel_report)
    TASK.report(result, reference, submission, config)
    assert len(figures) == 8
    for fig in figures:
        assert texts_outside(fig) == [] and overlapping_tick_labels(fig) == []


def test_axes_carry_units(page):
    sections, figures, _ = page
    marginal_texts = _texts(figures[1])
    assert "radius (R_Jup)" in marginal_texts and "temperature (K)" in marginal_texts
    assert "log₁₀ X(H₂O)" in marginal_texts
    assert all("wavelength (µm)" in _texts(fig) and "transit depth (%)" in _texts(fig) for fig in figures[-3:])
    assert "um)" not in " ".join(_texts(fig) for fig in figures)
    per_target = next(s for s in sections if s.title == "Posterior score per target").html
    assert "Jupiter radii (R_Jup)" in per_target and "kelvin (K)" in per_target


def test_small_figures_sit_in_a_wrapping_row(page):
    """Several small figures that wrap at Codabench's width, rather than one wide grid that shrinks: no
    figure is wider than 760 px at the page's 90 dpi."""
    sections, figures, _ = page
    for title in ("Marginal posteriors", "Spectra"):
        html = next(s for s in sections if s.title == title).html
        assert "<div class='figures'>" in html and html.count("data:image/png;base64,") == 3
    assert all(fig.get_figwidth() * 90 <= 760 for fig in figures)


def test_corner_view_shows_the_median_planet_against_the_truth(page, scored):
    result, reference = scored[0], scored[1]
    sections, figures = page[0], page[1]
    posterior = [inst["posterior"] for inst in result.instances]
    chosen = int(np.argsort(posterior, kind="stable")[(len(posterior) - 1) // 2])
    section = next(s for s in sections if s.title == "Corner view of one planet")
    assert f"The 7 targets of {reference.names[chosen]}, the planet whose posterior score is the median" \
        in section.html
    corner = figures[4]
    shown = [ax for ax in corner.axes if ax.axison]
    assert len(corner.axes) == 49 and len(shown) == 28  # the lower triangle and the diagonal
    scatters = [ax for ax in shown if len(ax.collections) == 2]
    assert len(scatters) == 21
    # Both sides are drawn: grey ground truth under the red submission, CORNER_POINTS each.
    assert all(len(c.get_offsets()) == ariel_report.CORNER_POINTS for ax in scatters for c in ax.collections)


def test_spectral_not_available_is_explained(page, scored):
    result, reference = scored[0], scored[1]
    table = next(s for s in page[0] if s.title == "Per planet").html
    n_spectral = len(reference.spectral_index)
    assert 0 < n_spectral < len(result.instances)
    assert f"only for the {n_spectral} of {len(result.instances)} planets" in table
    assert table.count("<td>not in subset</td>") == len(result.instances) - n_spectral
    assert "n/a" not in table


def test_the_guide_follows_the_configured_weight():
    guide = TASK.score_guide(TASK.load_config({"posterior_weight": 0.6}))
    assert [g.key for g in guide] == list(TASK.score_keys)
    assert guide[0].formula.startswith("0.6 × posterior_score + 0.4 × spectral_score")
    assert all(g.better == "higher" and g.range.startswith("0 to 1000") for g in guide)
