"""What the programs' output folders hold (docs/codabench.md#the-compute-worker).

The scoring program writes ``details.json``, ``detailed_results.html`` and last ``scores.json`` into its
OUTPUT; the ingestion program writes the result files of a results submission into its OUTPUT, and when
the participant's code fails, ``ingestion_error.txt`` beside them; the worker (and the runner) writes its
``metadata`` (the prediction step's exit codes) into the prediction output.
"""

from __future__ import annotations

#: The scores Codabench reads: a flat object of finite numbers (codascore/scores.py holds its contract).
SCORES = "scores.json"
#: The scores' older form, read as YAML when there is no scores.json (the compute worker's fallback).
SCORES_YAML = "scores.txt"
#: The scorer's full record of a submission (codascore/formats/details.py).
DETAILS = "details.json"
#: The page Codabench shows under "detailed results".
PAGE = "detailed_results.html"
#: The ingestion's file saying why the participant's code failed; the scorer then fails the submission.
INGESTION_ERROR = "ingestion_error.txt"
#: The worker's file in the prediction output: the prediction step's exit codes and times.
WORKER_METADATA = "metadata"
