"""Command line: ``codascore <verb> [TASK] ...`` (or ``python -m codascore``).

One grammar: a verb, then the task it concerns when it concerns one, then its files; a family's own verbs
live under the family's name (``codascore uai update-best``). Each verb is a class of codascore/commands/
(a family's, of its cli.py) holding its options and its ``run``. A command raises; :func:`main` prints what
was wrong and what to do in one or two lines, and exits with the code codascore/outcomes.py gives the error
(``--debug``, after any verb, shows the traceback instead). docs/architecture.md#exit-codes
"""

from __future__ import annotations

import argparse
import importlib
import sys

from . import __version__
from .commands import COMMANDS, Parser
from .commands.base import task_names_text
from .outcomes import ExitCode, exit_code_of_error, one_line
from .registry import FAMILIES

DESCRIPTION = ("Score submissions to four scientific-ML challenges (weak lensing, Ariel 2023, SRBench 2022, UAI "
               "2022) as their organisers documented them, run them on your machine as Codabench's worker does, "
               "and build and check the competition bundles.")


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, run its verb, and give the exit code of how it ended: the verb's own, or the
    one its error maps to (codascore.outcomes), told in one or two lines (the traceback with --debug)."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.command().run(args))
    except (Exception, KeyboardInterrupt) as exc:
        if getattr(args, "debug", False):
            raise
        return int(tell(exc, args.verb))


def tell(exc: BaseException, verb: str) -> ExitCode:
    """Print what stopped a command, for a person, and return its exit code."""
    if isinstance(exc, ModuleNotFoundError) and left_out_of_wheel(exc):
        print(f"error: codascore {verb} needs the data generators, which the participants' wheel leaves out "
              f"(docs/participants.md#installing-codascore)\nfor it, install codascore from a clone of the "
              f"repository: pip install -e .", file=sys.stderr)
        return ExitCode.ORGANISER_ERROR
    code = exit_code_of_error(exc)
    if code is ExitCode.BUG:  # still no traceback unless asked for, but said to be one
        print(f"error: {type(exc).__name__}: {one_line(exc)}\nthis is a bug in codascore: run the command again "
              f"with --debug and report its traceback", file=sys.stderr)
    elif code is ExitCode.INTERRUPTED:
        print("interrupted", file=sys.stderr)
    else:
        print(f"error: {error_text(exc)}", file=sys.stderr)
    return code


def error_text(exc: BaseException) -> str:
    """An error in one line (outcomes.one_line), but a message's second line, what to do, stays its own."""
    lines = [line for line in str(exc).splitlines() if line.strip()]
    if isinstance(exc, OSError) or len(lines) < 2:
        return one_line(exc)
    return "\n".join(" ".join(line.split()) for line in lines)


def left_out_of_wheel(exc: ModuleNotFoundError) -> bool:
    """Whether exc is the import of a generation module, which the participants' wheel leaves out."""
    from .registry import GENERATION_MODULES

    return exc.name in {"codascore." + name.removesuffix(".py").replace("/", ".") for name in GENERATION_MODULES}


def main_epilog() -> str:
    return (f"common commands:\n"
            f"  codascore run TASK SUBMISSION   score a submission (zip or folder) on your machine, as Codabench does\n"
            f"  codascore validate TASK SUBMISSION  check a submission's format, without the reference data\n"
            f"  codascore pack TASK FOLDER -r requirements.txt  zip a code submission with the PyPI packages it needs\n"
            f"  codascore reference [TASK ...]  make the demo's reference data and sample submissions\n"
            f"  codascore bundle [NAME ...]     build the competition bundles into dist/\n"
            f"  codascore check BUNDLE          check a bundle before uploading it\n"
            f"  codascore judge TASK SUBMISSIONS --out OUT  judge every team again on a Dask cluster\n"
            f"  codascore leaderboard JUDGEMENT --out DIR  the final ranking, with how sure each rank is\n"
            f"  codascore upload BUNDLE --site URL  upload a bundle to a Codabench site\n"
            f"  codascore fetch --site URL --phase ID OUT  download every submission of a phase, resumably\n\n"
            f"{task_names_text()}\n"
            f"'codascore VERB --help' explains a verb; --debug shows an error's traceback.")


def build_parser() -> argparse.ArgumentParser:
    """The parser of every verb: the core commands, then each family's present in this installation."""
    parser = Parser(prog="codascore", description=DESCRIPTION, epilog=main_epilog)
    parser.add_argument("--version", action="version", version=f"codascore {__version__}")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for command in COMMANDS + family_commands():
        command.add_to(verbs)
    return parser


def family_commands() -> tuple:
    """The COMMANDS of every family's cli.py; a family this build lacks has none."""
    found: tuple = ()
    for family, package in FAMILIES.items():
        try:
            module = importlib.import_module(f"{package}.cli")
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith(package):
                continue
            raise
        found += tuple(module.COMMANDS)
    return found
