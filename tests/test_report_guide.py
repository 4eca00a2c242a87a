"""Every page explains its scores: each task's "how to read this page" block covers every scores.json key
(docs/codabench.md#reports), and the block reaches the page escaped."""

from __future__ import annotations

import pytest

from codascore.registry import all_tasks, get_task
from codascore.report import render_page
from codascore.task import ScoreGuide


@pytest.mark.parametrize("name", sorted(all_tasks()))
def test_every_score_key_is_explained(name):
    task = get_task(name)
    guide = task.score_guide(task.load_config({}))
    assert [g.key for g in guide] == list(task.score_keys)
    for g in guide:
        assert g.better in ("higher", "lower"), (name, g)
        assert g.formula.strip() and g.range.strip(), (name, g)


def test_the_block_is_escaped_and_follows_the_scores():
    page = render_page("t", "x.y", {"score": 1.0}, [], [],
                       guide=[ScoreGuide("score", "<b>mean</b> of x", "higher", "0 to 1")])
    assert "&lt;b&gt;mean&lt;/b&gt; of x" in page and "<b>mean</b>" not in page
    assert page.index("Scores") < page.index("How to read this page")
    assert "higher is better" in page
