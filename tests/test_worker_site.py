"""``codascore worker`` serving the queues of the real Codabench site (tests/codabench_site.py, RabbitMQ its
broker; marker codabench, make test-codabench).

The organiser makes a queue of their own on the site (``POST /api/queues/``: the site makes its RabbitMQ
virtual host and user) and uploads each family's bundle with ``codascore upload``, the bundle naming the
queue (``queue:`` in competition.yaml, docs/worker.md#attaching-a-queue). A ``codascore worker`` process,
given the broker URL the site's queue page shows, serves it:

- every family: a results and a code submission (and invalid ones) made through the site's API end
  Finished or Failed on the site with the scores, logs and detailed results that ``codascore run`` of the
  same submission gives (run from the extracted bundle under the same image environment);
- ``codascore fetch`` and ``codascore site-leaderboard`` then give those scores;
- on a second queue, for the faults (a phase limit of FAULTS_LIMIT seconds): a worker SIGKILLed in the
  middle of a job leaves it to the next worker, which ends it Finished once, one score per column; a
  broker restarted under a running worker, which connects again and serves the next job; a step past the
  time limit Failed with the reason; a hostile code submission that finds nothing of the reference data,
  the worker or its secrets and scores nothing; neither leaves a process behind; the same queue served
  through ``--cluster`` on the one-node SLURM of tests/slurm_fixture.py.

Neither a job's secret nor the broker's password appears in a worker's log or terminal.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
import yaml

from codabench_fixture import SITE_SCRIPT, codabench_site, http  # noqa: F401  (the fixture)
from machine_needs import missing
from slurm_fixture import slurm_cluster  # noqa: F401  (the fixture)
from test_codabench_site import made_bundles, zip_sample  # noqa: F401  (the fixture)
from test_runner_hostile import processes_with

pytestmark = pytest.mark.codabench
pytest.importorskip("kombu")

REPO_ROOT = Path(__file__).resolve().parents[1]
STOCK_IMAGE = "codalab/codalab-legacy:py312"
#: The stock image's environment (make image-env); make test-codabench builds it.
IMAGE_PYTHON = REPO_ROOT / ".venv-image" / "bin" / "python"
#: Each family's task and samples of the starting kit: a results and a code submission (Ariel's starting
#: kit has no valid results sample: an invalid one), and for UAI an invalid one.
FAMILY_SAMPLES = {"weak_lensing": ("weak_lensing.phase1", ("dummy", "code_baseline")),
                  "ariel": ("ariel.retrieval", ("invalid_missing_planet", "code_ridge_gaussian")),
                  "srbench": ("srbench.qualification", ("linear_regression", "code_linear_regression")),
                  "uai": ("uai.pr", ("trivial", "code_loopy_bp", "invalid_no_result_files"))}
#: The phase limit of the faults' competition (a UAI one): what the sleeper runs past.
FAULTS_LIMIT = 30
#: Seconds a submission may take from its creation to a final status.
FINAL_TIMEOUT = 900
FINAL = ("Finished", "Failed", "Cancelled")


@pytest.fixture(scope="module", autouse=True)
def image_environment():
    """The stock image's environment the worker serves steps with. make test-codabench builds it first: under
    CI a missing one is a fault of the build, never a skip."""
    if not IMAGE_PYTHON.exists():
        why = "no .venv-image (make image-env builds the stock image's environment, which the worker serves it with)"
        missing(why, "the worker's tests")


# --------------------------------------------------------------------------- helpers

def on_queue(bundle: Path, vhost: str, dest: Path, time_limit: float | None = None) -> Path:
    """A copy of bundle whose competition.yaml names the queue (and sets every phase's time limit)."""
    with zipfile.ZipFile(bundle) as source, zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "competition.yaml":
                competition = yaml.safe_load(data)
                competition["queue"] = vhost
                for phase in competition["phases"] if time_limit else ():
                    phase["execution_time_limit"] = time_limit
                data = yaml.safe_dump(competition, sort_keys=False).encode()
            target.writestr(info, data)
    return dest


class WorkerProcess:
    """A ``codascore worker`` process in a session of its own, its terminal in a file, the broker URL in its
    environment (as compute_worker.py's .env gives it)."""

    def __init__(self, broker: str, folder: Path, *options: str, env: dict | None = None):
        self.broker, self.folder = broker, folder
        folder.mkdir(parents=True, exist_ok=True)
        self.terminal = folder / f"terminal-{time.monotonic_ns()}.txt"
        command = [sys.executable, "-m", "codascore", "worker", "--dir", str(folder), "--grace", "5",
                   "--image", f"{STOCK_IMAGE}={IMAGE_PYTHON}", *options]
        environment = {**os.environ, **(env or {}), "BROKER_URL": broker, "PYTHONPATH": str(REPO_ROOT)}
        with self.terminal.open("wb") as out:
            self.process = subprocess.Popen(command, env=environment, stdout=out, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)

    def output(self) -> str:
        return self.terminal.read_text(errors="replace")

    def log(self) -> str:
        path = self.folder / "worker.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def wait_for(self, pattern: str, count: int = 1, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while len(re.findall(pattern, self.output())) < count:
            assert self.process.poll() is None, f"the worker exited {self.process.returncode}:\n{self.output()}"
            assert time.monotonic() < deadline, f"no {pattern!r} in the worker's output:\n{self.output()}"
            time.sleep(0.2)

    def stop(self) -> int:
        """SIGTERM, as an organiser stops it: its exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(120)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            raise AssertionError(f"the worker did not stop on SIGTERM:\n{self.output()}") from None


@pytest.fixture
def workers():
    """Start worker processes (WorkerProcess's arguments); any still running after the test is killed."""
    started: list[WorkerProcess] = []

    def start(*args, **kwargs) -> WorkerProcess:
        started.append(WorkerProcess(*args, **kwargs))
        return started[-1]

    yield start
    for worker in started:
        if worker.process.poll() is None:
            os.killpg(worker.process.pid, signal.SIGKILL)
            worker.process.wait()


def make_queue(site, name: str) -> dict:
    """The organiser's queue (its vhost and the broker URL the queue page shows)."""
    return site.api("POST", "queues/", token=site.organiser.token, json_body={"name": name})


def uploaded(site, bundle: Path) -> tuple[int, dict]:
    """codascore upload of a bundle, published: its competition's id and its phases' ids by task name."""
    upload = site.codascore_upload(bundle, False)
    assert upload.code == 0, upload.stderr
    competition = site.competition(upload.competition_id)
    site.publish(competition["id"])
    for user in site.participants:
        assert site.register(competition["id"], user) == "approved"
    return competition["id"], competition


def submit(site, competition: dict, task_name: str, archive: Path, user) -> int:
    """A submission of archive to the phase holding the task (the task alone, when the phase has several)."""
    for phase in competition["phases"]:
        for task in phase["tasks"]:
            if task_of(task["name"]) == task_name:
                return site.submit(competition["id"], phase["id"], archive, user, tasks=[task["id"]])["id"]
    raise AssertionError(f"no phase of competition {competition['id']} runs {task_name}")


#: The task names of the bundles' YAML files, by task (what the site shows is the YAML's name).
TASK_TITLES = {"weak_lensing.phase1": "Phase 1: parameter inference", "ariel.retrieval": "Retrieval",
               "srbench.qualification": "Qualification", "uai.pr": "PR: log partition function"}


def task_of(title: str) -> str | None:
    return next((task for task, known in TASK_TITLES.items() if known == title), None)


def final(site, submission_ids: list[int], timeout: float = FINAL_TIMEOUT) -> dict[int, dict]:
    """Each submission once final on the site (as the organiser reads it)."""
    from codascore.platform import Site

    Site(site.url, site.organiser.token).wait(submission_ids, timeout=timeout, poll=0.5)
    return {i: site.api("GET", f"submissions/{i}/", token=site.organiser.token) for i in submission_ids}


def local_run(root: Path, task: str, submission: Path, out: Path) -> subprocess.CompletedProcess:
    """codascore run of the submission from the extracted bundle, in the sandbox under the image's
    environment, as the worker runs it."""
    return subprocess.run([sys.executable, "-m", "codascore", "run", task, str(submission), "--root", str(root),
                           "--python", str(IMAGE_PYTHON), "--out", str(out)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})


def extracted(bundle: Path, dest: Path) -> Path:
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(dest)
    return dest


def timeless(text: str) -> list[str]:
    """A log's lines without what varies between two runs of one submission: the seconds a step took and
    the progress lines (printed as time passes)."""
    return [re.sub(r"\d+(\.\d+)? s\b", "N s", line) for line in text.splitlines()
            if not line.startswith("progress:")]


def stored(site, submission_id: int) -> dict:
    """What the site holds of a submission: its logs by name, its scoring output's files, its page."""
    details = site.api("GET", f"submissions/{submission_id}/get_details/", token=site.organiser.token)
    logs = {log["name"]: http("GET", log["data_file"]).body.decode(errors="replace") for log in details["logs"]}
    output = {}
    if details.get("scoring_result"):
        body = http("GET", details["scoring_result"]).body
        if body:
            with zipfile.ZipFile(io.BytesIO(body)) as archive:
                output = {name: archive.read(name) for name in archive.namelist()}
    page = http("GET", details["detailed_result"]).body if details.get("detailed_result") else b""
    return {"logs": logs, "output": output, "page": page}


def untimed(data: bytes) -> str:
    """A page or details.json of a code submission without its decimals: it shows the seconds each fit
    took, which differ between two runs (the scores are compared exactly, in scores.json)."""
    return re.sub(r"\d+\.\d+(e-?\d+)?", "#", data.decode())


def assert_as_run(site, submission: dict, run_dir: Path, run_code: int, code: bool = False) -> None:
    """The submission ended on the site as codascore run ended it: Finished with the same scores (each
    column once), scores.json, details.json and page (code: their decimals masked, see untimed); or
    Failed, with the scorer's logs and page in both."""
    held = stored(site, submission["id"])
    assert submission["status"] == ("Finished" if run_code == 0 else "Failed"), (submission, held["logs"])
    output = run_dir / "scoring" / "output"
    same = untimed if code else bytes
    assert timeless(held["logs"]["scoring_stderr"]) == timeless((run_dir / "logs" / "scoring_stderr.txt").read_text())
    assert same(held["page"]) == same((output / "detailed_results.html").read_bytes())
    if run_code != 0:
        assert submission["scores"] == [] and submission["status_details"].startswith(f"program_rc={run_code}")
        return
    written = json.loads((output / "scores.json").read_text())
    keys = [score["column_key"] for score in submission["scores"]]
    assert len(keys) == len(set(keys)), f"a score posted twice: {keys}"
    assert {s["column_key"]: float(s["score"]) for s in submission["scores"]} == \
        pytest.approx({k: v for k, v in written.items() if k in keys}, abs=1e-9)
    assert held["output"]["scores.json"] == (output / "scores.json").read_bytes()
    assert same(held["output"]["details.json"]) == same((output / "details.json").read_bytes())


def most_steps_at_once(log: str) -> int:
    """The most steps a worker's log shows running at the same time (its lines are in time order)."""
    running = most = 0
    for line in log.splitlines():
        running += line.endswith(": step started") - (": step ended on " in line)
        most = max(most, running)
    return most


def wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"no {what} after {timeout} s"
        time.sleep(0.2)


# --------------------------------------------------------------------------- every family

@pytest.fixture(scope="module")
def families(codabench_site, made_bundles, tmp_path_factory):  # noqa: F811
    """Every family's bundle on the organiser's queue, served by one worker; each sample submitted through
    the API and run with codascore run: {(family, sample): (final submission, run folder, run exit code)},
    the competitions and the worker."""
    site, folder = codabench_site, tmp_path_factory.mktemp("families")
    queue = make_queue(site, "families")
    worker = WorkerProcess(queue["broker_url"], folder / "worker", "--jobs", "2")
    try:
        worker.wait_for("connected to ")
        competitions, submitted = {}, {}
        for family, (task, samples) in FAMILY_SAMPLES.items():
            bundle = on_queue(made_bundles / f"{family}.zip", queue["vhost"], folder / f"{family}.zip")
            competitions[family] = site.competition(uploaded(site, bundle)[0])
            assert competitions[family]["queue"]["vhost"] == queue["vhost"]
            root = extracted(made_bundles / f"{family}.zip", folder / family)
            for number, sample in enumerate(samples):
                archive = zip_sample(root / "sample_submissions" / task / sample, folder / f"{task}-{sample}.zip")
                user = site.participants[number % len(site.participants)]
                submitted[(family, sample)] = (submit(site, competitions[family], task, archive, user), root)
        runs = {}
        for (family, sample), (_, root) in submitted.items():
            task = FAMILY_SAMPLES[family][0]
            out = folder / "runs" / f"{task}-{sample}"
            done = local_run(root, task, root / "sample_submissions" / task / sample, out)
            runs[(family, sample)] = (out, done.returncode)
        ended = final(site, [i for i, _ in submitted.values()])
        results = {key: (ended[i], *runs[key]) for key, (i, _) in submitted.items()}
        yield {"results": results, "competitions": competitions, "worker": worker, "queue": queue}
    finally:
        code = worker.stop()
    assert code == 0, worker.output()


def test_every_family_ends_on_the_site_as_codascore_run_ends_it(families, codabench_site):
    for (family, sample), (submission, run_dir, run_code) in families["results"].items():
        assert_as_run(codabench_site, submission, run_dir, run_code, code=sample.startswith("code_"))
    assert most_steps_at_once(families["worker"].log()) == 2  # its --jobs 2, never more
    lines = families["worker"].output().splitlines()
    for submission, _, _ in families["results"].values():  # a line per job on the terminal
        assert sum(f"submission {submission['id']} prediction: " in line for line in lines) == 1
        assert sum(f"submission {submission['id']} scoring: " in line for line in lines) == 1


def test_fetch_and_the_leaderboard_give_the_scores_the_worker_posted(families, codabench_site, tmp_path,
                                                                    monkeypatch, capsys):
    """Each scored submission: its scores in codascore fetch's manifest; and, for weak lensing (the site's
    results export takes tens of seconds a competition), on its owner's row of codascore site-leaderboard
    (exact values: the organiser's)."""
    from codascore import cli

    site = codabench_site
    monkeypatch.setenv("CODABENCH_TOKEN", site.organiser.token)
    for family, (task, _) in FAMILY_SAMPLES.items():
        scored = [s for (f, _), (s, _, _) in families["results"].items() if f == family and s["scores"]]
        phase = next(p for p in families["competitions"][family]["phases"] if task_of(p["tasks"][0]["name"]) == task)
        out = tmp_path / family
        assert cli.main(["fetch", "--site", site.url, "--phase", str(phase["id"]), str(out)]) == 0
        manifest = json.loads((out / "manifest.json").read_text())
        for submission in scored:
            posted = {s["column_key"]: s["score"] for s in submission["scores"]}
            assert manifest["submissions"][str(submission["id"])]["scores"] == posted
        if family != "weak_lensing":
            continue
        assert cli.main(["site-leaderboard", "--site", site.url, "--phase", str(phase["id"]), "--out",
                         str(out / "board.csv")]) == 0
        capsys.readouterr()
        rows = {row["owner"]: row for row in csv.DictReader((out / "board.csv").open())}
        titles = tuple(f"-{column['title']}" for column in board_columns(site, phase["id"]))
        for submission in scored:
            shown = [float(value) for key, value in rows[submission["owner"]].items() if key.endswith(titles)
                     and value]
            assert sorted(shown) == pytest.approx(sorted(float(s["score"]) for s in submission["scores"]), abs=1e-9)
        assert len(scored) == 2


def board_columns(site, phase_id: int) -> list[dict]:
    board = site.api("GET", f"phases/{phase_id}/get_leaderboard/")
    return [column for task in board["tasks"] for column in task["columns"]]


# --------------------------------------------------------------------------- the faults

#: A UAI solver that waits 5 s (in a child process named by the marker) before its first instance, then
#: answers as the loopy BP sample (loopy.py beside it).
SLOW_SOLVER = '''
import os, subprocess, sys
if not os.path.exists("/tmp/waited"):
    open("/tmp/waited", "w").close()
    subprocess.run([sys.executable, "-c", "import time; time.sleep(5)", "{marker}"])
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "loopy.py")).read())
'''

#: A code submission that looks for the reference data, the worker's files and secrets, leaves a process
#: behind, forges a scores.json, and prints what it found.
HOSTILE = '''
import json, os, subprocess, sys
found = {{"env": dict(os.environ), "paths": [], "read": {{}}}}
for top in ("/", "/app"):
    for folder, dirs, files in os.walk(top):
        # the machine's runtime (/usr, the interpreter's prefix) is mounted read-only: not walked, so that
        # the walk ends well within FAULTS_LIMIT on a loaded machine
        dirs[:] = [d for d in dirs if not os.path.join(folder, d).startswith(
            ("/proc", "/sys", "/dev", "/usr", sys.prefix, sys.base_prefix))]
        found["paths"] += [os.path.join(folder, f) for f in files if f.endswith((".log", ".yaml", ".uai", ".PR"))]
for path in ("/app/input/ref/task.yaml", "{worker}/worker.log", "/proc/1/environ", "/proc/1/cmdline"):
    try:
        found["read"][path] = open(path, errors="replace").read()[:2000]
    except OSError as exc:
        found["read"][path] = "refused: " + type(exc).__name__
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)", "{marker}"], start_new_session=True)
json.dump({{"score": 1e9}}, open("/app/output/scores.json", "w"))
print(json.dumps(found))
'''

#: A code submission that leaves a process behind and never ends.
SLEEPER = '''
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)", "{marker}"], start_new_session=True)
time.sleep(1000)
'''


def own_command(folder: Path, script: str) -> Path:
    """A code submission with its own command (run beside the ingestion program, as the worker runs it)."""
    folder.mkdir(parents=True)
    (folder / "run.py").write_text(script)
    (folder / "metadata.yaml").write_text("command: python3 /app/program/run.py\n")
    return folder


@pytest.fixture(scope="module")
def faults(codabench_site, made_bundles, tmp_path_factory):  # noqa: F811
    """A second queue, its UAI competition with a phase limit of FAULTS_LIMIT s; no worker serves it but
    the one a test starts."""
    site, folder = codabench_site, tmp_path_factory.mktemp("faults")
    queue = make_queue(site, "faults")
    bundle = on_queue(made_bundles / "uai.zip", queue["vhost"], folder / "uai-faults.zip", FAULTS_LIMIT)
    competition = site.competition(uploaded(site, bundle)[0])
    root = extracted(made_bundles / "uai.zip", folder / "uai")
    return {"queue": queue, "competition": competition, "root": root, "folder": folder}


def peek_secret(broker: str, submission_id: int) -> str:
    """The secret of the submission's job waiting in the queue, read and given back (the test's only way to
    learn a secret the site never shows)."""
    from kombu import Connection

    from codascore.worker.messages import COMPUTE_QUEUE, read_job, run_args_of

    with Connection(broker) as connection:
        queue = COMPUTE_QUEUE(connection.default_channel)
        held = []
        try:
            while (message := queue.get(no_ack=False, accept=["json"])) is not None:
                held.append(message)
                job = read_job(run_args_of(message.decode(), message.headers))
                if job.submission_id == submission_id:
                    return job.secret
        finally:
            for message in held:
                message.requeue()
    raise AssertionError(f"no job of submission {submission_id} waits in the queue")


def served(site, faults: dict, worker: WorkerProcess, folder: Path, user) -> dict:
    """A UAI PR submission of folder to the faults' competition, served by worker, stopped after it: the
    submission once final."""
    try:
        submission_id = submit(site, faults["competition"], "uai.pr", zip_sample(folder, folder.with_suffix(".zip")),
                               user)
        return final(site, [submission_id])[submission_id]
    finally:
        assert worker.stop() == 0


def test_a_killed_worker_leaves_its_job_to_the_next_one(faults, codabench_site, workers):
    site, folder, marker = codabench_site, faults["folder"], "codascore-test-slow-solver"
    loopy = faults["root"] / "sample_submissions" / "uai.pr" / "code_loopy_bp" / "solver.py"
    slow = folder / "slow"
    slow.mkdir()
    (slow / "loopy.py").write_text(loopy.read_text())
    (slow / "solver.py").write_text(SLOW_SOLVER.format(marker=marker))
    broker = faults["queue"]["broker_url"]
    first = workers(broker, folder / "killed")
    submission_id = submit(site, faults["competition"], "uai.pr", zip_sample(slow, folder / "slow.zip"),
                           site.participants[0])
    wait_until(lambda: processes_with(marker), 180, "slow solver running")
    first.process.send_signal(signal.SIGKILL)
    first.process.wait()
    wait_until(lambda: not processes_with(marker), 30, "end of the killed worker's step")
    secret = peek_secret(broker, submission_id)
    second = workers(broker, folder / "next")
    try:
        submission = final(site, [submission_id])[submission_id]
    finally:
        assert second.stop() == 0
    assert submission["status"] == "Finished", submission
    keys = [score["column_key"] for score in submission["scores"]]
    assert keys and len(keys) == len(set(keys)), keys
    assert "delivered again" in second.log()
    password = broker.split(":")[2].split("@")[0]
    for worker in (first, second):
        for text in (worker.log(), worker.output()):
            assert secret not in text and password not in text


def test_a_wrong_password_is_refused_at_once_and_never_shown(faults, tmp_path):
    broker = faults["queue"]["broker_url"]
    password = broker.split(":")[2].split("@")[0]
    done = subprocess.run([sys.executable, "-m", "codascore", "worker", "--dir", str(tmp_path), "--image",
                           f"{STOCK_IMAGE}={IMAGE_PYTHON}"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT),
                               "BROKER_URL": broker.replace(f":{password}@", ":not-the-password@")})
    assert done.returncode == 2 and "refuses this worker" in done.stderr and "ACCESS_REFUSED" in done.stderr
    assert "not-the-password" not in done.stdout + done.stderr + (tmp_path / "worker.log").read_text()


def test_the_worker_connects_again_after_the_broker_restarts(faults, codabench_site, workers):
    site, folder = codabench_site, faults["folder"]
    worker = workers(faults["queue"]["broker_url"], folder / "restart")
    worker.wait_for("connected to ")
    subprocess.run([sys.executable, str(SITE_SCRIPT), "restart-broker", "--dir", str(site.root)], check=True)
    worker.wait_for("connected to ", count=2, timeout=180)
    trivial = folder / "trivial"
    shutil.copytree(faults["root"] / "sample_submissions" / "uai.pr" / "trivial", trivial)
    submission = served(site, faults, worker, trivial, site.participants[1])
    assert submission["status"] == "Finished" and submission["scores"]
    assert "lost the broker" in worker.output()


def test_a_step_past_its_time_limit_fails_with_the_reason_and_leaves_no_process(faults, codabench_site, workers):
    site, folder, marker = codabench_site, faults["folder"], "codascore-test-sleeper"
    sleeper = own_command(folder / "sleeper", SLEEPER.format(marker=marker))
    submission = served(site, faults, workers(faults["queue"]["broker_url"], folder / "time-limit"), sleeper,
                        site.participants[0])
    reason = f"Execution Time Limit exceeded. Limit was {FAULTS_LIMIT} seconds"
    assert submission["status"] == "Failed" and submission["status_details"] == reason
    assert reason in stored(site, submission["id"])["logs"]["prediction_ingestion_stderr"]
    assert not processes_with(marker)


def test_a_hostile_submission_finds_nothing_scores_nothing_and_leaves_no_process(faults, codabench_site, workers):
    site, folder, marker = codabench_site, faults["folder"], "codascore-test-hostile"
    worker_folder = folder / "hostile-worker"
    hostile = own_command(folder / "hostile", HOSTILE.format(marker=marker, worker=worker_folder))
    submission = served(site, faults, workers(faults["queue"]["broker_url"], worker_folder), hostile,
                        site.participants[1])
    assert submission["status"] == "Failed" and submission["scores"] == []
    found = json.loads(stored(site, submission["id"])["logs"]["prediction_stdout"])
    assert found["paths"], "the submission saw no file at all: it did not run"
    assert not [path for path in found["paths"] if path.startswith(("/app/input/", str(worker_folder)))
                or "reference_data" in path or path.endswith("worker.log")], found["paths"]
    assert found["read"]["/app/input/ref/task.yaml"].startswith("refused")
    assert found["read"][f"{worker_folder}/worker.log"].startswith("refused")
    environment = json.dumps(found["env"]) + found["read"]["/proc/1/environ"] + found["read"]["/proc/1/cmdline"]
    assert "BROKER_URL" not in environment and "amqp" not in environment
    assert not processes_with(marker)


@pytest.mark.slurm
def test_a_queue_served_through_slurm_ends_as_codascore_run(faults, codabench_site, slurm_cluster,  # noqa: F811
                                                             tmp_path, workers):
    site, root = codabench_site, faults["root"]
    cluster_file = tmp_path / "slurm.yaml"
    cluster_file.write_text(yaml.safe_dump({
        "system": "slurm", "cores": 1, "memory": "2GiB", "processes": 1, "maximum_jobs": 1, "walltime": "00:30:00",
        "queue": "debug", "interface": slurm_cluster.interface, "python": sys.executable,
        "log_directory": str(tmp_path / "logs"),
        "job_script_prologue": [f"cd {tmp_path}"]}))
    worker = workers(faults["queue"]["broker_url"], tmp_path / "worker", "--cluster", str(cluster_file),
                           env={"SLURM_CONF": str(slurm_cluster.conf)})
    try:
        worker.wait_for("connected to ")
        submitted = {}
        for number, sample in enumerate(("trivial", "code_loopy_bp")):
            archive = zip_sample(root / "sample_submissions" / "uai.pr" / sample, tmp_path / f"{sample}.zip")
            submitted[sample] = submit(site, faults["competition"], "uai.pr", archive,
                                       site.participants[number % 2])
        runs = {sample: local_run(root, "uai.pr", root / "sample_submissions" / "uai.pr" / sample,
                                  tmp_path / f"run-{sample}") for sample in submitted}
        ended = final(site, list(submitted.values()))
    finally:
        assert worker.stop() == 0
    assert "units of a Dask cluster" in worker.output()
    assert most_steps_at_once(worker.log()) == 1  # one SLURM job of one core: one step at a time
    assert list((tmp_path / "logs").glob("*.err")), "the steps ran in no SLURM job (no job log)"
    for sample, submission_id in submitted.items():
        assert_as_run(site, ended[submission_id], tmp_path / f"run-{sample}", runs[sample].returncode,
                      code=sample.startswith("code_"))
    shutil.rmtree(tmp_path / "worker" / "jobs", ignore_errors=True)
