"""What every static rule uses: recording a finding, the generic schema rule (types, lengths, allowed values,
ignored and unknown keys), and the bundle's paths (resolving a YAML path, a folder without its slash, a zip's
listing, a file absent because its task is not in this build, the samples of a starting kit)."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any, Iterator

from ..competition import bundle_path, missing_reason, task_name_of
from .schema import IGNORED_KEYS, PLATFORM_RULES, SCHEMAS, UUID, Finding, hashable, serializer_accepts


class CheckerBase:
    """The bundle, the findings so far and what the rules learn about its tasks."""

    def __init__(self, root: Path, competition: dict, from_zip: bool, image: str):
        self.root = root
        self.yaml = competition
        self.from_zip = from_zip
        self.image = image
        self.findings: list[Finding] = []
        self.task_names: dict[Any, str | None] = {}      # task index -> codascore task name
        self.task_keys: dict[Any, tuple[str, ...]] = {}  # task index -> declared score keys
        self.unavailable: set[str] = set()
        self.absent: dict[str, list[str]] = {}          # unavailable task -> its paths missing here
        self.references: dict[Any, Path] = {}           # task index -> its reference data folder

    def error(self, rule: int, path: str, message: str, platform: bool | None = None) -> None:
        """An error; platform (default: the rule is in PLATFORM_RULES) says whether Codabench refuses it too."""
        platform = rule in PLATFORM_RULES if platform is None else platform
        self.findings.append(Finding(rule, path or "(top level)", message, "error", platform))

    def warn(self, rule: int, path: str, message: str) -> None:
        self.findings.append(Finding(rule, path or "(top level)", message, "warning"))

    # ----- generic schema rule
    def check_fields(self, section: str, data: Any, path: str) -> bool:
        """Required keys, types, length limits, allowed values, ignored and unknown keys of one mapping."""
        if not isinstance(data, dict):
            self.error(SCHEMAS[section][next(iter(SCHEMAS[section]))].rule, path,
                       f"must be a mapping, not {type(data).__name__}")
            return False
        schema, ignored = SCHEMAS[section], IGNORED_KEYS[section]
        for key, value in data.items():
            at = f"{path}.{key}" if path else str(key)
            if key in ignored:
                self.warn(5, at, ignored[key])
            elif key not in schema:
                self.warn(5, at, f"unknown key {key!r} in {section} (misspelled? Codabench ignores it)")
        for key, field in schema.items():
            at = f"{path}.{key}" if path else key
            if key not in data:
                if field.required and key != "version":
                    self.error(field.rule, at, field.missing or f"missing: {section} needs `{key}`")
                continue
            value = data[key]
            if field.types:
                bad_bool = isinstance(value, bool) and bool not in field.types
                if bad_bool or not isinstance(value, field.types):
                    names = "/".join("null" if t is type(None) else t.__name__ for t in field.types)
                    self.error(field.rule, at, f"must be {names}, not {type(value).__name__} ({value!r})",
                               platform=not serializer_accepts(value, field.types))
                    continue
            if field.max_len is not None and isinstance(value, str) and len(value) > field.max_len:
                self.error(field.rule, at, f"{len(value)} characters; Codabench allows at most {field.max_len}",
                           platform=True)
            if field.choices is not None and value not in field.choices:
                allowed = ", ".join(str(c) for c in field.choices if c is not None)
                self.error(field.rule, at, f"{value!r} is not one of {allowed}", platform=True)
        return True

    def items(self, key: str) -> Iterator[tuple[int, Any]]:
        value = self.yaml.get(key)
        return enumerate(value) if isinstance(value, list) else iter(())

    def task_positions(self) -> dict[Any, int]:
        """Task index -> position in `tasks`, for the tasks with a usable index."""
        return {t.get("index"): i for i, t in self.items("tasks")
                if isinstance(t, dict) and hashable(t.get("index"))}

    # ----- paths
    def resolve(self, value: str, at: str, rule: int = 7, quiet_missing: bool = False,
                hint: str = "") -> Path | None:
        """The bundle file a YAML path names, or None (with a finding) when it is not there."""
        path = bundle_path(self.root, value)
        if path is None:
            self.error(rule, at, f"{value[:80]!r} must be a relative path inside the bundle (Codabench: Cannot find "
                                 f'dataset: "{value[:80]}")')
            return None
        if path.exists():
            return path
        if UUID.match(value):
            self.warn(rule, at, f"{value!r} names an existing dataset on the server by UUID (not checked)")
        elif not quiet_missing:
            self.error(rule, at, f'Cannot find dataset: "{value}" (not in the bundle; Codabench takes it '
                                 f"for a dataset UUID){hint}")
        return None

    def check_folder_slash(self, value: str, at: str) -> None:
        """A folder named without a trailing '/' is zipped by Codabench's zip_if_directory into the parent of
        the bundle's own temporary folder (dirname of dirname), which every upload shares: two uploads at
        once can swap their programs."""
        path = bundle_path(self.root, value)
        if path is not None and path.is_dir() and not value.endswith("/"):
            self.warn(28, at, f"{value!r} names a folder without a trailing '/': Codabench then zips it into "
                              f"its shared temporary folder, where two uploads at once can swap it; write "
                              f"'{value}/'")

    def zip_listing(self, path: Path, at: str) -> list[str] | None:
        if not zipfile.is_zipfile(path):
            self.error(7, at, f"{path.name} is neither a folder nor a zip file", platform=False)
            return None
        with zipfile.ZipFile(path) as archive:
            names = [n for n in archive.namelist() if not n.startswith("__MACOSX/")]
        tops = {n.split("/", 1)[0] for n in names}
        if len(tops) == 1 and all("/" in n for n in names if not n.endswith("/")) and names:
            self.error(7, at, f"{path.name} holds a single wrapper folder {next(iter(tops))!r}: Codabench uses "
                              "the zip root, so the program or data ends up one level too deep (issues #1697, "
                              "#1805); zip the folder's contents, or reference the folder itself", platform=False)
        return names

    def task_name(self, task: dict) -> str | None:
        """The codascore task a YAML task entry scores (competition.task_name_of)."""
        return task_name_of(self.root, task)

    def absent_ok(self, value: str, field: str, task: dict | None, at: str,
                  phase_tasks: list[dict] | None = None) -> bool:
        """True (and noted) when value is missing only because its task is not complete in this build."""
        path = bundle_path(self.root, value)
        if path is None or path.exists() or UUID.match(value):
            return False
        reason = missing_reason(self.root, value, field, task, phase_tasks)
        if reason is None:
            return False
        name, why = reason
        if why == "not available in this build":
            self.absent.setdefault(name, []).append(value)
        else:
            self.warn(7, at, f"task {name} {why}, so {value} is not generated here; code submissions need it")
        return True


def samples_of(root: Path, phase: dict, task_name: str) -> list[Path]:
    """Sample submissions of a task in the phase's starting kit (kit/<task>/<sample>/, or kit/<sample>/)."""
    kit = phase.get("starting_kit")
    if not isinstance(kit, str):
        return []
    folder = bundle_path(root, kit)
    if folder is None:
        return []
    if (folder / task_name).is_dir():
        folder = folder / task_name
    elif len(phase.get("tasks") or []) != 1 or not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_dir())
