"""``codascore validate TASK SUBMISSION``: a submission's format, checked without the reference data."""

from __future__ import annotations

import sys
from pathlib import Path

from ..outcomes import ExitCode
from .base import Command, add_task_and_submission, tasks_epilog


class Validate(Command):
    name = "validate"
    description = ("Check a result submission's files (names, structure, types, finite values, shapes) as far "
                   "as that is possible without the reference data: exit 0 and one line when they are "
                   "well-formed, exit 1 listing every problem. What only the reference knows (counts, instance "
                   "names) is checked when scored (codascore run).")
    epilog = tasks_epilog("codascore validate uai.pr my_submission.zip")

    @classmethod
    def add_options(cls, parser):
        add_task_and_submission(parser)

    def run(self, args) -> ExitCode:
        from ..errors import SubmissionError
        from ..sandbox import check_submission_format

        task = args.task
        try:
            summary, warnings = check_submission_format(task, Path(args.submission))
        except SubmissionError as exc:
            more = exc.total - len(exc.problems)
            print(f"INVALID {task.name} submission {args.submission}: {exc.total} problem(s)", file=sys.stderr)
            for problem in exc.problems + ([f"... and {more} more"] if more > 0 else []):
                print(f"  {problem}", file=sys.stderr)
            return ExitCode.INVALID
        for warning in warnings:
            print(f"warning: {warning}", file=sys.stderr)
        print(f"OK {task.name} submission {args.submission}: {summary}")
        return ExitCode.OK
