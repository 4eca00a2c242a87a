"""``make test-wheel``: what a participant does with the wheel, in an environment that holds only it and the
pinned packages (no source tree on sys.path): the wheel holds no generation module, ``codascore validate``
accepts a valid sample and refuses an invalid one of every family, in one line or a list, never a traceback;
``codascore reference`` says in one line that this installation cannot make data.

Usage: python tests/wheel_run.py --venv .venv-wheel --wheel dist/codascore-X-py3-none-any.whl
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from codascore.registry import GENERATION_MODULES  # noqa: E402

#: (task, sample, expected exit code) from the demo's sample submissions (make data).
CASES = [
    ("weak_lensing.phase1", "dummy", 0), ("weak_lensing.phase1", "invalid_nan", 1),
    ("weak_lensing.phase2", "constant_half", 0), ("weak_lensing.phase2", "invalid_out_of_range", 1),
    ("ariel.retrieval", "gaussian_baseline", 0), ("ariel.retrieval", "invalid_nan_tracedata", 1),
    ("srbench.synthetic", "linear_regression", 0), ("srbench.synthetic", "invalid_injection", 1),
    ("uai.pr", "trivial", 0), ("uai.pr", "invalid_no_result_files", 1),
    ("uai.mar", "trivial", 0), ("uai.mar", "malformed", 1),
]


def wheel_problems(wheel: Path) -> list[str]:
    names = set(zipfile.ZipFile(wheel).namelist())
    problems = [f"the wheel holds the generation module {name}" for name in sorted(names)
                if name.startswith("codascore/") and name[len("codascore/"):] in GENERATION_MODULES]
    problems += [f"the wheel holds a data file {name}" for name in sorted(names)
                 if name.startswith("codascore/") and not name.endswith(".py")]
    problems += [f"the wheel holds {name}, outside the package" for name in sorted(names)
                 if not name.startswith(("codascore/", "codascore-"))]
    if "codascore/cli.py" not in names:
        problems.append("the wheel lacks codascore/cli.py")
    return problems


def run(codascore: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(codascore), *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--venv", required=True, type=Path)
    parser.add_argument("--wheel", required=True, type=Path)
    args = parser.parse_args()
    codascore = args.venv.resolve() / "bin" / "codascore"
    failures = wheel_problems(args.wheel)
    with tempfile.TemporaryDirectory() as scratch:  # not the project folder: only the installed package
        cwd = Path(scratch)
        for task, sample, expected in CASES:
            folder = ROOT / "sample_submissions" / task / sample
            done = run(codascore, ["validate", task, str(folder)], cwd)
            lines = (done.stdout + done.stderr).strip().splitlines()
            print(f"{task} {sample}: exit {done.returncode}: {lines[0] if lines else '(no output)'}")
            if done.returncode != expected or "Traceback" in done.stderr or not lines:
                failures.append(f"validate {task} {sample}: exit {done.returncode}, expected {expected}\n"
                                f"{done.stdout}{done.stderr}")
        done = run(codascore, ["reference", "uai.pr", "--root", "out"], cwd)
        if done.returncode == 0 or "Traceback" in done.stderr or (cwd / "out").exists():
            failures.append(f"reference from the wheel: exit {done.returncode}, expected a refusal\n{done.stderr}")
        else:
            print(f"reference uai.pr: exit {done.returncode}: {done.stderr.strip()}")
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    print(f"{len(CASES) + 1 - len(failures)} of {len(CASES) + 1} wheel checks passed" if not failures
          else f"{len(failures)} wheel check(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
