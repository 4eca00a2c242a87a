"""The final judgement (codascore.judge) on a LocalCluster of two worker processes: a unit judged scores as
``codascore run`` does; a worker killed mid-unit, a judge killed halfway, an edited submission and bad
input each end with the results of an undisturbed judgement, running only what was unfinished or changed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from codascore import runner  # noqa: E402
from codascore.errors import JudgeError  # noqa: E402
from codascore.judge import judge, status  # noqa: E402
from codascore.judge.cluster import jobqueue_cluster, local_cluster, read_cluster_file  # noqa: E402
from codascore.judge.scheduler import settle_folders, staging_folder  # noqa: E402
from codascore.judge.store import Store  # noqa: E402
from codascore.judge.units import list_units  # noqa: E402
from codascore.outcomes import ExitCode, exit_code_of_error  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TASK = "uai.pr"
#: The uai.pr teams of the undisturbed judgement: a sample each, and erin's solver that sleeps.
TEAMS = {"alice": "exact", "bob": "trivial", "carol": "invalid_no_result_files", "dave": "perturbed"}
#: A code submission that answers exactly after sleeping on its first instance (long enough to be killed).
SLEEPER = '''import os, shutil, sys, time
here = os.path.dirname(os.path.abspath(__file__))
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
model = os.path.basename(args["--model"])
if model.startswith("bn_1"):
    time.sleep(float(open(os.path.join(here, "sleep")).read()))
shutil.copy(os.path.join(here, "answers", model + ".PR"), args["--result"])
'''


@pytest.fixture(scope="module")
def cluster():
    with local_cluster(2) as started:
        yield started


@pytest.fixture(scope="module")
def client(cluster):
    from distributed import Client
    with Client(cluster) as connected:
        yield connected


def sample(root: Path, name: str, task: str = TASK) -> Path:
    return root / "sample_submissions" / task / name


def sleeper(root: Path, dest: Path, seconds: float = 6) -> Path:
    (dest / "answers").mkdir(parents=True)
    for answer in sample(root, "exact").iterdir():
        shutil.copy(answer, dest / "answers")
    (dest / "solver.py").write_text(SLEEPER)
    (dest / "sleep").write_text(str(seconds))
    return dest


def uai_teams(root: Path, folder: Path) -> Path:
    for team, name in TEAMS.items():
        shutil.copytree(sample(root, name), folder / team)
    sleeper(root, folder / "erin")
    return folder


def results_of(out: Path) -> dict[str, tuple]:
    """Each team's state, outcome, exit code and scores, from the results database."""
    with sqlite3.connect(out / "judge.sqlite") as db:
        rows = db.execute("SELECT team, state, outcome, exit_code, scores FROM units").fetchall()
    return {team: (state, outcome, code, json.loads(scores)) for team, state, outcome, code, scores in rows}


def ends_of(out: Path) -> dict[str, str]:
    with sqlite3.connect(out / "judge.sqlite") as db:
        return dict(db.execute("SELECT team, ended FROM units").fetchall())


def judge_on(cluster, project_data: Path, submissions: Path, out: Path, task: str = TASK, **options):
    return judge(submissions, task, out, root=project_data, scheduler=cluster.scheduler_address, **options)


@pytest.fixture(scope="module")
def undisturbed(cluster, project_data, tmp_path_factory):
    """The uai.pr teams judged without disturbance: (submissions, out, results)."""
    folder = tmp_path_factory.mktemp("undisturbed")
    submissions, out = uai_teams(project_data, folder / "submissions"), folder / "out"
    summary = judge_on(cluster, project_data, submissions, out)
    assert summary.ran == len(TEAMS) + 1 and summary.finished
    return submissions, out, results_of(out)


def test_the_undisturbed_judgement_records_each_outcome(undisturbed):
    _, out, results = undisturbed
    assert results["alice"][:3] == ("done", "SCORED", 0) and results["alice"][3]["score"] == 100.0
    assert results["erin"] == results["alice"]
    assert results["carol"][:3] == ("failed", "INVALID", ExitCode.INVALID)
    lines = (out / "results.csv").read_text().splitlines()
    assert lines[0].startswith("team,task,group,state,outcome,exit_code,score,") and len(lines) == 6
    assert (out / "runs" / "alice" / TASK / "pipeline" / "scoring" / "output" / "details.json").is_file()
    assert not list((out / "runs" / "alice" / TASK).glob("*.attempt-*"))
    table = status(out)
    assert "uai.pr / carol" in table and "5 units, 0 to run" in table


@pytest.mark.parametrize("task, name", [("weak_lensing.phase1", "calibrated"), ("ariel.retrieval", "gaussian_baseline"),
                                        ("srbench.qualification", "linear_regression"), ("uai.pr", "exact")])
def test_a_judged_unit_scores_as_codascore_run(cluster, project_data, tmp_path, task, name):
    (tmp_path / "submissions").mkdir()
    shutil.copytree(sample(project_data, name, task), tmp_path / "submissions" / "team")
    summary = judge_on(cluster, project_data, tmp_path / "submissions", tmp_path / "out", task)
    direct = runner.run(task, sample(project_data, name, task), tmp_path / "direct", root=project_data)
    state, outcome, code, scores = results_of(tmp_path / "out")["team"]
    assert summary.ran == 1 and (state, outcome) == ("done", direct.outcome.name)
    assert scores == direct.scores and scores


def unit_key_running(client, team: str, timeout: float = 60) -> str:
    """The worker address that is processing the team's unit, once it is."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for address, keys in client.processing().items():
            if any(f"-{team}/" in str(key) for key in keys):
                return address
        time.sleep(0.1)
    raise AssertionError(f"{team}'s unit never ran")


def judge_killing_a_worker(cluster, client, project_data: Path, folder: Path, retries: int = 2):
    """Judge erin's sleeper alone and SIGKILL the worker running it halfway through; the summary and the
    killed worker's address."""
    if not (folder / "submissions" / "erin").is_dir():
        sleeper(project_data, folder / "submissions" / "erin")
    summary = {}
    thread = threading.Thread(target=lambda: summary.setdefault("it", judge_on(
        cluster, project_data, folder / "submissions", folder / "out", retries=retries)))
    thread.start()
    address = unit_key_running(client, "erin")
    time.sleep(2)  # in the middle of the unit: the solver sleeps 6 s
    pid = client.run(os.getpid, workers=[address])[address]
    os.kill(pid, signal.SIGKILL)
    thread.join(120)
    client.wait_for_workers(2, timeout=300)  # the nanny restarts it, for the next test (slow under load)
    assert not thread.is_alive()
    return summary["it"], address


def attempts_of(out: Path, team: str) -> list:
    store = Store(out)
    try:
        return store.attempts(list_units(TASK, team, out)[0])
    finally:
        store.close()


def test_a_worker_killed_mid_unit_is_retried_and_scores_as_undisturbed(cluster, client, project_data, tmp_path,
                                                                      undisturbed):
    summary, killed = judge_killing_a_worker(cluster, client, project_data, tmp_path)
    assert summary.finished and results_of(tmp_path / "out")["erin"] == undisturbed[2]["erin"]
    attempts = attempts_of(tmp_path / "out", "erin")
    assert [a["result"] for a in attempts] == ["retried", "done"]
    assert "KilledWorker" in attempts[0]["reason"] and attempts[0]["worker"] == killed


def test_a_unit_lost_with_no_retry_left_is_an_infrastructure_error_run_again_next_time(
        cluster, client, project_data, tmp_path, undisturbed):
    summary, _ = judge_killing_a_worker(cluster, client, project_data, tmp_path, retries=0)
    assert not summary.finished and summary.counts["infrastructure error"] == 1
    assert "infrastructure error" in status(tmp_path / "out") and "1 to run by the next" in status(tmp_path / "out")
    again = judge_on(cluster, project_data, tmp_path / "submissions", tmp_path / "out")
    assert again.ran == 1 and again.finished
    assert results_of(tmp_path / "out")["erin"] == undisturbed[2]["erin"]
    assert [a["result"] for a in attempts_of(tmp_path / "out", "erin")] == ["infrastructure error", "done"]


def test_a_worker_killed_before_it_recorded_the_start_is_charged_to_that_worker(
        cluster, client, project_data, tmp_path, undisturbed):
    """Each worker dies in the instant between making an attempt's folder and recording its start (its start
    record half written): the attempt is charged to the worker Dask gave it to, from the folder's time, and the
    team ends scored as undisturbed."""
    from codascore.formats.run_folder import UNIT_START

    def die_when_starting() -> None:
        import codascore.judge.worker as on_worker

        def write(path, data):
            if Path(path).name == UNIT_START:
                (Path(path).parent / f".{UNIT_START}.half.tmp").write_text('{"work')
                os.kill(os.getpid(), signal.SIGKILL)
            return write.original(path, data)

        write.original = getattr(on_worker.write_json_atomic, "original", on_worker.write_json_atomic)
        on_worker.write_json_atomic = write

    def live_again() -> None:
        import codascore.judge.worker as on_worker

        on_worker.write_json_atomic = getattr(on_worker.write_json_atomic, "original", on_worker.write_json_atomic)

    shutil.copytree(sample(project_data, "exact"), tmp_path / "submissions" / "alice")
    doomed = set(client.run(die_when_starting))
    try:
        summary = judge_on(cluster, project_data, tmp_path / "submissions", tmp_path / "out", retries=3)
    finally:
        client.wait_for_workers(2, timeout=300)
        client.run(live_again)
    assert summary.finished and results_of(tmp_path / "out")["alice"] == undisturbed[2]["alice"]
    attempts = attempts_of(tmp_path / "out", "alice")
    lost, done = attempts[:-1], attempts[-1]
    assert lost and done["result"] == "done" and {a["result"] for a in lost} == {"retried"}
    for attempt in lost:
        assert attempt["worker"] in doomed and attempt["worker"] != done["worker"], [dict(a) for a in attempts]
        folder = staging_folder(tmp_path / "out", list_units(TASK, "alice", tmp_path)[0], attempt["attempt"])
        assert folder.is_dir() and not (folder / UNIT_START).exists(), folder
        assert attempt["started"] <= attempt["ended"]


def stored_scores(out: Path, team: str) -> str:
    """The team's scores as the results database holds them: JSON text, in the order recorded."""
    with sqlite3.connect(out / "judge.sqlite") as db:
        return db.execute("SELECT scores FROM units WHERE team=?", (team,)).fetchone()[0]


def test_a_result_kept_by_a_worker_that_died_before_returning_it_is_recorded_as_returned(
        cluster, client, project_data, tmp_path, undisturbed):
    """Each worker dies the instant after keeping an attempt's result in its folder: the judge takes the result
    from there, charges no other attempt, and records it as an undisturbed judgement does, to the order of its
    scores (results.csv's columns follow it; a judgement disturbed must read as one that was not)."""
    from codascore.formats.run_folder import UNIT_RESULT

    def die_after_keeping() -> None:
        import codascore.judge.units as on_worker

        def write(path, data, **options):
            write.original(path, data, **options)
            if Path(path).name == UNIT_RESULT:
                os.kill(os.getpid(), signal.SIGKILL)

        write.original = getattr(on_worker.write_json_atomic, "original", on_worker.write_json_atomic)
        on_worker.write_json_atomic = write

    shutil.copytree(sample(project_data, "exact"), tmp_path / "submissions" / "alice")
    doomed = set(client.run(die_after_keeping))
    try:
        summary = judge_on(cluster, project_data, tmp_path / "submissions", tmp_path / "out", retries=0)
    finally:
        client.wait_for_workers(2, timeout=300)  # the nannies restart them, their modules as loaded
    assert summary.finished and results_of(tmp_path / "out")["alice"] == undisturbed[2]["alice"]
    assert stored_scores(tmp_path / "out", "alice") == stored_scores(undisturbed[1], "alice")
    assert list(json.loads(stored_scores(tmp_path / "out", "alice"))) == ["score", "n_answered", "n_perfect"]
    [attempt] = attempts_of(tmp_path / "out", "alice")
    assert attempt["result"] == "done" and attempt["worker"] in doomed


def finished_units(database: Path) -> tuple[int, int]:
    """(finished, total) units in a database a judge is writing (0, 0 before its tables exist)."""
    if not database.is_file():
        return 0, 0
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=10) as db:
            states = [state for (state,) in db.execute("SELECT state FROM units")]
    except sqlite3.OperationalError:  # created, its tables not yet
        return 0, 0
    return sum(state in ("done", "failed") for state in states), len(states)


def test_a_judge_killed_halfway_runs_only_the_unfinished_again(cluster, project_data, tmp_path, undisturbed):
    submissions, out = uai_teams(project_data, tmp_path / "submissions"), tmp_path / "out"
    code = ("import sys; from pathlib import Path; from codascore.judge import judge; "
            "judge(Path(sys.argv[1]), 'uai.pr', Path(sys.argv[2]), root=Path(sys.argv[3]), workers=2)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    judge_process = subprocess.Popen([sys.executable, "-c", code, str(submissions), str(out), str(project_data)],
                                     env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while finished_units(out / "judge.sqlite")[0] < 2 and time.monotonic() < deadline:
            assert judge_process.poll() is None, "the judge ended before it was killed"
            time.sleep(0.05)
    finally:  # the judge, its LocalCluster's nannies and workers: the session it leads
        os.killpg(judge_process.pid, signal.SIGKILL)
        judge_process.wait()
    finished, total = finished_units(out / "judge.sqlite")
    assert 2 <= finished < total == len(TEAMS) + 1
    summary = judge_on(cluster, project_data, submissions, out)
    assert summary.ran == total - finished and summary.finished
    assert results_of(out) == undisturbed[2]


def test_an_edited_submission_is_judged_again_and_only_it(cluster, project_data, tmp_path, undisturbed):
    submissions, out = tmp_path / "submissions", tmp_path / "out"
    shutil.copytree(undisturbed[0], submissions)
    shutil.copytree(undisturbed[1], out)
    before = ends_of(out)
    shutil.copy(sample(project_data, "exact") / "bn_1.uai.PR", submissions / "bob")
    summary = judge_on(cluster, project_data, submissions, out)
    after, results = ends_of(out), results_of(out)
    assert summary.ran == 1 and summary.finished
    assert {team for team in before if before[team] != after[team]} == {"bob"}
    assert results["bob"][3]["n_perfect"] == undisturbed[2]["bob"][3]["n_perfect"] + 1
    assert judge_on(cluster, project_data, submissions, out).ran == 0


def test_bad_entries_are_listed_with_their_reasons_and_the_rest_judged(cluster, project_data, tmp_path):
    submissions = tmp_path / "submissions"
    shutil.copytree(sample(project_data, "exact"), submissions / "alice")
    (submissions / "empty").mkdir()
    shutil.copytree(sample(project_data, "trivial"), submissions / "twice")
    (submissions / "twice.zip").write_bytes(b"PK\x05\x06" + bytes(18))
    (submissions / "broken.zip").write_bytes(b"not a zip at all")
    lines: list[str] = []
    summary = judge_on(cluster, project_data, submissions, tmp_path / "out", progress=lines.append)
    reasons = {entry.path.name: entry.reason for entry in summary.skipped}
    assert summary.ran == 1 and set(results_of(tmp_path / "out")) == {"alice"}
    assert set(reasons) == {"empty", "twice", "twice.zip", "broken.zip"}
    assert "empty" in reasons["empty"] and "two submissions" in reasons["twice.zip"]
    assert "unreadable zip" in reasons["broken.zip"]
    assert any(line.startswith("skipped broken.zip: unreadable zip") for line in lines)
    csv = (tmp_path / "out" / "results.csv").read_text()
    assert csv.count(",skipped,") == 4 and "Dask dashboard: http" in "\n".join(lines)


def test_missing_reference_data_is_an_organisers_error_naming_it(project_data, tmp_path):
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "scoring_program").symlink_to(project_data / "scoring_program")
    (tmp_path / "submissions" / "alice").mkdir(parents=True)
    with pytest.raises(JudgeError, match=r"reference data for uai.pr not found: .*reference_data/uai.pr") as error:
        judge(tmp_path / "submissions", TASK, tmp_path / "out", root=tmp_path / "root")
    assert exit_code_of_error(error.value) == ExitCode.ORGANISER_ERROR
    assert not (tmp_path / "out").exists()


def test_status_of_a_folder_without_a_judgement_says_so(tmp_path):
    with pytest.raises(JudgeError, match="no judgement"):
        status(tmp_path)


def test_a_cluster_file_builds_a_batch_job_with_the_units_resources(tmp_path):
    pytest.importorskip("dask_jobqueue")
    file = tmp_path / "cluster.yaml"
    file.write_text("system: slurm\ncores: 4\nmemory: 16GB\nwalltime: '02:00:00'\nqueue: short\nprocesses: 2\n"
                    "job_script_prologue: ['source venv/bin/activate']\n")
    with jobqueue_cluster(read_cluster_file(file)) as built:
        script = built.job_script()
    assert "#SBATCH -p short" in script and "#SBATCH -t 02:00:00" in script
    assert "source venv/bin/activate" in script and "--resources cores=2,memory=8000000000" in script
    # a walltime of 2 h: a stagger of 5 min, a margin of 2 min, the lifetime what is left (1 h 53 min)
    assert "--lifetime 6780s --lifetime-stagger 300s" in script
    for wrong, says in (("nodes: 3", "unknown key 'nodes'"), ("jobs: 3", "unknown key 'jobs': write maximum_jobs"),
                        ("lifetime: '02:00:00'", "must be above 0 and end before the walltime"),
                        ("minimum_jobs: 2", "minimum_jobs <= maximum_jobs")):
        file.write_text(f"system: slurm\ncores: 4\nmemory: 16GB\nwalltime: '02:00:00'\n{wrong}\n")
        with pytest.raises(JudgeError, match=says):
            read_cluster_file(file)
    file.write_text("scheduler: slurm\ncores: 1\nmemory: 4GB\n")  # docs/judge_cluster.md's file, once
    with pytest.raises(JudgeError, match="unknown key 'scheduler': write system"):
        judge(tmp_path, TASK, tmp_path / "out", cluster_file=file)
    assert not (tmp_path / "out").exists(), "a refused cluster file leaves nothing behind"


def test_the_workers_wanted_are_those_the_unfinished_units_could_use_within_the_plan():
    """want_workers: enough workers for the units' cores and memory, no more than units, nor than planned."""
    from codascore.judge.cluster import WATCHES, Watch, want_workers

    class Client:  # what WATCHES keys: any object open_client made a watch for
        pass

    client, gib = Client(), 1024**3
    WATCHES[client] = Watch(60, planned=[{"cores": 4, "memory": 16 * gib, "seconds": None}] * 10)
    assert want_workers(client, [{"cores": 1, "memory": gib}] * 9) == 3
    assert want_workers(client, [{"cores": 1, "memory": 8 * gib}] * 9) == 5
    assert want_workers(client, [{"cores": 4, "memory": gib}] * 2) == 2
    assert want_workers(client, [{"cores": 1, "memory": gib}] * 400) == 10
    assert want_workers(client, []) == 0 and WATCHES[client].wanted == 0
    assert want_workers(Client(), [{"cores": 1}]) == 0  # no plan: nothing adapts


def test_the_adaptive_scaling_keeps_the_workers_the_judge_wants_and_no_more():
    """judge_adaptive on a real cluster: with nothing submitted, Dask alone would keep none; it starts and
    keeps the workers the judge wants, and lets them go when it wants none."""
    from distributed import Client, LocalCluster

    from codascore.judge.cluster import Watch, judge_adaptive

    watch = Watch(60)
    with LocalCluster(n_workers=0, threads_per_worker=1, dashboard_address=":0") as adapting, \
            Client(adapting) as client:
        adapting.adapt(minimum=0, maximum=3, interval="100ms", wait_count=2, Adaptive=judge_adaptive(watch))
        watch.wanted = 2
        client.wait_for_workers(2, timeout=120)
        time.sleep(1)  # ten rounds of the adaptive scaling: Dask's own target is 0
        assert len(client.scheduler_info()["workers"]) == 2
        watch.wanted = 0
        deadline = time.monotonic() + 60
        while client.scheduler_info()["workers"] and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not client.scheduler_info()["workers"]


@pytest.mark.parametrize("page", ["judge.md", "judge_cluster.md"])
def test_every_cluster_file_the_docs_show_is_read_and_builds_a_job(page):
    pytest.importorskip("dask_jobqueue")
    import re

    import yaml

    text = (REPO / "docs" / page).read_text()
    files = [block for block in re.findall(r"```yaml\n(.*?)```", text, re.S) if re.search(r"^(system|cores):", block, re.M)]
    assert files, f"docs/{page} shows no cluster file"
    for block in files:
        config = read_cluster_file_text(block)
        config["interface"] = "lo" if config.get("interface") else None  # this machine has no ib0
        with jobqueue_cluster(config) as built:
            script = built.job_script()
        assert f"--resources cores={config['cores'] // config['processes']}" in script
        assert yaml.safe_load(block)["system"] in ("slurm", "lsf", "pbs", "sge", "htcondor")


def read_cluster_file_text(text: str) -> dict:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "cluster.yaml").write_text(text)
        return read_cluster_file(Path(folder) / "cluster.yaml")


def test_results_write_counts_as_integers_and_groups_in_their_numbers_order(tmp_path):
    from codascore.judge.results import write_results
    from codascore.judge.units import Unit

    store = Store(tmp_path)
    units = [Unit("alice", TASK, "score", f"score,group={group}", tmp_path, {"cores": 1.0}, 10.0, group)
             for group in ("12s", "4s", "8s")]
    store.to_run(units, {unit.name: {"submission": "s"} for unit in units},
                 {unit.name: f"runs/{unit.key}" for unit in units})
    for unit in units:
        store.queue(unit, 1)
        store.record_result(unit, 1, {"outcome": "SCORED", "exit_code": 0, "elapsed": 1.0, "isolation": "bwrap",
                                      "scores": {"score": 99.5, "n_perfect": 7.0}})
    write_results(store, tmp_path)
    store.close()
    lines = (tmp_path / "results.csv").read_text().splitlines()
    assert lines[0] == "team,task,group,state,outcome,exit_code,score,n_perfect,wall_seconds,isolation,run_folder,messages"
    assert [line.split(",")[2] for line in lines[1:]] == ["4s", "8s", "12s"]
    assert lines[1].split(",")[6:10] == ["99.5", "7", "1.0", "bwrap"]


def test_a_result_recorded_but_not_yet_moved_is_moved_at_the_next_start(tmp_path):
    unit = list_units(TASK, "alice", tmp_path)[0]
    store = Store(tmp_path)
    store.to_run([unit], {unit.name: {"submission": "0" * 64, "reference data": "1" * 64}},
                 {unit.name: f"runs/alice/{TASK}/pipeline"})
    attempt = store.next_attempt(unit)
    store.queue(unit, attempt)
    store.record_result(unit, attempt, {"outcome": "SCORED", "exit_code": 0, "scores": {"score": 1.0},
                                        "elapsed": 1.0})
    final = tmp_path / "runs" / "alice" / TASK / "pipeline"
    (final.with_name("pipeline.attempt-1") / "scoring").mkdir(parents=True)  # the new result
    (final.with_name("pipeline.replaced") / "old").mkdir(parents=True)  # the old one, moved aside
    settle_folders(store, tmp_path)
    store.close()
    assert (final / "scoring").is_dir() and not final.with_name("pipeline.replaced").exists()
    assert not final.with_name("pipeline.attempt-1").exists()


def test_the_judge_verb_judges_prints_the_status_and_refuses_a_wrong_command_line(project_data, tmp_path, capsys):
    from codascore.cli import main as cli_main

    teams = tmp_path / "teams"
    shutil.copytree(sample(project_data, "exact"), teams / "alice")
    shutil.copytree(sample(project_data, "invalid_no_result_files"), teams / "carol")
    (teams / "empty").mkdir()
    out = tmp_path / "judgement"
    assert cli_main(["judge", TASK, str(teams), "--out", str(out), "--root", str(project_data),
                     "--workers", "1"]) == ExitCode.OK
    captured = capsys.readouterr()
    assert "uai.pr: 2 units (1 done, 1 failed); 2 run now" in captured.out
    assert f"results: {out / 'results.csv'}" in captured.out
    assert "skipped empty:" in captured.err and "Dask dashboard" in captured.err
    assert cli_main(["judge", "status", str(out)]) == ExitCode.OK
    table = capsys.readouterr().out
    assert "uai.pr / alice" in table and "uai.pr / carol" in table and "skipped uai.pr / empty" in table
    for wrong in (["judge", TASK, str(tmp_path / "none"), "--out", str(out)],
                  ["judge", TASK, str(teams), "--out", str(out), "--retries", "-1"],
                  ["judge", "status", str(tmp_path / "none")]):
        assert cli_main(wrong) == ExitCode.ORGANISER_ERROR, wrong
        assert capsys.readouterr().err.startswith("error: ")
    for wrong in (["judge", "status", str(out), TASK], ["judge", TASK, str(teams)]):  # argparse's refusals
        with pytest.raises(SystemExit) as refused:
            cli_main(wrong)
        assert refused.value.code == ExitCode.ORGANISER_ERROR, wrong
        assert capsys.readouterr().err.startswith("codascore")
