"""The judge on a real batch scheduler: the SLURM of tests/slurm_fixture.py (three nodes, each a network
namespace of its own) running Dask workers as jobs through dask-jobqueue's SLURMCluster, from a cluster file
as an organiser writes it.

- a judgement on SLURM ends with the results of the same judgement on a LocalCluster;
- a node killed halfway (its slurmd, its jobs and everything they run): the judgement ends with the results
  of an undisturbed one, and only units that had started on that node are charged an attempt;
- jobs whose walltime is a fraction of the judgement: jobs retire between units and are replaced, no unit
  is cut by a walltime;
- SLURM down, or no SLURM configuration: exit 2 with sbatch's own message, no traceback;
- jobs too small for a unit (memory, or a walltime below the unit's limits): exit 2 before any job is
  submitted, and nothing written.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from slurm_fixture import need_nodes, slurm_alone, slurm_cluster  # noqa: F401  (the fixtures)

pytestmark = pytest.mark.slurm
pytest.importorskip("dask_jobqueue")

from codascore.judge import judge  # noqa: E402

TASK = "uai.pr"
TEAMS = {"alice": "exact", "bob": "trivial", "carol": "invalid_no_result_files"}
#: A UAI code submission whose solver sleeps, then answers exactly (its answers beside it).
SLOW_SOLVER = '''import os, shutil, sys, time
here = os.path.dirname(os.path.abspath(__file__))
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
time.sleep(float(open(os.path.join(here, "sleep")).read()))
shutil.copy(os.path.join(here, "answers", os.path.basename(args["--model"]) + ".PR"), args["--result"])
'''
#: The budget of the code submissions here: one time limit, little memory.
CUT = {"time_limits": [30], "memory": 500_000_000}


def sample(root: Path, name: str) -> Path:
    return root / "sample_submissions" / TASK / name


def slow_solver(root: Path, dest: Path, seconds: float) -> Path:
    (dest / "answers").mkdir(parents=True)
    for answer in sample(root, "exact").iterdir():
        shutil.copy(answer, dest / "answers")
    (dest / "solver.py").write_text(SLOW_SOLVER)
    (dest / "sleep").write_text(str(seconds))
    return dest


def cluster_file(path: Path, slurm, **settings) -> Path:
    """A cluster file for the test's SLURM, as an organiser writes one (docs/judge_cluster.md)."""
    folder = path.parent
    values = {"system": "slurm", "cores": 1, "memory": "2GiB", "processes": 1, "maximum_jobs": 2,
              "walltime": "01:00:00", "queue": "debug", "interface": slurm.interface, "python": sys.executable,
              "log_directory": str(folder / "logs"), "job_script_prologue": [f"cd {folder}"], "worker_timeout": 120}
    values.update(settings)
    path.write_text(yaml.safe_dump(values))
    return path


def units_of(out: Path) -> dict[tuple[str, str], tuple]:
    """(team, unit) -> state, outcome, exit code, scores, as recorded."""
    with sqlite3.connect(out / "judge.sqlite") as db:
        rows = db.execute("SELECT team, unit, state, outcome, exit_code, scores FROM units").fetchall()
    return {(team, unit): (state, outcome, code, json.loads(scores)) for team, unit, state, outcome, code, scores in rows}


def attempts_of(out: Path) -> list[dict]:
    with sqlite3.connect(out / "judge.sqlite") as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT * FROM attempts ORDER BY team, unit, attempt")]


def submitted_jobs(slurm) -> int:
    """How many jobs the controller has accepted so far (its log's submissions)."""
    log = slurm.root / "log" / "slurmctld.log"
    return log.read_text(errors="replace").count("_slurm_rpc_submit_batch_job: JobId=") if log.is_file() else 0


def wait_until_no_jobs(slurm, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while slurm.job_ids() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert slurm.job_ids() == []


def test_a_judgement_on_slurm_ends_as_on_a_local_cluster(slurm_cluster, project_data, tmp_path,  # noqa: F811
                                                          monkeypatch):
    teams = tmp_path / "teams"
    for team, name in TEAMS.items():
        shutil.copytree(sample(project_data, name), teams / team)
    local = judge(teams, TASK, tmp_path / "local", root=project_data, workers=2)
    # dask-jobqueue calls sbatch with this process's environment; the jobs inherit it (PYTHONPATH included).
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    lines: list[str] = []
    on_slurm = judge(teams, TASK, tmp_path / "slurm", root=project_data, progress=lines.append,
                     cluster_file=cluster_file(tmp_path / "slurm.yaml", slurm_cluster))
    assert local.finished and on_slurm.finished and on_slurm.ran == len(TEAMS)
    assert units_of(tmp_path / "slurm") == units_of(tmp_path / "local")
    assert units_of(tmp_path / "slurm")[("alice", "pipeline")][0] == "done"
    assert list((tmp_path / "logs").glob("*.err")), "the workers ran in no SLURM job (no job log)"
    assert any("Dask dashboard" in line for line in lines)
    wait_until_no_jobs(slurm_cluster)  # closing the cluster cancels its jobs


def running_on(out: Path, address: str) -> set[tuple[str, str]]:
    """The units the store says are running on a worker at this address (read while the judge writes)."""
    try:
        with sqlite3.connect(f"file:{out / 'judge.sqlite'}?mode=ro", uri=True, timeout=10) as db:
            rows = db.execute("SELECT team, unit, worker FROM units WHERE state='running'").fetchall()
    except sqlite3.OperationalError:
        return set()
    return {(team, unit) for team, unit, worker in rows if worker and f"//{address}:" in worker}


def test_a_node_killed_halfway_charges_only_what_ran_there_and_ends_as_undisturbed(  # noqa: F811
        slurm_alone, project_data, tmp_path, monkeypatch):
    need_nodes(slurm_alone)
    teams = tmp_path / "teams"
    for team in ("alice", "bob"):
        slow_solver(project_data, teams / team, 3)
    options = dict(root=project_data, overrides=CUT)
    undisturbed = judge(teams, TASK, tmp_path / "undisturbed", workers=2, **options)
    assert undisturbed.finished
    monkeypatch.setenv("SLURM_CONF", str(slurm_alone.conf))
    # a job is a whole node (its 2 CPUs): one worker per node, running two parts at a time
    file = cluster_file(tmp_path / "slurm.yaml", slurm_alone, cores=2, memory="3GiB", maximum_jobs=3)
    victim = sorted(slurm_alone.nodes)[1]
    address = slurm_alone.node_address(victim)
    summary, failure = {}, []

    def run() -> None:
        try:
            summary["it"] = judge(teams, TASK, tmp_path / "out", cluster_file=file, retries=2, **options)
        except BaseException as exc:  # noqa: BLE001  (reported below)
            failure.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 300
    while not running_on(tmp_path / "out", address) and time.monotonic() < deadline and thread.is_alive():
        time.sleep(0.1)
    started_there = running_on(tmp_path / "out", address)
    assert started_there, "no unit ever ran on the node to kill"
    slurm_alone.kill_node(victim)
    thread.join(600)
    assert not thread.is_alive() and not failure, failure
    assert summary["it"].finished
    assert units_of(tmp_path / "out") == units_of(tmp_path / "undisturbed")
    attempts = attempts_of(tmp_path / "out")
    charged = [attempt for attempt in attempts if attempt["result"] != "done"]
    assert charged, "the node's death cost no attempt: nothing was running there"
    out = tmp_path / "out" / "runs"
    for attempt in charged:  # each charged attempt ran on the dead node, and started (its folder exists)
        assert attempt["result"] == "retried" and f"//{address}:" in attempt["worker"], attempt
        assert (out / attempt["team"] / TASK / f"{attempt['unit']}.attempt-{attempt['attempt']}").is_dir(), attempt
    assert {(attempt["team"], attempt["unit"]) for attempt in charged} >= started_there
    units = {(attempt["team"], attempt["unit"]) for attempt in attempts}
    assert sum(attempt["result"] == "done" for attempt in attempts) == len(units) == len(units_of(tmp_path / "out"))
    folders = {(path.parent.parent.name, path.name) for path in out.glob(f"*/{TASK}/*.attempt-*")}
    assert folders == {(a["team"], f"{a['unit']}.attempt-{a['attempt']}") for a in charged}, \
        "every attempt folder is an attempt recorded"


def test_jobs_with_a_walltime_shorter_than_the_judgement_retire_between_units(  # noqa: F811
        slurm_cluster, project_data, tmp_path, monkeypatch):
    teams = tmp_path / "teams"
    for number in range(16):  # each unit takes 7 x 1.5 s of sleep at least, however fast the machine
        slow_solver(project_data, teams / f"team{number:02d}", 1.5)
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    # Units of 30 s steps may take 2 x 30 + 30 = 90 s; jobs of 3 minutes: a worker lives 153 s give or take 9,
    # so it starts units in its first 54 to 72 s only (7 at most, one at a time), then retires once they end:
    # the 16 units need more jobs than the 2 that run at once.
    file = cluster_file(tmp_path / "slurm.yaml", slurm_cluster, walltime="00:03:00", maximum_jobs=2)
    lines: list[str] = []
    summary = judge(teams, TASK, tmp_path / "out", root=project_data, cluster_file=file, time_limit=30,
                    progress=lines.append)
    assert summary.finished and summary.counts["done"] == 16, "\n".join(lines)
    attempts = attempts_of(tmp_path / "out")
    assert [attempt["result"] for attempt in attempts] == ["done"] * 16, "a unit was cut"
    scores = {json.dumps(result[3], sort_keys=True) for result in units_of(tmp_path / "out").values()}
    assert len(scores) == 1, "identical submissions score alike"
    logs = sorted((tmp_path / "logs").glob("*.err"))
    assert len(logs) > 2, "no job was replaced"
    assert not [log.name for log in logs if "DUE TO TIME LIMIT" in log.read_text(errors="replace")]
    assert sum("retires before its deadline, between units" in log.read_text(errors="replace") for log in logs) >= 2
    wait_until_no_jobs(slurm_cluster)


def judge_command(teams: Path, out: Path, file: Path, env: dict, *more: str) -> subprocess.CompletedProcess:
    """codascore judge on a cluster file, as an organiser runs it; a hang fails the test."""
    return subprocess.run([sys.executable, "-m", "codascore", "judge", TASK, str(teams), "--out", str(out),
                           "--cluster", str(file), *more], env=env, capture_output=True, text=True, timeout=120)


def test_slurm_down_or_unconfigured_ends_the_judgement_with_sbatchs_message(  # noqa: F811
        slurm_alone, project_data, tmp_path):
    teams = tmp_path / "teams"
    shutil.copytree(sample(project_data, "trivial"), teams / "alice")
    file = cluster_file(tmp_path / "slurm.yaml", slurm_alone)
    env = {key: value for key, value in os.environ.items() if key != "SLURM_CONF"}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH", "")])
    root = ["--root", str(project_data)]
    timings = {}
    for case, case_env in (("unconfigured", env), ("down", {**env, "SLURM_CONF": str(slurm_alone.conf)})):
        if case == "down":
            slurm_alone.stop_controller()
        started = time.monotonic()
        done = judge_command(teams, tmp_path / case, file, case_env, *root)
        timings[case] = time.monotonic() - started
        assert done.returncode == 2, (case, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert lines[-1].startswith("error: the batch system (slurm) refused a job: sbatch: "), (case, lines)
        assert "Traceback" not in done.stderr and "Task exception" not in done.stderr, done.stderr
        with sqlite3.connect(tmp_path / case / "judge.sqlite") as db:  # the unit left pending
            assert db.execute("SELECT state FROM units").fetchall() == [("pending",)]
    assert "Could not establish a configuration source" in judge_command(teams, tmp_path / "again", file, env,
                                                                          *root).stderr
    print(f"SLURM unconfigured: exit 2 after {timings['unconfigured']:.1f} s; down: {timings['down']:.1f} s")


def test_jobs_too_small_for_a_unit_are_refused_before_any_job_is_submitted(  # noqa: F811
        slurm_cluster, project_data, tmp_path):
    teams = tmp_path / "teams"
    slow_solver(project_data, teams / "alice", 0)
    env = {**os.environ, "SLURM_CONF": str(slurm_cluster.conf),
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")])}
    before = submitted_jobs(slurm_cluster)
    root = ["--root", str(project_data)]
    cases = {  # the case: units of 8e9 bytes (official2022) against jobs of 4GB
        "memory": (cluster_file(tmp_path / "small.yaml", slurm_cluster, memory="4GB"), ["--profile", "official2022"],
                   r"no worker of cluster file \S+ can hold unit alice/uai.pr/time_limit=20,instance=bn_1: it asks for "
                   r"\{'cores': '1', 'memory': '7.45 GiB'\}, a worker offers \{'cores': '1', 'memory': '3.73 GiB'\}"),
        "walltime": (cluster_file(tmp_path / "short.yaml", slurm_cluster, walltime="00:05:00"),
                     ["--time-limit", "600"], r"unit alice/uai.pr/pipeline may take up to 1230 s, but a worker of "
                                              r"cluster file \S+ lives at least 240 s"),
    }
    for case, (file, more, says) in cases.items():
        done = judge_command(teams, tmp_path / case, file, env, *root, *more)
        assert done.returncode == 2 and "Traceback" not in done.stderr, (case, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert re.search(says, done.stderr), (case, done.stderr)
        assert not (tmp_path / case).exists(), "nothing written"
    assert submitted_jobs(slurm_cluster) == before, "a job was submitted"
