"""``codascore pack TASK FOLDER --requirements FILE``: a code submission with the PyPI packages it needs
beyond the stock image, zipped and its import proved (codascore/pack.py, docs/srbench.md#dependencies)."""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError
from ..outcomes import ExitCode
from ..progress import DISPLAY
from .base import Command, existing_path, task_name, task_names_text

#: The image's interpreter `make .venv-image/.installed` builds (the Makefile's IMAGE_STAMP).
IMAGE_VENV_PYTHON = Path(".venv-image") / "bin" / "python"


class Pack(Command):
    name = "pack"
    description = ("Download CPython 3.12 manylinux x86_64 wheels of the requirements (the image's packages "
                   "pinned, never vendored), unpack them into FOLDER/vendor/ with their sha256 in "
                   "FOLDER/vendor.lock, zip FOLDER deterministically, refuse a zip over the size limit, and "
                   "import the entry file from the zip under the image's Python as the ingestion does. "
                   "docs/srbench.md#dependencies")

    @staticmethod
    def epilog() -> str:
        return (f"{task_names_text()}\nexample: codascore pack srbench.qualification team_folder "
                f"--requirements requirements.txt\n         codascore run srbench.qualification "
                f"team_folder.zip --python {IMAGE_VENV_PYTHON}")

    @classmethod
    def add_options(cls, parser):
        from ..pack import DEFAULT_MAX_MB

        parser.add_argument("task", type=task_name, metavar="TASK", help="task name, e.g. srbench.qualification")
        parser.add_argument("folder", type=existing_path, metavar="FOLDER",
                            help="the submission's folder, holding its entry file (regressor.py, model.py)")
        parser.add_argument("--requirements", "-r", type=existing_path, required=True, metavar="FILE",
                            help="pip requirements of what the method needs (e.g. gplearn==0.4.2)")
        parser.add_argument("--python", metavar="PATH",
                            help=f"the image's interpreter: Python 3.12 with exactly the image's packages "
                                 f"(default: {IMAGE_VENV_PYTHON} of the project, made by make "
                                 f".venv-image/.installed)")
        parser.add_argument("--out", metavar="ZIP", help="the zip to write (default: FOLDER.zip beside FOLDER)")
        parser.add_argument("--max-mb", type=float, default=DEFAULT_MAX_MB,
                            help=f"the largest zip allowed, in MB (default: {DEFAULT_MAX_MB})")
        parser.add_argument("--find-links", metavar="DIR", action="append", default=[],
                            help="also look for wheels in DIR (passed to pip)")
        parser.add_argument("--no-index", action="store_true", help="do not ask PyPI (passed to pip)")
        parser.add_argument("--timeout", type=float, default=120.0,
                            help="seconds the proving import may take (default: 120)")

    def run(self, args) -> ExitCode:
        from .. import bundle, pack, wheels
        from ..runner import interpreter
        from ..errors import RunnerError

        try:
            python = interpreter(args.python or str(self.default_python()))
        except RunnerError as exc:
            raise UsageError(f"--python: {exc}") from None
        family_wheels = wheels.wheels_for([args.task.name], bundle.WHEELS_LOCK)
        program_files = wheels.vendored_files([args.task.name], bundle.WHEELS_LOCK, bundle.WHEELS_CACHE,
                                              progress=DISPLAY.say)
        pip_options = [*(f"--find-links={d}" for d in args.find_links), *(["--no-index"] * args.no_index)]
        packed = pack.pack(args.task.name, Path(args.folder), Path(args.requirements), python, out=args.out,
                           max_mb=args.max_mb, pip_options=pip_options,
                           program_vendor={w.name: w.version for w in family_wheels},
                           program_files=program_files, timeout=args.timeout, say=DISPLAY.say)
        for wheel in packed.vendored:
            print(f"vendored: {wheel.line()}")
        if packed.from_image:
            print(f"not vendored (the image or the program folders have them): {', '.join(packed.from_image)}")
        print(f"import proved under {python}; from vendor/: {', '.join(packed.imported_from_vendor) or 'nothing'}")
        print(f"packed: {packed.zip_path} ({packed.zip_bytes / 1e6:.2f} MB, limit {args.max_mb:g} MB)")
        return ExitCode.OK

    @staticmethod
    def default_python() -> Path:
        """The project's .venv-image interpreter; UsageError saying how to make it when there is none."""
        from ..competition import project_root

        path = project_root() / IMAGE_VENV_PYTHON
        if not path.exists():
            raise UsageError(f"no image interpreter at {path}: make it with `make .venv-image/.installed` "
                             f"(Python 3.12 with exactly the image's packages), or pass --python PATH")
        return path
