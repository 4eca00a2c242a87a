"""The real Codabench site (tests/codabench_site.py) as a pytest fixture, and what its users and its compute
worker do, through the platform's own API.

``codabench_site`` (session scope) starts the site in ``build/codabench-pytest`` (or uses the one named by
``CODABENCH_SITE_DIR``, started by ``make test-codabench``), and yields a :class:`CodabenchSite`. Tests that
use it are marked ``codabench``: ``make test`` leaves them out, ``make test-codabench`` runs exactly them.

What the helpers do, and whose requests they are:

- :meth:`CodabenchSite.upload_bundle_once`: ``codascore upload`` (the CLI, in this process) of a bundle,
  once per zip content in the session; its exit code and what it printed are kept for every test that
  reads that competition back (the suite's 80 MB zip takes minutes to unpack);
- :meth:`CodabenchSite.submit`: a participant's submission as the competition page makes it (a dataset of
  type ``submission``, then ``POST /api/submissions/``);
- :meth:`CodabenchSite.run_as_worker`: what ``compute_worker.py`` does with the two jobs of a submission,
  for the tests of the site's client (tests/test_worker_site.py runs the real ``codascore worker``). No
  worker serves the default queue: each job the site sends (``compute_worker_run``, its run arguments with
  the submission's secret and the presigned URLs) waits in RabbitMQ's ``compute-worker`` queue, where the
  helper takes it (kombu, and the worker's own reading of Celery's message) and makes the worker's calls: ``PATCH
  /api/submissions/<id>/`` with the secret (Running, Preparing, the md5, Scoring, Finished or Failed),
  the logs PUT to the detail URLs, the output folder zipped (with the worker's ``metadata`` file) and PUT
  to the presigned result URL, and the scores POSTed to ``/api/upload_submission_scores/<id>/``.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from codabench_site import SNAPSHOT

__all__ = ["SNAPSHOT", "CodabenchSite", "Upload", "User", "codabench_site", "http"]

REPO_ROOT = Path(__file__).resolve().parents[1]
SITE_SCRIPT = REPO_ROOT / "tests" / "codabench_site.py"
#: Seconds an upload's unpacking may take before the poll gives up.
UNPACK_TIMEOUT = 900


@dataclass
class User:
    username: str
    password: str
    token: str


@dataclass(frozen=True)
class Upload:
    """What one ``codascore upload`` answered: its exit code, standard output and standard error; read as
    the platform's outcome (its status, the competition's id, the platform's own text of a refusal)."""

    NOT_UPLOADED = "not uploaded"
    REFUSED_BY_SITE = "the site refused the bundle: "
    COVERED_BY = "the checker's rule that covers it: "

    code: int
    stdout: str
    stderr: str

    @property
    def competition_id(self) -> int | None:
        found = re.fullmatch(r"competition (\d+): \S+\n", self.stdout)
        return int(found.group(1)) if found else None

    @property
    def details(self) -> str | None:
        """The platform's own text of its refusal, as the verb printed it (it may span lines)."""
        if self.REFUSED_BY_SITE not in self.stderr:
            return None
        text = self.stderr.split(self.REFUSED_BY_SITE, 1)[1].split("\n" + self.COVERED_BY, 1)[0].strip()
        return re.sub(r" \(https?://\S+/creation_status/\)$", "", text)  # the address the error names

    @property
    def status(self) -> str:
        """Finished, Failed (the platform refused it), or not uploaded (the checker kept it back)."""
        if self.code == 0 and self.competition_id is not None:
            return "Finished"
        if self.details is not None:
            return "Failed"
        return self.NOT_UPLOADED if "not uploaded:" in self.stderr else f"exit {self.code}: {self.stderr[-2000:]}"


class SiteError(AssertionError):
    """The site answered a request with an unexpected status."""


@dataclass
class Response:
    status: int
    body: bytes
    headers: dict = field(default_factory=dict)

    def json(self):
        return json.loads(self.body)


def http(method: str, url: str, *, token: str | None = None, body: bytes | None = None,
         content_type: str | None = None, timeout: float = 120) -> Response:
    """One HTTP request (any status is returned, not raised)."""
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Token {token}"
    if content_type:
        headers["Content-Type"] = content_type
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return Response(answer.status, answer.read(), dict(answer.headers))
    except urllib.error.HTTPError as error:
        return Response(error.code, error.read(), dict(error.headers))


def zip_folder_bytes(folder: Path) -> bytes:
    """The folder's files in a zip (as the worker's shutil.make_archive), in a stable order."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder).as_posix())
    return buffer.getvalue()


@dataclass
class CodabenchSite:
    """A running site: its URL, users with tokens, and its broker (RabbitMQ), which holds the worker's queue."""

    url: str
    organiser: User
    participants: list[User]
    broker: str
    root: Path
    #: Jobs taken from the queue but not yet used, by (submission id, is_scoring).
    pending_jobs: dict = field(default_factory=dict)
    #: What codascore upload answered for each bundle of upload_bundle_once, by the zip's sha256.
    uploads: dict = field(default_factory=dict)

    # -- requests ---------------------------------------------------------------------------------------
    def api(self, method: str, path: str, *, token: str | None = None, json_body=None, form: dict | None = None,
            expect: tuple[int, ...] = (200, 201), timeout: float = 120) -> object:
        """A request to /api/PATH; its JSON answer (SiteError on another status than EXPECT)."""
        body, content_type = None, None
        if json_body is not None:
            body, content_type = json.dumps(json_body).encode(), "application/json"
        elif form is not None:
            body = urllib.parse.urlencode({k: v for k, v in form.items() if v is not None}).encode()
            content_type = "application/x-www-form-urlencoded"
        url = path if path.startswith("http") else f"{self.url}/api/{path.lstrip('/')}"
        answer = http(method, url, token=token, body=body, content_type=content_type, timeout=timeout)
        if answer.status not in expect:
            raise SiteError(f"{method} {url} answered {answer.status}: {answer.body[:2000]!r}")
        return answer.json() if answer.body else None

    def upload_dataset(self, path: Path, token: str, kind: str, **extra) -> dict:
        """A dataset as client.js's create_dataset makes it: POST /api/datasets/, PUT the bytes to the
        presigned URL, PUT /api/datasets/completed/KEY/. Its answers (key, and the completion's)."""
        data = path.read_bytes()
        metadata = {"type": kind, "file_name": path.name, "request_sassy_file_name": path.name,
                    "file_size": len(data), **extra}
        created = self.api("POST", "datasets/", token=token, json_body=metadata)
        put = http("PUT", created["sassy_url"], body=data, content_type="application/zip")
        if put.status != 200:
            raise SiteError(f"PUT to the presigned URL answered {put.status}: {put.body[:500]!r}")
        # a bundle is unpacked inside this request (eager Celery): its time, not a fixed one
        completed = self.api("PUT", f"datasets/completed/{created['key']}/", token=token, timeout=UNPACK_TIMEOUT)
        return {"key": created["key"], "completed": completed}

    def upload_bundle_once(self, path: Path, force: bool = False) -> "Upload":
        """``codascore upload PATH --site URL`` by the organiser, once per zip content in the session: later
        calls (from any test file) get the first one's answer. force: ``--force``, for a bundle the checker
        refuses; a zip that was kept back by the checker is uploaded when force is asked for later."""
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        known = self.uploads.get(digest)
        if known is None or (force and known.status == Upload.NOT_UPLOADED):
            self.uploads[digest] = self.codascore_upload(path, force)
        return self.uploads[digest]

    def codascore_upload(self, path: Path, force: bool) -> "Upload":
        """One run of the upload verb in this process, its token in a file (--token-file)."""
        from codascore import cli

        token_file = self.root / "organiser.token"  # written each time: a site started again has new tokens
        token_file.write_text(self.organiser.token + "\n")
        argv = ["upload", str(path), "--site", self.url, "--token-file", str(token_file)] + (["--force"] * force)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(argv)
        return Upload(int(code), out.getvalue(), err.getvalue())

    def competition(self, competition_id: int, token: str | None = None) -> dict:
        return self.api("GET", f"competitions/{competition_id}/", token=token or self.organiser.token)

    def publish(self, competition_id: int) -> None:
        """The organiser publishes the competition (so that participants see it), if it is not yet."""
        if not self.competition(competition_id)["published"]:
            self.api("POST", f"competitions/{competition_id}/toggle_publish/", token=self.organiser.token)

    def register(self, competition_id: int, user: User) -> str:
        """The participant registers (the competition page's button) unless already registered; a pending
        request is approved by the organiser (the participants page's PATCH). The final status."""
        query = f"participants/?competition={competition_id}&user__username={user.username}"
        rows = self.api("GET", query, token=self.organiser.token)
        if not rows:
            self.api("POST", f"competitions/{competition_id}/register/", token=user.token)
            rows = self.api("GET", query, token=self.organiser.token)
        if rows[0]["status"] != "approved":
            self.api("PATCH", f"participants/{rows[0]['id']}/", token=self.organiser.token,
                     json_body={"status": "approved"})
        return self.api("GET", query, token=self.organiser.token)[0]["status"]

    def submit(self, competition_id: int, phase_id: int, path: Path, user: User,
               tasks: list[int] | None = None) -> dict:
        """A participant's submission as the competition page makes it; the created submission."""
        dataset = self.upload_dataset(path, user.token, "submission", competition=competition_id)
        return self.api("POST", "submissions/", token=user.token, json_body={
            "data": dataset["key"], "phase": phase_id, "tasks": tasks or [], "fact_sheet_answers": None,
            "organization": None, "queue": None})

    # -- the compute worker -----------------------------------------------------------------------------
    def worker_jobs(self) -> list[dict]:
        """Every compute_worker_run job waiting in the default queue (taken off it): its run arguments."""
        from kombu import Connection

        from codascore.worker.messages import COMPUTE_QUEUE, run_args_of

        jobs = []
        with Connection(self.broker) as connection:
            queue = COMPUTE_QUEUE(connection.default_channel)
            queue.declare()
            while (message := queue.get(no_ack=True, accept=["json"])) is not None:
                jobs.append(run_args_of(message.decode(), message.headers))
        return jobs

    def take_job(self, submission_id: int, is_scoring: bool) -> dict:
        """The run arguments the site sent the worker for this submission and step."""
        for job in self.worker_jobs():
            self.pending_jobs[(job["id"], job["is_scoring"])] = job
        try:
            return self.pending_jobs.pop((submission_id, is_scoring))
        except KeyError:
            raise SiteError(f"no {'scoring' if is_scoring else 'prediction'} job for submission {submission_id} "
                            f"in the broker (pending: {sorted(self.pending_jobs)})") from None

    def worker_patch(self, job: dict, **fields) -> dict:
        """compute_worker's _update_submission: a form PATCH with the secret."""
        return self.api("PATCH", f"{job['submissions_api_url']}/submissions/{job['id']}/",
                        form={**fields, "secret": str(job["secret"])})

    def worker_put(self, url: str, data: bytes) -> None:
        """compute_worker's _put_file (its content type, application/zip, even for the logs)."""
        answer = http("PUT", url, body=data, content_type="application/zip")
        if answer.status != 200:
            raise SiteError(f"PUT {url} answered {answer.status}: {answer.body[:300]!r}")

    def run_step(self, job: dict, output: Path, logs: dict[str, str], exit_code: int = 0) -> None:
        """One step of run_wrapper: prepare (Running; Preparing and the md5 on prediction), the logs, the
        end status (Scoring after prediction, Finished or Failed after scoring), and the output zip."""
        scoring = job["is_scoring"]
        host = f"{'scoring' if scoring else 'ingestion'}_hostname-codascore-tests"
        self.worker_patch(job, status="Running", status_details=host)
        if not scoring:
            self.worker_patch(job, status="Preparing")
            program = http("GET", job["program_data"])
            self.worker_patch(job, md5=hashlib.md5(program.body).hexdigest())
        for name, text in logs.items():
            if text:
                self.worker_put(job[name], text.encode())
        if scoring and exit_code != 0:
            self.worker_patch(job, status="Failed", status_details=f"program_rc={exit_code}")
            return
        self.worker_patch(job, status="Finished" if scoring else "Scoring")
        if scoring:
            scores = json.loads((output / "scores.json").read_text())
            self.api("POST", f"{job['submissions_api_url']}/upload_submission_scores/{job['id']}/",
                     json_body={"secret": str(job["secret"]), "scores": scores})
        metadata = {"exitCode": exit_code, "elapsedTime": 1.0, "ingestionExitCode": None,
                    "ingestionElapsedTime": None}
        (output / "metadata").write_text(yaml.dump(metadata, default_flow_style=False))
        self.worker_put(job["scoring_result" if scoring else "prediction_result"], zip_folder_bytes(output))

    def run_as_worker(self, submission_id: int, prediction_output: Path, scoring_output: Path,
                      logs: dict[str, str] | None = None, scoring_exit_code: int = 0) -> dict:
        """Both steps of a submission as the compute worker runs them (the scoring job is the one the site
        sends when the prediction step reports Scoring); the submission as the API then shows it."""
        logs = logs or {}
        prediction = self.take_job(submission_id, False)
        self.run_step(prediction, prediction_output, {k: v for k, v in logs.items() if k.startswith("prediction")})
        scoring = self.take_job(submission_id, True)
        self.run_step(scoring, scoring_output, {k: v for k, v in logs.items() if k.startswith("scoring")},
                      exit_code=scoring_exit_code)
        return self.api("GET", f"submissions/{submission_id}/", token=self.organiser.token)


def start_site(root: Path) -> dict:
    """tests/codabench_site.py start: its JSON line."""
    done = subprocess.run([sys.executable, str(SITE_SCRIPT), "start", "--dir", str(root)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the site did not start:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def site_from(state: dict) -> CodabenchSite:
    return CodabenchSite(url=state["url"], organiser=User(**state["organiser"]),
                         participants=[User(**p) for p in state["participants"]], broker=state["broker"],
                         root=Path(state["dir"]))


@pytest.fixture(scope="session")
def codabench_site() -> CodabenchSite:
    """The running site (started here and stopped after the session, unless CODABENCH_SITE_DIR names one
    that make test-codabench started and stops)."""
    given = os.environ.get("CODABENCH_SITE_DIR")
    root = Path(given) if given else REPO_ROOT / "build" / "codabench-pytest"
    try:
        state = start_site(root)
    except RuntimeError as error:
        if given:  # make test-codabench started it: a site that does not answer is a failure there
            raise
        last = (str(error).strip().splitlines() or ["?"])[-1]
        pytest.skip(f"the real Codabench site could not start here (make test-codabench builds its environment "
                    f"and starts it): {last}")
    site = site_from(state)
    yield site
    if not given:
        subprocess.run([sys.executable, str(SITE_SCRIPT), "stop", "--dir", str(root)], check=False)
