"""Codabench ingestion program: ingest.py INPUT_DATA OUTPUT PROGRAM SUBMISSION.

Runs a code submission under the task's time limit and writes exactly the files a result submission
would hold. The task is named by INPUT_DATA/task.yaml. The library and vendor/ are found as score.py
finds them; participant code run from here imports the vendored packages too.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from codascore.codabench import ingest_main, use_vendored_packages  # noqa: E402

if __name__ == "__main__":
    use_vendored_packages(HERE)
    sys.exit(ingest_main(sys.argv[1:]))
