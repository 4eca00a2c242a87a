"""Codabench ingestion program: ingest.py INPUT_DATA OUTPUT PROGRAM SUBMISSION.

Runs a code submission under the task's time limit and writes exactly the files a result submission
would hold. The task is named by INPUT_DATA/task.yaml.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from codascore.codabench import ingest_main  # noqa: E402

if __name__ == "__main__":
    sys.exit(ingest_main(sys.argv[1:]))
