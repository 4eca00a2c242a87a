"""``codascore demo``: every sample submission through the local runner (codascore.demo)."""

from __future__ import annotations

from pathlib import Path

from ..outcomes import ExitCode
from .base import ROOT_HELP, Command, task_name, task_names_text


class Demo(Command):
    name = "demo"
    epilog = staticmethod(task_names_text)

    @classmethod
    def add_options(cls, parser):
        parser.add_argument("--out", default="demo", help="folder for the runs, reports and index.html")
        parser.add_argument("--root", default=".", help=ROOT_HELP)
        parser.add_argument("--tasks", nargs="*", type=task_name, metavar="TASK", help="only these tasks")

    def run(self, args) -> ExitCode:
        from ..demo import run_demo

        return ExitCode(run_demo(Path(args.out), root=Path(args.root), tasks=[task.name for task in args.tasks] if args.tasks else None))
