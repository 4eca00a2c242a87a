"""The pages: for one results sample per task, the time to score it (read, validate, score) against the
time to draw its page (Task.report and render_page), the page's size and its number of figures. The page
is drawn after the scores are final, and Codabench uploads it while the step runs; its time still counts
against the scoring step's limit."""

from __future__ import annotations

import contextlib
import io
import time
from pathlib import Path

from common import median_time, print_table

from codascore.competition import project_root, read_task_config
from codascore.registry import all_tasks
from codascore.report import render_page


def first_results_sample(task, samples: Path) -> Path | None:
    """The task's first sample that is a results submission expected to score (code samples are named
    code_*)."""
    for sample in sorted(p for p in samples.iterdir() if p.is_dir()):
        if not task.expected_to_fail(sample.name) and not sample.name.startswith("code"):
            return sample
    return None


def main() -> None:
    root = project_root()
    rows = []
    for name in all_tasks():
        task, config = read_task_config(root / "reference_data" / name, "reference data")
        sample = first_results_sample(task, root / "sample_submissions" / name)
        if sample is None:
            continue
        reference = task.load_reference(root / "reference_data" / name, config)

        def scored():
            with contextlib.redirect_stderr(io.StringIO()):  # the scorer's progress lines, not the table's
                return task.score(reference, task.load_submission(sample, reference, config), config)

        submission = task.load_submission(sample, reference, config)
        result = scored()

        def page() -> str:
            sections = task.report(result, reference, submission, config)
            return render_page(task.title, task.name, result.scores, result.warnings, sections,
                               guide=task.score_guide(config))

        text = page()
        repeat = 3 if name != "srbench.synthetic" else 1
        started = time.perf_counter()
        score_time = median_time(scored, repeat=repeat, warmup=0)
        page_time = median_time(page, repeat=repeat, warmup=0)
        rows.append((name, sample.name, f"{score_time:.2f}", f"{page_time:.2f}", f"{len(text) / 1024:.0f}",
                     text.count("<img "), f"{time.perf_counter() - started:.0f}"))
    print_table(rows, ("task", "sample", "score s", "page s", "page KiB", "figures", "bench s"))


if __name__ == "__main__":
    main()
