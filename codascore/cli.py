"""Command line: ``codascore`` / ``python -m codascore``. The Makefile only calls these."""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from . import __version__
from .registry import FAMILIES


def cmd_score(args) -> int:
    from .codabench import score_main

    return score_main([args.input, args.output])


def cmd_ingest(args) -> int:
    from .codabench import ingest_main

    return ingest_main([args.input_data, args.output, args.program, args.submission])


def cmd_run(args) -> int:
    from .runner import RunnerError, format_run, run

    out = Path(args.out or Path("runs") / args.task / Path(args.submission).stem)
    try:
        result = run(args.task, Path(args.submission), out, root=args.root and Path(args.root),
                     time_limit=args.time_limit, python=args.python)
    except RunnerError as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return 2
    print(format_run(result))
    if result.scored:
        print(f"report: {result.run_dir / 'scoring' / 'output' / 'detailed_results.html'}")
    return 0 if result.scored else 1


def cmd_reference(args) -> int:
    """Generate every named task's demo data, or, as ``reference TASK SOURCE OUT``, build a task's
    reference data from an organiser's own instances (families whose cli offers ``reference``)."""
    from .registry import FAMILIES, all_tasks, get_task

    if len(args.tasks) == 3 and Path(args.tasks[1]).is_dir() and not Path(args.tasks[2]).is_file():
        family = args.tasks[0].split(".", 1)[0]
        family_cli = importlib.import_module(f"{FAMILIES[family]}.cli") if family in FAMILIES else None
        if family_cli is not None and hasattr(family_cli, "cmd_reference"):
            return family_cli.cmd_reference(argparse.Namespace(
                task=args.tasks[0], models_dir=args.tasks[1], out=args.tasks[2], max_table_size=None))
    names = args.tasks or list(all_tasks())
    for name in names:
        task = get_task(name)
        task.generate(Path(args.root), dict(task.defaults), progress=print)
    return 0


def cmd_demo(args) -> int:
    from .demo import run_demo

    return run_demo(Path(args.out), root=Path(args.root) if args.root else None, tasks=args.tasks)


def cmd_bundle(args) -> int:
    from . import bundle, wheels
    from .bundle import BundleError, build_bundle, competition_files
    from .bundle_data import competition_tasks, generate, private_seed
    from .checker import check_bundle, format_report

    root = Path(args.root or ".")
    names = args.names or list(competition_files(root))
    say = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731
    try:
        tasks = competition_tasks(root, names)
        # The wheels first: a wheel that cannot be had stops the build before minutes of data generation.
        wheels.vendored_files(tasks, bundle.WHEELS_LOCK, bundle.WHEELS_CACHE, progress=say)
        seed = private_seed(root, Path(args.seed_file) if args.seed_file else None, say=say)
        data_root = generate(root, seed, tasks, progress=say)
    except (BundleError, wheels.WheelError) as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return 1
    failed = False
    for name in names:
        try:
            target = build_bundle(name, root=root, out_dir=Path(args.out), warn=say, data_root=data_root)
        except BundleError as exc:
            print(f"ERROR: {exc}", file=sys.stderr)
            failed = True
            continue
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
        print("ERROR: name at least one bundle (zip, folder or competition YAML)", file=sys.stderr)
        return 2
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
    p.add_argument("--out", help="run folder (default runs/TASK/SUBMISSION)")
    p.add_argument("--root", help="bundle source folder (default: this project)")
    p.add_argument("--time-limit", type=float, help="seconds per step (default: the phase's limit)")
    p.add_argument("--python", metavar="PATH",
                   help="interpreter that runs python3/python in the metadata commands, e.g. a Python 3.12 "
                        "environment like the image's (default: the one running codascore)")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("reference", help="generate reference data and sample submissions (all tasks if none); "
                                         "or TASK SOURCE_DIR OUT: reference data from your own instances")
    p.add_argument("tasks", nargs="*", help="task names, or TASK SOURCE_DIR OUT")
    p.add_argument("--root", default=".", help="folder receiving reference_data/, input_data/, sample_submissions/")
    p.set_defaults(func=cmd_reference)

    p = sub.add_parser("demo", help="score every sample submission through the local runner")
    p.add_argument("--out", default="demo", help="folder for the runs, reports and index.html")
    p.add_argument("--root", help="bundle source folder (default: this project)")
    p.add_argument("--tasks", nargs="*", help="only these tasks")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("bundle", help="build dist/NAME.zip for the suite and/or families (all if none)")
    p.add_argument("names", nargs="*", metavar="NAME", help="suite, or a family (competitions/NAME.yaml)")
    p.add_argument("--out", default="dist", help="output folder (default dist)")
    p.add_argument("--root", help="project folder holding competition.yaml (default: the current folder)")
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
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)
