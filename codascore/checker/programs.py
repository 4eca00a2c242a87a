"""Rule 8: a task's scoring and ingestion programs (their metadata, their command, the library they import)."""

from __future__ import annotations

import shlex
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from .base import CheckerBase
from .schema import INTERPRETER, LEGACY_TOKEN, SHELL_SYNTAX


class ProgramRules(CheckerBase):
    def check_program(self, task: dict, field: str, at: str, index: Any) -> None:
        value = task[field]
        if self.absent_ok(value, field, task, at):
            return
        path = self.resolve(value, at)
        if path is None:
            return
        if path.is_dir():
            names = [p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file()]
            read = lambda name: (path / name).read_bytes()  # noqa: E731
        else:
            names = self.zip_listing(path, at)
            if names is None:
                return
            def read(name: str, archive_path: Path = path) -> bytes:
                with zipfile.ZipFile(archive_path) as archive:
                    return archive.read(name)
        metadata = next((n for n in ("metadata.yaml", "metadata") if n in names), None)
        if metadata is None:
            self.error(8, at, f"{value} has no metadata.yaml (or metadata) at its root: Codabench runs "
                              "nothing (\"Program directory missing metadata\") and the submission fails")
            return
        try:
            data = yaml.safe_load(read(metadata)) or {}
        except yaml.YAMLError as exc:
            self.error(8, at, f"{value}/{metadata} is not valid YAML: {exc}")
            return
        command = data.get("command") if isinstance(data, dict) else None
        if not isinstance(command, str) or not command.strip():
            self.error(8, at, f"{value}/{metadata} has no `command`: nothing runs")
            return
        self.check_command(command, f"{at} ({value}/{metadata}: command)", names)
        if self.from_zip and "codascore/__init__.py" not in names and any(
                b"codascore" in read(n) for n in names if n.endswith(".py")):
            self.error(8, at, f"{value} imports codascore but does not hold the library: Codabench mounts "
                              "nothing else (build the bundle with `codascore bundle`)")

    def check_command(self, command: str, at: str, names: list[str]) -> None:
        tokens = LEGACY_TOKEN.findall(command)
        if tokens:
            self.error(8, at, f"legacy token(s) {', '.join('$' + t for t in tokens)}: write explicit /app/... "
                              "paths (the worker's string replacement differs between steps)")
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            self.error(8, at, f"shlex cannot split {command!r}: {exc}")
            return
        explicit_shell = len(argv) >= 2 and argv[0] in ("bash", "sh") and argv[1] == "-c"
        if not explicit_shell:
            stripped = LEGACY_TOKEN.sub("", command)
            found = [s for s in SHELL_SYNTAX if s in stripped]
            if found:
                self.error(8, at, f"shell syntax {' '.join(found)} in {command!r}: the command is split with "
                                  "shlex and run without a shell; use a script (or an explicit bash -c)")
        if argv and not INTERPRETER.match(PurePosixPath(argv[0]).name):
            self.error(8, at, f"{argv[0]!r} is not an interpreter: unzipped files have no execute bit, so "
                              "write e.g. `python3 score.py`")
        if argv and INTERPRETER.match(PurePosixPath(argv[0]).name) and len(argv) > 1 and not explicit_shell:
            script = argv[1]
            if script.startswith("/app/program/"):
                script = script[len("/app/program/"):]
            if not script.startswith(("/", "-")) and script not in names:
                self.error(8, at, f"the command runs {argv[1]!r}, which the program does not hold")
