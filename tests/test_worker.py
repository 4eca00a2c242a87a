"""``codascore worker`` without a Codabench site (the real site's tests: tests/test_worker_site.py):

- Celery's task messages read into jobs (both protocols, through kombu's own serialisation), and what is
  not a job refused by name; a job's repr never shows its secret nor its addresses;
- the log and the terminal never hold the broker's password, a job's secret or a presigned signature;
- the slots of a cluster counted from its workers' resources; a worker that cannot isolate a step, or has
  no environment for an image, refuses to start or to run the job;
- one job against a small HTTP server standing for the site's API and storage, its step in the bubblewrap
  sandbox: the statuses in their order, the md5, the logs, the outputs, the page and the scores where the
  site says, once; a job delivered again after it ended is not run again; a site that fails gives the job
  back, one that refuses the secret drops it; the time limit and an image not served fail it;
- the consumer on kombu's in-memory broker: never more jobs at once than slots, each acknowledged once it
  ended, a copy of a running job waits for it, a message that is no job dropped, a graceful stop gives the
  running jobs back once its grace is over.
"""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import logging
import sys
import threading
import time
import uuid
import zipfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("kombu")

from kombu import Connection, Producer  # noqa: E402

from codascore import cli, containers, zips  # noqa: E402
from codascore.errors import MessageError, WorkerError  # noqa: E402
from codascore.worker import consumer as consumer_module  # noqa: E402
from codascore.worker import environments as environments_module  # noqa: E402  (the module)
from codascore.worker import job as job_module  # noqa: E402
from codascore.worker.consumer import Consumer  # noqa: E402
from codascore.worker.environments import Environments, ImageRefused, parse_images, serving_environments  # noqa: E402
from codascore.worker.job import JobEnd, JobRun, Workplace  # noqa: E402
from codascore.worker.log import Redactor, terminal, worker_log  # noqa: E402
from codascore.worker.messages import COMPUTE_QUEUE, TASK_NAME, read_job, run_args_of  # noqa: E402
from codascore.worker.slots import LocalSlots, fitting_units  # noqa: E402
from sandbox_fixture import bubblewrap_sandbox  # noqa: E402

IMAGE = "example/image:1"


# --------------------------------------------------------------------------- messages

def publish(connection, run_args: dict, task: str = TASK_NAME, protocol: int = 2) -> None:
    """A task message as Celery sends it (kombu's JSON: the secret a UUID), to the compute-worker queue."""
    if protocol == 2:
        body, headers = [[run_args], {}, {"callbacks": None, "errbacks": None}], \
            {"task": task, "id": str(uuid.uuid4()), "timelimit": [None, 1800]}
    else:
        body, headers = {"task": task, "id": str(uuid.uuid4()), "args": [run_args], "kwargs": {}}, {}
    Producer(connection.default_channel).publish(body, exchange=COMPUTE_QUEUE.exchange, routing_key=COMPUTE_QUEUE.name,
                                                 headers=headers, serializer="json", declare=[COMPUTE_QUEUE])


def run_args(submission_id: int = 7, scoring: bool = False, base: str = "http://site.invalid", **extra) -> dict:
    args = {"id": submission_id, "user_pk": 1, "is_scoring": scoring, "secret": uuid.uuid4(),
            "submissions_api_url": f"{base}/api", "docker_image": IMAGE, "execution_time_limit": 60,
            "program_data": f"{base}/files/program.zip?Signature=abc", **extra}
    return args


@pytest.mark.parametrize("protocol", [1, 2])
def test_a_celery_message_of_either_protocol_is_read_into_its_job(protocol):
    sent = run_args(prediction_result="http://site.invalid/files/out.zip?Signature=x")
    with Connection("memory://") as connection:
        COMPUTE_QUEUE(connection.default_channel).declare()
        publish(connection, sent, protocol=protocol)
        message = COMPUTE_QUEUE(connection.default_channel).get(no_ack=True, accept=["json"])
        job = read_job(run_args_of(message.decode(), message.headers), message.headers)
    assert (job.submission_id, job.is_scoring, job.image, job.time_limit) == (7, False, IMAGE, 60.0)
    assert job.secret == str(sent["secret"]) and job.url("prediction_result") == sent["prediction_result"]
    assert job.soft_time_limit == (1800.0 if protocol == 2 else None)


@pytest.mark.parametrize("body, headers, named", [
    ([[run_args()], {}, {}], {"task": "other_task"}, "other_task"),
    ("text", {}, "not a Celery task message"),
    ([[], {}, {}], {"task": TASK_NAME}, "without its run arguments"),
])
def test_a_message_that_is_no_job_is_refused_by_name(body, headers, named):
    with pytest.raises(MessageError, match=named):
        run_args_of(body, headers)


@pytest.mark.parametrize("change, named", [({"secret": None}, "secret"), ({"execution_time_limit": "soon"},
                                           "execution_time_limit"), ({"execution_time_limit": 0}, "not positive")])
def test_run_arguments_that_cannot_make_a_job_are_refused_by_name(change, named):
    with pytest.raises(MessageError, match=named):
        read_job({**run_args(), **change})


@given(st.text(alphabet="abcdef0123456789-", min_size=8, max_size=40))
def test_a_job_shows_neither_its_secret_nor_its_addresses(secret):
    job = read_job({**run_args(), "secret": secret, "input_data": f"http://s/{secret}.zip?Signature=zz"})
    for shown in (repr(job), job.name, str(job.key)):
        assert secret not in shown and "Signature" not in shown


# --------------------------------------------------------------------------- the log

@settings(max_examples=25, deadline=None)
@given(password=st.text(alphabet="abcdefghXYZ", min_size=8, max_size=30),
       secret=st.uuids().map(str))
def test_neither_the_log_nor_the_terminal_holds_a_secret(tmp_path_factory, password, secret):
    folder = tmp_path_factory.mktemp("log")
    redactor = Redactor(password)
    redactor.add(secret)
    log = worker_log(folder / "worker.log", redactor)
    shown: list[str] = []
    say = terminal(log, redactor, shown.append)
    say(f"connected to amqp://user:{password}@host/vhost")
    log.info("refused: Secret: (%s) not a valid UUID; http://s3/bucket/f.zip?AWSAccessKeyId=K&Signature=S", secret)
    try:
        raise RuntimeError(f"boom {secret}")
    except RuntimeError:
        log.exception("failed")
    logging.getLogger("kombu").warning("lost %s", password)
    for handler in log.handlers:
        handler.flush()
    text = (folder / "worker.log").read_text() + "\n".join(shown)
    assert password not in text and secret not in text and "Signature=S" not in text
    assert text.count("***") >= 5 and "boom" in text


def test_the_log_keeps_every_line_while_a_batch_cluster_runs(tmp_path):
    """A dask-jobqueue cluster silences the StreamHandlers of the ``distributed`` logger while it runs: the
    worker's own lines, and the library's warnings, still reach its file."""
    pytest.importorskip("dask_jobqueue")
    from codascore.judge.cluster import jobqueue_cluster, read_cluster_file

    cluster_file = tmp_path / "slurm.yaml"
    cluster_file.write_text("system: slurm\ncores: 1\nmemory: 1GiB\n")
    log = worker_log(tmp_path / "worker.log", Redactor())
    log.info("before the cluster")
    with jobqueue_cluster(read_cluster_file(cluster_file)):  # no job is submitted
        log.info("while the cluster runs")
        logging.getLogger("distributed").warning("a library's warning")
    log.info("after the cluster")
    lines = (tmp_path / "worker.log").read_text().splitlines()
    assert [line.split("] ", 1)[1] for line in lines] == [
        "before the cluster", "while the cluster runs", "a library's warning", "after the cluster"]


# --------------------------------------------------------------------------- slots and environments

def test_a_cluster_runs_as_many_units_as_its_workers_resources_hold():
    offers = [{"cores": 4, "memory": 8e9}, {"cores": 1, "memory": 16e9}, {}, {"cores": 8, "memory": 4e9}]
    assert fitting_units(offers, {"cores": 2, "memory": 4e9}) == 2 + 0 + 0 + 1
    assert fitting_units(offers, {"cores": 1}) == 4 + 1 + 0 + 8
    assert fitting_units([], {"cores": 1}) == 0


def test_a_worker_that_cannot_isolate_a_step_refuses_to_start(monkeypatch, capsys):
    monkeypatch.setattr(containers, "bubblewrap_works", lambda: False)
    with pytest.raises(WorkerError, match="nothing isolates a step"):
        serving_environments("bwrap", {IMAGE: sys.executable})
    monkeypatch.setenv("BROKER_URL", "pyamqp://user:secret-password@127.0.0.1:1/vhost")
    assert cli.main(["worker", "--image", f"{IMAGE}={sys.executable}"]) == 2
    err = capsys.readouterr().err
    assert "nothing isolates a step" in err and "secret-password" not in err


def test_missing_environments_and_engines_are_told_before_any_job(tmp_path, monkeypatch):
    monkeypatch.setattr(containers, "bubblewrap_works", lambda: True)
    with pytest.raises(WorkerError, match="make image-env"):
        serving_environments("bwrap", None, root=tmp_path)
    with pytest.raises(WorkerError, match="not found"):
        serving_environments("bwrap", {IMAGE: str(tmp_path / "no-python")})
    with pytest.raises(WorkerError, match="IMAGE=PYTHON"):
        parse_images(["just-an-image"])
    monkeypatch.setattr(environments_module.shutil, "which", lambda name: None)
    with pytest.raises(WorkerError, match="no podman command"):
        serving_environments("podman")


def test_an_image_the_worker_does_not_serve_is_refused_with_the_reason():
    served = Environments("bwrap", {IMAGE: sys.executable})
    assert served.container(IMAGE).python == sys.executable
    with pytest.raises(ImageRefused, match=f"other/image is not served by this worker .*{IMAGE}"):
        served.container("other/image")


# --------------------------------------------------------------------------- one job, against a stand-in site

SCORER = """
import json, sys
from pathlib import Path
answer = Path(sys.argv[1], "res", "answer.txt")
if not answer.exists():
    print("ERROR: no answer.txt", file=sys.stderr)
    sys.exit(1)
print("scoring the answer")
Path(sys.argv[2], "scores.json").write_text(json.dumps({"score": float(answer.read_text()), "extra": 1}))
Path(sys.argv[2], "detailed_results.html").write_text("<html>page</html>")
"""


def zipped(files: dict[str, str]) -> bytes:
    return zips.zip_bytes((name, text.encode()) for name, text in files.items())


class StandInSite(http.server.ThreadingHTTPServer):
    """The site's API for one submission (its status and scores; PATCH and the scores' POST recorded) and
    its storage (files served and stored by name); status_codes: the next answers' codes, in turn."""

    def __init__(self):
        super().__init__(("127.0.0.1", 0), StandInHandler)
        self.files: dict[str, bytes] = {}
        self.requests: list[tuple] = []
        self.status, self.scores, self.fail_with = "Submitted", [], []
        self.lock = threading.Lock()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def calls(self, kind: str) -> list:
        return [request[1] for request in self.requests if request[0] == kind]


class StandInHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, code: int, body: bytes = b"{}", kind: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length", 0)))

    def do_GET(self):
        name = self.path.split("?")[0].rsplit("/", 1)[1]
        data = self.server.files.get(name)
        self.answer(200, data, "application/zip") if data is not None else self.answer(404, b'{"detail": "gone"}')

    def do_PUT(self):
        name = self.path.split("?")[0].rsplit("/", 1)[1]
        self.server.files[name] = self.body()
        self.server.requests.append(("PUT", (name, self.headers["Content-Type"])))
        self.answer(200, b"")

    def do_PATCH(self):
        fields = json.loads(self.body())
        site = self.server
        with site.lock:
            if site.fail_with:
                code = site.fail_with.pop(0)
                return self.answer(code, json.dumps({"detail": f"refused, secret {fields['secret']}"}).encode())
            site.requests.append(("PATCH", {k: v for k, v in fields.items() if k != "secret"}))
            site.status = fields.get("status", site.status)
        self.answer(200, json.dumps({"status": site.status, "scores": site.scores}).encode())

    def do_POST(self):
        fields = json.loads(self.body())
        self.server.requests.append(("POST", fields["scores"]))
        self.server.scores = [{"column_key": k, "score": v} for k, v in fields["scores"].items()]
        self.answer(200, b"{}")


@pytest.fixture
def site():
    server = StandInSite()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def place(tmp_path):
    bubblewrap_sandbox()
    redactor = Redactor()
    log = worker_log(tmp_path / "worker" / "worker.log", redactor)
    return Workplace(LocalSlots(1), Environments("bwrap", {IMAGE: sys.executable}), tmp_path / "worker", log,
                     redactor)


def job_of(site: StandInSite, scoring: bool, **extra):
    files = {name: f"{site.base}/files/{name}?Signature=s" for name in
             ("prediction_result", "scoring_result", "detailed_results_url", "prediction_stdout",
              "prediction_stderr", "scoring_stdout", "scoring_stderr", "reference_data")}
    args = run_args(base=site.base, scoring=scoring, **{k: v for k, v in files.items()}, **extra)
    args["program_data"] = f"{site.base}/files/{'scorer' if scoring else 'submission'}?Signature=s"
    return read_job(args)


def test_one_submission_through_both_jobs_reports_as_the_compute_worker(site, place):
    submission = zipped({"answer.txt": "0.25"})
    site.files.update({"submission": submission, "reference_data": zipped({"truth.txt": "1"}),
                       "scorer": zipped({"score.py": SCORER,
                                         "metadata.yaml": "command: python3 /app/program/score.py /app/input /app/output\n"})})
    prediction = JobRun(job_of(site, False), place).run()
    assert (prediction.done, prediction.status) == (True, "Scoring")
    patches = site.calls("PATCH")
    assert [p.get("status") for p in patches] == [None, "Running", "Preparing", None, "Scoring"]
    assert patches[1]["status_details"].startswith("ingestion_hostname-")
    assert patches[3] == {"md5": hashlib.md5(submission).hexdigest()}
    with zipfile.ZipFile(io.BytesIO(site.files["prediction_result"])) as archive:
        assert archive.read("answer.txt") == b"0.25" and b"exitCode" in archive.read("metadata")
    site.requests.clear()
    scoring = JobRun(job_of(site, True), place).run()
    assert (scoring.done, scoring.status, scoring.scores) == (True, "Finished", {"score": 0.25, "extra": 1})
    assert [p.get("status") for p in site.calls("PATCH")] == [None, "Running", "Finished"]
    assert site.calls("POST") == [{"score": 0.25, "extra": 1}]
    puts = dict(site.calls("PUT"))
    assert puts == {"scoring_stdout": "application/zip", "detailed_results_url": "text/html",
                    "scoring_result": "application/zip"}
    assert site.files["scoring_stdout"] == b"scoring the answer\n"
    site.requests.clear()
    again = JobRun(job_of(site, True), place).run()  # delivered again after it ended: only acknowledged
    assert (again.done, again.status) == (True, "") and "already Finished" in again.detail
    assert site.calls("POST") == [] and [p.get("status") for p in site.calls("PATCH")] == [None]
    assert not list((place.folder / "jobs").iterdir())  # run folders deleted


def test_a_failing_site_gives_the_job_back_and_a_refusing_one_drops_it(site, place, monkeypatch):
    monkeypatch.setattr(job_module, "SITE_FAULT_PAUSE", 0)
    site.files["submission"] = zipped({"answer.txt": "1"})
    site.fail_with = [500] * 3
    back = JobRun(job_of(site, False), place).run()
    assert (back.done, back.status) == (False, "")
    job = job_of(site, False)
    site.fail_with = [403]
    dropped = JobRun(job, place).run()
    assert (dropped.done, dropped.status) == (True, "") and "refuses" in dropped.detail
    shown: list[str] = []
    terminal(place.log, place.redactor, shown.append)(dropped.line())  # as the consumer tells a job's end
    log = (place.folder / "worker.log").read_text()
    assert job.secret not in log + shown[0] and "refused, secret ***" in log + shown[0]


def test_the_time_limit_and_an_image_not_served_fail_the_job_with_the_reason(site, place):
    site.files["submission"] = zipped({"metadata.yaml": "command: python3 /app/program/sleep.py\n",
                                       "sleep.py": "import time\ntime.sleep(60)\n"})
    job = job_of(site, False, execution_time_limit=1)
    ended = JobRun(job, place).run()
    reason = "Execution Time Limit exceeded. Limit was 1 seconds"
    assert (ended.status, ended.detail) == ("Failed", reason)
    patches = site.calls("PATCH")
    assert {"type": "Execution_Time_Limit_Exceeded", "error_message": reason, "is_scoring": "False"} in patches
    assert patches[-1] == {"status": "Failed", "status_details": reason}
    site.requests.clear()
    site.status = "Submitted"  # another submission
    other = JobRun(job_of(site, False, docker_image="other/image"), place).run()
    assert other.status == "Failed" and "other/image is not served" in other.detail
    assert site.calls("PATCH")[-2]["type"] == "Docker_Image_Pull_Fail"


# --------------------------------------------------------------------------- the consumer

class FakeRun:
    """Stands for JobRun in the consumer's tests: records how many run at once; a job whose id is in
    hold waits for its stop (then is given back); the others end at once, done."""

    running = 0
    most = 0
    hold: set = set()
    ran: list = []
    lock = threading.Lock()

    def __init__(self, job, place, stop):
        self.job, self.stop = job, stop

    def run(self) -> JobEnd:
        with FakeRun.lock:
            FakeRun.running += 1
            FakeRun.most = max(FakeRun.most, FakeRun.running)
            FakeRun.ran.append(self.job.key)
        try:
            if self.job.submission_id in FakeRun.hold:
                self.stop.wait(30)
                return JobEnd(self.job, False, "", "stopped", 0.0)
            time.sleep(0.2)
            return JobEnd(self.job, True, "Finished", "", 0.2)
        finally:
            with FakeRun.lock:
                FakeRun.running -= 1


@pytest.fixture
def fake_runs(monkeypatch):
    monkeypatch.setattr(consumer_module, "JobRun", FakeRun)
    FakeRun.running = FakeRun.most = 0
    FakeRun.hold, FakeRun.ran = set(), []
    return FakeRun


def remaining(connection) -> int:
    queue = COMPUTE_QUEUE(connection.default_channel)
    count = 0
    while queue.get(no_ack=True) is not None:
        count += 1
    return count


def consumer_of(tmp_path, slots: int, lines: list, **options) -> Consumer:
    redactor = Redactor()
    place = Workplace(LocalSlots(slots), Environments("bwrap", {IMAGE: sys.executable}), tmp_path,
                      worker_log(tmp_path / "worker.log", redactor), redactor)
    return Consumer("memory://", place, lines.append, poll=0.05, **options)


def test_the_consumer_holds_no_more_jobs_than_slots_and_acknowledges_each_once_ended(tmp_path, fake_runs):
    lines: list[str] = []
    with Connection("memory://") as connection:
        remaining(connection)
        for number in range(5):
            publish(connection, run_args(submission_id=number))
        publish(connection, run_args(submission_id=2))  # the same job delivered twice
        publish(connection, run_args(), task="another_task")
        Producer(connection.default_channel).publish(  # a pickle: a content type the worker does not accept
            b"\x80pickled", exchange=COMPUTE_QUEUE.exchange, routing_key=COMPUTE_QUEUE.name,
            content_type="application/x-python-serialize", content_encoding="binary")
        summary = consumer_of(tmp_path, 2, lines, max_jobs=8).serve()
        assert remaining(connection) == 0
    assert fake_runs.most == 2 and sorted(fake_runs.ran) == sorted([(n, False) for n in range(5)] + [(2, False)])
    assert (summary.ended, summary.given_back) == (6, 0)
    assert sum("dropped a message that is no job" in line for line in lines) == 2


def test_a_graceful_stop_gives_the_running_jobs_back_after_its_grace(tmp_path, fake_runs):
    lines: list[str] = []
    fake_runs.hold = {1}
    with Connection("memory://") as connection:
        remaining(connection)
        publish(connection, run_args(submission_id=1))
        consumer = consumer_of(tmp_path, 1, lines, grace=0.5)
        thread = threading.Thread(target=consumer.serve)
        thread.start()
        deadline = time.monotonic() + 30
        while not fake_runs.ran and time.monotonic() < deadline:
            time.sleep(0.05)
        consumer.request_stop("SIGTERM")
        thread.join(30)
        assert not thread.is_alive()
        assert remaining(connection) == 1  # back in the queue, for another worker
    assert (consumer.summary.ended, consumer.summary.given_back) == (0, 1)
    assert any("given back to the queue" in line for line in lines)
