"""Command line: ``codascore <verb> [TASK] ...`` (or ``python -m codascore``).

One grammar: a verb, then the task it concerns when it concerns one, then its files; a family's own verbs
live under the family's name (``codascore uai update-best``). ``--root`` is the project folder, the current
folder unless given. A command raises; :func:`main` prints one ``error: ...`` line and exits 2 for a usage
error, 1 for anything else wrong in the input (``--debug`` shows the traceback instead).
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import sys
import tempfile
from pathlib import Path

from . import __version__
from .errors import CodascoreError, UsageError
from .registry import FAMILIES

ROOT_HELP = "project folder holding competition.yaml, the programs and the data (default: the current folder)"


def cmd_score(args) -> int:
    from .codabench import score_main

    return score_main([args.input, args.output])


def cmd_ingest(args) -> int:
    from .codabench import ingest_main

    return ingest_main([args.input_data, args.output, args.program, args.submission])


def cmd_run(args) -> int:
    from .containers import choose
    from .errors import RunnerError
    from .runner import format_run, interpreter, run

    try:
        python = interpreter(args.python) if args.python else None
    except RunnerError as exc:
        raise UsageError(f"--python: {exc}") from None
    try:
        container = choose(args.docker, sandbox=not args.no_sandbox, python=python, network=not args.no_network)
    except RunnerError as exc:
        raise UsageError(str(exc)) from None
    result = run(args.task, Path(args.submission), Path(args.out) if args.out else None, root=Path(args.root),
                 time_limit=args.time_limit, python=python, container=container)
    print(format_run(result))
    if result.scored:
        print(f"report: {result.run_dir / 'scoring' / 'output' / 'detailed_results.html'}")
    return 0 if result.scored else 1


def cmd_reference(args) -> int:
    """``reference [TASK ...]``: every named task's demo data (all tasks if none) below --root; or
    ``reference TASK SOURCE OUT``: the task's reference data built from an organiser's own files in SOURCE
    (Task.build_reference), written to OUT."""
    from .registry import all_tasks, get_task

    known = all_tasks()
    if len(args.tasks) == 3 and args.tasks[1] not in known and args.tasks[2] not in known:
        task = get_task(args.tasks[0])
        config = task.load_config(parameters(args.set))
        out = Path(args.tasks[2])
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise UsageError(f"{out} already exists; name a new folder for the reference data")
        # Built aside and moved into place whole: a wrong input leaves nothing behind.
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
        try:
            task.build_reference(Path(args.tasks[1]), staging, config, progress=print)
            if out.exists():
                out.rmdir()
            staging.rename(out)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return 0
    for name in args.tasks or list(known):
        task = get_task(name)
        task.generate(Path(args.root), task.load_config(parameters(args.set)), progress=print)
    return 0


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

    root = Path(args.root)
    names = args.names or list(competition_files(root))
    say = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731
    tasks = competition_tasks(root, names)
    # The wheels first: a wheel that cannot be had stops the build before minutes of data generation.
    wheels.vendored_files(tasks, bundle.WHEELS_LOCK, bundle.WHEELS_CACHE, progress=say)
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="codascore", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"codascore {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("score", help="the scoring program: read INPUT/ref and INPUT/res, write OUTPUT")
    p.add_argument("input")
    p.add_argument("output")
    p.set_defaults(func=cmd_score)

    p = sub.add_parser("ingest", help="the ingestion program: run a code submission")
    for name in ("input_data", "output", "program", "submission"):
        p.add_argument(name)
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("run", help="score one submission (zip or folder) like Codabench's worker")
    p.add_argument("task", help="task name, e.g. weak_lensing.phase1")
    p.add_argument("submission", help="submission zip or folder")
    p.add_argument("--out", help="run folder (default: a new folder runs/TASK/SUBMISSION[-N]); an existing "
                                 "one is emptied only if it is a run folder")
    p.add_argument("--root", default=".", help=ROOT_HELP)
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

    p = sub.add_parser("reference", help="generate the demo's reference data and sample submissions (all tasks "
                                         "if none), or TASK SOURCE OUT: a task's reference data from your own "
                                         "files (docs/hosting.md)")
    p.add_argument("tasks", nargs="*", metavar="TASK [SOURCE OUT]",
                   help="task names, e.g. uai.pr; or one task, the folder of your own files and the reference "
                        "folder to write")
    p.add_argument("--root", default=".", help=ROOT_HELP + "; receives reference_data/, input_data/ and "
                                                        "sample_submissions/")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="a task.yaml parameter for the data made (repeatable), e.g. --set max_table_size=1000000")
    p.set_defaults(func=cmd_reference)

    p = sub.add_parser("demo", help="score every sample submission through the local runner")
    p.add_argument("--out", default="demo", help="folder for the runs, reports and index.html")
    p.add_argument("--root", default=".", help=ROOT_HELP)
    p.add_argument("--tasks", nargs="*", help="only these tasks")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("bundle", help="build dist/NAME.zip for the suite and/or families (all if none)")
    p.add_argument("names", nargs="*", metavar="NAME", help="suite, or a family (competitions/NAME.yaml)")
    p.add_argument("--out", default="dist", help="output folder (default dist)")
    p.add_argument("--root", default=".", help=ROOT_HELP)
    p.add_argument("--check", action="store_true", help="check each bundle after building it")
    p.add_argument("--seed-file", help="the private seed's file (default ROOT/bundle.seed; drawn and written "
                                       "there when absent); $CODASCORE_BUNDLE_SEED takes precedence")
    p.set_defaults(func=cmd_bundle)

    p = sub.add_parser("check", help="check Codabench bundles (zip, folder or competition YAML)")
    p.add_argument("bundles", nargs="*", metavar="BUNDLE")
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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (CodascoreError, OSError) as exc:
        if args.debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, UsageError) else 1
