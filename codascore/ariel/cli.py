"""``codascore ariel ...``: starting-kit helpers for ADC2023 submissions."""

from __future__ import annotations

import sys
from pathlib import Path


def cmd_to_npz(args) -> int:
    """Convert an official-layout HDF5 submission to the equivalent NPZ (for scorers without h5py)."""
    from .io import hdf5_to_npz

    hdf5_to_npz(Path(args.source), Path(args.target))
    print(f"wrote {args.target}")
    return 0


def cmd_check(args) -> int:
    """Validate a submission file against the expected planet groups, as the scorer does."""
    from ..task import SubmissionError
    from .io import planet_name, read_posterior_file, validate_posteriors

    path = Path(args.file)
    expected = [planet_name(i) for i in range(args.planets)]
    try:
        groups = read_posterior_file(path, set(expected))
        posteriors = validate_posteriors(groups, expected, path.name, args.min_samples, args.max_samples,
                                         args.tolerance)
    except SubmissionError as exc:
        for problem in exc.problems:
            print(f"ERROR: {problem}", file=sys.stderr)
        return 1
    for warning in posteriors.warnings:
        print(f"WARNING: {warning}", file=sys.stderr)
    print(f"{path.name}: {len(expected)} planets valid")
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser("ariel", help="Ariel Data Challenge 2023 helpers")
    commands = parser.add_subparsers(dest="ariel_command", required=True)
    p = commands.add_parser("to-npz", help="convert submission.hdf5 to submission.npz")
    p.add_argument("source")
    p.add_argument("target")
    p.set_defaults(func=cmd_to_npz)
    p = commands.add_parser("check", help="validate a submission file (HDF5 or NPZ)")
    p.add_argument("file")
    p.add_argument("--planets", type=int, required=True, help="number of test planets (Planet_public1..N)")
    p.add_argument("--min-samples", type=int, default=1000)
    p.add_argument("--max-samples", type=int, default=5000)
    p.add_argument("--tolerance", type=float, default=1e-5, help="allowed |sum(weights) - 1|")
    p.set_defaults(func=cmd_check)
