"""The judge on a real batch scheduler: a one-node SLURM (tests/slurm_fixture.py) running Dask workers as
jobs through dask-jobqueue's SLURMCluster, from a cluster file as an organiser writes it. The judgement
ends with the results of the same judgement on a LocalCluster."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import pytest
import yaml

from slurm_fixture import slurm_cluster  # noqa: F401  (the fixture)

pytestmark = pytest.mark.slurm
pytest.importorskip("dask_jobqueue")

from codascore.judge import judge  # noqa: E402
from codascore.judge.store import Store  # noqa: E402

TASK = "uai.pr"
TEAMS = {"alice": "exact", "bob": "trivial", "carol": "invalid_no_result_files"}


def results(out: Path) -> dict:
    store = Store(out, create=False)
    try:
        return {row["team"]: (row["state"], row["outcome"], row["exit_code"], row["scores"]) for row in store.rows()}
    finally:
        store.close()


def test_a_judgement_on_slurm_ends_as_on_a_local_cluster(slurm_cluster, project_data, tmp_path,  # noqa: F811
                                                          monkeypatch):
    teams = tmp_path / "teams"
    for team, sample in TEAMS.items():
        shutil.copytree(project_data / "sample_submissions" / TASK / sample, teams / team)
    local = judge(teams, TASK, tmp_path / "local", root=project_data, workers=2)
    # dask-jobqueue calls sbatch with this process's environment; the jobs inherit it (PYTHONPATH included).
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    cluster_file = tmp_path / "slurm.yaml"
    cluster_file.write_text(yaml.safe_dump({
        "system": "slurm", "cores": 1, "memory": "2GiB", "processes": 1, "jobs": 2, "walltime": "00:10:00",
        "queue": "debug", "interface": "lo", "python": sys.executable, "log_directory": str(tmp_path / "logs"),
        "job_script_prologue": [f"cd {tmp_path}"]}))
    lines: list[str] = []
    on_slurm = judge(teams, TASK, tmp_path / "slurm", root=project_data, cluster_file=cluster_file,
                     progress=lines.append)
    assert local.finished and on_slurm.finished and on_slurm.ran == len(TEAMS)
    assert results(tmp_path / "slurm") == results(tmp_path / "local")
    assert results(tmp_path / "slurm")["alice"][0] == "done"
    assert list((tmp_path / "logs").glob("*.err")), "the workers ran in no SLURM job (no job log)"
    assert any("Dask dashboard" in line for line in lines)
    deadline = time.monotonic() + 30  # closing the cluster cancels its jobs
    while slurm_cluster.job_ids() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert slurm_cluster.job_ids() == []
