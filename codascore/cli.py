"""Command line: ``codascore <verb> [TASK] ...`` (or ``python -m codascore``).

One grammar: a verb, then the task it concerns when it concerns one, then its files; a family's own verbs
live under the family's name (``codascore uai update-best``), a verb's own verbs under the verb's
(``codascore judge status``). Each verb is a class of codascore/commands/ (a family's, of its cli.py)
holding its options and its ``run``, imported only when it is the one run (commands.VERBS). A command
raises; :func:`main` prints what was wrong and what to do in one or two lines, and exits with the code
codascore/outcomes.py gives the error (``--debug``, after any verb, shows the traceback instead; ``--quiet``
hides the progress, codascore.progress). docs/architecture.md#exit-codes
"""

from __future__ import annotations

import argparse
import sys

from . import __version__, progress
from .commands import VERBS, family_verbs
from .commands.base import Parser, VerbParser, task_names_text
from .outcomes import ExitCode, exit_code_of_error, one_line

DESCRIPTION = ("Score submissions to four scientific-ML challenges (weak lensing, Ariel 2023, SRBench 2022, UAI "
               "2022) as their organisers documented them, run them on your machine as Codabench's worker does, "
               "and build and check the competition bundles.")


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, run its verb, and give the exit code of how it ended: the verb's own, or the
    one its error maps to (codascore.outcomes), told in one or two lines (the traceback with --debug)."""
    args = build_parser().parse_args(argv)
    try:
        with progress.quiet(getattr(args, "quiet", False)):
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
            f"  codascore judge status OUT      where a judgement stands, running nothing\n"
            f"  codascore leaderboard JUDGEMENT --out DIR  the final ranking, with how sure each rank is\n"
            f"  codascore upload BUNDLE --site URL  upload a bundle to a Codabench site\n"
            f"  codascore fetch --site URL --phase ID OUT  download every submission of a phase, resumably\n\n"
            f"{task_names_text()}\n"
            f"'codascore VERB --help' explains a verb; --debug shows an error's traceback; --quiet hides the "
            f"progress.")


def build_parser() -> argparse.ArgumentParser:
    """The parser of every verb, the core's and the families': each a name and a summary until it is used
    (VerbParser imports it then)."""
    parser = Parser(prog="codascore", description=DESCRIPTION, epilog=main_epilog)
    parser.add_argument("--version", action="version", version=f"codascore {__version__}")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB", parser_class=VerbParser)
    for verb in VERBS + family_verbs():
        verbs.add_parser(verb.name, help=verb.summary, summary=verb.summary, load=verb.load)
    return parser
