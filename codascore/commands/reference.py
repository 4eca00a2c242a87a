"""``codascore reference [TASK ...]``: the demo's data of every named task (all if none), below --root;
``codascore build-reference TASK SOURCE OUT``: a task's reference data built from an organiser's own files
(Task.build_reference). Every name and parameter is checked before anything is written."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from ..errors import ReferenceDataError, UnknownTaskError, UsageError
from ..outcomes import ExitCode
from ..progress import DISPLAY
from .base import ROOT_HELP, Command, task_name, tasks_epilog

SET_HELP = "a task.yaml parameter for the data made (repeatable), e.g. --set max_table_size=1000000"


class Reference(Command):
    name = "reference"
    description = ("Generate every named task's demo data (all tasks if none): reference_data/, input_data/ "
                   "and sample_submissions/ below --root. A task's reference data from your own files is "
                   "built by codascore build-reference (docs/hosting.md).")
    epilog = tasks_epilog("codascore reference uai.pr --root demo")

    @classmethod
    def add_options(cls, parser):
        parser.add_argument("tasks", nargs="*", metavar="TASK", help="task names, e.g. uai.pr (listed below)")
        parser.add_argument("--root", default=".", help=ROOT_HELP + "; receives reference_data/, input_data/ "
                                                                    "and sample_submissions/")
        parser.add_argument("--set", action="append", metavar="KEY=VALUE", help=SET_HELP)

    def run(self, args) -> ExitCode:
        from ..registry import all_tasks, get_task

        known = all_tasks()
        names = list(args.tasks)
        for name in names:
            if name not in known:
                raise unknown_name(name, names, known)
        tasks = [get_task(name) for name in names or known]
        configs = [task_config(task, args.set) for task in tasks]
        for task, config in zip(tasks, configs):
            task.generate(Path(args.root), config, progress=DISPLAY.say)
        return ExitCode.OK


def unknown_name(name: str, names: list[str], known: dict) -> UsageError:
    """The usage error for a word of ``reference`` that names no task; after a task name, a folder or two
    were meant for build-reference, and the error shows its form."""
    from ..registry import get_task

    try:
        get_task(name)
    except UnknownTaskError as exc:
        first_line = str(exc)
    except ReferenceDataError as exc:  # a family this installation lacks
        return UsageError(str(exc))
    if names[0] in known and len(names) in (2, 3) and name == names[1]:
        words = " ".join(names[1:]) if len(names) == 3 else "SOURCE OUT"
        if len(names) == 3:
            first_line = f"codascore reference takes task names only; {name!r} is not one"
        return UsageError(f"{first_line}\nto build {names[0]}'s reference data from your own files: "
                          f"codascore build-reference {names[0]} {words}")
    return UsageError(first_line)


class BuildReference(Command):
    name = "build-reference"
    description = ("Build TASK's reference data from an organiser's own files in SOURCE (for the UAI tasks: "
                   "the model files, whose answers codascore computes) and write it to OUT, a new folder. It "
                   "is built aside and moved into place whole: a wrong input leaves nothing behind.")
    epilog = tasks_epilog("codascore build-reference uai.pr MY_MODELS my_reference")

    @classmethod
    def add_options(cls, parser):
        parser.add_argument("task", type=task_name, metavar="TASK", help="task name, e.g. uai.pr")
        parser.add_argument("source", metavar="SOURCE", help="the folder of your own files")
        parser.add_argument("out", metavar="OUT", help="the reference folder to write (new, or empty)")
        parser.add_argument("--set", action="append", metavar="KEY=VALUE", help=SET_HELP)

    def run(self, args) -> ExitCode:
        config = task_config(args.task, args.set)
        build_reference(args.task, Path(args.source), Path(args.out), config)
        return ExitCode.OK


def build_reference(task, source: Path, out: Path, config: dict) -> None:
    """Built aside and moved into place whole, so that a wrong input leaves nothing behind, not even OUT's
    parent folders."""
    from ..registry import all_tasks
    from ..task import Task

    if type(task).build_reference is Task.build_reference:
        able = [name for name, other in all_tasks().items() if type(other).build_reference is not Task.build_reference]
        raise UsageError(f"{task.name}: reference data from your own files is built only for {', '.join(able)} "
                         f"(their inputs are plain model files whose answers codascore computes); this task's "
                         f"data comes from its generator\nfor the demo's data: codascore reference {task.name} "
                         f"--root FOLDER")
    if not source.is_dir():
        raise UsageError(f"{source}: no such folder; name the folder holding your own files for {task.name}")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"{out} already exists; name a new folder for the reference data")
    made = [folder for folder in [out.parent, *out.parent.parents] if not folder.exists()]
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        task.build_reference(source, staging, config, progress=DISPLAY.say)
        if out.exists():
            out.rmdir()
        staging.rename(out)
        print(f"{task.name}: reference data written to {out}")  # build_reference only saw the staging folder
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        for folder in made:  # deepest first; a folder someone else filled meanwhile stays
            try:
                folder.rmdir()
            except OSError:
                break
        raise


def task_config(task, assignments: list[str] | None) -> dict:
    """The task's configuration with the --set parameters; a parameter it does not have is a usage error."""
    try:
        return task.load_config(parameters(assignments))
    except ReferenceDataError as exc:
        raise UsageError(f"--set: {exc}") from None


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
