"""A team's environment (docs/judge.md#environments): the Python and the packages a team declared beside its
code, built once with uv, cached by the digest of what it was built from, for ``codascore judge`` and
``codascore run`` alike.

What a team declares, read from its submission without running anything (:func:`declared_environment`):
``requirements.txt``, or else the ``pip:`` part of its ``environment.yml`` (conda's own packages are not
installed: each is named in the build's log), and the Python version it needs, in ``.python-version`` or
the ``python=`` line of ``environment.yml``. What the organiser says of a team (:class:`Settings`, a YAML
file) comes over it: another Python version, a ready interpreter, requirements added.

Building (:func:`build`): an interpreter of the version asked for that this machine has (an organiser's
folder of interpreters, pyenv's versions folder, ``python3.X`` on PATH, the judge's own), never one uv would
download; ``uv venv`` on it, then ``uv pip install`` of the team's requirements, the organiser's and the
programs' own (what the ingestion and scoring programs import: codascore's requirements), with binary
wheels only unless the organiser allows source distributions, so that no team code runs at build time.
The environment's folder is named after the digest of those inputs, below a cache folder every worker of
the cluster reaches at the same path; two teams that declare the same things share one. Its record
(codascore/formats/environment.py) is written last, under a lock, so that an unfinished build is never
taken for a finished one.

What cannot be had (a Python version the machine lacks, a package without a wheel, a failed build) raises
TeamEnvironmentError naming the team, the file and, from uv's own message, the package.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import functools
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path
from typing import Callable, Iterator

import yaml

from .errors import TeamEnvironmentError, UsageError
from .formats.environment import ENVIRONMENT_REQUIREMENTS, read_record, write_record

#: The files a team declares its environment in, beside its code.
REQUIREMENTS_FILE = "requirements.txt"
PYTHON_VERSION_FILE = ".python-version"
CONDA_FILES = ("environment.yml", "environment.yaml")
#: The largest declaration file read (bytes).
MAX_DECLARATION_BYTES = 256 * 1024
#: Seconds uv may take to create or fill one environment.
UV_TIMEOUT = 1800.0
#: Characters of uv's error kept in a reason.
REASON_CHARS = 900
#: The version of the digest's inputs: a change of what enters the digest changes every digest.
DIGEST_FORMAT = 1
#: A Python version as asked: 3, 3.11 or 3.11.7 (a trailing .* is dropped).
VERSION = re.compile(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:\.\*)?")
_PROBE = ("import json, sys; print(json.dumps([list(sys.version_info[:3]), sys.implementation.name, "
          "sys.executable]))")


@dataclasses.dataclass(frozen=True)
class Declared:
    """What a team declared beside its code: requirement lines (PEP 508, for uv), the Python version it asks
    for (None: any), the files they came from, and what was read but is not installed (conda's packages,
    install.sh)."""

    requirements: tuple[str, ...] = ()
    python: str | None = None
    sources: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()

    @property
    def source_text(self) -> str:
        return " and ".join(self.sources) or "the organiser's environments file"


@dataclasses.dataclass(frozen=True)
class TeamSettings:
    """The organiser's entry for one team: python, a version to build with ("3.10") or the path of a ready
    environment's interpreter (used as it is, nothing built); requirements added to the team's; declared:
    whether the team's own requirements are installed at all."""

    python: str | None = None
    requirements: tuple[str, ...] = ()
    declared: bool = True

    @property
    def ready(self) -> bool:
        return self.python is not None and ("/" in self.python or os.sep in self.python)


@dataclasses.dataclass(frozen=True)
class Settings:
    """How environments are had (the organiser's environments file, docs/judge.md#environments): where they
    are built (cache), a folder of interpreters, whether source distributions may be built, a folder of
    ready environments (``<folder>/<team>/bin/python``), and each team's entry."""

    cache: Path | None = None
    interpreters: Path | None = None
    allow_sdists: bool = False
    environments: Path | None = None
    teams: dict[str, TeamSettings] = dataclasses.field(default_factory=dict)

    @classmethod
    def read(cls, path: Path) -> Settings:
        """The settings of an environments file (YAML); UsageError naming the file and the key."""
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
            raise UsageError(f"environments file {path}: cannot be read: {exc}") from None
        known = {"cache", "interpreters", "allow_sdists", "environments", "teams"}
        if not isinstance(data, dict) or set(data) - known:
            raise UsageError(f"environments file {path}: a mapping of {', '.join(sorted(known))} expected"
                             + (f"; unknown: {sorted(set(data) - known)}" if isinstance(data, dict) else ""))
        teams = {}
        for name, entry in (data.get("teams") or {}).items():
            entry = entry or {}
            unknown = set(entry) - {"python", "requirements", "declared"} if isinstance(entry, dict) else {"?"}
            if unknown:
                raise UsageError(f"environments file {path}: teams.{name}: python, requirements and declared "
                                 f"expected, not {sorted(map(str, unknown))}")
            lines = entry.get("requirements") or []
            if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
                raise UsageError(f"environments file {path}: teams.{name}.requirements: a list of requirement lines")
            python = entry.get("python")
            teams[str(name)] = TeamSettings(None if python is None else str(python), tuple(lines),
                                            bool(entry.get("declared", True)))

        def folder(key: str) -> Path | None:
            value = data.get(key)
            return None if value is None else (path.parent / str(value)).resolve()

        return cls(folder("cache"), folder("interpreters"), bool(data.get("allow_sdists", False)),
                   folder("environments"), teams)

    def team(self, name: str) -> TeamSettings:
        """The organiser's entry for a team: its own, else a ready environment of the environments folder."""
        if name in self.teams:
            return self.teams[name]
        if self.environments is not None and (self.environments / name / "bin" / "python").exists():
            return TeamSettings(python=str(self.environments / name / "bin" / "python"))
        return TeamSettings()


@dataclasses.dataclass(frozen=True)
class Environment:
    """A team's environment: the interpreter its units run under, the digest of what it was built from (of
    the interpreter's path for a ready one), its folder (None for a ready one), whether this call built it,
    and one line saying what it is."""

    python: str
    digest: str
    folder: Path | None
    built: bool
    summary: str


# --------------------------------------------------------------------------- what a team declared

def _entry_folder(names: list[str], entry_file: str | None) -> str:
    """The folder (a posix prefix, "" for the root) holding the entry file at the submission's root or in its
    single wrapper folder, as the ingestion finds it (sandbox.find_entry); the root when there is none."""
    wanted = entry_file or ""
    if not wanted or wanted in names:
        return ""
    tops = {name.split("/", 1)[0] for name in names if "/" in name}
    if len(tops) == 1 and not any("/" not in name and name not in tops for name in names):
        top = tops.pop()
        if f"{top}/{wanted}" in names:
            return f"{top}/"
    return ""


def _submission_files(submission: Path) -> tuple[list[str], Callable[[str], bytes]]:
    """The submission's file names (posix, relative) and a reader of one of them, bounded in size; a zip is
    read without being extracted."""
    submission = Path(submission)
    if submission.is_dir():
        names = sorted(p.relative_to(submission).as_posix() for p in submission.rglob("*") if p.is_file())

        def read_file(name: str) -> bytes:
            with open(submission / name, "rb") as handle:
                return handle.read(MAX_DECLARATION_BYTES + 1)

        return names, read_file
    try:
        archive = zipfile.ZipFile(submission)
        names = sorted(info.filename for info in archive.infolist() if not info.is_dir())
    except (OSError, zipfile.BadZipFile) as exc:
        raise TeamEnvironmentError(f"{submission.name}: not a readable zip ({exc})") from None

    def read_member(name: str) -> bytes:
        with archive.open(name) as handle:
            return handle.read(MAX_DECLARATION_BYTES + 1)

    return names, read_member


def _text(read: Callable[[str], bytes], name: str, shown: str) -> str:
    data = read(name)
    if len(data) > MAX_DECLARATION_BYTES:
        raise TeamEnvironmentError(f"{shown}: larger than {MAX_DECLARATION_BYTES // 1024} KiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise TeamEnvironmentError(f"{shown}: not UTF-8 text") from None


def requirement_lines(text: str, shown: str) -> list[str]:
    """The requirement lines of a requirements file (comments and blank lines left out). Only PyPI
    requirements are built: an option (``-r``, ``-e``, ``--index-url``), a URL or a path is refused by line."""
    lines = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if not line:
            continue
        if line.startswith(("-", ".", "/")) or "://" in line or re.search(r"\s@\s|^[^;]*@", line):
            raise TeamEnvironmentError(f"{shown}, line {number}: {line[:120]!r}: only PyPI requirements (a name "
                                       "and a version specifier) are built: no option, URL or path")
        lines.append(line)
    return lines


def python_version_line(text: str) -> str | None:
    """The version a .python-version file asks for (its first line that is not a comment; ``cpython-``
    dropped), or None."""
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            return line.removeprefix("cpython-").removeprefix("python")
    return None


def conda_environment(text: str, shown: str) -> tuple[list[str], str | None, list[str]]:
    """(the pip requirements, the python version asked, conda's other packages) of an environment.yml."""
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise TeamEnvironmentError(f"{shown}: not YAML ({one_line(str(exc))})") from None
    dependencies = data.get("dependencies") if isinstance(data, dict) else None
    if not isinstance(dependencies, list):
        return [], None, []
    pip, python, conda = [], None, []
    for item in dependencies:
        if isinstance(item, dict) and isinstance(item.get("pip"), list):
            pip += requirement_lines("\n".join(str(line) for line in item["pip"]), f"{shown} (pip)")
        elif isinstance(item, str):
            found = re.fullmatch(r"\s*python\s*(==?)?\s*([0-9][0-9.*]*)?\s*", item)
            if found:
                python = found.group(2) if found.group(1) and found.group(2) else None
            elif item.strip() and item.strip() != "pip":
                conda.append(item.strip())
    return pip, python, conda


def declared_environment(submission: Path, entry_file: str | None = None) -> Declared | None:
    """What the team declared beside its code (the folder of entry_file, the task's code entry, at the root or
    in a single wrapper folder), or None when it declared nothing. TeamEnvironmentError naming the file when
    a declaration cannot be read."""
    names, read = _submission_files(submission)
    prefix = _entry_folder(names, entry_file)
    here = {name[len(prefix):]: name for name in names if name.startswith(prefix) and "/" not in name[len(prefix):]}
    requirements, python, sources, ignored = [], None, [], []
    conda = next((name for name in CONDA_FILES if name in here), None)
    if REQUIREMENTS_FILE in here:
        requirements = requirement_lines(_text(read, here[REQUIREMENTS_FILE], REQUIREMENTS_FILE), REQUIREMENTS_FILE)
        sources.append(REQUIREMENTS_FILE)
    if conda:
        pip, conda_python, others = conda_environment(_text(read, here[conda], conda), conda)
        if not requirements and pip:
            requirements = pip
        python = conda_python
        sources.append(conda)
        ignored += [f"{conda}: conda's {package!r}" for package in others]
    if PYTHON_VERSION_FILE in here:
        python = python_version_line(_text(read, here[PYTHON_VERSION_FILE], PYTHON_VERSION_FILE))
        sources.append(PYTHON_VERSION_FILE)
    if "install.sh" in here:
        ignored.append("install.sh (never run)")
    if not sources:
        return None
    return Declared(tuple(requirements), python, tuple(sources), tuple(ignored))


# --------------------------------------------------------------------------- interpreters

@dataclasses.dataclass(frozen=True)
class Interpreter:
    """A Python found on this machine: its path, version and where it was found."""

    path: str
    version: tuple[int, int, int]
    where: str

    @property
    def version_text(self) -> str:
        return ".".join(map(str, self.version))


def parse_version(text: str, shown: str) -> tuple[int, ...]:
    """(3,), (3, 11) or (3, 11, 7) from a version as asked; TeamEnvironmentError naming where it came from."""
    found = VERSION.fullmatch(str(text).strip())
    if not found:
        raise TeamEnvironmentError(f"{shown}: {text!r} is not a Python version (3.11 or 3.11.7)")
    return tuple(int(part) for part in found.groups() if part is not None)


def candidates(interpreters: Path | None) -> Iterator[tuple[str, str, tuple[int, ...]]]:
    """(path, where, the version its name says) of every interpreter worth asking, in order of preference:
    the organiser's folder of interpreters, pyenv's versions folder, python3.X on PATH, the judge's own."""
    def named(text: str) -> tuple[int, ...]:
        found = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
        return tuple(int(part) for part in found.groups() if part is not None) if found else ()

    if interpreters is not None:
        for path in sorted(interpreters.glob("python3*")) + sorted(interpreters.glob("*/bin/python3*")):
            yield str(path), f"the interpreters folder {interpreters}", ()
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    for path in sorted(pyenv.glob("*/bin/python3")):
        yield str(path), "pyenv's versions folder", named(path.parent.parent.name)
    for minor in range(20, 5, -1):
        found = shutil.which(f"python3.{minor}")
        if found:
            yield found, "PATH", (3, minor)
    yield getattr(sys, "_base_executable", sys.executable), "the judge's own", tuple(sys.version_info[:3])


@functools.lru_cache(maxsize=64)
def ask(path: str) -> tuple[tuple[int, int, int], str] | None:
    """(version, sys.executable) of a CPython interpreter, or None when it does not run or is no CPython."""
    try:
        done = subprocess.run([path, "-I", "-c", _PROBE], capture_output=True, text=True, timeout=60)
        version, implementation, executable = json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None
    return (tuple(version), executable) if implementation == "cpython" and executable else None


def find_interpreter(version: tuple[int, ...], interpreters: Path | None = None) -> tuple[Interpreter | None, list[str]]:
    """The newest interpreter whose version starts with version (3.11 takes any 3.11.x, 3.11.7 only that),
    and the places looked in. An interpreter whose name or folder says another version is not run."""
    seen, best, places = set(), None, []
    for path, where, said in candidates(interpreters):
        if where not in places:
            places.append(where)
        common = min(len(said), len(version))
        if said[:common] != tuple(version[:common]) or os.path.realpath(path) in seen:
            continue
        seen.add(os.path.realpath(path))
        answer = ask(path)
        if answer is None or tuple(answer[0][:len(version)]) != tuple(version):
            continue
        if best is None or answer[0] > best.version:
            best = Interpreter(os.path.realpath(answer[1]), answer[0], where)
    return best, places


def programs_python() -> tuple[int, int] | None:
    """The oldest Python the programs run on (codascore's Requires-Python, ``>=3.10``), or None unknown."""
    try:
        spec = importlib.metadata.metadata("codascore").get("Requires-Python") or ""
    except importlib.metadata.PackageNotFoundError:
        return None
    found = re.search(r">=\s*(\d+)\.(\d+)", spec)
    return (int(found.group(1)), int(found.group(2))) if found else None


def programs_requirements() -> list[str]:
    """What the ingestion and scoring programs import, installed in every team's environment beside the team's
    packages: codascore's own requirements (its extras left out)."""
    try:
        listed = importlib.metadata.requires("codascore") or []
    except importlib.metadata.PackageNotFoundError:
        raise TeamEnvironmentError("codascore is not installed as a package here (pip install -e .): its "
                                   "requirements, which every team's environment needs, cannot be read") from None
    return [line for line in listed if "extra ==" not in line.replace('"', "").replace("'", "")]


# --------------------------------------------------------------------------- building

def uv_binary() -> str:
    """The uv executable of the PyPI package ``uv`` (codascore[judge]); TeamEnvironmentError when missing."""
    try:
        import uv
        return uv.find_uv_bin()
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if found:
            return found
    raise TeamEnvironmentError("uv is not installed: pip install 'codascore[judge]' (or the PyPI package uv)")


def one_line(text: str, limit: int = REASON_CHARS) -> str:
    """uv's message on one line: box-drawing and blank lines dropped, whitespace folded."""
    text = re.sub(r"[×╰─▶│├┬┴┼╭╮╯]", " ", text)
    return " ".join(text.split())[:limit]


def _uv(argv: list[str], what: str, cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH",
                                                              "PYTHONHOME", "UV_PYTHON")}
    env.update(UV_PYTHON_DOWNLOADS="never", NO_COLOR="1")
    try:
        done = subprocess.run([uv_binary(), *argv], capture_output=True, text=True, timeout=UV_TIMEOUT, cwd=cwd,
                              env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise TeamEnvironmentError(f"{what}: uv took longer than {UV_TIMEOUT:g} s") from None
    if done.returncode:
        said = [line for line in (done.stderr or done.stdout).splitlines() if not line.startswith("Using Python")]
        raise TeamEnvironmentError(f"{what}: {one_line(chr(10).join(said))}")
    return done.stdout


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock on a file (flock), so that two judges never build one environment at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def digest_of(requirements: list[str], interpreter: Interpreter, binary_only: bool) -> str:
    """The sha256 of what an environment is built from: its requirement lines in order, the interpreter (path
    and version), whether only wheels are taken, the platform."""
    inputs = {"format": DIGEST_FORMAT, "requirements": requirements, "python": [interpreter.path, interpreter.version],
              "binary_only": binary_only, "platform": sysconfig.get_platform()}
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def build(team: str, declared: Declared, team_settings: TeamSettings, settings: Settings, cache: Path,
          say: Callable[[str], None] = lambda line: None) -> Environment:
    """The team's environment, built with uv below cache, or the one built from the same inputs before."""
    asked = team_settings.python or declared.python
    shown = "the organiser's environments file" if team_settings.python else \
        next((s for s in declared.sources if s != REQUIREMENTS_FILE), declared.source_text)
    version = parse_version(asked, f"team {team}: {shown}") if asked else tuple(sys.version_info[:2])
    if version == (sys.version_info[0],):  # "3" or "3.*": any 3, the judge's own minor version
        version = tuple(sys.version_info[:2])
    floor = programs_python()
    if floor and tuple(version[:2]) < floor and len(version) > 1:
        raise TeamEnvironmentError(
            f"team {team}: {shown} asks for Python {asked}; the ingestion and scoring programs need Python "
            f">= {floor[0]}.{floor[1]}: the organiser may give the team another version (docs/judge.md#environments)")
    interpreter, places = find_interpreter(version, settings.interpreters)
    wanted = ".".join(map(str, version))
    if interpreter is None:
        raise TeamEnvironmentError(
            f"team {team}: {shown} asks for Python {wanted}; this machine has none (looked in: {', '.join(places)}): "
            f"install it (pyenv install {wanted}) or give the team another version (docs/judge.md#environments)")
    if floor and interpreter.version[:2] < floor:
        raise TeamEnvironmentError(
            f"team {team}: Python {interpreter.version_text} found for {shown}; the programs need >= "
            f"{floor[0]}.{floor[1]}")
    requirements = [*(declared.requirements if team_settings.declared else ()), *team_settings.requirements,
                    *programs_requirements()]
    binary_only = not settings.allow_sdists
    digest = digest_of(requirements, interpreter, binary_only)
    folder = Path(cache) / digest[:16]
    with locked(Path(cache) / f".{digest[:16]}.lock"):
        record = read_record(folder)
        if record is not None and record.get("digest") == digest and (folder / "bin" / "python").exists():
            return Environment(str(folder / "bin" / "python"), digest, folder, False, summary(record, folder))
        started = time.monotonic()
        for line in declared.ignored:
            say(f"environment of {team}: not installed: {line}")
        if folder.exists():
            shutil.rmtree(folder)  # an unfinished build (no record): made again
        what = f"team {team}: its environment ({declared.source_text}, Python {interpreter.version_text})"
        _uv(["venv", "--quiet", "--no-python-downloads", "--python", interpreter.path, str(folder)], what, Path(cache))
        (folder / ENVIRONMENT_REQUIREMENTS).write_text("".join(f"{line}\n" for line in requirements))
        install = ["pip", "install", "--python", str(folder / "bin" / "python"), "-r",
                   str(folder / ENVIRONMENT_REQUIREMENTS), *(["--only-binary", ":all:"] if binary_only else [])]
        try:
            _uv(install, f"{what} cannot be built (uv pip install, "
                         f"{'binary wheels only' if binary_only else 'source distributions allowed'})", Path(cache))
            frozen = _uv(["pip", "freeze", "--python", str(folder / "bin" / "python")], what, Path(cache))
        except TeamEnvironmentError:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        record = {"digest": digest, "python": interpreter.path, "python_version": interpreter.version_text,
                  "requirements": requirements, "sources": list(declared.sources), "binary_only": binary_only,
                  "packages": [line.strip() for line in frozen.splitlines() if line.strip()],
                  "seconds": round(time.monotonic() - started, 1)}
        write_record(folder, record)
    return Environment(str(folder / "bin" / "python"), digest, folder, True, summary(record, folder))


def summary(record: dict, folder: Path) -> str:
    """One line on an environment: its Python, its packages' count and its folder."""
    return (f"Python {record['python_version']}, {len(record['packages'])} packages from "
            f"{' and '.join(record['sources']) or 'the organiser'}, {folder}")


def ready(team: str, python: str) -> Environment:
    """An environment the organiser gives as it is (its interpreter's path): checked to run, never built."""
    answer = ask(python)
    if answer is None:
        raise TeamEnvironmentError(f"team {team}: the organiser's interpreter {python} does not run here")
    inputs = json.dumps([os.path.abspath(python), answer[0]])
    return Environment(os.path.abspath(python), hashlib.sha256(inputs.encode()).hexdigest(), None, False,
                       f"Python {'.'.join(map(str, answer[0]))}, the organiser's {python}")


def team_environment(team: str, submission: Path, entry_file: str | None, settings: Settings, cache: Path,
                     say: Callable[[str], None] = lambda line: None) -> Environment | None:
    """The team's environment: the organiser's ready one, or the one its declaration (with the organiser's
    entry over it) builds; None when neither says anything (its units run under the judge's own Python).
    TeamEnvironmentError naming the team, the file and the package when it cannot be had."""
    team_settings = settings.team(team)
    if team_settings.ready:
        return ready(team, team_settings.python)
    declared = declared_environment(submission, entry_file)
    if declared is None and team_settings == TeamSettings():
        return None
    return build(team, declared or Declared(), team_settings, settings, cache, say)


def team_environments(teams: list[tuple[str, Path]], entry_file: str | None, settings: Settings, cache: Path,
                      say: Callable[[str], None] = lambda line: None
                      ) -> tuple[dict[str, Environment], dict[str, str]]:
    """Every team's environment ({team: Environment}, teams without one left out) and the reasons of those
    that cannot be had ({team: reason}), each said as it is known; before any unit runs."""
    found, failed = {}, {}
    for name, submission in teams:
        try:
            environment = team_environment(name, submission, entry_file, settings, cache, say)
        except TeamEnvironmentError as exc:
            failed[name] = str(exc)
            say(f"environment of {name}: {exc}")
            continue
        if environment is not None:
            found[name] = environment
            say(f"environment of {name}: {'built' if environment.built else 'reused'}: {environment.summary}")
    return found, failed
