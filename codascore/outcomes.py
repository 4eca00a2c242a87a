"""How things end, and the exit code each ending gives: the one map (docs/architecture.md#exit-codes).

Every exit code of codascore is named here and nowhere else: the scoring and ingestion programs
(:mod:`codascore.codabench`), the runner reading the scorer's code back, and the command line
(:mod:`codascore.cli`) all take theirs from this module. ``tests/test_outcomes.py`` fails when an
exit-code literal appears outside it.

An error becomes one line for a person here too (:func:`one_line`), at the boundary that prints it.
"""

from __future__ import annotations

import enum

from .errors import (CodascoreError, FetchFolderBusy, JudgeError, PlatformError, ReferenceDataError, SiteFault,
                     SubmissionError, UsageError, WorkerError)


class ExitCode(enum.IntEnum):
    """The exit codes of the programs and of every ``codascore`` command."""

    #: scored; the command did what it was asked
    OK = 0
    #: the input is wrong: an invalid submission (no scores.json), a bad file handed to a command
    INVALID = 1
    #: a usage or configuration error: a command line that cannot be carried out (a bad option, no token
    #: given), an organiser's error (reference data, configuration); never worth trying again as it is
    ORGANISER_ERROR = 2
    #: a bug in codascore
    BUG = 3
    #: the command could not be carried out now, through no fault of what was given: a Codabench site or
    #: the network failed (down, 5xx, 429, a timeout, a cut transfer), or another fetch holds the folder.
    #: Try again later (a fetch resumes where it stopped). sysexits.h's EX_TEMPFAIL, kept apart from 2 so
    #: that a job retrying on it never retries a usage or configuration error.
    TRY_AGAIN = 75
    #: stopped by Ctrl-C: 128 + SIGINT, as shells report it
    INTERRUPTED = 130


class Outcome(enum.Enum):
    """How one submission's run through the worker's steps ended (:func:`codascore.runner.run`)."""

    #: the scoring step wrote scores.json and the output keeps Codabench's contract
    SCORED = "scored"
    #: the submission is refused: its archive, its files (scorer exit 1), or what its code wrote
    INVALID = "invalid"
    #: a step ran past its time limit and was stopped
    TIMED_OUT = "timed out"
    #: the programs, the data or the output contract failed: nothing the submission can be blamed for
    FAILED = "failed"


#: The exit code of ``codascore run`` (and of any command that runs one submission) for each outcome.
OUTCOME_EXIT_CODES: dict[Outcome, ExitCode] = {
    Outcome.SCORED: ExitCode.OK,
    Outcome.INVALID: ExitCode.INVALID,
    Outcome.TIMED_OUT: ExitCode.INVALID,
    Outcome.FAILED: ExitCode.ORGANISER_ERROR,
}

#: An error raised through a command, first match wins; anything else is a bug (ExitCode.BUG).
ERROR_EXIT_CODES: tuple[tuple[type[BaseException], ExitCode], ...] = (
    (UsageError, ExitCode.ORGANISER_ERROR),
    (ReferenceDataError, ExitCode.ORGANISER_ERROR),
    (JudgeError, ExitCode.ORGANISER_ERROR),
    (WorkerError, ExitCode.ORGANISER_ERROR),
    (SubmissionError, ExitCode.INVALID),
    # A Codabench site: its own failure (down, 5xx, 429, timeout, a cut transfer) is not the user's input:
    # try again later; what the user gave it (a refused token, a URL that is not Codabench, a refused bundle
    # or id): 1. A fetch's folder held by another fetch: try again later; one of another fetch: 1.
    (SiteFault, ExitCode.TRY_AGAIN),
    (FetchFolderBusy, ExitCode.TRY_AGAIN),
    (PlatformError, ExitCode.INVALID),
    (CodascoreError, ExitCode.INVALID),
    (OSError, ExitCode.INVALID),
    (KeyboardInterrupt, ExitCode.INTERRUPTED),
)

#: What the scorer's own exit code says of a scoring step that kept the output contract.
SCORING_EXIT_OUTCOMES: dict[int, Outcome] = {
    ExitCode.OK: Outcome.SCORED,
    ExitCode.INVALID: Outcome.INVALID,
}


def exit_code_of(outcome: Outcome) -> ExitCode:
    """The exit code of a command whose work ended in outcome."""
    return OUTCOME_EXIT_CODES[outcome]


def exit_code_of_error(exc: BaseException) -> ExitCode:
    """The exit code of a command stopped by exc (ERROR_EXIT_CODES; a bug otherwise)."""
    for kind, code in ERROR_EXIT_CODES:
        if isinstance(exc, kind):
            return code
    return ExitCode.BUG


def scoring_outcome(exit_code: int | None) -> Outcome:
    """The outcome of a scoring step from its exit code alone: None (stopped at the limit) timed out,
    0 scored, 1 invalid, anything else failed (an organiser's error, a bug, a crash)."""
    if exit_code is None:
        return Outcome.TIMED_OUT
    return SCORING_EXIT_OUTCOMES.get(exit_code, Outcome.FAILED)


def one_line(exc: BaseException) -> str:
    """An error as one line for a person: an OSError as 'path: what happened' without its errno, any other
    error's message with its white space folded (its type's name when it has none)."""
    if isinstance(exc, OSError) and exc.strerror:
        where = " -> ".join(str(name) for name in (exc.filename, exc.filename2) if name is not None)
        return f"{where}: {exc.strerror}" if where else exc.strerror
    return " ".join(str(exc).split()) or type(exc).__name__
