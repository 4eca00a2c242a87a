"""Codabench scoring program: score.py INPUT OUTPUT. The task is named by INPUT/ref/task.yaml.

The codascore library sits beside this file in the bundle (Codabench mounts nothing else); in a source
checkout the installed library is used.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from codascore.codabench import score_main  # noqa: E402

if __name__ == "__main__":
    sys.exit(score_main(sys.argv[1:]))
