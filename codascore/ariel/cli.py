"""``codascore ariel ...``: starting-kit helpers for ADC2023 submissions.

Each command raises on a problem (UsageError for a wrong command line, another CodascoreError for bad
input); the core CLI prints ``error: ...`` and sets the exit code.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import ReferenceDataError, UsageError
from ..task import log


def cmd_to_npz(args) -> int:
    """Convert an official-layout HDF5 submission to the equivalent NPZ (for scorers without h5py)."""
    from .files import hdf5_to_npz

    hdf5_to_npz(Path(args.source), Path(args.target))
    print(f"wrote {args.target}")
    return 0


def cmd_validate_file(args) -> int:
    """Validate a submission file against the expected planet groups, as the scorer does; a
    SubmissionError lists every problem."""
    from .files import planet_name, read_posterior_file, validate_posteriors

    path = Path(args.file)
    expected = [planet_name(i) for i in range(args.planets)]
    groups = read_posterior_file(path, set(expected), rows=(args.min_samples, args.max_samples))
    posteriors = validate_posteriors(groups, expected, path.name, args.min_samples, args.max_samples,
                                     args.tolerance)
    for warning in posteriors.warnings:
        log(f"WARNING: {warning}")
    print(f"{path.name}: {len(expected)} planets valid")
    return 0


def cmd_taurex_check(args) -> int:
    """Run the TauREx adapter once (on the given folders, else on synthetic files) beside the builtin
    model: checks a TauREx install and an organiser's line-list folders before scoring with them."""
    import tempfile

    import numpy as np

    from .forward_model import WAVELENGTH_UM, BuiltinForwardModel, make_forward_model

    if bool(args.xsec) != bool(args.cia):
        raise UsageError("give both --xsec and --cia, or neither (synthetic files)")
    with tempfile.TemporaryDirectory() as tmp:
        xsec, cia = args.xsec, args.cia
        if not xsec:
            from .taurex_files import write_synthetic_opacities

            root = Path(args.synthetic or tmp)
            xsec, cia = root / "xsec", root / "cia"
            write_synthetic_opacities(xsec, cia)
            where = root if args.synthetic else "a temporary folder"
            print(f"synthetic files made from the builtin band table, in {where}")
        params = np.array([args.radius, args.temperature] + [args.log_mix] * 5)
        model = make_forward_model({"forward_model": "taurex", "taurex_opacity_path": str(xsec),
                                    "taurex_cia_path": str(cia)})
        depth = model.spectra(params, args.star_radius, args.planet_mass)[0]
    builtin = BuiltinForwardModel().spectra(params, args.star_radius, args.planet_mass)[0]
    ratio = depth / builtin
    print(f"{'um':>8} {'taurex':>12} {'builtin':>12} {'ratio':>7}")
    for wl, d, b, r in zip(WAVELENGTH_UM, depth, builtin, ratio):
        print(f"{wl:8.4f} {d:12.6e} {b:12.6e} {r:7.4f}")
    print(f"taurex / builtin: min {ratio.min():.4f}, median {np.median(ratio):.4f}, max {ratio.max():.4f}")
    sys.stdout.flush()
    if not np.all(np.isfinite(depth)):
        raise ReferenceDataError("TauREx returned non-finite depths")
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser("ariel", help="Ariel Data Challenge 2023 helpers")
    commands = parser.add_subparsers(dest="ariel_command", required=True)
    p = commands.add_parser("to-npz", help="convert submission.hdf5 to submission.npz")
    p.add_argument("source", metavar="SOURCE", help="the submission.hdf5 to convert")
    p.add_argument("target", metavar="TARGET", help="the submission.npz to write")
    p.set_defaults(func=cmd_to_npz)
    p = commands.add_parser("validate-file", help="validate one submission file (HDF5 or NPZ) as the scorer does")
    p.add_argument("file", metavar="FILE", help="submission.hdf5 or submission.npz")
    p.add_argument("--planets", type=int, required=True, help="number of test planets (Planet_public1..N)")
    p.add_argument("--min-samples", type=int, default=1000)
    p.add_argument("--max-samples", type=int, default=5000)
    p.add_argument("--tolerance", type=float, default=1e-5, help="allowed |sum(weights) - 1|")
    p.set_defaults(func=cmd_validate_file)
    p = commands.add_parser("taurex-check", help="run forward_model: taurex once beside the builtin model "
                            "(needs pip install 'codascore[taurex]')")
    p.add_argument("--xsec", help="cross-section folder (taurex_opacity_path)")
    p.add_argument("--cia", help="HITRAN CIA folder (taurex_cia_path)")
    p.add_argument("--synthetic", metavar="DIR",
                   help="without --xsec/--cia: keep the synthetic files in DIR/xsec and DIR/cia")
    p.add_argument("--radius", type=float, default=1.0, help="planet radius (R_Jup)")
    p.add_argument("--temperature", type=float, default=1200.0, help="K")
    p.add_argument("--log-mix", type=float, default=-5.0, help="log10 mixing ratio of all five gases")
    p.add_argument("--star-radius", type=float, default=6.9634e8, help="m, as in AuxillaryTable.csv")
    p.add_argument("--planet-mass", type=float, default=1.898e27, help="kg")
    p.set_defaults(func=cmd_taurex_check)
