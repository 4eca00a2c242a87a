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
                     time_limit=args.time_limit)
    except RunnerError as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return 2
    print(format_run(result))
    if result.scored:
        print(f"report: {result.run_dir / 'scoring' / 'output' / 'detailed_results.html'}")
    return 0 if result.scored else 1


def cmd_reference(args) -> int:
    from .registry import all_tasks, get_task

    names = args.tasks or list(all_tasks())
    for name in names:
        task = get_task(name)
        task.generate(Path(args.root), dict(task.defaults), progress=print)
    return 0


def cmd_demo(args) -> int:
    from .demo import run_demo

    return run_demo(Path(args.out), root=Path(args.root) if args.root else None, tasks=args.tasks)


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
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("reference", help="generate reference data and sample submissions (all tasks if none)")
    p.add_argument("tasks", nargs="*", help="task names")
    p.add_argument("--root", default=".", help="folder receiving reference_data/, input_data/, sample_submissions/")
    p.set_defaults(func=cmd_reference)

    p = sub.add_parser("demo", help="score every sample submission through the local runner")
    p.add_argument("--out", default="demo", help="folder for the runs, reports and index.html")
    p.add_argument("--root", help="bundle source folder (default: this project)")
    p.add_argument("--tasks", nargs="*", help="only these tasks")
    p.set_defaults(func=cmd_demo)

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
