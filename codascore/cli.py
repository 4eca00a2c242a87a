"""Command line: ``codascore <verb> [TASK] ...`` (or ``python -m codascore``).

One grammar: a verb, then the task it concerns when it concerns one, then its files; a family's own verbs
live under the family's name (``codascore uai update-best``). ``--root`` is the project folder, the current
folder unless given. A command raises; :func:`main` prints what was wrong and what to do in one or two
lines, and exits 2 for a command line that cannot be carried out, 1 for anything else wrong in the input,
3 for a bug (``--debug``, after any verb, shows the traceback instead). docs/architecture.md#exit-codes
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import sys
import tempfile
from pathlib import Path

from . import __version__
from .errors import CodascoreError, ReferenceDataError, UnknownTaskError, UsageError
from .outcomes import exit_code_of
from .registry import FAMILIES

ROOT_HELP = "project folder holding competition.yaml, the programs and the data (default: the current folder)"

DESCRIPTION = ("Score submissions to four scientific-ML challenges (weak lensing, Ariel 2023, SRBench 2022, UAI "
               "2022) as their organisers documented them, run them on your machine as Codabench's worker does, "
               "and build and check the competition bundles.")


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
        self.exit(2, f"{self.prog}: error: {message}\nsee: {self.prog} --help\n")

    def format_help(self) -> str:
        if callable(self.epilog):
            self.epilog = self.epilog()
        return super().format_help()


def task_names_text() -> str:
    from .registry import all_tasks

    return "tasks: " + ", ".join(all_tasks())


def task_name(text: str) -> str:
    """argparse type of a TASK argument: an unknown name is a usage error naming the closest known one."""
    from .registry import get_task

    try:
        get_task(text)
    except ReferenceDataError as exc:  # an unknown name, or a family this installation lacks
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def existing_path(text: str) -> str:
    """argparse type of a file or folder that must exist (a submission): refused before anything is made."""
    if not Path(text).exists():
        raise argparse.ArgumentTypeError(f"{text}: no such file or folder")
    return text


def cmd_score(args) -> int:
    from .codabench import score_main

    return score_main([args.input, args.output])


def cmd_ingest(args) -> int:
    from .codabench import ingest_main

    return ingest_main([args.input_data, args.output, args.program, args.submission])


def cmd_run(args) -> int:
    from .containers import UNISOLATED_WARNING, choose
    from .errors import RunnerError
    from .runner import format_run, interpreter, run
    from .runner.view import TerminalView

    try:
        python = interpreter(args.python) if args.python else None
    except RunnerError as exc:
        raise UsageError(f"--python: {exc}") from None
    try:
        container = choose(args.docker, sandbox=not args.no_sandbox, python=python, network=not args.no_network)
    except RunnerError as exc:
        raise UsageError(str(exc)) from None
    if not container.isolated:
        print(UNISOLATED_WARNING, file=sys.stderr, flush=True)
    result = run(args.task, Path(args.submission), Path(args.out) if args.out else None,
                 root=Path(args.root) if args.root else None, time_limit=args.time_limit, python=python,
                 container=container, observer=TerminalView())
    print(format_run(result))
    if result.scored:
        print(f"report: {result.run_dir / 'scoring' / 'output' / 'detailed_results.html'}")
    return exit_code_of(result.outcome)


def cmd_validate(args) -> int:
    from .errors import SubmissionError
    from .registry import get_task
    from .sandbox import check_submission_format

    task = get_task(args.task)
    try:
        summary, warnings = check_submission_format(task, Path(args.submission))
    except SubmissionError as exc:
        more = exc.total - len(exc.problems)
        print(f"INVALID {task.name} submission {args.submission}: {exc.total} problem(s)", file=sys.stderr)
        for problem in exc.problems + ([f"... and {more} more"] if more > 0 else []):
            print(f"  {problem}", file=sys.stderr)
        return 1
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"OK {task.name} submission {args.submission}: {summary}")
    return 0


def cmd_reference(args) -> int:
    """``reference [TASK ...]``: every named task's demo data (all tasks if none) below --root; or
    ``reference TASK SOURCE OUT``: the task's reference data built from an organiser's own files in SOURCE
    (Task.build_reference), written to OUT. Every name and parameter is checked before anything is written."""
    from .registry import all_tasks, get_task

    known = all_tasks()
    names = list(args.tasks)
    unknown = [name for name in names if name not in known]
    if len(names) == 3 and names[0] in known and unknown == names[1:]:
        config = task_config(known[names[0]], args.set)
        return reference_from_own_files(known[names[0]], Path(names[1]), Path(names[2]), config)
    if unknown:
        try:
            get_task(unknown[0])
        except UnknownTaskError as exc:
            hint = ""
            if names[0] in known and len(names) == 2:
                hint = (f"\nto build {names[0]}'s reference data from your own files, name the folder to write "
                        f"too: codascore reference {names[0]} SOURCE OUT")
            raise UsageError(f"{exc}{hint}") from None
    tasks = [get_task(name) for name in names or known]
    configs = [task_config(task, args.set) for task in tasks]
    for task, config in zip(tasks, configs):
        task.generate(Path(args.root), config, progress=print)
    return 0


def reference_from_own_files(task, source: Path, out: Path, config: dict) -> int:
    """``reference TASK SOURCE OUT``: built aside and moved into place whole, so that a wrong input leaves
    nothing behind, not even OUT's parent folders."""
    from .registry import all_tasks
    from .task import Task

    if type(task).build_reference is Task.build_reference:
        able = [name for name, other in all_tasks().items() if type(other).build_reference is not Task.build_reference]
        raise UsageError(f"{task.name}: reference data from your own files is built only for {', '.join(able)} "
                         f"(their inputs are plain model files whose answers codascore computes); this task's "
                         f"data comes from its generator\nfor the demo's data: codascore reference {task.name} "
                         f"--root FOLDER")
    if not source.is_dir():
        raise UsageError(f"{source}: no such folder; name the folder holding your own files for {task.name}")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"{out} already exists; name a new folder for the reference data")
    made = [folder for folder in [out.parent, *out.parent.parents] if not folder.exists()]
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        task.build_reference(source, staging, config, progress=print)
        if out.exists():
            out.rmdir()
        staging.rename(out)
        print(f"{task.name}: reference data written to {out}")  # build_reference only saw the staging folder
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        for folder in made:  # deepest first; a folder someone else filled meanwhile stays
            try:
                folder.rmdir()
            except OSError:
                break
        raise
    return 0


def task_config(task, assignments: list[str] | None) -> dict:
    """The task's configuration with the --set parameters; a parameter it does not have is a usage error."""
    try:
        return task.load_config(parameters(assignments))
    except ReferenceDataError as exc:
        raise UsageError(f"--set: {exc}") from None


def parameters(assignments: list[str] | None) -> dict:
    """task.yaml parameters given as KEY=VALUE on the command line, each value read as YAML."""
    import yaml

    values = {}
    for item in assignments or []:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--set {item!r}: write KEY=VALUE, e.g. --set max_table_size=1000000")
        try:
            values[key] = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise UsageError(f"--set {item!r}: the value is not YAML ({exc})") from None
    return values


def cmd_demo(args) -> int:
    from .demo import run_demo

    return run_demo(Path(args.out), root=Path(args.root), tasks=args.tasks)


def cmd_bundle(args) -> int:
    from . import bundle, wheels
    from .bundle import build_bundle
    from .bundle_data import competition_tasks, generate, private_seed
    from .checker import check_bundle, format_report
    from .competition import competition_files

    from .registry import did_you_mean

    root = Path(args.root)
    known = list(competition_files(root))
    names = args.names or known
    for name in names:  # before the private seed is drawn and written, or any data made
        if name not in known:
            raise UsageError(f"no competition named {name!r}{did_you_mean(name, known)}; the competitions of "
                             f"{root} are {', '.join(known) or 'none (no competition.yaml)'}")
    if args.data and not Path(args.data).is_dir():
        raise UsageError(f"--data {args.data}: no such folder; it holds reference_data/, input_data/ and "
                         "sample_submissions/ (docs/hosting.md)")
    say = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731
    tasks = competition_tasks(root, names)
    # The wheels first: a wheel that cannot be had stops the build before minutes of data generation.
    wheels.vendored_files(tasks, bundle.WHEELS_LOCK, bundle.WHEELS_CACHE, progress=say)
    if args.data:  # the organiser's own data (docs/hosting.md): no seed, nothing generated
        data_root = Path(args.data)
    else:
        seed = private_seed(root, Path(args.seed_file) if args.seed_file else None, say=say)
        data_root = generate(root, seed, tasks, progress=say)
    failed = False
    for name in names:
        target = build_bundle(name, root=root, out_dir=Path(args.out), warn=say, data_root=data_root)
        print(f"built {target} ({target.stat().st_size} bytes)")
        if args.check:
            report = check_bundle(target)
            print(format_report(report))
            failed |= not report.ok
    return 1 if failed else 0


def cmd_check(args) -> int:
    from .checker import RULES, check_bundle, format_report

    if args.rules:
        print("\n".join(f"{number:>2}. {text}" for number, text in RULES.items()))
        return 0
    if not args.bundles:
        raise UsageError("name at least one bundle (zip, folder or competition YAML)")
    failed = False
    for path in args.bundles:
        runs = Path(args.runs) / Path(path).stem if args.runs else None
        report = check_bundle(Path(path), run=args.run, image=args.image, runs_dir=runs,
                              progress=lambda message: print(message, file=sys.stderr, flush=True),
                              platform_only=args.platform_only)
        print(format_report(report))
        failed |= not report.ok or (args.strict and bool(report.warnings))
    return 1 if failed else 0


def main_epilog() -> str:
    return (f"common commands:\n"
            f"  codascore run TASK SUBMISSION   score a submission (zip or folder) on your machine, as Codabench does\n"
            f"  codascore validate TASK SUBMISSION  check a submission's format, without the reference data\n"
            f"  codascore reference [TASK ...]  make the demo's reference data and sample submissions\n"
            f"  codascore bundle [NAME ...]     build the competition bundles into dist/\n"
            f"  codascore check BUNDLE          check a bundle before uploading it\n\n"
            f"{task_names_text()}\n"
            f"'codascore VERB --help' explains a verb; --debug shows an error's traceback.")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="codascore", description=DESCRIPTION, epilog=main_epilog)
    parser.add_argument("--version", action="version", version=f"codascore {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="VERB")

    p = sub.add_parser("score", help="the scoring program: read INPUT/ref and INPUT/res, write OUTPUT",
                       description="The scoring program Codabench runs (score.py calls it). Exit codes: 0 "
                                   "scored, 1 invalid submission, 2 organiser error. docs/codabench.md")
    p.add_argument("input", metavar="INPUT", help="folder holding ref/ (the task's reference data, with its "
                                                  "task.yaml) and res/ (the submission's files)")
    p.add_argument("output", metavar="OUTPUT", help="folder that receives scores.json, details.json and "
                                                    "detailed_results.html")
    p.set_defaults(func=cmd_score)

    p = sub.add_parser("ingest", help="the ingestion program: run a code submission",
                       description="The ingestion program Codabench runs for code submissions (ingest.py calls "
                                   "it): it runs the participant's code and writes the files a results "
                                   "submission would hold.")
    for name, text in (("input_data", "the task's input data (with its task.yaml)"),
                       ("output", "folder that receives the result files (the scoring step's res/)"),
                       ("program", "the ingestion program's own folder"),
                       ("submission", "the participant's code submission, unzipped")):
        p.add_argument(name, metavar=name.upper(), help=text)
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("run", help="score one submission (zip or folder) like Codabench's worker",
                       description="Run the prediction and scoring steps of one submission as Codabench's "
                                   "compute worker does, and print its scores and the report's path.",
                       epilog=lambda: f"{task_names_text()}\nexample: codascore run uai.pr "
                                      f"sample_submissions/uai.pr/exact")
    p.add_argument("task", type=task_name, metavar="TASK", help="task name, e.g. weak_lensing.phase1 (listed below)")
    p.add_argument("submission", type=existing_path, metavar="SUBMISSION", help="submission zip or folder")
    p.add_argument("--out", help="run folder (default: a new folder runs/TASK/SUBMISSION[-N]); an existing "
                                 "one is emptied only if it is a run folder")
    p.add_argument("--root", help="project folder holding competition.yaml, the programs and the data (default: "
                                  "the installed project's)")
    p.add_argument("--time-limit", type=float, help="seconds per step (default: the phase's limit)")
    p.add_argument("--python", metavar="PATH",
                   help="interpreter that runs python3/python in the metadata commands, e.g. a Python 3.12 "
                        "environment like the image's (default: the one running codascore)")
    p.add_argument("--docker", metavar="IMAGE",
                   help="run each step in this Docker image, as the worker does (the image must be present)")
    p.add_argument("--no-sandbox", action="store_true",
                   help="run the steps as plain processes, not in a bubblewrap sandbox (a warning says so)")
    p.add_argument("--no-network", action="store_true",
                   help="no network in the steps (the worker's COMPETITION_CONTAINER_NETWORK_DISABLED=True; "
                        "its default gives them the network)")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("validate", help="check a submission's format without the reference data",
                       description="Check a result submission's files (names, structure, types, finite values, "
                                   "shapes) as far as that is possible without the reference data: exit 0 and "
                                   "one line when they are well-formed, exit 1 listing every problem. What only "
                                   "the reference knows (counts, instance names) is checked when scored "
                                   "(codascore run).",
                       epilog=lambda: f"{task_names_text()}\nexample: codascore validate uai.pr my_submission.zip")
    p.add_argument("task", type=task_name, metavar="TASK", help="task name, e.g. weak_lensing.phase1 (listed below)")
    p.add_argument("submission", type=existing_path, metavar="SUBMISSION", help="submission zip or folder")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("reference", help="generate the demo's reference data and sample submissions (all tasks "
                                         "if none), or TASK SOURCE OUT: a task's reference data from your own "
                                         "files (docs/hosting.md)",
                       epilog=lambda: f"{task_names_text()}\nexamples: codascore reference uai.pr --root demo; "
                                      f"codascore reference uai.pr MY_MODELS my_reference")
    p.add_argument("tasks", nargs="*", metavar="TASK [SOURCE OUT]",
                   help="task names, e.g. uai.pr; or one task, the folder of your own files and the reference "
                        "folder to write")
    p.add_argument("--root", default=".", help=ROOT_HELP + "; receives reference_data/, input_data/ and "
                                                        "sample_submissions/")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="a task.yaml parameter for the data made (repeatable), e.g. --set max_table_size=1000000")
    p.set_defaults(func=cmd_reference)

    p = sub.add_parser("demo", help="score every sample submission through the local runner",
                       epilog=task_names_text)
    p.add_argument("--out", default="demo", help="folder for the runs, reports and index.html")
    p.add_argument("--root", default=".", help=ROOT_HELP)
    p.add_argument("--tasks", nargs="*", type=task_name, metavar="TASK", help="only these tasks")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("bundle", help="build dist/NAME.zip for the suite and/or families (all if none)")
    p.add_argument("names", nargs="*", metavar="NAME", help="suite, or a family (competitions/NAME.yaml)")
    p.add_argument("--out", default="dist", help="output folder (default dist)")
    p.add_argument("--root", default=".", help=ROOT_HELP)
    p.add_argument("--check", action="store_true", help="check each bundle after building it")
    p.add_argument("--seed-file", help="the private seed's file (default ROOT/bundle.seed; drawn and written "
                                       "there when absent); $CODASCORE_BUNDLE_SEED takes precedence")
    p.add_argument("--data", metavar="DIR",
                   help="take reference_data/, input_data/ and sample_submissions/ from DIR (your own data, "
                        "docs/hosting.md) instead of generating them from the private seed")
    p.set_defaults(func=cmd_bundle)

    p = sub.add_parser("check", help="check Codabench bundles (zip, folder or competition YAML)")
    p.add_argument("bundles", nargs="*", metavar="BUNDLE",
                   help="a bundle to check: its zip (e.g. dist/uai.zip), its unzipped folder, or the competition "
                        "YAML of a project folder (e.g. competition.yaml)")
    p.add_argument("--run", action="store_true",
                   help="also run every sample submission of the starting kits (rules 14, 22-27, 30)")
    p.add_argument("--runs", help="with --run: keep the run folders (logs, outputs) below this folder")
    p.add_argument("--strict", action="store_true", help="warnings fail too")
    p.add_argument("--image", help="the accepted docker_image (default: codalab/codalab-legacy:py312)")
    p.add_argument("--platform-only", action="store_true",
                   help="report only what Codabench itself refuses at upload, for any organiser's bundle "
                        "(no house rule, no runs)")
    p.add_argument("--rules", action="store_true", help="list the invariants and exit")
    p.set_defaults(func=cmd_check)

    for family in FAMILIES:
        try:
            module = importlib.import_module(f"{FAMILIES[family]}.cli")
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith(FAMILIES[family]):
                continue
            raise
        module.register(sub)
    return parser


def error_text(exc: BaseException) -> str:
    """An error as one line for a person: an OSError as 'path: what happened', without its errno."""
    if isinstance(exc, OSError) and exc.strerror:
        where = " -> ".join(str(name) for name in (exc.filename, exc.filename2) if name is not None)
        return f"{where}: {exc.strerror}" if where else exc.strerror
    return str(exc) or type(exc).__name__


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    debug = getattr(args, "debug", False)
    try:
        return int(args.func(args) or 0)
    except (CodascoreError, OSError) as exc:
        if debug:
            raise
        print(f"error: {error_text(exc)}", file=sys.stderr)
        return 2 if isinstance(exc, UsageError) else 1
    except ModuleNotFoundError as exc:
        if debug:
            raise
        if not left_out_of_wheel(exc):
            return bug(exc)
        print(f"error: codascore {args.command} needs the data generators, which the participants' wheel leaves out "
              f"(docs/participants.md#installing-codascore)\nfor it, install codascore from a clone of the "
              f"repository: pip install -e .", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if debug:
            raise
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug: still no traceback unless asked for, but said to be one
        if debug:
            raise
        return bug(exc)


def bug(exc: BaseException) -> int:
    print(f"error: {type(exc).__name__}: {error_text(exc)}\n"
          f"this is a bug in codascore: run the command again with --debug and report its traceback",
          file=sys.stderr)
    return 3


def left_out_of_wheel(exc: ModuleNotFoundError) -> bool:
    """Whether exc is the import of a generation module, which the participants' wheel leaves out."""
    from .registry import GENERATION_MODULES

    return exc.name in {"codascore." + name.removesuffix(".py").replace("/", ".") for name in GENERATION_MODULES}
