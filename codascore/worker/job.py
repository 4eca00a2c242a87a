"""One job, done as compute_worker.py's ``run_wrapper`` does it (docs/worker.md#what-a-job-does): the
statuses, the submission's md5, the programs and data downloaded from their presigned addresses and laid out
as the worker lays them out, the step run (:mod:`.units`, where the slots say), the logs, the outputs and
the detailed results stored where the site says, the scores posted.

Three changes of order, each so that a job killed at any moment and delivered again ends once:

- the job first reads the submission's status (a PATCH with the secret alone): a prediction the site
  already holds as Scoring or further, or a scoring already Finished with its scores, Failed or Cancelled,
  is not run again, only acknowledged;
- the prediction's output is stored before the Scoring status, since that status makes the site send the
  scoring job at once (another slot, or worker, may take it before the output would be there);
- the scoring's output is stored and its scores read before the Finished status, so that the site never
  holds a Finished submission without them; the scores are posted right after Finished, as compute_worker.py
  does (a Force_Best leaderboard looks for Finished submissions).
"""

from __future__ import annotations

import dataclasses
import glob
import hashlib
import json
import logging
import shutil
import socket
import tempfile
import threading
import time
import zipfile
from pathlib import Path

import yaml

from .. import zips
from ..formats.outputs import PAGE, SCORES, SCORES_YAML, WORKER_METADATA
from ..formats import run_folder
from ..errors import PlatformError, SiteFault, SubmissionError, UnsafeArchiveError
from ..outcomes import ExitCode, one_line
from ..platform import HTML, JobSite
from ..runner.worker import place_submission, worker_metadata
from .environments import Environments, ImageRefused
from .log import Redactor
from .messages import LOG_NAMES, Job
from .slots import ClusterSlots, LocalSlots
from .units import step_spec

#: Statuses the worker sends (Submission's STATUS_CHOICES), and those after which a job has nothing to do.
RUNNING, PREPARING, SCORING, FINISHED, FAILED, CANCELLED = ("Running", "Preparing", "Scoring", "Finished",
                                                            "Failed", "Cancelled")
#: Seconds a job whose site failed waits before it is given back to the queue (not to spin on a site that
#: is down).
SITE_FAULT_PAUSE = 10.0
#: What the prediction leaves to the site's scoring job, and what ends a scoring job.
DONE_AFTER_PREDICTION = {SCORING, FINISHED, FAILED, CANCELLED}
ENDED = {FAILED, CANCELLED}


class JobFailed(Exception):
    """The job fails on the site with this reason (compute_worker.py's SubmissionException); kind: the
    ``type`` its PATCH carries first (the site appends the message to the step's stderr log), if any."""

    def __init__(self, reason: str, kind: str = ""):
        super().__init__(reason)
        self.reason, self.kind = reason, kind


class GiveBack(Exception):
    """The job goes back to the queue, unfinished (a graceful stop, or the site failing)."""


@dataclasses.dataclass
class JobEnd:
    """How a job ended: acknowledged (done) or given back to the queue; the last status sent ("" when none:
    nothing was left to do, or it was given back), what to say of it, seconds, the scores posted."""

    job: Job
    done: bool
    status: str
    detail: str
    elapsed: float
    scores: dict = dataclasses.field(default_factory=dict)

    def line(self) -> str:
        """The terminal's line for the job."""
        state = self.status or ("nothing to do" if self.done else "given back to the queue")
        scores = ", ".join(f"{key} {value:.6g}" for key, value in list(self.scores.items())[:4]
                           if isinstance(value, (int, float)))
        extra = "; ".join(part for part in (self.detail, scores) if part)
        return f"{self.job.name}: {state} in {self.elapsed:.1f} s" + (f" ({extra})" if extra else "")


@dataclasses.dataclass
class Workplace:
    """What every job of a worker shares: where steps run (slots), in which environment, the folder of the
    jobs' run folders and of the data cache, the log and what it must hide, whether run folders are kept."""

    slots: LocalSlots | ClusterSlots
    environments: Environments
    folder: Path
    log: logging.Logger
    redactor: Redactor
    keep: bool = False
    max_submission_bytes: int = zips.MAX_ARCHIVE_BYTES
    #: one lock per cached file, so that two jobs needing the same data download it once
    cache_locks: dict[str, threading.Lock] = dataclasses.field(default_factory=dict, repr=False)
    guard: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False)

    @property
    def cache(self) -> Path:
        return self.folder / "cache"

    def cache_lock(self, key: str) -> threading.Lock:
        with self.guard:
            return self.cache_locks.setdefault(key, threading.Lock())


class JobRun:
    """One job through its steps; :meth:`run` returns how it ended and never raises for the job's sake."""

    def __init__(self, job: Job, place: Workplace, stop: threading.Event | None = None):
        self.job, self.place, self.stop = job, place, stop or threading.Event()
        place.redactor.add(job.secret)  # the consumer takes it out once it has told the job's end
        self.site = JobSite(job.api_url, job.submission_id, job.secret)
        self.log = place.log
        self.started = time.monotonic()
        self.run_dir: Path | None = None
        self.scores: dict = {}

    def end(self, done: bool, status: str, detail: str = "") -> JobEnd:
        return JobEnd(self.job, done, status, detail, time.monotonic() - self.started, self.scores)

    def run(self) -> JobEnd:
        job = self.job
        self.log.info("%s: received (image %s, time limit %g s%s)", job.name, job.image, job.time_limit,
                      ", delivered again" if job.redelivered else "")
        try:
            done = self.already_done()
            if done:
                return self.end(True, "", done)
            status = self.score() if job.is_scoring else self.predict()
            return self.end(True, status)
        except JobFailed as failed:
            return self.fail(failed)
        except GiveBack as back:
            self.log.info("%s: given back to the queue: %s", job.name, back)
            return self.end(False, "", str(back))
        except PlatformError as exc:
            return self.site_failed(exc)
        except Exception as exc:  # a bug or this machine's failure (a full disk): the job must still end
            self.log.exception("%s: the worker failed", job.name)
            return self.fail(JobFailed(f"codascore worker failed: {type(exc).__name__}: {one_line(exc)}"))
        finally:
            if self.run_dir is not None and not self.place.keep:
                shutil.rmtree(self.run_dir, ignore_errors=True)

    # -- the site ---------------------------------------------------------------------------------------
    def status(self, status: str, details: str | None = None) -> None:
        self.log.info("%s: status %s%s", self.job.name, status, f" ({details})" if details else "")
        self.site.update(status=status, status_details=details)

    def fail(self, failed: JobFailed) -> JobEnd:
        """Failed with the reason on the site (after the PATCH of its type, when it has one)."""
        self.log.info("%s: failed: %s", self.job.name, failed.reason)
        try:
            if failed.kind:
                # the site compares is_scoring with the string "True" (compute_worker.py posts a form)
                self.site.update(type=failed.kind, error_message=failed.reason, is_scoring=str(self.job.is_scoring))
            self.status(FAILED, failed.reason)
        except PlatformError as exc:
            return self.site_failed(exc)
        return self.end(True, FAILED, failed.reason)

    def site_failed(self, exc: PlatformError) -> JobEnd:
        """The site failed (the job is given back, after a pause), or refused the job's secret or request
        (the job is dropped: no retry changes that)."""
        if isinstance(exc, SiteFault):
            self.log.info("%s: the site failed: %s; giving the job back", self.job.name, exc)
            self.stop.wait(SITE_FAULT_PAUSE)
            return self.end(False, "", exc.message)
        self.log.info("%s: dropped, the site refuses it: %s", self.job.name, exc)
        return self.end(True, "", f"dropped: the site refuses it ({exc.message})")

    def already_done(self) -> str:
        """Why this job has nothing left to do (its submission read from the site), or ""."""
        state = self.site.update()
        status = state.get("status")
        if self.job.is_scoring:
            if status in ENDED or (status == FINISHED and state.get("scores")):
                return f"already {status} on the site"
        elif status in DONE_AFTER_PREDICTION:
            return f"the prediction is already done (the site holds it as {status})"
        return ""

    # -- files --------------------------------------------------------------------------------------------
    def folder(self) -> Path:
        """The job's run folder, new (deleted at its end unless the worker keeps them)."""
        jobs = self.place.folder / "jobs"
        jobs.mkdir(parents=True, exist_ok=True)
        self.run_dir = Path(tempfile.mkdtemp(prefix=f"{self.job.submission_id}-{self.job.step}-", dir=jobs))
        return self.run_dir

    def download(self, name: str, dest: Path, what: str, cached: bool = False) -> Path:
        """The job's file under run argument name, downloaded (into the cache, for the organiser's data,
        as compute_worker.py caches input and reference data by address)."""
        url = self.job.url(name)
        if not cached:
            return self.fetch(url, dest, what)
        key = hashlib.sha256(url.split("?", 1)[0].encode()).hexdigest()
        dest = self.place.cache / f"{key}.zip"
        with self.place.cache_lock(key):
            if dest.is_file():
                self.log.info("%s: %s from the cache", self.job.name, what)
                return dest
            return self.fetch(url, dest, what)

    def fetch(self, url: str, dest: Path, what: str) -> Path:
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            size = self.site.download(url, dest, what)
        except SiteFault:
            raise
        except PlatformError as exc:  # an address refused or gone: no other worker would fare better
            raise JobFailed(f"Problem fetching the {what}: {exc.message}") from None
        self.log.info("%s: %s downloaded (%d bytes)", self.job.name, what, size)
        return dest

    def extract(self, archive: Path, dest: Path, what: str) -> None:
        try:
            zips.safe_extract(archive, dest)
        except (UnsafeArchiveError, zipfile.BadZipFile, OSError, EOFError) as exc:
            raise JobFailed(f"Bad or empty zip file: the {what}: {one_line(exc)}") from None

    def bundle(self, name: str, dest: Path, what: str, cached: bool = False) -> None:
        """A run argument's zip downloaded and extracted into dest, when the job has one."""
        if self.job.url(name):
            self.extract(self.download(name, self.run_dir / "bundles" / f"{name}.zip", what, cached), dest, what)

    # -- the steps -----------------------------------------------------------------------------------------
    def predict(self) -> str:
        job = self.job
        if job.ingestion_only_during_scoring:
            raise JobFailed("codascore worker does not run ingestion_only_during_scoring tasks")
        self.status(RUNNING, f"ingestion_hostname-{socket.gethostname()}")
        self.status(PREPARING)
        container = self.container()
        run_dir = self.folder()
        folder = run_dir / run_folder.PREDICTION
        submission = self.download("program_data", run_dir / "bundles" / "program_data.zip", "submission")
        self.site.update(md5=md5(submission))
        try:
            place_submission(submission, folder / run_folder.SUBMISSION, self.place.max_submission_bytes)
        except SubmissionError as exc:
            raise JobFailed(one_line(exc)) from None
        self.bundle("ingestion_program", folder / run_folder.PROGRAM, "ingestion program")
        self.bundle("input_data", folder / run_folder.INPUT_DATA, "input data", cached=True)
        result = self.run_step(container)
        if result["stop_reason"]:
            raise JobFailed(result["stop_reason"])
        self.push_output(run_folder.prediction_output(run_dir), result, "prediction_result", "prediction output")
        self.status(SCORING)
        return SCORING

    def score(self) -> str:
        self.status(RUNNING, f"scoring_hostname-{socket.gethostname()}")
        container = self.container()
        run_dir = self.folder()
        folder = run_dir / run_folder.SCORING
        self.bundle("program_data", folder / run_folder.PROGRAM, "scoring program")
        inputs = folder / run_folder.SCORING_INPUT
        self.bundle("reference_data", inputs / run_folder.REFERENCE, "reference data", cached=True)
        self.bundle("prediction_result", inputs / run_folder.RESULTS, "prediction output")
        result = self.run_step(container)
        output = run_folder.scoring_output(run_dir)
        page = detailed_results(output)
        if page and self.job.url("detailed_results_url"):
            self.site.put(self.job.url("detailed_results_url"), page, "the detailed results", HTML)
        code = result["exit_codes"].get("program")
        if code != ExitCode.OK:
            raise JobFailed(f"program_rc={code}" + first_error(result, "program"))
        self.scores = read_scores(output)
        self.push_output(output, result, "scoring_result", "scoring output")
        self.status(FINISHED)
        self.site.post_scores(self.scores)
        self.log.info("%s: scores posted (%s)", self.job.name, ", ".join(sorted(self.scores)))
        return FINISHED

    def container(self):
        try:
            return self.place.environments.container(self.job.image)
        except ImageRefused as exc:
            raise JobFailed(str(exc), "Docker_Image_Pull_Fail") from None

    def run_step(self, container) -> dict:
        """The step run where the slots say; its logs stored; a time limit or a failure before the step ran
        fails the job, a stop gives it back."""
        job = self.job
        spec = step_spec(job.step, self.run_dir, job.time_limit, container)
        self.log.info("%s: step started", job.name)
        result = self.place.slots.run(spec, self.stop, f"{job.submission_id}-{job.step}")
        if result.get("stopped"):
            raise GiveBack("stopped before its step ended")
        if "failed" in result:
            raise JobFailed(result["failed"], "Docker_Image_Pull_Fail" if result.get("pull_failed") else "")
        self.log.info("%s: step ended on %s: exit codes %s, %s s%s", job.name, result["host"],
                      result["exit_codes"], {k: round(v, 2) for k, v in result["elapsed"].items()},
                      ", time limit reached" if result["timed_out"] else "")
        for program, paths in result["logs"].items():
            for path, name in zip(paths, LOG_NAMES[(job.step, program)]):
                if job.url(name) and Path(path).is_file() and Path(path).stat().st_size:
                    self.site.put(job.url(name), Path(path), f"the log {name}")
        if result["timed_out"]:
            raise JobFailed(f"Execution Time Limit exceeded. Limit was {job.time_limit:g} seconds",
                            "Execution_Time_Limit_Exceeded")
        return result

    def push_output(self, output: Path, result: dict, name: str, what: str) -> None:
        """The worker's output/metadata written, the folder zipped and stored at the run argument's address."""
        metadata = output / WORKER_METADATA
        if metadata.exists():
            raise JobFailed("Error, the output directory already contains a metadata file. This file is used "
                            "to store exitCode and other data, do not write to this file manually.")
        metadata.write_text(worker_metadata(result["exit_codes"], result["elapsed"]))
        archive = self.run_dir / "bundles" / f"{name}.zip"
        archive.parent.mkdir(parents=True, exist_ok=True)
        archive.write_bytes(zips.folder_zip(output))
        self.site.put(self.job.url(name), archive, f"the {what}")
        self.log.info("%s: %s stored (%d bytes)", self.job.name, what, archive.stat().st_size)


def md5(path: Path) -> str:
    """The md5 the worker reports of a submission's zip (compute_worker.py's md5)."""
    digest = hashlib.md5()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def detailed_results(output: Path) -> Path | None:
    """The page the site shows as detailed results: detailed_results.html, else the first .html file (the
    worker's v1.5 compatibility)."""
    page = output / PAGE
    if page.is_file():
        return page
    pages = sorted(glob.glob(str(output / "*.html")))
    return Path(pages[0]) if pages else None


def read_scores(output: Path) -> dict:
    """The scores the worker posts: scores.json, else scores.txt read as YAML; JobFailed with the worker's
    messages when neither can be read."""
    if (output / SCORES).is_file():
        try:
            scores = json.loads((output / SCORES).read_text())
        except (ValueError, UnicodeDecodeError) as exc:
            raise JobFailed(f"Could not decode scores json properly, it contains an error.\n{exc}") from None
    elif (output / SCORES_YAML).is_file():
        try:
            scores = yaml.safe_load((output / SCORES_YAML).read_text())
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise JobFailed(f"Could not read {SCORES_YAML}: {one_line(exc)}") from None
    else:
        raise JobFailed("Could not find scores file, did the scoring program output it?")
    if not isinstance(scores, dict):
        raise JobFailed(f"the scores file holds a {type(scores).__name__}, not a mapping of scores")
    return scores


def first_error(result: dict, program: str) -> str:
    """': ' and the first ERROR line of a program's stderr (the scorer lists the problems there), or ""."""
    paths = result.get("logs", {}).get(program)
    if not paths or not Path(paths[1]).is_file():
        return ""
    with open(paths[1], errors="replace") as handle:
        for line in handle:
            if line.startswith("ERROR"):
                return ": " + line.strip()[:500]
    return ""
