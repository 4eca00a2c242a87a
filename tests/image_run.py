"""`make test-image`: every starting-kit sample of every built bundle, run under an interpreter that holds
only the stock image's packages, must give what the project's own environment gives.

    python tests/image_run.py --python .venv-image/bin/python [--out build/test-image] [--jobs 2]

Steps: build the bundles with `codascore bundle` (as an organiser would), extract each zip, prove that the
image interpreter lacks the vendored packages (and codascore) while each program folder's vendor/ supplies
them, then run every sample through the local runner twice from the extracted zip, as Codabench's worker
would (program folder as working directory, /app/... mapped): once with ``python=`` the image interpreter,
once with the project's. Exit codes and scores must agree, and each sample must score or fail as its name
says. A sample whose inputs (programs, reference and input data, the sample itself) are byte-identical to
one already run, as the suite zip's are to the family zips', is listed and not run again. Vendored packages
a task's family does not use (the suite's scoring program carries h5py for Ariel beside SRBench's sympy)
are left out of that comparison. No valid starting-kit sample may reach what only the answers reach (the
checker's rule 30: a documented bound, or the score of the task's perfect submission written from the zip's
reference data). Exit 0 when everything agrees, 1 otherwise.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import functools
import hashlib
import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from codascore import bundle, runner, wheels, zips
from codascore.checker import BundleChecker, samples_of
from codascore.checker.runs import answers_only_scores, check_maximum
from codascore.cli import main as cli_main
from codascore.codabench import VENDOR_DIR, VENDOR_PYTHON
from codascore.competition import PROGRAM_KEYS, read_competition, task_name_of
from codascore.registry import get_task

#: Modules the stock image must not have: what the program folders carry, and the project itself.
ABSENT_FROM_IMAGE = ("sympy", "mpmath", "h5py", "codascore")

PROBE = """
import importlib, importlib.metadata, json, os, sys
here = os.getcwd()
sys.path.insert(0, here)  # as score.py and ingest.py do
from codascore.codabench import use_vendored_packages
where = use_vendored_packages(here)
found = {}
for name in sys.argv[1:]:
    module = importlib.import_module(name)
    found[name] = [module.__file__, importlib.metadata.version(name)]
print(json.dumps({"where": where, "modules": found}))
"""

ENVIRONMENT = """
import importlib.metadata, importlib.util, json, sys
print(json.dumps({
    "executable": sys.executable, "version": sys.version.split()[0],
    "packages": sorted(f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions()),
    "present": [m for m in sys.argv[1:] if importlib.util.find_spec(m) is not None],
}))
"""


@dataclasses.dataclass
class Sample:
    bundle: str
    root: Path
    task: str
    path: Path
    key: str
    same_as: "Sample | None" = None
    image: runner.RunResult | None = None
    project: runner.RunResult | None = None

    @property
    def label(self) -> str:
        return f"{self.bundle}.zip {self.task} / {self.path.name}"


def build_and_extract(work: Path) -> dict[str, Path]:
    """Build every bundle through the command line, as organisers do, and extract each zip."""
    dist = work / "dist"
    if cli_main(["bundle", "--out", str(dist)]) != 0:
        raise SystemExit("test-image: `codascore bundle` failed")
    roots = {}
    # Smallest first: a sample in several zips runs from the one with the least to copy per step (the
    # suite's programs carry every family's vendored packages).
    for archive in sorted(dist.glob("*.zip"), key=lambda path: path.stat().st_size):
        roots[archive.stem] = work / "extracted" / archive.stem
        zips.safe_extract(archive, roots[archive.stem])
        print(f"extracted {archive.name} ({archive.stat().st_size / 1e6:.1f} MB)")
    return roots


def python_json(python: str, code: str, args: list[str], cwd: Path) -> dict:
    done = subprocess.run([python, "-c", code, *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"test-image: {python} failed in {cwd}:\n{done.stderr}")
    return json.loads(done.stdout)


def describe_environment(python: str, work: Path) -> list[str]:
    """The interpreter and its packages; fails when any of ABSENT_FROM_IMAGE is importable there."""
    neutral = work / "neutral"  # no program folder on sys.path
    neutral.mkdir(exist_ok=True)
    env = python_json(python, ENVIRONMENT, list(ABSENT_FROM_IMAGE), neutral)
    print(f"image interpreter: {env['executable']} (Python {env['version']})")
    print(f"  packages: {', '.join(env['packages'])}")
    if env["present"]:
        raise SystemExit(f"test-image: the image environment must not have {', '.join(env['present'])}")
    print(f"  not importable there: {', '.join(ABSENT_FROM_IMAGE)}")
    if not env["version"].startswith("%d.%d." % VENDOR_PYTHON):
        raise SystemExit(f"test-image: {python} is Python {env['version']}, not the image's "
                         "%d.%d" % VENDOR_PYTHON)
    return env["packages"]


def program_folders(root: Path) -> list[Path]:
    competition = yaml.safe_load((root / "competition.yaml").read_text())
    return sorted({root / str(task[key]).strip("/") for task in competition["tasks"]
                   for key in PROGRAM_KEYS if task.get(key)})


def probe_vendored(python: str, roots: dict[str, Path]) -> list[str]:
    """Import every vendored package in each program folder under the image interpreter, exactly as the
    entry scripts set sys.path; each must come from that folder's vendor/ with its locked version."""
    locked = {wheel.name: wheel.version for wheel in wheels.read_lock(bundle.WHEELS_LOCK)}
    problems = []
    for name, root in roots.items():
        for program in program_folders(root):
            vendor = program / VENDOR_DIR
            modules = sorted(p.name for p in vendor.iterdir() if p.is_dir() and p.name in locked) \
                if vendor.is_dir() else []
            if not modules:
                print(f"probe {name}.zip {program.name}: no vendored packages")
                continue
            found = python_json(python, PROBE, modules, program)
            for module, (file, version) in sorted(found["modules"].items()):
                inside = Path(file).resolve().is_relative_to(vendor.resolve())
                print(f"probe {name}.zip {program.name}: {module} {version} from "
                      f"{Path(file).relative_to(root)}" + ("" if inside else "  <-- NOT from vendor/"))
                if not inside or version != locked[module] or found["where"] != "first":
                    problems.append(f"{name}.zip {program.name}: {module} {version} from {file} "
                                    f"(vendor/ placed {found['where']!r})")
    return problems


def input_key(root: Path, task: str, sample: Path, used_vendor: frozenset[str]) -> str:
    """sha256 over every file the runner feeds a run, by role and path; vendored files other than the
    task's own packages are left out."""
    layout = runner.find_layout(root, task)
    parts = {"scoring": bundle.program_entries(layout.scoring_program),
             "reference": zips.folder_entries(layout.reference_data),
             "sample": zips.folder_entries(sample)}
    if layout.ingestion_program is not None:
        parts["ingestion"] = bundle.program_entries(layout.ingestion_program)
    if layout.input_data is not None:
        parts["input_data"] = zips.folder_entries(layout.input_data)
    digest = hashlib.sha256(task.encode())
    for role, entries in sorted(parts.items()):
        for name, path in entries:
            if role in ("scoring", "ingestion") and name.startswith(VENDOR_DIR + "/") and name not in used_vendor:
                continue
            digest.update(f"\0{role}/{name}\0".encode())
            digest.update(file_digest(path))
    return digest.hexdigest()


@functools.cache
def vendored_names(task: str) -> frozenset[str]:
    """Paths in a program folder of the vendored files the task's family uses."""
    return frozenset(name for name, _ in wheels.vendored_files([task], bundle.WHEELS_LOCK, bundle.WHEELS_CACHE))


@functools.cache
def file_digest(path: Path) -> bytes:
    """Each file is read once, though every sample of a zip shares its programs and reference data."""
    return hashlib.sha256(path.read_bytes()).digest()


def collect_samples(roots: dict[str, Path]) -> list[Sample]:
    """Every sample of every task in every phase's starting kit, each zip in turn."""
    samples: list[Sample] = []
    seen: dict[str, Sample] = {}
    for name, root in roots.items():
        competition = yaml.safe_load((root / "competition.yaml").read_text())
        tasks = {task.get("index"): task_name_of(root, task) for task in competition["tasks"]}
        for phase in competition.get("phases") or []:
            for index in phase.get("tasks") or []:
                task = tasks.get(index)
                if task is None:
                    continue
                for path in samples_of(root, phase, task):
                    key = input_key(root, task, path, vendored_names(task))
                    if any(s.key == key and s.bundle == name for s in samples):
                        continue  # the same kit listed by two phases of one zip
                    sample = Sample(name, root, task, path, key, same_as=seen.get(key))
                    seen.setdefault(key, sample)
                    samples.append(sample)
    return samples


def run_all(samples: list[Sample], python: str, work: Path, jobs: int) -> None:
    """Both runs of every sample that is not a repeat, `jobs` at a time; a run folder is kept only when
    the sample fails the comparison."""
    def one(sample: Sample, leg: str) -> None:
        out = work / "runs" / leg / sample.bundle / sample.task / sample.path.name
        result = runner.run(sample.task, sample.path, out, root=sample.root, python=python if leg == "image" else None)
        setattr(sample, leg, result)
        print(f"  {leg:<7} {sample.label}: exit {result.exit_code} in {result.elapsed:.1f} s", flush=True)
        if sample.image and sample.project and not verdict(sample):
            # Each run folder holds copies of the programs (tens of MB with vendored packages).
            for done in (sample.image, sample.project):
                shutil.rmtree(done.run_dir, ignore_errors=True)

    todo = [(s, leg) for s in samples if s.same_as is None for leg in ("image", "project")]
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for future in [pool.submit(one, *item) for item in todo]:
            future.result()


def answers_only_findings(samples: list[Sample], work: Path) -> list[str]:
    """Rule 30 over every valid sample that ran: what it scored in the image's environment against its
    task's maximum in its own zip (codascore.checker.runs, the same functions as check --run)."""
    problems: list[str] = []
    for bundle_name in dict.fromkeys(s.bundle for s in samples if s.same_as is None):
        ran = [s for s in samples if s.bundle == bundle_name and s.same_as is None and s.image.scored]
        if not ran:
            continue
        root = ran[0].root
        checker = BundleChecker(root, read_competition(root / "competition.yaml"), from_zip=True,
                                image=bundle.DOCKER_IMAGE)
        checker.run_static()  # resolves each task's index and reference folder
        indexes = {name: index for index, name in checker.task_names.items()}
        for task in dict.fromkeys(s.task for s in ran):
            maxima = answers_only_scores(checker, indexes[task], task, work / "maxima" / bundle_name,
                                         progress=print)
            for sample in (s for s in ran if s.task == task):
                check_maximum(checker, sample.label, task, sample.path.name, sample.image.scores, maxima)
        problems += [str(f) for f in checker.findings if f.rule == 30]
    return problems


def same_scores(a: dict, b: dict) -> bool:
    """Equal keys and values; values may differ only in the last bits (the project's environment has
    newer numpy, scipy and pandas than the image)."""
    return a.keys() == b.keys() and all(math.isclose(a[k], b[k], rel_tol=1e-9, abs_tol=1e-12) for k in a)


def largest_difference(sample: Sample) -> float:
    a, b = sample.image.scores, sample.project.scores
    return max(abs(a[k] - b[k]) / max(abs(a[k]), abs(b[k])) for k in a if a[k] != b[k])


def verdict(sample: Sample) -> str:
    """'' when the sample behaves: both runs agree, and it scores or fails as its name says."""
    image, project = sample.image, sample.project
    expected = 1 if get_task(sample.task).expected_to_fail(sample.path.name) else 0
    if image.exit_code != project.exit_code:
        return f"exit {image.exit_code} under the image interpreter, {project.exit_code} in the project's"
    if not same_scores(image.scores, project.scores):
        return f"scores differ: image {image.scores}, project {project.scores}"
    if image.violations or project.violations:
        return "; ".join(image.violations + project.violations)
    if image.exit_code != expected:
        return f"exit {image.exit_code}, expected {expected}"
    return ""


def listing(samples: list[Sample]) -> tuple[str, int]:
    rows, failures = [], 0
    for sample in samples:
        first = sample.same_as or sample
        problem = verdict(first)
        failures += bool(problem) and sample.same_as is None
        score = first.image.scores.get("score")
        shown = "-" if score is None else f"{score:.6g}"
        if sample.same_as:
            note = f"same inputs as {first.bundle}.zip: not run again"
        elif problem:
            note = f"FAILED: {problem}"
        elif first.image.scores == first.project.scores:
            note = "same in the project's env"
        else:
            note = f"same in the project's env (relative difference {largest_difference(first):.1e})"
        seconds = "" if sample.same_as else f"{first.image.elapsed:.1f}/{first.project.elapsed:.1f}"
        rows.append((f"{sample.bundle}.zip", sample.task, sample.path.name, str(first.image.exit_code), shown,
                     seconds, note))
    header = ("bundle", "task", "sample", "exit", "score", "s image/project", "")
    widths = [max(len(row[i]) for row in rows + [header]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [header] + rows]
    return "\n".join(lines), failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", required=True, help="interpreter of the image-equivalent environment")
    parser.add_argument("--out", help="work folder (default: a temporary one); emptied first")
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time (default 2)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    python = runner.interpreter(args.python)
    work = (Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="codascore-image-"))).resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        packages = describe_environment(python, work)
        roots = build_and_extract(work)
        problems = probe_vendored(python, roots)
        samples = collect_samples(roots)
        unique = [s for s in samples if s.same_as is None]
        print(f"running {len(unique)} samples ({len(samples) - len(unique)} repeats left out) under the image "
              f"interpreter and under the project's ({sys.executable}), {args.jobs} at a time")
        run_all(samples, python, work, args.jobs)
        table, failures = listing(samples)
        print("\n" + table)
        problems += answers_only_findings(samples, work)
        print(f"\nimage interpreter: {python}; packages: {', '.join(packages)}")
        for problem in problems:
            print(f"FAILED: {problem}")
        failed = failures + len(problems)
        print(f"{'FAILED' if failed else 'OK'}: {len(samples)} samples listed, {len(unique)} run under both "
              f"interpreters, {failed} failing; {time.perf_counter() - started:.0f} s")
        return 1 if failed else 0
    finally:
        if not args.out:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
