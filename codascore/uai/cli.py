"""``codascore uai ...``: fold new best answers back into reference data.

    codascore uai update-best REF_DIR DETAILS_JSON [DETAILS_JSON ...]

Reference data from a folder of models is the core verb: ``codascore build-reference uai.pr MODELS_DIR OUT``.
"""

from __future__ import annotations

from pathlib import Path

from ..commands.base import Command, Group
from ..outcomes import ExitCode
from .best_known import update_best


class UpdateBest(Command):
    name = "update-best"
    help = ("fold better MPE/MMAP answers reported in details.json files (scoring outputs) into a reference "
            "folder, after re-checking them")

    @classmethod
    def add_options(cls, parser):
        parser.add_argument("ref_dir", metavar="REF_DIR", help="the reference folder of a uai.mpe or uai.mmap "
                                                               "task (holding reference.json), updated in place")
        parser.add_argument("details", nargs="+", metavar="DETAILS_JSON",
                            help="details.json files the scorer wrote for scored submissions (their new best "
                                 "answers)")

    def run(self, args) -> ExitCode:
        changes = update_best(Path(args.ref_dir), [Path(p) for p in args.details])
        for line in changes:
            print(line)
        print(f"{len(changes)} best answer(s) updated")
        return ExitCode.OK


class Uai(Group):
    name = "uai"
    commands = (UpdateBest,)


COMMANDS = (Uai,)
