"""``codascore judge TASK SUBMISSIONS --out OUT``: every team's submission judged again on a Dask cluster,
resumably (docs/judge.md); ``codascore judge --status OUT``: where a judgement stands, running nothing."""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import UsageError
from ..outcomes import ExitCode
from .base import Command, task_names_text
from .reference import parameters


class Judge(Command):
    name = "judge"
    help = "judge every team again on the private data, on a Dask cluster, resumably (docs/judge.md)"
    description = ("Run every team's submission (one folder or zip per team in SUBMISSIONS) through the "
                   "worker's steps on a Dask cluster, record every attempt and result in OUT/judge.sqlite and "
                   "write OUT/results.csv. Killed at any moment, the same command runs only what is "
                   "unfinished; a changed submission or reference data is judged again. Exit 0 when every "
                   "unit has a result, 1 when some were lost to the cluster (run it again).")

    @staticmethod
    def epilog() -> str:
        return (f"{task_names_text()}\nexamples: codascore judge uai.pr final_submissions --out judgement "
                f"--root private\n          codascore judge --status judgement")

    @classmethod
    def add_options(cls, parser):
        parser.add_argument("task", nargs="?", metavar="TASK", help="the task to judge (not with --bundle)")
        parser.add_argument("submissions", nargs="?", metavar="SUBMISSIONS",
                            help="folder of the teams' submissions: one sub-folder or zip per team, named "
                                 "after the team")
        parser.add_argument("--out", help="the judgement's folder: judge.sqlite, runs/, results.csv")
        parser.add_argument("--bundle", metavar="PATH", help="a competition YAML, bundle folder or zip: judge "
                                 "the tasks of its --phase in turn, with its time limit, the bundle as the root")
        parser.add_argument("--phase", metavar="N", help="the bundle's phase: its index (0 first) or its name")
        parser.add_argument("--status", metavar="OUT", help="print the states of the judgement in OUT and exit")
        parser.add_argument("--root", help="project folder holding the programs and the private data "
                                           "(default: the installed project's)")
        where = parser.add_mutually_exclusive_group()
        where.add_argument("--workers", type=int, metavar="N",
                           help="worker processes of a local Dask cluster (default: one per core)")
        where.add_argument("--scheduler", metavar="ADDRESS", help="a running Dask scheduler, e.g. tcp://host:8786")
        where.add_argument("--cluster", metavar="FILE",
                           help="a batch system's cluster through dask-jobqueue, described in a YAML file "
                                "(docs/judge.md#clusters)")
        parser.add_argument("--retries", type=int, default=2,
                            help="attempts after the first for a unit whose worker died while running it (default "
                                 "2; a unit lost before it started costs none)")
        parser.add_argument("--worker-timeout", type=float, metavar="SECONDS",
                            help="end the judgement when the cluster has had no worker this long (default: the "
                                 "cluster file's worker_timeout, else 600)")
        parser.add_argument("--unisolated", action="store_true",
                            help="run the teams' code even where no sandbox can isolate it (no bubblewrap): it "
                                 "can then read the private data; refused without this flag")
        parser.add_argument("--time-limit", type=float, metavar="SECONDS",
                            help="seconds per step (default: the phase's)")
        parser.add_argument("--profile", metavar="NAME",
                            help="the organisers' budgets of a judging, e.g. official2022: code submissions "
                                 "run as their jobs, e.g. one UAI solver run per instance and time limit "
                                 "(docs/judge.md#profiles)")
        parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                            help="a value of the task's budget (a YAML value), over the profile's; "
                                 "repeatable, e.g. --set time_limits=[20] --set memory=4000000000")

    def run(self, args) -> ExitCode:
        if args.status:
            if args.task or args.submissions or args.out:
                raise UsageError("--status OUT reads a judgement and runs nothing: give it alone")
            from ..judge import status

            print(status(Path(args.status)))
            return ExitCode.OK
        if args.bundle or args.phase is not None:  # the phase names the tasks: the one positional is SUBMISSIONS
            if not (args.bundle and args.phase is not None) or args.submissions or args.root:
                raise UsageError("--bundle PATH and --phase N go together, with SUBMISSIONS and no TASK or --root")
            args.task, args.submissions = None, args.task
        if not ((args.task or args.bundle) and args.submissions and args.out):
            raise UsageError("name the task, the submissions folder and --out OUT (or --status OUT alone)")
        if not Path(args.submissions).is_dir():
            raise UsageError(f"{args.submissions}: no such folder (one sub-folder or zip per team)")
        if args.retries < 0 or (args.workers is not None and args.workers < 1) or \
                (args.worker_timeout is not None and args.worker_timeout <= 0):
            raise UsageError("--retries must be 0 or more, --workers 1 or more, --worker-timeout above 0")
        from ..judge import judge
        from ..judge.phases import judge_phase

        say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
        where = dict(workers=args.workers, scheduler=args.scheduler, retries=args.retries, progress=say,
                     cluster_file=Path(args.cluster) if args.cluster else None, time_limit=args.time_limit,
                     profile=args.profile, overrides=parameters(args.overrides), unisolated=args.unisolated,
                     worker_timeout=args.worker_timeout)
        summaries = judge_phase(Path(args.bundle), args.phase, Path(args.submissions), Path(args.out), **where) \
            if args.bundle else [judge(Path(args.submissions), args.task, Path(args.out),
                                       root=Path(args.root) if args.root else None, **where)]
        for summary in summaries:
            counts = ", ".join(f"{count} {state}" for state, count in summary.counts.items() if count)
            print(f"{summary.task}: {summary.total} units ({counts}); {summary.ran} run now in "
                  f"{summary.elapsed:.1f} s; {len(summary.skipped)} entries skipped")
        print(f"results: {summaries[-1].results}")
        return ExitCode.OK if all(summary.finished for summary in summaries) else ExitCode.INVALID
