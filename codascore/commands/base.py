"""What every verb of the command line shares: the :class:`Command` a verb is (its options beside its
``run``), the :class:`Group` of a family's own verbs, the argparse :class:`Parser` with this command line's
conventions, and the argparse types of its arguments.

A command raises on anything wrong; :func:`codascore.cli.main` turns the error into one or two lines and
its exit code (codascore/outcomes.py, the one map).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ReferenceDataError
from ..outcomes import ExitCode

if TYPE_CHECKING:
    from ..task import Task

ROOT_HELP = "project folder holding competition.yaml, the programs and the data (default: the current folder)"


class Parser(argparse.ArgumentParser):
    """argparse with this command line's conventions, for every verb: --debug and --quiet accepted before
    or after any verb, a wrong command line told in two lines (what was wrong, where the help is), an
    epilog that may be a function, called only when the help is shown, and verbs of its own beside the
    verb's own form (``codascore judge status OUT`` beside ``codascore judge TASK SUBMISSIONS``), chosen by
    the first word after the verb."""

    def __init__(self, *args, summary: str = "", **kwargs):
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)
        self.summary = summary  # its line in the help of the verb it belongs to
        self.own_verbs: dict[str, Parser] = {}
        # SUPPRESS: a verb's parser leaves alone the value the top-level one set.
        self.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                          help="on an error, show its traceback instead of one line")
        self.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                          help="show no progress (warnings, errors and results still print)")

    def error(self, message: str):
        self.exit(int(ExitCode.ORGANISER_ERROR), f"{self.prog}: error: {message}\nsee: {self.prog} --help\n")

    def parse_known_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        if args and args[0] in self.own_verbs:
            return self.own_verbs[args[0]].parse_known_args(args[1:], namespace)
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        if callable(self.epilog):
            self.epilog = self.epilog()
        text = super().format_help()
        if self.own_verbs:
            width = max(len(parser.prog) for parser in self.own_verbs.values())
            text += "\nverbs of their own (each with --help):\n" + "".join(
                f"  {parser.prog:<{width}}  {parser.summary}\n" for parser in self.own_verbs.values())
        return text


class VerbParser(Parser):
    """A verb's parser that imports its command and takes its options only when it is used (parsed, or its
    help shown), as pip loads a command: the top-level help lists every verb without importing one. load:
    the verb's Command class, imported."""

    def __init__(self, *args, load: Callable[[], type[Command]], **kwargs):
        super().__init__(*args, **kwargs)
        self.load: Callable[[], type[Command]] | None = load

    def take_options(self) -> None:
        if self.load is not None:
            command, self.load = self.load(), None
            command.fill(self)

    def parse_known_args(self, args=None, namespace=None):
        self.take_options()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self.take_options()
        return super().format_help()


class Moved(argparse.Action):
    """An option of a form the command line no longer has: given, it prints the new form in one line
    (new_form, with ``{}`` standing for the option's value) and exits with the usage code."""

    def __init__(self, option_strings, dest, new_form: str, nargs=None, **kwargs):
        super().__init__(option_strings, dest, nargs=nargs, default=argparse.SUPPRESS, help=argparse.SUPPRESS,
                         **kwargs)
        self.new_form = new_form

    def __call__(self, parser, namespace, values, option_string=None):
        parser.exit(int(ExitCode.ORGANISER_ERROR),
                    f"{parser.prog} {option_string} is now a verb of its own: {self.new_form.format(values)}\n")


class Command:
    """One verb: its texts, its options (:meth:`add_options`) and what it does (:meth:`run`), which returns
    its exit code and raises on anything wrong. A core verb's summary is its line in commands.VERBS (read
    without importing the verb); ``help`` is the summary of a family's verb or of a verb's own verbs."""

    name: str = ""
    help: str = ""
    description: str | None = None
    #: text after the options, or a function giving it (called only when the help is shown)
    epilog: str | Callable[[], str] | None = None
    #: verbs of its own beside its own form, chosen by the first word after the verb (``judge status``)
    own_verbs: tuple[type[Command], ...] = ()

    @classmethod
    def add_options(cls, parser: argparse.ArgumentParser) -> None:
        """The verb's arguments and options."""

    def run(self, args: argparse.Namespace) -> ExitCode:
        raise NotImplementedError

    @classmethod
    def fill(cls, parser: Parser) -> None:
        """Make parser this verb's: its texts, its options, its own verbs; parsing it sets args.command to
        this class."""
        parser.description, parser.epilog = cls.description or parser.summary or None, cls.epilog
        cls.add_options(parser)
        parser.set_defaults(command=cls)
        for verb in cls.own_verbs:
            own = Parser(prog=f"{parser.prog} {verb.name}", summary=verb.help)
            verb.fill(own)
            parser.own_verbs[verb.name] = own

    @classmethod
    def add_to(cls, subparsers) -> argparse.ArgumentParser:
        """This verb's parser among subparsers (a family's verbs, already imported)."""
        parser = subparsers.add_parser(cls.name, help=cls.help)
        cls.fill(parser)
        return parser


class Group(Command):
    """A family's own verbs under the family's name (``codascore uai update-best``): a verb is required."""

    commands: tuple[type[Command], ...] = ()

    @classmethod
    def add_options(cls, parser):
        verbs = parser.add_subparsers(dest=f"{cls.name}_command", required=True, parser_class=Parser)
        for command in cls.commands:
            command.add_to(verbs)


def task_names_text() -> str:
    """The task names, read without importing a family (registry.TASK_NAMES)."""
    from ..registry import task_names

    return "tasks: " + ", ".join(task_names())


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

