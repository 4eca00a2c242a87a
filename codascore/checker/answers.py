"""Rule 29: nothing participants download holds the answers (a copy of a reference file, the library's
generation modules, a sample made from the answers)."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path
from typing import Any, Iterator

from ..competition import DATA_KEYS, PROGRAM_KEYS, bundle_path
from ..errors import ReferenceDataError
from ..registry import GENERATION_MODULES, get_task
from .base import CheckerBase, samples_of
from .schema import hashable


class AnswerRules(CheckerBase):
    def downloadable(self) -> list[tuple[str, str, Path]]:
        """(YAML path, value, bundle path) of what participants can download: starting kits and public data,
        program folders (make_programs_available), pages and terms; each bundle path once."""
        named: list[tuple[str, Any]] = []
        for p, phase in self.items("phases"):
            if isinstance(phase, dict):
                named += [(f"phases[{p}].{key}", phase.get(key)) for key in ("starting_kit", "public_data")]
        for i, task in self.items("tasks"):
            if isinstance(task, dict):
                named += [(f"tasks[{i}].{key}", task.get(key)) for key in PROGRAM_KEYS]
        named.append(("terms", self.yaml.get("terms")))
        named += [(f"pages[{i}].file", page.get("file")) for i, page in self.items("pages")
                  if isinstance(page, dict)]
        found: dict[Path, tuple[str, str, Path]] = {}
        for at, value in named:
            path = bundle_path(self.root, value)
            if path is not None and path.exists() and path.resolve() not in found:
                found[path.resolve()] = (at, value.rstrip("/"), path)
        return list(found.values())

    def rule_answers(self) -> None:

        references: dict[str, str] = {}  # digest -> reference file; input data is given to code, so no secret
        public: set[str] = set()
        for _, task in self.items("tasks"):
            for key in DATA_KEYS:
                path = bundle_path(self.root, task.get(key)) if isinstance(task, dict) else None
                for name, digest in _digests(path) if path is not None and path.exists() else ():
                    if key == "input_data":
                        public.add(digest)
                    else:
                        references.setdefault(digest, f"{task[key].rstrip('/')}/{name}")
        secret = {digest: name for digest, name in references.items() if digest not in public}
        generation = {f"codascore/{module}" for module in GENERATION_MODULES}
        for at, value, path in self.downloadable():
            held = []
            for name, digest in _digests(path):
                if digest in secret:
                    where = f"{value}/{name}" if path.is_dir() or zipfile.is_zipfile(path) else value
                    self.error(29, at, f"{where} is a copy of the reference file {secret[digest]}: participants "
                                       "can download it")
                if name in generation:
                    held.append(name)
            if held:
                self.error(29, at, f"{value} holds the library's generation modules ({', '.join(sorted(held))}): "
                                   "participants who download it can rebuild the data; build the bundle with "
                                   "`codascore bundle`, which leaves them out")
        self.check_answer_samples()

    def check_answer_samples(self) -> None:
        """A starting-kit sample that its task declares made from the answers (Task.answer_samples) is an
        error in a zip; in a source folder it is a warning, since `codascore bundle` leaves it out."""

        positions = self.task_positions()
        for p, phase in self.items("phases"):
            listed = phase.get("tasks") if isinstance(phase, dict) else None
            found = []
            for index in listed if isinstance(listed, list) else []:
                task = self.yaml["tasks"][positions[index]] if hashable(index) and index in positions else None
                name = self.task_name(task) if isinstance(task, dict) else None
                try:
                    declared = get_task(name).answer_samples if name else ()
                except ReferenceDataError:
                    declared = ()
                found += [f"{name}/{sample.name}" for sample in samples_of(self.root, phase, name) if declared
                          and sample.name in declared]
            if not found:
                continue
            message = (f"{', '.join(found)}: made from the answers (their tasks declare them), so they belong "
                       "to the demo, never to a starting kit")
            if self.from_zip:
                self.error(29, f"phases[{p}].starting_kit", message)
            else:
                self.warn(29, f"phases[{p}].starting_kit", message + "; `codascore bundle` leaves them out")


def _digests(path: Path) -> Iterator[tuple[str, str]]:
    """(name, sha256) of every non-empty file of a bundle folder, of a zip's members, or of one file."""
    def digest(handle) -> str | None:
        hasher, size = hashlib.sha256(), 0
        for block in iter(lambda: handle.read(1 << 20), b""):
            hasher.update(block)
            size += len(block)
        return hasher.hexdigest() if size else None

    if path.is_dir():
        members = [(p.relative_to(path).as_posix(), p) for p in sorted(path.rglob("*")) if p.is_file()]
        for name, file in members:
            with open(file, "rb") as handle:
                value = digest(handle)
            if value:
                yield name, value
    elif zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                if not info.is_dir():
                    with archive.open(info) as handle:
                        value = digest(handle)
                    if value:
                        yield info.filename, value
    elif path.is_file():
        with open(path, "rb") as handle:
            value = digest(handle)
        if value:
            yield path.name, value
