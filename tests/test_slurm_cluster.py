"""The SLURM of tests/slurm_fixture.py runs batch jobs on each of its nodes, and Dask workers through
dask-jobqueue's SLURMCluster (what ``codascore judge`` uses on a batch scheduler): results come back from
SLURM jobs, closing the cluster leaves no job behind, and a node killed takes its jobs' processes with it."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from machine_needs import missing
from slurm_fixture import need_nodes, slurm_alone, slurm_cluster  # noqa: F401  (the fixtures)

pytestmark = pytest.mark.slurm


def test_node_runs_a_batch_job(slurm_cluster, tmp_path):  # noqa: F811
    out = tmp_path / "job.out"
    marker = tmp_path / "ran"
    job = slurm_cluster.run(
        "sbatch", "--parsable", "--ntasks=1", "--cpus-per-task=1", "--mem=100M", "--time=00:01:00",
        f"--chdir={tmp_path}", f"--output={out}", f"--wrap=echo $SLURM_JOB_ID > {marker}",
    ).strip()
    assert job.isdigit(), job
    # Polled here rather than with sbatch --wait, whose polls are 2 to 10 s apart.
    deadline = time.monotonic() + 60
    while job in slurm_cluster.job_ids() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert slurm_cluster.job_ids() == []
    assert "JobState=COMPLETED" in slurm_cluster.run("scontrol", "show", "job", job)
    assert marker.read_text().strip() == job


def slurm_job_id() -> str | None:
    """Run on a Dask worker: the SLURM job it lives in."""
    return os.environ.get("SLURM_JOB_ID")


def square(x: int) -> int:
    return x * x


def test_dask_workers_in_slurm_jobs(slurm_cluster, tmp_path, monkeypatch):  # noqa: F811
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError:
        message = "dask-jobqueue is not installed (the test extra has it: make install)"
        missing(message, "the SLURM tests")
    from distributed import Client, wait

    # dask-jobqueue calls sbatch, squeue and scancel with this process's environment; sbatch passes it on
    # (--export=ALL, SLURM's default) to the jobs, so the workers run this Python with its PYTHONPATH.
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    # cloudpickle sends a function by reference when its module is importable here (pytest put tests/ on
    # sys.path): the workers must import this module too, so the job's prologue puts tests/ on their path.
    tests_dir = Path(__file__).resolve().parent
    prologue = [f"cd {tmp_path}", f'export PYTHONPATH="{tests_dir}${{PYTHONPATH:+:$PYTHONPATH}}"']
    cluster = SLURMCluster(
        cores=1, memory="1GB", processes=1, walltime="00:05:00", queue="debug",
        python=sys.executable, interface=slurm_cluster.interface, log_directory=str(tmp_path / "logs"),
        local_directory=str(tmp_path / "workers"), job_script_prologue=prologue,
        scheduler_options={"dashboard_address": "127.0.0.1:0"}, death_timeout=30,
    )
    try:
        assert "#SBATCH -p debug" in cluster.job_script()
        cluster.scale(jobs=2)
        with Client(cluster, timeout=60) as client:
            client.wait_for_workers(2, timeout=90)
            futures = client.map(square, range(6))
            wait(futures, timeout=60)
            squares = client.gather(futures)
            workers = client.run(os.getpid)
            jobs = client.run(slurm_job_id)
            on_demand = client.submit(slurm_job_id, pure=False).result(timeout=60)
        assert squares == [0, 1, 4, 9, 16, 25]
        assert len(set(workers.values())) == 2 and os.getpid() not in workers.values()
        assert all(job and job.isdigit() for job in jobs.values()), jobs
        assert len(set(jobs.values())) == 2
        assert on_demand in jobs.values()
        assert set(jobs.values()) <= set(slurm_cluster.job_ids())
    finally:
        cluster.close()
    deadline = time.monotonic() + 30
    while slurm_cluster.job_ids() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert slurm_cluster.job_ids() == []


def test_each_node_runs_jobs_and_a_node_killed_takes_its_jobs_with_it(slurm_alone, tmp_path):  # noqa: F811
    need_nodes(slurm_alone)
    jobs = {}
    for node in slurm_alone.nodes:
        jobs[node] = slurm_alone.run(
            "sbatch", "--parsable", f"--nodelist={node}", "--mem=100M", "--time=00:05:00", f"--chdir={tmp_path}",
            f"--output={tmp_path / node}.out", f"--wrap=echo $SLURMD_NODENAME; exec sleep 300").strip()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all((tmp_path / f"{node}.out").is_file() and
                                                  (tmp_path / f"{node}.out").read_text() for node in jobs):
        time.sleep(0.2)
    assert slurm_alone.jobs_on() == {job: node for node, job in jobs.items()}
    victim = sorted(slurm_alone.nodes)[1]
    sleeper = [pid for pid in slurm_alone.node_pids(victim) if "sleep 300" in Path(f"/proc/{pid}/cmdline")
               .read_bytes().replace(b"\0", b" ").decode()]
    assert sleeper, "the node's job runs in the node's namespace"
    killed = slurm_alone.kill_node(victim)
    assert set(sleeper) <= set(killed) and slurm_alone.node_pids(victim) == []
    others = [node for node in slurm_alone.nodes if node != victim]
    assert all(slurm_alone.node_pids(node) for node in others), "the other nodes live on"
    assert all((tmp_path / f"{node}.out").read_text().strip() == node for node in slurm_alone.nodes)
