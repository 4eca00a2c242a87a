"""The folder a run leaves (``codascore run``, each unit of ``codascore judge``), laid out as Codabench's
worker lays out a job (docs/codabench.md#the-compute-worker)::

    RUN/.codascore-run                 the marker: the runner empties a folder only when it holds it
    RUN/logs/                          each program's stdout and stderr
    RUN/prediction/output/             the prediction step's output (res/ of the scoring)
    RUN/scoring/program/, input/ref/, input/res/, output/, shared/
    RUN/scoring/output/                scores.json, details.json, detailed_results.html

The judge adds, in a part unit's run folder, the part's input data (``part_input/``) and, in a score
unit's, the results submission its parts made (``merged_submission/``); in every unit's, where and when its
worker started it (``unit_start.json``, which the runner keeps when it empties the folder) and the result it
returned (``unit_result.json``).
"""

from __future__ import annotations

from pathlib import Path

RUN_MARKER = ".codascore-run"
LOGS = "logs"
PREDICTION = "prediction"
SCORING = "scoring"
#: The runner's own folders of a run folder, which one of an earlier version holds without the marker.
RUNNER_FOLDERS = frozenset({LOGS, PREDICTION, SCORING})
OUTPUT = "output"
PART_INPUT = "part_input"
MERGED_SUBMISSION = "merged_submission"
#: Where and when a worker started a judge's attempt, written as it starts: an attempt whose worker died
#: before the judge heard the start is still charged to that worker. The runner keeps it.
UNIT_START = "unit_start.json"
#: A unit's result as its worker returned it: a result lost with its worker before the judge had it (Dask
#: then runs the task again) is read there instead of charging a new attempt.
UNIT_RESULT = "unit_result.json"


def prediction_output(run_dir: Path) -> Path:
    """The prediction step's output folder (what the scoring reads as res/)."""
    return Path(run_dir) / PREDICTION / OUTPUT


def scoring_output(run_dir: Path) -> Path:
    """The scoring step's output folder (scores.json, details.json, the page)."""
    return Path(run_dir) / SCORING / OUTPUT


def relative_prediction_output() -> str:
    """prediction_output of a run folder, relative to it (how a worker is told where a part's output is)."""
    return f"{PREDICTION}/{OUTPUT}"
