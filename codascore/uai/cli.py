"""``codascore uai ...``: build reference data from a folder of models, fold new best answers back in.

    codascore uai reference uai.pr MODELS_DIR OUT [--max-table-size N]
    codascore uai update-best REF_DIR DETAILS_JSON [DETAILS_JSON ...]
"""

from __future__ import annotations

import sys
from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser("uai", help="UAI 2022 tools: build reference data, update best answers")
    sub = parser.add_subparsers(dest="uai_command", required=True)

    p = sub.add_parser("reference", help="exact reference data (truth/best, trivial answers) for a folder of "
                                         ".uai models with their .evid (.query, .data/.test) files")
    p.add_argument("task", help="uai.pr, uai.mar, uai.mpe, uai.mmap or uai.mlc")
    p.add_argument("models_dir")
    p.add_argument("out", help="reference folder to write (task.yaml, reference.json, models/)")
    p.add_argument("--max-table-size", type=int, default=None,
                   help="largest table (entries) the exact engine may build; wider instances stop with an error")
    p.set_defaults(func=cmd_reference)

    p = sub.add_parser("update-best", help="fold better MPE/MMAP answers reported in details.json files "
                                           "(scoring outputs) into a reference folder, after re-checking them")
    p.add_argument("ref_dir")
    p.add_argument("details", nargs="+")
    p.set_defaults(func=cmd_update_best)


def cmd_reference(args) -> int:
    from .engine import TableTooLarge
    from .formats import FormatError
    from .generate import build_reference, specs_from_dir
    from .tasks import TASKS
    from .trivial import TrivialAnswerError

    task = TASKS.get(args.task)
    if task is None:
        print(f"ERROR: unknown task {args.task!r}; known: {sorted(TASKS)}", file=sys.stderr)
        return 2
    config = dict(task.defaults)
    if args.max_table_size:
        config["max_table_size"] = args.max_table_size
    try:
        specs = specs_from_dir(task, Path(args.models_dir))
        build_reference(task, specs, Path(args.out), config, progress=print)
    except (FormatError, FileNotFoundError, TableTooLarge, TrivialAnswerError) as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return 2
    print(f"reference data for {len(specs)} instances written to {args.out}")
    return 0


def cmd_update_best(args) -> int:
    from .tasks import update_best

    try:
        changes = update_best(Path(args.ref_dir), [Path(p) for p in args.details])
    except (OSError, ValueError) as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return 2
    for line in changes:
        print(line)
    print(f"{len(changes)} best answer(s) updated")
    return 0
