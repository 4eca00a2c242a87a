"""``codascore judge TASK SUBMISSIONS --out OUT``: every team's submission judged again on a Dask cluster,
resumably (docs/judge.md); its own verbs ``codascore judge phase BUNDLE PHASE SUBMISSIONS --out OUT`` (the
tasks of a bundle's phase in turn) and ``codascore judge status OUT`` (where a judgement stands, running
nothing: it reads the judgement's folder through codascore.formats and imports no judge)."""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError
from ..outcomes import ExitCode
from ..progress import DISPLAY
from .base import Command, Moved, add_environment_options, environment_settings, task_names_text

PHASE_FORM = "codascore judge phase BUNDLE PHASE SUBMISSIONS --out OUT"
SUBMISSIONS_HELP = "folder of the teams' submissions: one sub-folder or zip per team, named after the team"
OUT_HELP = "the judgement's folder: judge.sqlite, runs/, results.csv"


def add_judging_options(parser) -> None:
    """Where and how the units run: the options of a task's judgement and of a phase's."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, metavar="N",
                       help="worker processes of a local Dask cluster (default: one per core)")
    where.add_argument("--scheduler", metavar="ADDRESS", help="a running Dask scheduler, e.g. tcp://host:8786")
    where.add_argument("--cluster", metavar="FILE",
                       help="a batch system's cluster through dask-jobqueue, described in a YAML file "
                            "(docs/judge.md#clusters)")
    parser.add_argument("--retries", type=int, default=2,
                        help="attempts after the first for a unit whose worker died (default 2)")
    parser.add_argument("--time-limit", type=float, metavar="SECONDS", help="seconds per step (default: the phase's)")
    parser.add_argument("--profile", metavar="NAME",
                        help="the organisers' budgets of a judging, e.g. official2022: code submissions run as "
                             "their jobs, e.g. one UAI solver run per instance and time limit "
                             "(docs/judge.md#profiles)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                        help="a value of the task's budget (a YAML value), over the profile's; repeatable, e.g. "
                             "--set time_limits=[20] --set memory=4000000000")
    add_environment_options(parser, "each team's", "OUT/environments")
    parser.add_argument("--import-time-limit", type=float, default=None, metavar="SECONDS",
                        help="seconds the import check of a code submission judged in parts may take, once per "
                             "team and environment (default 600; docs/judge.md#the-import-check)")


def judging(args) -> dict:
    """The keyword arguments of judge() and judge_phase() from the judging options, checked."""
    from .reference import parameters

    if not Path(args.submissions).is_dir():
        raise UsageError(f"{args.submissions}: no such folder (one sub-folder or zip per team)")
    if args.retries < 0 or (args.workers is not None and args.workers < 1):
        raise UsageError("--retries must be 0 or more, --workers 1 or more")
    options = dict(workers=args.workers, scheduler=args.scheduler, retries=args.retries, progress=DISPLAY.say,
                   cluster_file=Path(args.cluster) if args.cluster else None, time_limit=args.time_limit,
                   profile=args.profile, overrides=parameters(args.overrides),
                   environments=environment_settings(args))
    if args.import_time_limit is not None:
        if args.import_time_limit <= 0:
            raise UsageError("--import-time-limit must be a positive number of seconds")
        options["import_time_limit"] = args.import_time_limit
    return options


def report(summaries) -> ExitCode:
    """Each task's counts, the results' path; exit 0 when every unit has a result, 1 when some were lost."""
    for summary in summaries:
        counts = ", ".join(f"{count} {state}" for state, count in summary.counts.items() if count)
        print(f"{summary.task}: {summary.total} units ({counts}); {summary.ran} run now in "
              f"{summary.elapsed:.1f} s; {len(summary.skipped)} entries skipped")
    print(f"results: {summaries[-1].results}")
    return ExitCode.OK if all(summary.finished for summary in summaries) else ExitCode.INVALID


class JudgeStatus(Command):
    name = "status"
    help = "where a judgement stands (the units' states per team), running nothing"
    description = ("Print the units' states per task and team of the judgement in OUT, the totals and the "
                   "entries skipped, read from OUT/judge.sqlite (read only) without running anything.")
    epilog = "example: codascore judge status judgement"

    @classmethod
    def add_options(cls, parser):
        parser.add_argument("out", metavar="OUT", help="the judgement's folder (the --out of codascore judge)")

    def run(self, args) -> ExitCode:
        from ..formats.judgement import Judgement, status_table

        with Judgement.open(Path(args.out)) as judgement:
            print(status_table(judgement))
        return ExitCode.OK


class JudgePhase(Command):
    name = "phase"
    help = "judge the tasks of a bundle's phase in turn, with its time limit, the bundle as the root"
    description = ("Judge every team on each task of a bundle's phase in turn, into one judgement (one "
                   "judge.sqlite, one results.csv), on one cluster, with the phase's time limit; the bundle "
                   "(a competition YAML, a bundle folder or its zip) holds the programs and the data.")
    epilog = "example: codascore judge phase dist/uai.zip Final final_submissions --out judgement"

    @classmethod
    def add_options(cls, parser):
        parser.add_argument("bundle", metavar="BUNDLE", help="a competition YAML, a bundle folder or its zip")
        parser.add_argument("phase", metavar="PHASE", help="the phase: its index (0 first) or its name")
        parser.add_argument("submissions", metavar="SUBMISSIONS", help=SUBMISSIONS_HELP)
        parser.add_argument("--out", required=True, help=OUT_HELP)
        add_judging_options(parser)

    def run(self, args) -> ExitCode:
        options = judging(args)
        from ..judge.phases import judge_phase

        return report(judge_phase(Path(args.bundle), args.phase, Path(args.submissions), Path(args.out), **options))


class Judge(Command):
    name = "judge"
    description = ("Run every team's submission (one folder or zip per team in SUBMISSIONS) through the "
                   "worker's steps on a Dask cluster, record every attempt and result in OUT/judge.sqlite and "
                   "write OUT/results.csv. Killed at any moment, the same command runs only what is "
                   "unfinished; a changed submission or reference data is judged again. Exit 0 when every "
                   "unit has a result, 1 when some were lost to the cluster (run it again).")
    own_verbs = (JudgePhase, JudgeStatus)

    @staticmethod
    def epilog() -> str:
        return (f"{task_names_text()}\nexample: codascore judge uai.pr final_submissions --out judgement "
                f"--root private")

    @classmethod
    def add_options(cls, parser):
        parser.add_argument("task", metavar="TASK", help="the task to judge")
        parser.add_argument("submissions", metavar="SUBMISSIONS", help=SUBMISSIONS_HELP)
        parser.add_argument("--out", required=True, help=OUT_HELP)
        parser.add_argument("--root", help="project folder holding the programs and the private data "
                                           "(default: the installed project's)")
        add_judging_options(parser)
        # The forms before the verbs of its own: each says the new form and exits (docs/judge.md).
        parser.add_argument("--status", action=Moved, new_form="codascore judge status {}")
        parser.add_argument("--bundle", action=Moved, new_form=PHASE_FORM.replace("BUNDLE", "{}", 1))
        parser.add_argument("--phase", action=Moved, new_form=PHASE_FORM.replace("PHASE", "{}", 1))

    def run(self, args) -> ExitCode:
        options = judging(args)
        from ..judge import judge

        return report([judge(Path(args.submissions), args.task, Path(args.out),
                             root=Path(args.root) if args.root else None, **options)])
