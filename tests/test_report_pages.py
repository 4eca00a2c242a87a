"""The pages themselves, over every sample submission of every task scored in-process (tests/report_pages.py,
once for both tests): no figure text outside its figure, and no horizontal overflow in Codabench's iframe
width, measured in headless Chromium (docs/codabench.md#reports)."""

from __future__ import annotations

from codascore.registry import get_task

import report_pages
from report_pages import IFRAME_WIDTH, measure_width, measure_widths, require_chromium
from report_pages import scored_pages  # noqa: F401  (the session fixture)


def test_every_sample_is_scored_or_refused_as_its_task_expects(scored_pages):
    wrong = [f"{p.task} / {p.sample}: exit {p.exit_code}" for p in scored_pages
             if p.exit_code != (1 if get_task(p.task).expected_to_fail(p.sample) else 0)]
    assert not wrong
    assert all(p.html.is_file() for p in scored_pages)


def test_no_text_of_any_figure_leaves_its_figure(scored_pages):
    assert sum(p.figures for p in scored_pages) >= 20  # the figures were drawn and measured
    offenders = [f"{p.task} / {p.sample} / {line}" for p in scored_pages for line in p.clipped]
    assert not offenders, "\n".join(offenders)


def test_no_page_overflows_codabench_iframe_width(scored_pages):
    require_chromium()
    measures = measure_widths([p.html for p in scored_pages])
    offenders = [f"{p.task} / {p.sample}: scrollWidth {m['scrollWidth']} > clientWidth {m['clientWidth']}, "
                 f"wide: {m['wide'][:3]}" for p, m in zip(scored_pages, measures)
                 if m["scrollWidth"] > m["clientWidth"] or m["wide"]]
    assert not offenders, "\n".join(offenders)


# ----- the checks themselves can fail


def test_clipped_text_recorder_reports_a_label_past_the_left_edge(tmp_path):
    import io

    from codascore.report import figure_html, new_figure

    fig, ax = new_figure(4, 3)
    ax.set_title("inside")
    ax.set_ylabel("a label pushed out", labelpad=80)
    found, saved = [], []
    with report_pages.clipped_text_recorder(found, saved):
        page = figure_html(fig, "a test figure")
    assert [(c.figure, c.text) for c in found] == [(fig, "a label pushed out")]
    assert found[0].where.startswith("x=-")
    # named by its alt text when the page holds its image, else by its title
    assert report_pages.describe(found, saved, write(tmp_path / "page.html", page)) == [
        f"figure 'a test figure': text 'a label pushed out' at {found[0].where}"]
    assert report_pages.describe(found, saved, tmp_path / "none.html")[0].startswith("figure 'inside': ")
    found.clear()
    with report_pages.clipped_text_recorder(found):
        fig, ax = new_figure(4, 3)
        ax.set_ylabel("a label in place")
        fig.savefig(io.BytesIO(), format="png")
    assert found == []


def write(path, text):
    path.write_text(text)
    return path


def test_width_measure_names_an_element_wider_than_the_window(tmp_path):
    require_chromium()
    page = tmp_path / "wide.html"
    page.write_text("<!DOCTYPE html><html><body><p>fits</p><table><tr><td><div style='width:1200px'>"
                    "wide cell</div></td></tr></table></body></html>")
    measure = measure_width(page, IFRAME_WIDTH)
    assert measure["scrollWidth"] > measure["clientWidth"]
    assert [e["tag"] for e in measure["wide"]] == ["table"] and measure["wide"][0]["text"] == "wide cell"
    narrow = tmp_path / "narrow.html"
    narrow.write_text("<!DOCTYPE html><html><body><p>fits</p></body></html>")
    assert measure_width(narrow, IFRAME_WIDTH) == {"scrollWidth": measure["clientWidth"],
                                                  "clientWidth": measure["clientWidth"], "wide": []}
