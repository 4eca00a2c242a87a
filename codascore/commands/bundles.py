"""``codascore bundle [NAME ...]`` builds the competition bundles; ``codascore check BUNDLE`` checks one
before it is uploaded (codascore.checker)."""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError
from ..outcomes import ExitCode
from ..progress import DISPLAY
from .base import ROOT_HELP, Command

say = DISPLAY.say


class Bundle(Command):
    name = "bundle"

    @classmethod
    def add_options(cls, parser):
        parser.add_argument("names", nargs="*", metavar="NAME", help="suite, or a family (competitions/NAME.yaml)")
        parser.add_argument("--out", default="dist", help="output folder (default dist)")
        parser.add_argument("--root", default=".", help=ROOT_HELP)
        parser.add_argument("--check", action="store_true", help="check each bundle after building it")
        parser.add_argument("--seed-file", help="the private seed's file (default ROOT/bundle.seed; drawn and "
                                                "written there when absent); $CODASCORE_BUNDLE_SEED takes precedence")
        parser.add_argument("--data", metavar="DIR",
                            help="take reference_data/, input_data/ and sample_submissions/ from DIR (your own "
                                 "data, docs/hosting.md) instead of generating them from the private seed")

    def run(self, args) -> ExitCode:
        from .. import bundle, wheels
        from ..bundle_data import competition_tasks, generate, private_seed
        from ..checker import check_bundle, format_report

        root = Path(args.root)
        names = self.competitions(root, args)
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
            target = bundle.build_bundle(name, root=root, out_dir=Path(args.out), warn=say, data_root=data_root)
            print(f"built {target} ({target.stat().st_size} bytes)")
            if args.check:
                report = check_bundle(target)
                print(format_report(report))
                failed |= not report.ok
        return ExitCode.INVALID if failed else ExitCode.OK

    @staticmethod
    def competitions(root: Path, args) -> list[str]:
        """The competitions to build, checked with --data before the private seed is drawn and written, or
        any data made."""
        from ..competition import competition_files
        from ..registry import did_you_mean

        known = list(competition_files(root))
        for name in args.names:
            if name not in known:
                raise UsageError(f"no competition named {name!r}{did_you_mean(name, known)}; the competitions "
                                 f"of {root} are {', '.join(known) or 'none (no competition.yaml)'}")
        if args.data and not Path(args.data).is_dir():
            raise UsageError(f"--data {args.data}: no such folder; it holds reference_data/, input_data/ and "
                             "sample_submissions/ (docs/hosting.md)")
        return args.names or known


class Check(Command):
    name = "check"

    @classmethod
    def add_options(cls, parser):
        parser.add_argument("bundles", nargs="*", metavar="BUNDLE",
                            help="a bundle to check: its zip (e.g. dist/uai.zip), its unzipped folder, or the "
                                 "competition YAML of a project folder (e.g. competition.yaml)")
        parser.add_argument("--run", action="store_true",
                            help="also run every sample submission of the starting kits (rules 14, 22-27, 30)")
        parser.add_argument("--runs", help="with --run: keep the run folders (logs, outputs) below this folder")
        parser.add_argument("--strict", action="store_true", help="warnings fail too")
        parser.add_argument("--image", help="the accepted docker_image (default: codalab/codalab-legacy:py312)")
        parser.add_argument("--platform-only", action="store_true",
                            help="report only what Codabench itself refuses at upload, for any organiser's "
                                 "bundle (no house rule, no runs)")
        parser.add_argument("--rules", action="store_true", help="list the invariants and exit")

    def run(self, args) -> ExitCode:
        from ..checker import RULES, check_bundle, format_report

        if args.rules:
            print("\n".join(f"{number:>2}. {text}" for number, text in RULES.items()))
            return ExitCode.OK
        if not args.bundles:
            raise UsageError("name at least one bundle (zip, folder or competition YAML)")
        failed = False
        for path in args.bundles:
            runs = Path(args.runs) / Path(path).stem if args.runs else None
            report = check_bundle(Path(path), run=args.run, image=args.image, runs_dir=runs, progress=say,
                                  platform_only=args.platform_only)
            print(format_report(report))
            failed |= not report.ok or (args.strict and bool(report.warnings))
        return ExitCode.INVALID if failed else ExitCode.OK
