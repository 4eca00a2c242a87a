"""``codascore score`` and ``codascore ingest``: the scoring and ingestion programs Codabench runs
(score.py and ingest.py call them; docs/codabench.md)."""

from __future__ import annotations

from ..outcomes import ExitCode
from .base import Command


class Score(Command):
    name = "score"
    description = ("The scoring program Codabench runs (score.py calls it). Exit codes: 0 scored, 1 invalid "
                   "submission, 2 organiser error. docs/codabench.md")

    @classmethod
    def add_options(cls, parser):
        parser.add_argument("input", metavar="INPUT", help="folder holding ref/ (the task's reference data, "
                                                           "with its task.yaml) and res/ (the submission's files)")
        parser.add_argument("output", metavar="OUTPUT", help="folder that receives scores.json, details.json "
                                                             "and detailed_results.html")

    def run(self, args) -> ExitCode:
        from ..codabench import score_main

        return ExitCode(score_main([args.input, args.output]))


class Ingest(Command):
    name = "ingest"
    description = ("The ingestion program Codabench runs for code submissions (ingest.py calls it): it runs "
                   "the participant's code and writes the files a results submission would hold.")

    @classmethod
    def add_options(cls, parser):
        for name, text in (("input_data", "the task's input data (with its task.yaml)"),
                           ("output", "folder that receives the result files (the scoring step's res/)"),
                           ("program", "the ingestion program's own folder"),
                           ("submission", "the participant's code submission, unzipped")):
            parser.add_argument(name, metavar=name.upper(), help=text)

    def run(self, args) -> ExitCode:
        from ..codabench import ingest_main

        return ExitCode(ingest_main([args.input_data, args.output, args.program, args.submission]))
