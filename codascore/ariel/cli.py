"""``codascore ariel ...``: starting-kit helpers for ADC2023 submissions.

Each command raises on a problem (UsageError for a wrong command line, another CodascoreError for bad
input); the core CLI prints ``error: ...`` and sets the exit code.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..commands.base import Command, Group
from ..errors import ReferenceDataError, UsageError
from ..outcomes import ExitCode
from ..task import log


class ToNpz(Command):
    """Convert an official-layout HDF5 submission to the equivalent NPZ (for scorers without h5py)."""

    name = "to-npz"
    help = "convert submission.hdf5 to submission.npz"

    @classmethod
    def add_options(cls, parser):
        parser.add_argument("source", metavar="SOURCE", help="the submission.hdf5 to convert")
        parser.add_argument("target", metavar="TARGET", help="the submission.npz to write")

    def run(self, args) -> ExitCode:
        from .files import hdf5_to_npz

        hdf5_to_npz(Path(args.source), Path(args.target))
        print(f"wrote {args.target}")
        return ExitCode.OK


class ValidateFile(Command):
    """Validate a submission file against the expected planet groups, as the scorer does; a
    SubmissionError lists every problem."""

    name = "validate-file"
    help = "validate one submission file (HDF5 or NPZ) as the scorer does"

    @classmethod
    def add_options(cls, parser):
        parser.add_argument("file", metavar="FILE", help="submission.hdf5 or submission.npz")
        parser.add_argument("--planets", type=int, required=True, help="number of test planets (Planet_public1..N)")
        parser.add_argument("--min-samples", type=int, default=1000)
        parser.add_argument("--max-samples", type=int, default=5000)
        parser.add_argument("--tolerance", type=float, default=1e-5, help="allowed |sum(weights) - 1|")

    def run(self, args) -> ExitCode:
        from .files import planet_name, read_posterior_file, validate_posteriors

        path = Path(args.file)
        expected = [planet_name(i) for i in range(args.planets)]
        groups = read_posterior_file(path, set(expected), rows=(args.min_samples, args.max_samples))
        posteriors = validate_posteriors(groups, expected, path.name, args.min_samples, args.max_samples,
                                         args.tolerance)
        for warning in posteriors.warnings:
            log(f"WARNING: {warning}")
        print(f"{path.name}: {len(expected)} planets valid")
        return ExitCode.OK


class TaurexCheck(Command):
    """Run the TauREx adapter once (on the given folders, else on synthetic files) beside the builtin
    model: checks a TauREx install and an organiser's line-list folders before scoring with them."""

    name = "taurex-check"
    help = "run forward_model: taurex once beside the builtin model (needs pip install 'codascore[taurex]')"

    @classmethod
    def add_options(cls, parser):
        parser.add_argument("--xsec", help="cross-section folder (taurex_opacity_path)")
        parser.add_argument("--cia", help="HITRAN CIA folder (taurex_cia_path)")
        parser.add_argument("--synthetic", metavar="DIR",
                            help="without --xsec/--cia: keep the synthetic files in DIR/xsec and DIR/cia")
        parser.add_argument("--radius", type=float, default=1.0, help="planet radius (R_Jup)")
        parser.add_argument("--temperature", type=float, default=1200.0, help="K")
        parser.add_argument("--log-mix", type=float, default=-5.0, help="log10 mixing ratio of all five gases")
        parser.add_argument("--star-radius", type=float, default=6.9634e8, help="m, as in AuxillaryTable.csv")
        parser.add_argument("--planet-mass", type=float, default=1.898e27, help="kg")

    def run(self, args) -> ExitCode:
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
        return ExitCode.OK


class Ariel(Group):
    name = "ariel"
    commands = (ToNpz, ValidateFile, TaurexCheck)


COMMANDS = (Ariel,)
