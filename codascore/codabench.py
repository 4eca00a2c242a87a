"""The Codabench layer, written once for every task: paths, task selection, exit codes and outputs.

Scoring (``scoring_program/score.py INPUT OUTPUT``):

- reads ``INPUT/ref/task.yaml`` to choose the task and its parameters, then ``INPUT/ref`` and ``INPUT/res``;
- tolerates the worker's ``res/metadata`` file and a submission zipped inside one wrapper folder;
- writes ``OUTPUT/details.json``, ``OUTPUT/detailed_results.html`` and last, atomically, ``OUTPUT/scores.json``
  (a flat object of finite numbers);
- exits 0 when scored, 1 when the submission is invalid (no scores.json, so Codabench marks it Failed and it
  does not count against the participant's limits), 2 when reference data or configuration is broken (an
  organiser's error), 3 on an internal error. It never writes ``OUTPUT/metadata`` (the worker's file).

Ingestion (``ingestion_program/ingest.py INPUT_DATA OUTPUT PROGRAM SUBMISSION``) mirrors it for code
submissions. The platform's side of this contract: docs/codabench.md#the-compute-worker.
"""

from __future__ import annotations

import json
import math
import os
import sys
import sysconfig
import time
import traceback
from pathlib import Path
from typing import Any

from . import __version__
from .competition import read_task_config
from .digests import folder_sha256
from .errors import ReferenceDataError, SubmissionError
from .formats.atomic import write_atomic
from .formats.details import invalid_document, scored_document
from .formats.outputs import DETAILS, INGESTION_ERROR, PAGE, SCORES, WORKER_METADATA
from .formats.run_folder import REFERENCE, RESULTS
from .outcomes import ExitCode
from .report import render_page
from .sandbox import locate_submission
from .scores import clean_scores, scores_problems
from .task import Result, Section, Task, log
from .validate import read_participant_yaml

EXIT_OK, EXIT_INVALID_SUBMISSION = ExitCode.OK, ExitCode.INVALID
EXIT_ORGANISER_ERROR, EXIT_INTERNAL_ERROR = ExitCode.ORGANISER_ERROR, ExitCode.BUG

#: Folder of a bundle's program that holds the pinned packages the stock image lacks (codascore.wheels).
VENDOR_DIR = "vendor"
#: The interpreter its wheels are built for: the stock image's CPython 3.12 on Linux x86_64.
VENDOR_PYTHON = (3, 12)
VENDOR_PLATFORM = "linux-x86_64"


def use_vendored_packages(program_dir: str) -> str:
    """Put ``PROGRAM/vendor`` on sys.path; returns where: ``"first"``, ``"last"``, or ``""`` without one.

    First (right after the program folder, before site-packages, so that its pinned versions win) under
    the interpreter its wheels are built for, the stock image's, when that lacks any of them at its pinned
    version. Last otherwise: an interpreter that has every pinned version already (the optional image of
    the Dockerfile, a pinned test environment) keeps its own byte-compiled copies, and under another
    Python a binary wheel could not load anyway.
    """
    import importlib.metadata as metadata

    folder = os.path.join(program_dir, VENDOR_DIR)
    if not os.path.isdir(folder):
        return ""

    def installed(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    target = (sys.implementation.name, sys.version_info[:2], sysconfig.get_platform()) \
        == ("cpython", VENDOR_PYTHON, VENDOR_PLATFORM)
    if target and any(installed(d.metadata["Name"]) != d.version for d in metadata.distributions(path=[folder])):
        sys.path.insert(sys.path.index(program_dir) + 1 if program_dir in sys.path else 0, folder)
        return "first"
    sys.path.append(folder)
    return "last"


def read_worker_metadata(res_dir: Path) -> dict:
    """The worker's res/metadata (prediction-step exit codes); {} when absent or unreadable."""
    path = Path(res_dir) / WORKER_METADATA
    try:  # the worker writes it; a local run of a results submission may hold the participant's own
        data = read_participant_yaml(path)
    except (OSError, SubmissionError):
        return {}
    return data if isinstance(data, dict) else {}


def check_ingestion_outcome(res_dir: Path) -> None:
    """Fail clearly when the prediction step failed (the platform does not check its exit code)."""
    error_file = Path(res_dir) / INGESTION_ERROR
    if error_file.is_file():
        text = error_file.read_text(encoding="utf-8", errors="replace")
        raise SubmissionError(["your code failed in the ingestion step:", *text.splitlines()[-40:]])
    code = read_worker_metadata(res_dir).get("ingestionExitCode")
    if code not in (None, ExitCode.OK):
        raise SubmissionError(f"the ingestion step exited with code {code} (see the prediction step's logs); "
                              f"nothing to score")


def _json(data: Any) -> str:
    return json.dumps(data, indent=2, allow_nan=False, default=_json_default) + "\n"


def _json_default(value: Any) -> Any:
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return value.name
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _finite_or_none(value: Any) -> Any:
    """details.json must stay strict JSON: non-finite floats become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite_or_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_none(v) for v in value]
    try:
        import numpy as np

        if isinstance(value, np.floating):
            return _finite_or_none(float(value))
        if isinstance(value, np.ndarray):
            return _finite_or_none(value.tolist())
    except ImportError:  # pragma: no cover
        pass
    return value


# --------------------------------------------------------------------------- scoring entry point

def score_main(argv: list[str]) -> int:
    """``score.py INPUT OUTPUT``: the whole scoring step. Returns the exit code."""
    if len(argv) != 2:
        log("ERROR: usage: score.py INPUT OUTPUT  (INPUT holds ref/ and res/)")
        return EXIT_ORGANISER_ERROR
    input_dir, output_dir = Path(argv[0]), Path(argv[1])
    output_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    log(f"codascore {__version__} scoring program")
    task = None
    warnings: list[str] = []
    stage = "reading the reference data"
    try:
        task, config = read_task_config(input_dir / REFERENCE, "reference data")
        log(f"task {task.name}")
        reference = task.load_reference(input_dir / REFERENCE, config)
        stage = "reading the submission"
        res_dir = input_dir / RESULTS
        check_ingestion_outcome(res_dir)
        res_root, found_warnings = locate_submission(res_dir, task.result_files)
        warnings += found_warnings
        submission = task.load_submission(res_root, reference, config)
        stage = "scoring"
        result = task.score(reference, submission, config)
        scores, omitted, clipped, score_warnings = clean_scores(result.scores, task)
        if problems := scores_problems(scores, ("score",)):  # the contract the runner holds us to
            raise RuntimeError("; ".join(problems))
    except SubmissionError as exc:
        return _fail_submission(task, exc, warnings, output_dir)
    except ReferenceDataError as exc:
        log(f"ERROR: organiser error in the reference data or configuration: {exc}")
        return EXIT_ORGANISER_ERROR
    except Exception:
        log(f"ERROR: internal error while {stage}:\n" + traceback.format_exc())
        return EXIT_INTERNAL_ERROR
    warnings += result.warnings + score_warnings
    for warning in warnings:
        log(f"WARNING: {warning}")
    _write_details(output_dir, task, config, scores, warnings, result, omitted, clipped,
                   reference_sha256(input_dir / REFERENCE))
    _write_page(output_dir, task, scores, warnings, result, reference, submission, config)
    write_atomic(output_dir / SCORES, _json(scores))
    log(f"scored in {time.perf_counter() - started:.2f} s: " +
        ", ".join(f"{k}={v:.6g}" for k, v in scores.items()))
    return EXIT_OK


def reference_sha256(ref_dir: Path) -> str:
    """The digest of the reference data a submission is scored on (digests.folder_sha256 of ref/, every
    file: what the judge records for a unit), written in details.json so that ``codascore leaderboard``
    refuses teams scored on different reference data; "" when ref/ cannot be read (it never fails a scored
    submission). Reading a few MB of reference data costs milliseconds."""
    try:
        return folder_sha256(ref_dir)
    except OSError as exc:
        log(f"WARNING: the reference data's digest could not be computed ({exc}); details.json holds none")
        return ""


def _fail_submission(task: Task, exc: SubmissionError, warnings: list[str], output_dir: Path) -> int:
    more = exc.total - len(exc.problems)
    problems = exc.problems + ([f"... and {more} more problems"] if more > 0 else [])
    for problem in problems:
        log(f"ERROR: {problem}")
    log("ERROR: the submission is invalid; nothing was scored (the submission is marked Failed and does "
        "not count against your limits)")
    write_atomic(output_dir / DETAILS, _json(invalid_document(task.name, __version__, problems, warnings)))
    try:
        write_atomic(output_dir / PAGE,
                     render_page(task.title or task.name, task.name, {}, warnings, [], problems=problems))
    except Exception:  # the page never changes the outcome
        log("WARNING: could not write detailed_results.html:\n" + traceback.format_exc())
    return EXIT_INVALID_SUBMISSION


def _write_details(output_dir: Path, task: Task, config: dict, scores: dict, warnings: list[str], result: Result,
                   omitted: list[str], clipped: dict[str, float], reference: str = "") -> None:
    # clipped_scores holds each clipped key's true value (a string when it is infinite: strict JSON); the
    # group names this scoring's units as the judge's groups do (formats.details.unit_id).
    plan = task.judge_plan()
    details = scored_document(
        task.name, __version__, reference, plan.group_of(config) if plan is not None else "",
        {key: config[key] for key in task.board_settings}, scores, omitted,
        {k: v if math.isfinite(v) else repr(v) for k, v in clipped.items()}, warnings,
        _finite_or_none(result.details), _finite_or_none(result.instances))
    write_atomic(output_dir / DETAILS, _json(details))


def _write_page(output_dir: Path, task: Task, scores: dict, warnings: list[str], result: Result,
                reference: Any, submission: Any, config: dict) -> None:
    """Write detailed_results.html; a failure here is logged and never changes scores or exit code."""
    try:
        sections = task.report(result, reference, submission, config)
    except Exception:
        log("WARNING: the report section failed; scores are unaffected:\n" + traceback.format_exc())
        sections = [Section("Report", "<p>The figures could not be drawn; see the scoring log.</p>")]
    try:
        guide = task.score_guide(config)
    except Exception:
        log("WARNING: the page's score guide failed; scores are unaffected:\n" + traceback.format_exc())
        guide = []
    try:
        write_atomic(output_dir / PAGE,
                     render_page(task.title or task.name, task.name, scores, warnings, sections, guide=guide))
    except Exception:
        log("WARNING: could not write detailed_results.html:\n" + traceback.format_exc())


# --------------------------------------------------------------------------- ingestion entry point

def ingest_main(argv: list[str]) -> int:
    """``ingest.py INPUT_DATA OUTPUT PROGRAM SUBMISSION``: run a code submission, write its result files.

    On failure of the participant's code it writes OUTPUT/ingestion_error.txt (the scorer then fails the
    submission with that text, since Codabench does not check the prediction step's exit code) and exits 1.
    """
    if len(argv) != 4:
        log("ERROR: usage: ingest.py INPUT_DATA OUTPUT PROGRAM SUBMISSION")
        return EXIT_ORGANISER_ERROR
    input_dir, output_dir, _program_dir, submission_dir = (Path(a) for a in argv)
    output_dir.mkdir(parents=True, exist_ok=True)
    log(f"codascore {__version__} ingestion program")
    try:
        task, config = read_task_config(input_dir, "input data")
    except ReferenceDataError as exc:
        log(f"ERROR: organiser error in the input data or configuration: {exc}")
        return EXIT_ORGANISER_ERROR
    started = time.perf_counter()
    try:
        task.ingest(input_dir, output_dir, submission_dir, config)
    except SubmissionError as exc:
        for problem in exc.problems:
            log(f"ERROR: {problem}")
        write_atomic(output_dir / INGESTION_ERROR, "\n".join(exc.problems) + "\n")
        return EXIT_INVALID_SUBMISSION
    except ReferenceDataError as exc:
        log(f"ERROR: organiser error in the input data or configuration: {exc}")
        return EXIT_ORGANISER_ERROR
    except Exception:
        log("ERROR: internal error in the ingestion program:\n" + traceback.format_exc())
        return EXIT_INTERNAL_ERROR
    log(f"ingestion finished in {time.perf_counter() - started:.2f} s")
    return EXIT_OK


#: The line of a failed import check that says why (check_import_main), read by the judge.
IMPORT_CHECK_FAILED = "codascore import check failed: "


def check_import_main(argv: list[str]) -> int:
    """``python3 -c ... PROGRAM SUBMISSION ENTRY LOADER [ARGUMENTS...]``: import a code submission's entry as
    the task's ingestion imports it (Task.code_entry: its loader called on the entry found at the
    submission's root or in its single wrapper folder), the program folder's vendored packages first as
    ingest.py has them. The judge runs it once per team and environment, in the step's sandbox and under a
    time limit of its own (docs/judge.md#the-import-check). Exit 0 when the import succeeded; else 1, and
    one line on stderr starting with IMPORT_CHECK_FAILED that names the file and the error."""
    import importlib

    from .sandbox import find_entry

    program, submission, entry_name, loader, *arguments = argv
    use_vendored_packages(program)
    entry, _ = find_entry(Path(submission), (entry_name,))
    if entry is None:
        log(f"{IMPORT_CHECK_FAILED}no {entry_name} at the submission's root or in its single wrapper folder")
        return EXIT_INVALID_SUBMISSION
    module_name, _, function = loader.partition(":")
    load = getattr(importlib.import_module(module_name), function)
    try:
        load(str(entry), *arguments)
    except BaseException as exc:  # the participant's code ran: whatever it raised (SystemExit too) is its own
        traceback.print_exc()
        first = (str(exc).splitlines() or [""])[0][:300]
        log(f"{IMPORT_CHECK_FAILED}{entry_name}: importing it failed: {type(exc).__name__}: {first}")
        return EXIT_INVALID_SUBMISSION
    log(f"codascore import check: {entry_name} imported")
    return EXIT_OK
