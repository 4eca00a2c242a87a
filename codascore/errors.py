"""Every exception of codascore, in one place.

SubmissionError and ReferenceDataError decide a scoring step's exit code (docs/architecture.md, "Exit
codes"). On the command line, UsageError exits 2, a site's failure (SiteFault) 75 (try again later), and
every other one exits 1, as one ``error: ...`` line.
None reaches Codabench or a user as a traceback::

    CodascoreError
    ├── UsageError                 a command line that cannot be carried out as written: exit 2
    ├── SubmissionError            the participant's files are invalid: the scorer exits 1, no scores.json
    ├── ReferenceDataError         reference data, input data or task.yaml is broken: an organiser's error, exit 2
    │   └── UnknownTaskError       a task name no family defines (on the command line: exit 2, as a usage error)
    ├── BundleError                a competition bundle cannot be built
    │   └── WheelError             a pinned wheel cannot be had (download, cache or recorded hash)
    ├── RunnerError                a local run cannot be set up (missing folders, a refused submission)
    ├── PackError                  codascore pack cannot pack a code submission (pip, hashes, size, import)
    ├── TeamEnvironmentError       a team's environment cannot be had (its Python, a package, uv's build)
    ├── JudgeError                 the final judgement cannot be set up (reference data, cluster file,
    │                              results database): an organiser's error, exit 2
    ├── WorkerError                codascore worker cannot start or go on (nothing isolates a step, an
    │   │                          environment missing, the broker refusing its user): exit 2
    │   └── MessageError           a message on the queue that is not a job the worker can read
    ├── FetchFolderError           a fetch's folder holds another fetch (another site, phase or competition) or
    │   │                          other files: exit 1; name a new folder
    │   └── FetchFolderBusy        another fetch is writing into the folder now: exit 75, try again later
    ├── PlatformError              a Codabench site refused or failed a request (codascore.platform); status:
    │   │                          the HTTP status when there was one
    │   ├── PlatformAuthError      the token or the login was refused, or the caller may not do this: exit 1
    │   ├── NotCodabenchError      the URL answers, but not as a Codabench site: exit 1
    │   ├── PlatformRequestError   the site refused the request as made (4xx: an unknown id, bad input): exit 1
    │   ├── BundleRefusedError     the site unpacked the bundle and refused it; details: its own text: exit 1
    │   └── SiteFault              the site or the network failed, not the user: exit 75, try again later
    │       ├── SiteUnreachable    nothing answers at the URL (a stopped server, a wrong port)
    │       ├── PlatformTimeout    no answer within the time limit
    │       ├── PlatformServerError  the site answered 5xx
    │       ├── PlatformThrottled  the site answered 429 (too many requests), with how long it asks to wait
    │       └── TransferInterrupted  a download or upload stopped before its last byte
    ├── UnsafeArchiveError         a zip member would escape its folder, or the archive is over a limit (ValueError)
    ├── TimeLimitExceeded          a child process was killed at its time limit (RuntimeError)
    ├── ParticipantCodeError       participant code raised, died, or returned something else than plain data
    │                              (RuntimeError)
    ├── FormatError                a UAI file breaks its format; names file, line and token (ValueError)
    ├── AnswerError                a UAI answer is invalid: that instance scores 0 with this reason (ValueError)
    ├── TrivialAnswerError         the UAI trivial procedure gave a zero-likelihood answer (ValueError)
    ├── TableTooLarge              UAI exact elimination would build a table over its size limit (MemoryError)
    ├── WidthExceeded              UAI min-fill found a cluster wider than its limit (ValueError)
    ├── ModelSyntaxError           an SRBench model string is not an accepted expression (ValueError)
    ├── SimplifyTimeout            a time-limited sympy call ran out of time
    └── FitTimeout                 an SRBench code submission's est.fit reached fit_time_limit (SIGALRM)

The family errors also derive from the builtin their callers used to catch (ValueError, MemoryError,
RuntimeError), so ``except ValueError`` around a parser still sees them.
"""

from __future__ import annotations


class CodascoreError(Exception):
    """Base of every codascore exception."""


class UsageError(CodascoreError):
    """A command line that cannot be carried out as written (``codascore`` exits 2, as argparse does)."""


class SubmissionError(CodascoreError):
    """The participant's files are invalid: the scorer exits 1 and writes no scores.json.

    problems: every problem found (a one-line message each, naming file, field, index and value);
    total: how many there were, when only the first ones are listed."""

    def __init__(self, problems: str | list[str], total: int | None = None):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        self.total = max(total or 0, len(self.problems))
        super().__init__("; ".join(self.problems))


class ReferenceDataError(CodascoreError):
    """Reference data, input data or task configuration is broken (an organiser's error): the scorer exits 2."""


class UnknownTaskError(ReferenceDataError):
    """A task name that no installed family defines; the message lists the known ones, closest first."""


class BundleError(CodascoreError):
    """The bundle cannot be built (unknown name, a referenced file missing)."""


class WheelError(BundleError):
    """A pinned wheel cannot be had: not downloadable, not cached, or not the recorded bytes."""


class PackError(CodascoreError):
    """A code submission cannot be packed with its dependencies (``codascore pack``): pip failed, a wheel is
    not the bytes its RECORD or vendor.lock gives, the zip is over its size limit, or the import fails under
    the image's Python. lines: the message, one line each (a failure's last lines of output after it)."""

    def __init__(self, lines: str | list[str]):
        super().__init__("\n".join([lines] if isinstance(lines, str) else lines))


class TeamEnvironmentError(CodascoreError):
    """A team's environment cannot be had (codascore.environments): the Python version it asks for is not on
    this machine, a package has no wheel or no version that fits, uv's build failed. The message names the
    team, the file that declared the environment and, from uv, the package."""


class RunnerError(CodascoreError):
    """A local run could not be set up (missing folders, a refused submission archive)."""


class JudgeError(CodascoreError):
    """The final judgement cannot be set up or go on: missing reference data, a bad cluster file, a results
    database of another task. An organiser's error: ``codascore judge`` exits 2."""


class WorkerError(CodascoreError):
    """``codascore worker`` cannot start or go on: no bubblewrap and no container engine to isolate a step, an
    image's environment missing, a broker that refuses the user or the virtual host. Exit 2."""


class MessageError(WorkerError):
    """A message on the compute worker's queue that is not a compute_worker_run job this worker can read."""


class UnsafeArchiveError(CodascoreError, ValueError):
    """A zip member would escape the destination, is a link or device, or the archive is over a limit."""


class TimeLimitExceeded(CodascoreError, RuntimeError):
    """The child was killed at its time limit."""


class ParticipantCodeError(CodascoreError, RuntimeError):
    """Participant code raised, died, or returned something other than plain data; the message holds its
    traceback when there is one."""


class FormatError(CodascoreError, ValueError):
    """A UAI file does not follow its format; the message names file, line and token."""


class AnswerError(CodascoreError, ValueError):
    """A UAI result file's answer is invalid: the instance scores 0 and this message is its reason."""


class TrivialAnswerError(CodascoreError, ValueError):
    """The UAI trivial procedure gave a zero-likelihood answer: the instance cannot be in the reference set."""


class TableTooLarge(CodascoreError, MemoryError):
    """UAI exact elimination would build a table larger than max_table_size."""


class WidthExceeded(CodascoreError, ValueError):
    """UAI min-fill ordering found a cluster wider than the width limit it was given."""


class ModelSyntaxError(CodascoreError, ValueError):
    """An SRBench model string is not an accepted expression; the message quotes the offending token."""


class SimplifyTimeout(CodascoreError):
    """Raised by the alarm inside a time-limited sympy call (an Exception, like SRBench 2022's SIGALRM
    handler, so sympy code that catches Exception may swallow it: the alarm repeats)."""


class FitTimeout(CodascoreError):
    """2022's TimeOutException: the SIGALRM at fit_time_limit inside a code submission's ``est.fit`` (an
    Exception, as it was then: the harness carries on with ``est`` as it is)."""


class FetchFolderError(CodascoreError):
    """The folder a fetch was given holds another fetch (another site, phase or competition) or files that are
    no fetch's: the user names a new folder."""


class FetchFolderBusy(FetchFolderError):
    """Another fetch is writing into the folder now (it holds the folder's lock): try again once it ends."""


class PlatformError(CodascoreError):
    """A Codabench site refused or failed a request. url: the address asked; doing: what was being done
    ("uploading dist/uai.zip"), both set once where the request is made (codascore.platform._http); status:
    the HTTP status of the answer, when there was one; retry_after: the seconds the site asked to wait
    (its Retry-After), when it asked."""

    def __init__(self, message: str, url: str = "", doing: str = "", status: int | None = None,
                 retry_after: float | None = None):
        self.message, self.url, self.doing = message, url, doing
        self.status, self.retry_after = status, retry_after
        super().__init__(message)

    def __str__(self) -> str:
        where = f" ({self.url})" if self.url else ""
        return f"{self.doing}: {self.message}{where}" if self.doing else f"{self.message}{where}"


class PlatformAuthError(PlatformError):
    """The site refused the token or the login, or the caller may not do what was asked (401, 403)."""


class NotCodabenchError(PlatformError):
    """The URL answers, but not as a Codabench site does (an HTML page, no JSON where its API gives JSON)."""


class PlatformRequestError(PlatformError):
    """The site refused the request as made (a 4xx other than 401/403: an unknown id, a refused field)."""


class BundleRefusedError(PlatformError):
    """The site unpacked a bundle and refused it. details: the platform's own text, as its upload page shows
    it; rules: the checker's findings that cover it (may be empty)."""

    def __init__(self, message: str, details: str = "", rules: tuple = (), url: str = "", doing: str = ""):
        super().__init__(message, url, doing)
        self.details, self.rules = details, tuple(rules)


class SiteFault(PlatformError):
    """The site or the network failed, not the user's request: on the command line exit 75 (try again
    later)."""


class SiteUnreachable(SiteFault):
    """Nothing answers at the URL (connection refused, unknown host)."""


class PlatformTimeout(SiteFault):
    """No answer within the time limit."""


class PlatformServerError(SiteFault):
    """The site answered with a 5xx status."""


class PlatformThrottled(SiteFault):
    """The site answered 429 (too many requests): a GET waits as long as it asks (Retry-After), within a cap."""


class TransferInterrupted(SiteFault):
    """A download or an upload stopped before its last byte (nothing is left under the file's own name; a
    download's bytes stay under its ``.part`` name, to be resumed)."""
