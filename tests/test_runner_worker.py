"""The runner reproduces the compute worker where it used to differ (issue 15, Build 5), each checked in the
bubblewrap sandbox: real /app mounts, the mounts of each step, the step's environment, the submission's own
command and the ingestion program running at the same time under one limit, res/metadata as the worker
writes it, program folders taken as given, and the scores.txt fallback (docs/codabench.md#the-compute-worker)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

from codascore import containers, runner
from sandbox_fixture import bubblewrap_sandbox

TASK = "weak_lensing.phase1"

#: Records what a program sees: its /app folders (and whether each is writable), its environment, and
#: whether it can import the project's library. Then writes a score, or waits for a partner's file.
PROBE = r'''
import json, os, sys, time

name, partner = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None
def writable(path):
    try:
        with open(os.path.join(path, ".probe"), "w"):
            pass
        os.remove(os.path.join(path, ".probe"))
        return True
    except OSError:
        return False
seen = {entry: writable(os.path.join("/app", entry)) for entry in sorted(os.listdir("/app"))}
try:
    import codascore
    library = True
except ImportError:
    library = False
report = {"app": seen, "env": dict(os.environ), "library": library, "cwd": os.getcwd()}
if os.path.isdir("/app/input/ref"):
    report["ref"] = sorted(os.listdir("/app/input/ref"))
with open("/app/output/%s.json" % name, "w") as handle:
    json.dump(report, handle)
if partner:  # both programs of the prediction step must be running for either to finish
    open("/app/output/%s.started" % name, "w").close()
    for _ in range(600):
        if os.path.exists("/app/output/%s.started" % partner):
            break
        time.sleep(0.05)
    else:
        sys.exit(7)
if name == "scoring":
    with open("/app/output/scores.txt", "w") as handle:
        handle.write("score: 0.5\navg_coverage: 0.25\nMSE: 1.5\nR_squared: 0.75\n")
'''


def program(folder: Path, command: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "metadata.yaml").write_text(yaml.safe_dump({"command": command}))
    (folder / "probe.py").write_text(PROBE)
    return folder


def probe_root(project_data: Path, root: Path, ingestion_partner: str = "program") -> Path:
    """A bundle source whose scoring and ingestion programs are probes, without the library."""
    program(root / "scoring_program", "python3 probe.py scoring")
    program(root / "ingestion_program", f"python3 /app/program/probe.py ingestion {ingestion_partner}".strip())
    shutil.copytree(project_data / "reference_data" / TASK, root / "reference_data" / TASK)
    (root / "input_data" / TASK).mkdir(parents=True)
    (root / "input_data" / TASK / "task.yaml").write_text("task: weak_lensing.phase1\n")
    return root


@pytest.fixture(scope="module")
def sandbox() -> containers.Container:
    return bubblewrap_sandbox()


@pytest.fixture(scope="module")
def root(project_data, tmp_path_factory) -> Path:
    return probe_root(project_data, tmp_path_factory.mktemp("bundle"))


@pytest.fixture(scope="module")
def code_run(root, tmp_path_factory, sandbox) -> runner.RunResult:
    """A submission with its own command, run beside the probe ingestion program, with a variable in the
    runner's environment that the steps must not see."""
    tmp_path = tmp_path_factory.mktemp("code_run")
    submission = program(tmp_path / "submission", "python3 probe.py program ingestion")
    os.environ["CODASCORE_HOST_ONLY"] = "a host variable"
    try:
        return runner.run(TASK, submission, tmp_path / "run", root=root, container=sandbox,
                          time_limit=60)
    finally:
        del os.environ["CODASCORE_HOST_ONLY"]


def seen(run: runner.RunResult, name: str) -> dict:
    step = "scoring" if name == "scoring" else "prediction"
    return json.loads((run.run_dir / step / "output" / f"{name}.json").read_text())


def test_app_paths_are_real_mounts(code_run):
    """The scoring probe opens /app/input/ref by itself, from the command `python3 probe.py` (no /app
    argument to rewrite), and runs in /app/program."""
    scoring = seen(code_run, "scoring")
    assert "task.yaml" in scoring["ref"] and scoring["cwd"] == "/app/program"


def test_each_step_mounts_what_the_worker_mounts(code_run):
    """Prediction: program, output, input_data, data read-only (and ingested_program for the ingestion
    program); no shared. Scoring: program, input, output, shared, data read-only."""
    writable = {"program": True, "output": True, "input_data": True, "data": False}
    assert seen(code_run, "program")["app"] == writable
    assert seen(code_run, "ingestion")["app"] == {**writable, "ingested_program": True}
    assert seen(code_run, "scoring")["app"] == {"program": True, "input": True, "output": True, "shared": True,
                                                 "data": False}


def test_the_environment_is_the_images_not_the_hosts(code_run):
    for name in ("program", "ingestion", "scoring"):
        env = seen(code_run, name)["env"]
        assert "CODASCORE_HOST_ONLY" not in env
        assert env["PYTHONUNBUFFERED"] == "1" and env["http_proxy"] == "" and env["https_proxy"] == ""
        assert set(env) <= {"PATH", "HOME", "LANG", "PWD", "PYTHONUNBUFFERED", "http_proxy", "https_proxy"}


def test_the_submission_command_and_the_ingestion_run_at_the_same_time(code_run):
    """Each waits for the other to have started: run one after the other, the first would never finish."""
    metadata = yaml.safe_load((code_run.run_dir / "scoring" / "input" / "res" / "metadata").read_text())
    assert metadata["exitCode"] == 0 and metadata["ingestionExitCode"] == 0, code_run.error


def test_one_time_limit_covers_the_whole_step(root, tmp_path, sandbox):
    """The submission's command waits for a partner that never starts: the step stops at the limit, both
    programs with it, and the run fails as the worker's does."""
    submission = program(tmp_path / "submission", "python3 probe.py program nobody")
    result = runner.run(TASK, submission, tmp_path / "run", root=root, container=sandbox, time_limit=2)
    assert result.exit_code is None and "Execution Time Limit exceeded. Limit was 2 seconds" in result.error
    assert not (result.run_dir / "scoring").exists()


def test_res_metadata_has_the_workers_key_order_and_elapsed_time(code_run, project_data, tmp_path, sandbox):
    text = (code_run.run_dir / "scoring" / "input" / "res" / "metadata").read_text()
    keys = [line.split(":")[0] for line in text.splitlines()]
    assert keys == ["elapsedTime", "exitCode", "ingestionElapsedTime", "ingestionExitCode"]  # yaml.dump sorts
    metadata = yaml.safe_load(text)
    assert metadata["elapsedTime"] != metadata["ingestionElapsedTime"]  # the submission's own time
    # A results submission runs no command of its own: elapsedTime is then the ingestion's.
    results = tmp_path / "results"
    results.mkdir()
    (results / "notes.txt").write_text("a results submission")
    root = probe_root(project_data, tmp_path / "bundle", ingestion_partner="")
    run = runner.run(TASK, results, tmp_path / "results_run", root=root, container=sandbox)
    metadata = yaml.safe_load((run.run_dir / "scoring" / "input" / "res" / "metadata").read_text())
    assert metadata["exitCode"] is None and metadata["elapsedTime"] == metadata["ingestionElapsedTime"] > 0


def test_a_program_folder_runs_exactly_as_given(code_run, project_data, tmp_path, sandbox):
    """A foreign program folder gets no library; this project's own programs travel with it, as in their
    bundle."""
    assert not seen(code_run, "scoring")["library"] and not seen(code_run, "ingestion")["library"]
    assert not (code_run.run_dir / "scoring" / "program" / "codascore").exists()
    own = runner.run(TASK, project_data / "sample_submissions" / TASK / "calibrated", tmp_path / "own",
                     root=project_data, container=sandbox)
    assert own.scored and (own.run_dir / "scoring" / "program" / "codascore" / "codabench.py").is_file()


def test_the_scores_txt_fallback_is_honoured(code_run):
    assert code_run.scores == {"score": 0.5, "avg_coverage": 0.25, "MSE": 1.5, "R_squared": 0.75}
    assert code_run.scored, code_run.violations



def test_docker_runs_a_program_as_the_worker_creates_its_container(tmp_path):
    """--docker IMAGE: the worker's mounts (read-only where it has them so), working folder, environment,
    dropped capabilities and no-new-privileges; the command is the metadata's, unchanged. (The image itself
    runs by hand: see docs/codabench.md#isolating-a-step.)"""
    mounts = [containers.Mount(tmp_path / "program", "/app/program"),
              containers.Mount(tmp_path / "data", "/app/data", read_only=True)]
    docker = containers.Container("docker", image="codalab/codalab-legacy:py312")
    argv = docker.argv(["python3", "/app/program/score.py", "/app/input", "/app/output"], mounts, "run-1")
    assert argv[:2] == ["docker", "run"] and argv[-5:] == ["codalab/codalab-legacy:py312", "python3",
                                                          "/app/program/score.py", "/app/input", "/app/output"]
    pairs = set(zip(argv, argv[1:]))
    assert {("--workdir", "/app/program"), ("--security-opt", "no-new-privileges"), ("--name", "run-1"),
            ("--volume", f"{tmp_path / 'program'}:/app/program"), ("--volume", f"{tmp_path / 'data'}:/app/data:ro"),
            ("--env", "PYTHONUNBUFFERED=1"), ("--env", "http_proxy="), ("--env", "https_proxy="),
            ("--cap-drop", "KILL"), ("--cap-drop", "SETUID")} <= pairs
    assert "--network" not in argv  # the worker's default: the network is on
    offline = containers.Container("docker", image="i", network=False).argv(["true"], mounts, "n")
    assert ("--network", "none") in set(zip(offline, offline[1:]))
