"""Resume tells the truth (docs/judge.md#resume), and no step outlives its worker (docs/judge.md#workers),
on the LocalCluster of test_judge:

- a unit's fingerprint holds everything its result depends on: another ``--set`` re-runs exactly the units
  it touches (a new time limit its group's units, more seeds the new fits and the score, SRBench's
  accuracy_source every unit, the parts' memory the parts and their scores), an edited scoring program the
  units that score and not the parts, and ``judge --status`` names the stale ones and why before anything
  runs;
- a worker SIGKILLed, or the judge alone: no process of a unit it ran is alive 2 s later, isolated by
  bubblewrap or (with --unisolated) not;
- without bubblewrap a code submission is refused (exit 2, one line) and judged only with --unisolated,
  which results.csv says; a results submission is judged, its isolation said too.
"""

from __future__ import annotations

import csv
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from codascore.judge import judge, status  # noqa: E402
from codascore.judge.cluster import local_cluster  # noqa: E402

from test_judge import client, cluster, sample  # noqa: E402,F401  (the module's LocalCluster of 2 workers)
from test_runner_hostile import processes_with  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TASK = "uai.pr"
#: A UAI code submission that answers exactly at once (its answers beside it).
QUICK_SOLVER = '''import os, shutil, sys
here = os.path.dirname(os.path.abspath(__file__))
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
shutil.copy(os.path.join(here, "answers", os.path.basename(args["--model"]) + ".PR"), args["--result"])
'''
#: A UAI code submission whose solver starts a child that starts a grandchild, both named by MARKER, and
#: sleeps (as they do).
LINGERING_SOLVER = '''import subprocess, sys, time
SLEEP = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', sys.argv[1]]); time.sleep(300)"
subprocess.Popen([sys.executable, "-c", SLEEP, "MARKER"])
time.sleep(300)
'''


def quick_solver(root: Path, dest: Path) -> Path:
    (dest / "answers").mkdir(parents=True)
    for answer in sample(root, "exact").iterdir():
        shutil.copy(answer, dest / "answers")
    (dest / "solver.py").write_text(QUICK_SOLVER)
    return dest


def ends_of(out: Path) -> dict[str, str]:
    with sqlite3.connect(out / "judge.sqlite") as db:
        return {f"{team}/{unit}": ended for team, unit, ended in db.execute("SELECT team, unit, ended FROM units")}


def rerun(before: dict[str, str], after: dict[str, str]) -> set[str]:
    """The units whose result was recorded again (or anew)."""
    return {unit for unit in after if before.get(unit) != after[unit]}


def project_copy(project_data: Path, dest: Path) -> Path:
    """A project folder whose scoring program can be edited: a copy of it with the library inside, as a
    bundle holds it (edited, it is no longer this project's own program, which the runner would give the
    library), the rest linked."""
    from codascore.bundle import library_entries

    dest.mkdir()
    for name in ("ingestion_program", "reference_data", "input_data"):
        (dest / name).symlink_to(project_data / name)
    shutil.copytree(project_data / "scoring_program", dest / "scoring_program")
    for name, path in library_entries():
        (dest / "scoring_program" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest / "scoring_program" / name)
    return dest


def test_another_set_reruns_exactly_the_units_it_touches_and_status_names_the_stale(
        cluster, project_data, tmp_path):  # noqa: F811
    root = project_copy(project_data, tmp_path / "root")
    quick_solver(project_data, tmp_path / "teams" / "alice")
    shutil.copytree(sample(project_data, "exact"), tmp_path / "teams" / "bob")
    out = tmp_path / "out"

    def judged(**budget):
        summary = judge(tmp_path / "teams", TASK, out, root=root, scheduler=cluster.scheduler_address,
                        overrides={"memory": 500_000_000, **budget})
        assert summary.finished
        return summary

    judged(time_limits=[30])
    first = ends_of(out)
    assert len(first) == 7 + 1 + 1  # alice's parts and score unit, bob's results pipeline
    judged(time_limits=[30, 60])  # a new time limit: its group's units, nothing of the other's
    second = ends_of(out)
    assert rerun(first, second) == {unit for unit in second if "60" in unit}
    assert len(rerun(first, second)) == 7 + 1 + 1

    (root / "scoring_program" / "score.py").write_text((root / "scoring_program" / "score.py").read_text() + "\n# edited\n")
    table = status(out)
    assert "stale uai.pr / alice: 2 units to judge again (scoring program changed)" in table
    assert "stale uai.pr / bob: 2 units to judge again (scoring program changed)" in table
    lines: list[str] = []
    summary = judge(tmp_path / "teams", TASK, out, root=root, scheduler=cluster.scheduler_address,
                    overrides={"memory": 500_000_000, "time_limits": [30, 60]}, progress=lines.append)
    third = ends_of(out)
    assert summary.ran == 4 and rerun(second, third) == {unit for unit in third if "group=" in unit}
    assert "alice/uai.pr/score,group=30s: judged again (scoring program changed)" in lines
    assert "stale" not in status(out)

    judged(time_limits=[30, 60], memory=400_000_000)  # the parts' memory: every part, and the scores after them
    fourth = ends_of(out)
    assert rerun(third, fourth) == {unit for unit in fourth if unit.startswith("alice/")}


def test_more_seeds_run_only_the_new_fits_and_another_accuracy_source_runs_every_unit(
        cluster, project_data, tmp_path):  # noqa: F811
    task = "srbench.qualification"
    shutil.copytree(sample(project_data, "code_linear_regression", task), tmp_path / "teams" / "alice")
    budget = {"fit_time_limit_small": 30, "fit_time_limit_large": 30, "memory": 2 * 1024**3, "cores": 1}
    out, ends = tmp_path / "out", []
    for seeds, source in ((1, "predictions"), (2, "predictions"), (2, "auto")):
        summary = judge(tmp_path / "teams", task, out, root=project_data, scheduler=cluster.scheduler_address,
                        profile="official2022", overrides={**budget, "seeds": seeds, "accuracy_source": source})
        assert summary.finished
        ends.append(ends_of(out))
    first_seed = {unit for unit in ends[0] if unit != "alice/score"}
    assert len(first_seed) >= 2 and all(unit.endswith(",seed=24305") for unit in first_seed)
    # a second seed: its fits, and the score unit that merges them, not the first seed's fits
    assert rerun(ends[0], ends[1]) == (set(ends[1]) - first_seed)
    # the parts' task.yaml takes accuracy_source (the ingestion writes predictions.json for it): every unit
    assert rerun(ends[1], ends[2]) == set(ends[2])


def marked_solver(dest: Path, marker: str) -> Path:
    dest.mkdir(parents=True)
    (dest / "solver.py").write_text(LINGERING_SOLVER.replace("MARKER", marker))
    return dest


def wait_for_processes(marker: str, count: int, timeout: float = 120) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = processes_with(marker)
        if len(found) >= count:
            return found
        time.sleep(0.1)
    raise AssertionError(f"the unit's processes never started ({processes_with(marker)})")


def worker_of(client, pid: int) -> str:  # noqa: F811
    """The address of the worker process that is an ancestor of pid."""
    import psutil

    workers = {pid: address for address, pid in client.run(os.getpid).items()}
    for ancestor in psutil.Process(pid).parents():
        if ancestor.pid in workers:
            return workers[ancestor.pid]
    raise AssertionError(f"no worker runs {pid}")


@pytest.mark.parametrize("isolated", [True, False], ids=["bubblewrap", "unisolated"])
def test_no_process_of_a_unit_outlives_its_killed_worker(project_data, tmp_path, monkeypatch, isolated):
    from distributed import Client

    from sandbox_fixture import bubblewrap_sandbox

    if isolated:
        bubblewrap_sandbox()  # skip where bubblewrap cannot run (fail under CI)
    else:  # the workers find no bubblewrap: plain processes, under the guard
        monkeypatch.setenv("PATH", str(Path(sys.executable).parent))
    marker = f"codascore-linger-{uuid.uuid4().hex}"
    marked_solver(tmp_path / "teams" / "erin", marker)
    with local_cluster(1) as started, Client(started) as connected:
        done = {}
        thread = threading.Thread(target=lambda: done.setdefault("it", judge(
            tmp_path / "teams", TASK, tmp_path / "out", root=project_data, scheduler=started.scheduler_address,
            retries=0, time_limit=600, unisolated=not isolated)))
        thread.start()
        pids = wait_for_processes(marker, 2)
        worker = connected.run(os.getpid)[worker_of(connected, pids[0])]
        os.kill(worker, signal.SIGKILL)
        time.sleep(2)
        left = processes_with(marker)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        thread.join(120)
    assert not left, f"processes of the killed unit alive 2 s after its worker: {left}"
    assert done["it"].counts["infrastructure error"] == 1


def test_no_process_of_a_unit_outlives_the_judge_killed_alone(project_data, tmp_path):
    marker = f"codascore-linger-{uuid.uuid4().hex}"
    marked_solver(tmp_path / "teams" / "erin", marker)
    code = ("import sys; from pathlib import Path; from codascore.judge import judge; "
            "judge(Path(sys.argv[1]), 'uai.pr', Path(sys.argv[2]), root=Path(sys.argv[3]), workers=1, time_limit=600)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    judge_process = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "teams"), str(tmp_path / "out"),
                                      str(project_data)], env=env, start_new_session=True,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_processes(marker, 2)
        import psutil

        workers = psutil.Process(judge_process.pid).children(recursive=True)
        judge_process.kill()  # the judge alone, not its process group
        judge_process.wait()
        time.sleep(2)
        left = processes_with(marker)
        alive = [child.pid for child in workers if child.is_running() and child.status() != psutil.STATUS_ZOMBIE]
    finally:
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)
        try:
            os.killpg(judge_process.pid, signal.SIGKILL)
        except ProcessLookupError:  # nothing of it left
            pass
    assert not left, f"processes of the judge's unit alive 2 s after it: {left}"
    assert not alive, f"processes the judge started alive 2 s after it: {alive}"


def judge_without_bubblewrap(project_data: Path, teams: Path, out: Path, *more: str) -> subprocess.CompletedProcess:
    """codascore judge in an environment whose PATH holds no bwrap (only the project's Python)."""
    env = {**os.environ, "PATH": str(Path(sys.executable).parent),
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "codascore", "judge", TASK, str(teams), "--out", str(out),
                           "--root", str(project_data), "--workers", "1", *more],
                          env=env, capture_output=True, text=True, timeout=600)


def test_without_bubblewrap_code_is_refused_unless_the_organiser_says_so(project_data, tmp_path):
    teams = tmp_path / "teams"
    quick_solver(project_data, teams / "alice")
    shutil.copytree(sample(project_data, "exact"), teams / "bob")
    refused = judge_without_bubblewrap(project_data, teams, tmp_path / "refused")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert refused.stderr.startswith("error: 1 units run the teams' code, and no sandbox can isolate a step here")
    assert "apt-get install bubblewrap" in refused.stderr and "--unisolated" in refused.stderr
    assert not (tmp_path / "refused").exists()

    allowed = judge_without_bubblewrap(project_data, teams, tmp_path / "allowed", "--unisolated")
    assert allowed.returncode == 0, allowed.stderr
    assert "UNISOLATED (--unisolated)" in allowed.stderr
    with open(tmp_path / "allowed" / "results.csv", newline="") as handle:
        rows = {row["team"]: row for row in csv.DictReader(handle)}
    assert (rows["alice"]["state"], rows["alice"]["isolation"]) == ("done", "none")
    assert (rows["bob"]["state"], rows["bob"]["isolation"]) == ("done", "none")

    shutil.rmtree(teams / "alice")  # results alone run no team's code: judged without the flag
    results_only = judge_without_bubblewrap(project_data, teams, tmp_path / "results")
    assert results_only.returncode == 0, results_only.stderr
