"""The final judgement with a hostile team among the others (docs/judge.md): on a LocalCluster of two
workers, the hostile uai.pr solver of test_runner_hostile (it reads the reference data, writes outside its
output, leaves a daemon in its own session) runs in the bubblewrap sandbox like every unit. It changes no
other team's result, each of its escapes fails as in the runner's test, and no process of it outlives the
judge."""

from __future__ import annotations

import os
import shutil
import signal
import uuid
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from codascore import bundle  # noqa: E402
from codascore.judge.cluster import local_cluster  # noqa: E402
from sandbox_fixture import bubblewrap_sandbox  # noqa: E402
from test_judge import judge_on, results_of, sample  # noqa: E402
from test_runner_hostile import CONTAINED, hostile_submission, processes_with, reports  # noqa: E402

TASK = "uai.pr"
#: The normal teams: a sample submission each.
NORMAL = {"alice": "exact", "bob": "trivial", "carol": "exact"}


@pytest.fixture(scope="module")
def cluster():
    with local_cluster(2) as started:
        yield started


def normal_teams(project_data: Path, folder: Path) -> Path:
    for team, name in NORMAL.items():
        shutil.copytree(sample(project_data, name), folder / team)
    return folder


def test_a_hostile_team_changes_no_other_result_and_leaves_no_process(cluster, project_data, tmp_path):
    bubblewrap_sandbox()  # the judge's runner picks it by default (containers.choose()); skip without it
    marker = f"codascore-hostile-{uuid.uuid4().hex}"
    outside = tmp_path / "outside.txt"
    library, program = bundle.LIBRARY_DIR, project_data / "ingestion_program"
    alone = judge_on(cluster, project_data, normal_teams(project_data, tmp_path / "alone"), tmp_path / "out-alone")
    assert alone.finished and alone.ran == len(NORMAL)

    submissions = normal_teams(project_data, tmp_path / "with")
    hostile_submission(submissions / "mallory", TASK, project_data, outside, marker, library, program)
    try:
        summary = judge_on(cluster, project_data, submissions, tmp_path / "out")
        left = processes_with(marker)
    finally:
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)
    assert summary.finished and summary.ran == len(NORMAL) + 1
    results = results_of(tmp_path / "out")
    assert {team: results[team] for team in NORMAL} == results_of(tmp_path / "out-alone")
    assert results["alice"][:2] == ("done", "SCORED") and results["mallory"][0] in ("done", "failed")

    found = reports(tmp_path / "out" / "runs" / "mallory" / TASK / "pipeline")
    assert found, "the hostile solver never ran"
    for attempts in found:
        assert len(attempts) == 8
        succeeded = {name for name, outcome in attempts.items() if outcome == "succeeded"}
        assert succeeded <= CONTAINED, attempts
    assert not left, f"processes of the hostile team outlived the judge: {left}"
    assert not outside.exists() and not (library / marker).exists() and not (program / marker).exists()
    assert not Path("/tmp", marker).exists()
