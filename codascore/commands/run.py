"""``codascore run TASK SUBMISSION``: one submission through the worker's steps, on this machine."""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError
from ..outcomes import ExitCode, exit_code_of
from ..progress import DISPLAY
from .base import Command, add_environment_options, add_task_and_submission, environment_settings, \
    tasks_epilog

RUN_ROOT_HELP = ("project folder holding scoring_program/ and reference_data/ (default: the installed "
                 "project's)")


class Run(Command):
    name = "run"
    description = ("Run the prediction and scoring steps of one submission as Codabench's compute worker "
                   "does, and print its scores and the report's path.")
    epilog = tasks_epilog("codascore run uai.pr sample_submissions/uai.pr/exact")

    @classmethod
    def add_options(cls, parser):
        add_task_and_submission(parser)
        parser.add_argument("--out", help="run folder (default: a new folder runs/TASK/SUBMISSION[-N]); an "
                                          "existing one is emptied only if it is a run folder")
        parser.add_argument("--root", default=None, help=RUN_ROOT_HELP)
        parser.add_argument("--time-limit", type=float, help="seconds per step (default: the phase's limit)")
        parser.add_argument("--python", metavar="PATH",
                            help="interpreter that runs python3/python in the metadata commands, e.g. a Python "
                                 "3.12 environment like the image's (default: the one running codascore)")
        add_environment_options(parser, "the submission's", "runs/environments")
        parser.add_argument("--docker", metavar="IMAGE", help="run each step in this Docker image, as the worker "
                                                              "does (the image must be present)")
        parser.add_argument("--no-sandbox", action="store_true",
                            help="run the steps as plain processes, not in a bubblewrap sandbox (a warning says so)")
        parser.add_argument("--no-network", action="store_true",
                            help="no network in the steps (the worker's COMPETITION_CONTAINER_NETWORK_DISABLED="
                                 "True; its default gives them the network)")

    def run(self, args) -> ExitCode:
        from .. import containers
        from ..errors import RunnerError
        from ..runner import format_run, interpreter, run
        from ..runner.view import TerminalView

        try:
            python = interpreter(args.python) if args.python else None
        except RunnerError as exc:
            raise UsageError(f"--python: {exc}") from None
        settings = environment_settings(args)
        if settings is not None:
            if python or args.docker:
                raise UsageError("--team-environment builds the interpreter: not with --python or --docker")
            python = submission_environment(args.task, Path(args.submission), settings)
        try:
            container = containers.choose(args.docker, sandbox=not args.no_sandbox, python=python,
                                          network=not args.no_network)
        except RunnerError as exc:
            raise UsageError(str(exc)) from None
        if not container.isolated:
            DISPLAY.tell(containers.UNISOLATED_WARNING)
        result = run(args.task, Path(args.submission), Path(args.out) if args.out else None,
                     root=Path(args.root) if args.root else None, time_limit=args.time_limit, python=python,
                     container=container, observer=TerminalView())
        print(format_run(result))
        if result.scored:
            from ..formats.outputs import PAGE
            from ..formats.run_folder import scoring_output

            print(f"report: {scoring_output(result.run_dir) / PAGE}")
        return exit_code_of(result.outcome)


def submission_environment(task, submission: Path, settings) -> str | None:
    """The interpreter of the submission's environment (codascore.environments, as the judge builds a team's,
    the submission's name standing for the team's), built or reused below the settings' cache or
    runs/environments; the judge's own when the submission declares none."""
    from ..environments import team_environment

    entry = task.code_entry
    team = submission.stem if submission.is_file() else submission.name
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    environment = team_environment(team, submission, entry.file if entry else None, settings,
                                   settings.cache or Path("runs") / "environments", say)
    if environment is None:
        say(f"{team}: no environment declared (requirements.txt, environment.yml, .python-version): the steps "
            "run under this Python")
        return None
    say(f"environment of {team}: {'built' if environment.built else 'reused'}: {environment.summary}")
    return environment.python

