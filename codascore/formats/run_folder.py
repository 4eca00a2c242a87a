"""The folder a run leaves (``codascore run``, each unit of ``codascore judge``), laid out as Codabench's
worker lays out a job (docs/codabench.md#the-compute-worker)::

    RUN/.codascore-run                 the marker: the runner empties a folder only when it holds it
    RUN/logs/                          each program's stdout and stderr
    RUN/prediction/ingested_program/, program/, input_data/   what the prediction step receives
    RUN/prediction/output/             the prediction step's output (res/ of the scoring)
    RUN/scoring/program/, input/ref/, input/res/, output/, shared/
    RUN/scoring/output/                scores.json, details.json, detailed_results.html

The judge adds, in a part unit's run folder, the part's input data (``part_input/``) and, in a score
unit's, the results submission its parts made (``merged_submission/``); in every unit's, where and when its
worker started it (``unit_start.json``, which the runner keeps when it empties the folder) and the result it
returned (``unit_result.json``). The judge's import check of a team (docs/judge.md#the-import-check) is a
run folder of its own, ``OUT/import_checks/<team>/<task>/``, holding ``import_check/`` (the program and the
submission, as in a prediction step), its logs and ``check.json`` (what it checked and how it ended).
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
#: What a step's folder receives, as the compute worker lays it out (the runner and codascore worker
#: deliver into them, the runner's step builders read them): the submission, the program (the ingestion
#: program of a prediction, the scoring program of a scoring), the input data; the scoring's input/ holds
#: the reference data (ref/) and the prediction's output (res/), which the scoring program reads.
SUBMISSION = "ingested_program"
PROGRAM = "program"
INPUT_DATA = "input_data"
SCORING_INPUT = "input"
REFERENCE = "ref"
RESULTS = "res"
PART_INPUT = "part_input"
MERGED_SUBMISSION = "merged_submission"
#: A judgement's folder of import checks (below OUT), and the step folder and record of one.
IMPORT_CHECKS = "import_checks"
IMPORT_CHECK = "import_check"
IMPORT_CHECK_RECORD = "check.json"
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
