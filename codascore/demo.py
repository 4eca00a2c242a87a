"""``codascore demo``: every task's sample submissions through the local runner, one table, one index.

Samples their task expects to fail (``Task.expected_to_fail``: names starting with ``invalid`` or ``broken``)
must exit 1 without scores.json; the demo fails when any sample does not behave as expected.
"""

from __future__ import annotations

import html
import os
from pathlib import Path

from . import containers
from .competition import project_root
from .formats.outputs import PAGE
from .formats.run_folder import scoring_output
from .outcomes import ExitCode, Outcome, scoring_outcome
from .progress import DISPLAY
from .registry import all_tasks, get_task
from .runner import RunResult, format_run, run


def outcome(result: RunResult) -> tuple[str, bool]:
    """(status text, as expected?): a sample its task expects to fail must be refused by the scorer
    (Outcome.INVALID with its exit code); every other sample must score."""
    should_fail = get_task(result.task).expected_to_fail(result.submission)
    if result.outcome is Outcome.SCORED:
        return ("scored (expected to fail!)", False) if should_fail else ("scored", True)
    if result.outcome is Outcome.INVALID and result.exit_code is not None:
        return ("failed as expected", True) if should_fail else ("FAILED", False)
    if result.violations and result.exit_code is not None and scoring_outcome(result.exit_code) is Outcome.SCORED:
        return "CONTRACT VIOLATION", False
    return f"ERROR (exit {result.exit_code})", False


def run_demo(out: Path, root: Path | None = None, tasks: list[str] | None = None) -> ExitCode:
    root = root or project_root()
    names = tasks or list(all_tasks())
    results: list[RunResult] = []
    container = containers.choose()
    if not container.isolated:
        DISPLAY.tell(containers.UNISOLATED_WARNING)
    for name in names:
        samples_dir = root / "sample_submissions" / name
        if not samples_dir.is_dir():
            DISPLAY.tell(f"ERROR: no sample submissions for {name} in {samples_dir} (run `make data`)")
            return ExitCode.ORGANISER_ERROR
        for sample in sorted(p for p in samples_dir.iterdir() if p.is_dir()):
            DISPLAY.say(f"running {name} / {sample.name} ...")
            result = run(name, sample, out / name / sample.name, root=root, container=container)
            results.append(result)
            if not outcome(result)[1]:
                DISPLAY.tell(format_run(result))
    print(score_table(results))
    index = write_index(out, results)
    print(f"\nreports: {index}")
    return ExitCode.OK if all(outcome(r)[1] for r in results) else ExitCode.INVALID


def score_table(results: list[RunResult]) -> str:
    keys: list[str] = []
    for result in results:
        keys += [k for k in result.scores if k not in keys and k != "score"]
    header = ["task", "submission", "outcome", "seconds", "score"]
    rows = []
    for r in results:
        extra = ", ".join(f"{k}={r.scores[k]:.4g}" for k in keys if k in r.scores)
        score = f"{r.scores['score']:.6g}" if "score" in r.scores else "-"
        rows.append([r.task, r.submission, outcome(r)[0], f"{r.elapsed:.1f}", score, extra])
    widths = [max(len(str(row[i])) for row in rows + [header + [""]]) for i in range(len(header))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)) + "  other scores",
             "  ".join("-" * w for w in widths) + "  ------------"]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)) + "  " + row[-1] for row in rows]
    return "\n".join(lines)


#: The index's only script: a click on a column header sorts the rows by that column, numbers by value (the
#: cell's data-value), blanks last; a second click reverses. The index is local, never uploaded to Codabench.
SORT_SCRIPT = """<script>
document.querySelectorAll('th').forEach(function (th, column) {
  th.addEventListener('click', function () {
    var body = th.closest('table').tBodies[0], rows = Array.from(body.rows);
    var down = th.dataset.order !== 'up';
    th.dataset.order = down ? 'up' : 'down';
    function key(row) {
      var cell = row.cells[column];
      return cell.dataset.value !== undefined ? parseFloat(cell.dataset.value) : cell.textContent;
    }
    rows.sort(function (a, b) {
      var x = key(a), y = key(b);
      if (x === '' || y === '') return (x === '') - (y === '');
      var order = typeof x === 'number' ? x - y : x.localeCompare(y);
      return down ? order : -order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  });
});
</script>"""


def _number_cell(value: float | None, style: str = ".6g") -> str:
    """A cell that sorts by value: blank when absent."""
    if value is None:
        return "<td></td>"
    return f"<td data-value='{value!r}'>{value:{style}}</td>"


def write_index(out: Path, results: list[RunResult]) -> Path:
    """out/index.html: every run's task, submission, outcome, wall time, each score key in a column of its
    own (blank when the run has none) and a link to its detailed_results.html; a click on a header sorts."""
    out.mkdir(parents=True, exist_ok=True)
    keys = ["score"]
    for result in results:
        keys += [k for k in result.scores if k not in keys]
    rows = []
    for r in results:
        page = scoring_output(r.run_dir) / PAGE
        link = (f"<a href='{html.escape(os.path.relpath(page, out))}'>report</a>" if page.is_file() else "")
        rows.append(f"<tr><td>{html.escape(r.task)}</td><td>{html.escape(r.submission)}</td>"
                    f"<td>{html.escape(outcome(r)[0])}</td>{_number_cell(r.elapsed, '.1f')}"
                    + "".join(_number_cell(r.scores.get(k)) for k in keys) + f"<td>{link}</td></tr>")
    header = ["task", "submission", "outcome", "seconds", *keys, "detailed results"]
    index = out / "index.html"
    index.write_text(
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>codascore demo</title>"
        "<style>body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccd;padding:.3em .7em}th{background:#eef1f7;cursor:pointer}"
        "td[data-value]{text-align:right}</style></head><body>"
        "<h1>codascore demo: every sample submission, scored as Codabench would</h1>"
        "<p>Click a column header to sort by it (again to reverse); seconds is each run's wall time.</p><table>"
        "<thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr></thead><tbody>"
        + "".join(rows) + "</tbody></table>" + SORT_SCRIPT + "</body></html>\n")
    return index
