"""The leaderboard's page (codascore/leaderboard/page.py) as a browser shows it in Codabench's 760 px iframe:
no horizontal overflow, measured in headless Chromium (tests/report_pages.py), and no figure text outside its
figure (tests/figure_text.py), for a crowded board (20 teams, long and hostile names, two rules) and a small
one (3 teams, one rule)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import codascore.leaderboard.page as page_module
from codascore.board import Design
from codascore.leaderboard import analyse
from codascore.leaderboard.outputs import write_outputs

from figure_text import overlapping_tick_labels, record_figures, texts_outside
from leaderboard_boards import MeanBoard, MeanOnlyBoard, evidence_of
from report_pages import IFRAME_WIDTH, measure_width, require_chromium

NAMES = ["a team with a very long name indeed, longer than any figure can show", "<b>bold</b> & $math$",
         "W" * 30, "team_4", "équipe ünïcode", *[f"team {t}" for t in range(5, 20)]]


def crowded(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    values = np.linspace(0, 1, 20)[:, None] + rng.normal(size=(20, 120))
    units = pd.DataFrame({"unit": [f"u{j}" for j in range(120)], "family": [f"f{j % 3}" for j in range(120)]})
    figures = record_figures(monkeypatch, page_module)
    analysis = analyse(MeanBoard(design=Design(strata=("family",))), evidence_of(values, units, NAMES), 200)
    return write_outputs(analysis, tmp_path / "crowded")[2], figures


def small(tmp_path, monkeypatch):
    values = np.array([[1.0, 2, 3, 4], [1.5, 2, 3.5, 4], [0, 0, 1, 1]])
    figures = record_figures(monkeypatch, page_module)
    analysis = analyse(MeanOnlyBoard(), evidence_of(values, teams=["x", "y", "z"]), 100)
    return write_outputs(analysis, tmp_path / "small")[2], figures


@pytest.mark.parametrize("build", [crowded, small])
def test_no_figure_text_leaves_its_figure(tmp_path, monkeypatch, build):
    page, figures = build(tmp_path, monkeypatch)
    assert len(figures) >= 4  # blob plot, intervals, heatmap, significance map (and the rules with two)
    assert {f"figure {n}": texts_outside(fig) for n, fig in enumerate(figures) if texts_outside(fig)} == {}
    assert {f"figure {n}": overlapping_tick_labels(fig) for n, fig in enumerate(figures)
            if overlapping_tick_labels(fig)} == {}


@pytest.mark.parametrize("build", [crowded, small])
def test_the_page_fits_codabench_iframe(tmp_path, monkeypatch, build):
    require_chromium()
    page, _ = build(tmp_path, monkeypatch)
    measure = measure_width(page, IFRAME_WIDTH)
    assert measure["scrollWidth"] <= measure["clientWidth"] and measure["wide"] == []


def test_every_team_name_is_escaped(tmp_path, monkeypatch):
    page, _ = crowded(tmp_path, monkeypatch)
    text = page.read_text()
    assert "<b>bold</b>" not in text and "&lt;b&gt;bold&lt;/b&gt; &amp; $math$" in text
    assert text.count("<img ") == 5
