"""What every verb of the command line shares: the :class:`Command` a verb is (its options beside its
``run``), the :class:`Group` of a family's own verbs, the argparse :class:`Parser` with this command line's
conventions, and the argparse types of its arguments.

A command raises on anything wrong; :func:`codascore.cli.main` turns the error into one or two lines and
its exit code (codascore/outcomes.py, the one map).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from ..errors import ReferenceDataError
from ..outcomes import ExitCode
from ..task import Task

ROOT_HELP = "project folder holding competition.yaml, the programs and the data (default: the current folder)"


class Parser(argparse.ArgumentParser):
    """argparse with this command line's conventions, for every verb: --debug accepted after any verb, a
    wrong command line told in two lines (what was wrong, where the help is), and an epilog that may be a
    function, called only when the help is shown (the task list imports every family)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)
        # SUPPRESS: a verb's parser leaves alone the value the top-level one set.
        self.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                          help="on an error, show its traceback instead of one line")

    def error(self, message: str):
        self.exit(int(ExitCode.ORGANISER_ERROR), f"{self.prog}: error: {message}\nsee: {self.prog} --help\n")

    def format_help(self) -> str:
        if callable(self.epilog):
            self.epilog = self.epilog()
        return super().format_help()


class Command:
    """One verb: its name and texts, its options (:meth:`add_options`) and what it does (:meth:`run`),
    which returns its exit code and raises on anything wrong."""

    name: str = ""
    help: str = ""
    description: str | None = None
    #: text after the options, or a function giving it (called only when the help is shown)
    epilog: str | Callable[[], str] | None = None

    @classmethod
    def add_options(cls, parser: argparse.ArgumentParser) -> None:
        """The verb's arguments and options."""

    def run(self, args: argparse.Namespace) -> ExitCode:
        raise NotImplementedError

    @classmethod
    def add_to(cls, subparsers) -> argparse.ArgumentParser:
        """This verb's parser among subparsers; parsing it sets args.command to this class."""
        parser = subparsers.add_parser(cls.name, help=cls.help, description=cls.description, epilog=cls.epilog)
        cls.add_options(parser)
        parser.set_defaults(command=cls)
        return parser


class Group(Command):
    """A family's own verbs under the family's name (``codascore uai update-best``)."""

    commands: tuple[type[Command], ...] = ()

    @classmethod
    def add_to(cls, subparsers) -> argparse.ArgumentParser:
        parser = subparsers.add_parser(cls.name, help=cls.help, description=cls.description, epilog=cls.epilog)
        verbs = parser.add_subparsers(dest=f"{cls.name}_command", required=True)
        for command in cls.commands:
            command.add_to(verbs)
        return parser


def task_names_text() -> str:
    from ..registry import all_tasks

    return "tasks: " + ", ".join(all_tasks())


def tasks_epilog(example: str) -> Callable[[], str]:
    """A verb's epilog: the task names (listed only when the help is shown) and one example command."""
    return lambda: f"{task_names_text()}\nexample: {example}"


def add_task_and_submission(parser: argparse.ArgumentParser) -> None:
    """The TASK and SUBMISSION arguments of the verbs that take one submission of one task."""
    parser.add_argument("task", type=task_name, metavar="TASK",
                        help="task name, e.g. weak_lensing.phase1 (listed below)")
    parser.add_argument("submission", type=existing_path, metavar="SUBMISSION", help="submission zip or folder")


def task_name(text: str) -> Task:
    """argparse type of a TASK argument: the task, looked up once here and handed on as it is; an unknown
    name is a usage error naming the closest known one."""
    from ..registry import get_task

    try:
        return get_task(text)
    except ReferenceDataError as exc:  # an unknown name, or a family this installation lacks
        raise argparse.ArgumentTypeError(str(exc)) from None


def existing_path(text: str) -> str:
    """argparse type of a file or folder that must exist (a submission): refused before anything is made."""
    if not Path(text).exists():
        raise argparse.ArgumentTypeError(f"{text}: no such file or folder")
    return text


def add_environment_options(parser, whose: str, cache: str) -> None:
    """--team-environment(s) and --environments FILE: build a team's declared environment with uv and run its
    code there (docs/judge.md#environments)."""
    flag = "--team-environments" if whose.startswith("each") else "--team-environment"
    parser.add_argument(flag, action="store_true", dest="team_environments",
                        help=f"build {whose} declared environment (requirements.txt or environment.yml's pip "
                             f"part, .python-version or environment.yml's python) with uv, binary wheels only, "
                             f"cached in {cache}, and run its code under it (docs/judge.md#environments)")
    parser.add_argument("--environments", metavar="FILE",
                        help=f"the organiser's environments file (YAML: cache, interpreters, allow_sdists, "
                             f"environments, teams); implies {flag}")


def environment_settings(args):
    """The environments' settings the command line asks for (codascore.environments.Settings), or None."""
    if not (args.team_environments or args.environments):
        return None
    from ..environments import Settings

    return Settings.read(Path(args.environments)) if args.environments else Settings()

