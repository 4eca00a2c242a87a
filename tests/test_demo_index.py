"""demo/index.html: every run's outcome, wall time and every score key in a column of its own, a link to
each report, escaped names, and the one inline script that sorts by a clicked column."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from codascore.demo import SORT_SCRIPT, write_index
from codascore.outcomes import scoring_outcome
from codascore.runner import RunResult
from report_pages import evaluate, require_chromium


class Cells(HTMLParser):
    """The index's header cells, rows of (text, data-value) cells, links and scripts."""

    def __init__(self):
        super().__init__()
        self.header: list[str] = []
        self.rows: list[list[tuple[str, str | None]]] = []
        self.links: list[str] = []
        self.scripts: list[str] = []
        self._cell: list | None = None
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = [tag, "", attrs.get("data-value")]
        elif tag == "a":
            self.links.append(attrs["href"])
        elif tag == "script":
            self._in_script = True
            self.scripts.append("")

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            kind, text, value = self._cell
            if kind == "th":
                self.header.append(text)
            else:
                self.rows[-1].append((text, value))
            self._cell = None
        elif tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[1] += data
        if self._in_script:
            self.scripts[-1] += data


def run_result(tmp_path: Path, task: str, submission: str, exit_code: int, scores: dict, elapsed: float,
               page: bool) -> RunResult:
    run_dir = tmp_path / "runs" / task / submission.replace("/", "_")
    output = run_dir / "scoring" / "output"
    output.mkdir(parents=True)
    if page:
        (output / "detailed_results.html").write_text("<html></html>")
    return RunResult(task, submission, run_dir, exit_code, scores, [], elapsed, outcome=scoring_outcome(exit_code))


def parsed_index(tmp_path: Path) -> Cells:
    results = [
        run_result(tmp_path, "weak_lensing.phase1", "calibrated", 0,
                   {"score": 2.5, "avg_coverage": 0.68, "R_squared": 0.9, "MSE": 0.001}, 12.25, True),
        run_result(tmp_path, "srbench.synthetic", "<b>x</b>&'y", 0,
                   {"score": 3.0, "mean_r2": 0.5}, 101.5, True),
        run_result(tmp_path, "uai.mar", "invalid_no_result_files", 1, {}, 0.75, True),
    ]
    index = write_index(tmp_path / "demo", results)
    cells = Cells()
    cells.feed(index.read_text())
    cells.rows = [row for row in cells.rows if row]  # the header row has no td
    return cells


def test_index_has_every_score_key_as_a_column_with_outcome_and_seconds(tmp_path):
    cells = parsed_index(tmp_path)
    assert cells.header == ["task", "submission", "outcome", "seconds", "score", "avg_coverage", "R_squared",
                            "MSE", "mean_r2", "detailed results"]
    columns = {name: [row[i] for row in cells.rows] for i, name in enumerate(cells.header)}
    assert [text for text, _ in columns["outcome"]] == ["scored", "scored", "failed as expected"]
    assert columns["seconds"] == [("12.2", "12.25"), ("101.5", "101.5"), ("0.8", "0.75")]
    assert columns["MSE"] == [("0.001", "0.001"), ("", None), ("", None)]
    assert columns["mean_r2"] == [("", None), ("0.5", "0.5"), ("", None)]
    assert columns["score"][2] == ("", None)  # no scores: blank, not a dash that would sort as text


def test_index_links_every_report_relative_to_the_index(tmp_path):
    cells = parsed_index(tmp_path)
    assert len(cells.links) == 3
    for link in cells.links:
        assert not link.startswith("/") and (tmp_path / "demo" / link).is_file()


def test_index_escapes_submission_names(tmp_path):
    text = (write_index(tmp_path / "demo", [run_result(tmp_path, "uai.mar", "<b>x</b>&'y", 0, {"score": 1.0},
                                                       1.0, False)])).read_text()
    assert "<b>x</b>" not in text and "&lt;b&gt;x&lt;/b&gt;&amp;&#x27;y" in text
    assert "<a " not in text  # no page, no link


def test_index_is_one_file_whose_only_script_sorts_by_clicked_header(tmp_path):
    cells = parsed_index(tmp_path)
    text = (tmp_path / "demo" / "index.html").read_text()
    assert cells.scripts == [SORT_SCRIPT.removeprefix("<script>").removesuffix("</script>")]
    assert not re.search(r"<(link|script)[^>]*\b(src|href)=", text)  # nothing loaded from elsewhere
    script = cells.scripts[0]
    assert "addEventListener('click'" in script and "querySelectorAll('th')" in script
    # numbers sort by their data-value, parsed as numbers; text cells by localeCompare
    assert "parseFloat(cell.dataset.value)" in script and "x - y" in script and "localeCompare" in script


def test_a_click_on_a_header_sorts_rows_numbers_by_value_blanks_last(tmp_path):
    require_chromium()
    cells = parsed_index(tmp_path)
    # After each click on a header: the submissions' order.
    clicks = ["seconds", "seconds", "score", "submission"]
    orders = evaluate(tmp_path / "demo" / "index.html", f"""
        var names = Array.from(document.querySelectorAll('th')).map(function (th) {{ return th.textContent; }});
        return {clicks!r}.map(function (name) {{
          document.querySelectorAll('th')[names.indexOf(name)].click();
          return Array.from(document.querySelectorAll('tbody tr')).map(function (row) {{
            return row.cells[1].textContent; }});
        }});""")
    calibrated, odd, invalid = [row[1][0] for row in cells.rows]
    assert orders == [[invalid, calibrated, odd],  # 0.75 s, 12.25 s, 101.5 s: by value, not as text
                      [odd, calibrated, invalid],  # again: reversed
                      [calibrated, odd, invalid],  # 2.5, 3.0, then the run without a score
                      sorted([calibrated, odd, invalid], key=str.lower)]
