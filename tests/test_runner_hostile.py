"""Hostile code submissions through the runner, one per code family (weak lensing model.py, SRBench
regressor.py, UAI solver.py): the code tries to read the reference data by absolute and relative path, to
write into the project's library and program folders and outside its output, and to leave a daemon in its
own session. In the bubblewrap sandbox every attempt fails and nothing survives the step; without a
sandbox the runner warns that the step is not isolated (docs/codabench.md#isolating-a-step)."""

from __future__ import annotations

import json
import os
import signal
import uuid
from pathlib import Path

import pytest

from codascore import bundle, runner
from sandbox_fixture import bubblewrap_sandbox

#: Tried at import (model.py, regressor.py) or at each run (solver.py); every outcome goes into the
#: output folder (cwd is the submission's folder, beside the output in the sandbox and without it).
PAYLOAD = r'''
import json, os, sys

ATTEMPTS = {}


def _attempt(name, action):
    try:
        action()
        ATTEMPTS[name] = "succeeded"
    except Exception as exc:
        ATTEMPTS[name] = "failed: " + type(exc).__name__


def _read(path):
    with open(path, "rb") as handle:
        handle.read(1)


def _write(path):
    with open(path, "w") as handle:
        handle.write("written by a hostile submission")


def _daemon():
    """Double fork and setsid: a sleeping process in its own session, the marker on its command line."""
    child = os.fork()
    if child == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(120)", MARKER])
        os._exit(0)
    os.waitpid(child, 0)


_attempt("read the reference data by absolute path", lambda: _read(os.path.join(REFERENCE, "task.yaml")))
_attempt("read the reference data by relative path",
         lambda: _read(os.path.relpath(os.path.join(REFERENCE, "task.yaml"))))
_attempt("read the scoring step's reference mount", lambda: _read("/app/input/ref/task.yaml"))
_attempt("write into the library folder", lambda: _write(os.path.join(LIBRARY, MARKER)))
_attempt("write into the program folder", lambda: _write(os.path.join(PROGRAM, MARKER)))
_attempt("write outside the output", lambda: _write(OUTSIDE))
_attempt("write into /app/data", lambda: _write("/app/data/" + MARKER))
_write_tmp = lambda: _write("/tmp/" + MARKER)  # succeeds in the sandbox's own /tmp, must not reach the host's
_attempt("write into /tmp", _write_tmp)
_daemon()
with open(os.path.join(os.getcwd(), "..", "output", "hostile_%d.json" % os.getpid()), "w") as report:
    json.dump(ATTEMPTS, report)
'''

FAMILIES = {
    "weak_lensing.phase1": ("model.py", PAYLOAD + '''

class Model:
    def predict(self, maps):
        return {"means": [[0.3, 0.8]] * len(maps), "errorbars": [[0.1, 0.1]] * len(maps)}
'''),
    "srbench.qualification": ("regressor.py", PAYLOAD + '''
from sklearn.linear_model import LinearRegression

est = LinearRegression()


def model(est, X=None):
    return "0"
'''),
    "uai.pr": ("solver.py", PAYLOAD),
}

#: Attempts that may succeed inside the sandbox because their effect stays there (checked on the host).
CONTAINED = {"write into /tmp"}


def hostile_submission(folder: Path, task: str, project: Path, outside: Path, marker: str, library: Path,
                       program: Path) -> Path:
    name, code = FAMILIES[task]
    folder.mkdir(parents=True)
    constants = {"REFERENCE": str(project / "reference_data" / task), "LIBRARY": str(library),
                 "PROGRAM": str(program), "OUTSIDE": str(outside), "MARKER": marker}
    header = "".join(f"{key} = {value!r}\n" for key, value in constants.items())
    (folder / name).write_text(header + code)
    return folder


def processes_with(marker: str) -> list[int]:
    """The ids of the processes whose command line holds marker."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def reports(run_dir: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in (run_dir / "prediction" / "output").glob("hostile_*.json")]


@pytest.mark.parametrize("task", sorted(FAMILIES))
def test_hostile_code_is_contained_by_the_sandbox(project_data, tmp_path, capfd, task):
    container = bubblewrap_sandbox()
    marker = f"codascore-hostile-{uuid.uuid4().hex}"
    outside = tmp_path / "outside.txt"
    library, program = bundle.LIBRARY_DIR, project_data / "ingestion_program"
    submission = hostile_submission(tmp_path / "hostile", task, project_data, outside, marker, library, program)
    result = runner.run(task, submission, tmp_path / "run", root=project_data, container=container,
                        time_limit=120)
    found = reports(result.run_dir)
    assert found, (result.error, list((result.run_dir / "prediction" / "output").iterdir()))
    for attempts in found:
        assert len(attempts) == 8
        succeeded = {name for name, outcome in attempts.items() if outcome == "succeeded"}
        assert succeeded <= CONTAINED, attempts
    assert not processes_with(marker)
    assert not outside.exists() and not (library / marker).exists() and not (program / marker).exists()
    assert not Path("/tmp", marker).exists()
    assert "NOT isolated" not in capfd.readouterr().err


def test_without_a_sandbox_the_runner_warns_and_the_attempts_succeed(project_data, tmp_path, capfd):
    """The same submission unsandboxed: its reads succeed (so the test above can fail), and `codascore run`
    says on every run that the step is not isolated (the library prints nothing). Its daemon, in a session of
    its own, does not outlive the step even so: the guard of a plain process kills what the step leaves."""
    from codascore.cli import main as cli_main

    task, marker = "uai.pr", f"codascore-hostile-{uuid.uuid4().hex}"
    submission = hostile_submission(tmp_path / "hostile", task, project_data, tmp_path / "outside.txt", marker,
                                    tmp_path / "library", tmp_path / "program")
    (tmp_path / "library").mkdir()
    (tmp_path / "program").mkdir()
    try:
        cli_main(["run", task, str(submission), "--root", str(project_data), "--out", str(tmp_path / "run"),
                  "--no-sandbox"])
        assert "NOT isolated" in capfd.readouterr().err
        found = reports(tmp_path / "run")
        assert found and all(a["read the reference data by absolute path"] == "succeeded" for a in found)
        assert all(a["read the reference data by relative path"] == "succeeded" for a in found)
        assert (tmp_path / "outside.txt").exists() and (tmp_path / "library" / marker).exists()
        assert not processes_with(marker)
    finally:
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)
