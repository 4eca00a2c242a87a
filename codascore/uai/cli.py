"""``codascore uai ...``: fold new best answers back into reference data.

    codascore uai update-best REF_DIR DETAILS_JSON [DETAILS_JSON ...]

Reference data from a folder of models is the core verb: ``codascore reference uai.pr MODELS_DIR OUT``.
"""

from __future__ import annotations

from pathlib import Path

from .best_known import update_best


def register(subparsers) -> None:
    parser = subparsers.add_parser("uai", help="UAI 2022 tools: update best answers")
    sub = parser.add_subparsers(dest="uai_command", required=True)

    p = sub.add_parser("update-best", help="fold better MPE/MMAP answers reported in details.json files "
                                           "(scoring outputs) into a reference folder, after re-checking them")
    p.add_argument("ref_dir", metavar="REF_DIR", help="the reference folder of a uai.mpe or uai.mmap task "
                                                       "(holding reference.json), updated in place")
    p.add_argument("details", nargs="+", metavar="DETAILS_JSON",
                   help="details.json files the scorer wrote for scored submissions (their new best answers)")
    p.set_defaults(func=cmd_update_best)


def cmd_update_best(args) -> int:
    changes = update_best(Path(args.ref_dir), [Path(p) for p in args.details])
    for line in changes:
        print(line)
    print(f"{len(changes)} best answer(s) updated")
    return 0
