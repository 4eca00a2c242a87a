"""Codabench scoring program: score.py INPUT OUTPUT. The task is named by INPUT/ref/task.yaml.

In the bundle, the codascore library sits beside this file (Codabench mounts nothing else) and vendor/
holds the pinned packages the stock image lacks (codascore.wheels); in a source checkout neither is
here, and the installed packages are used.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from codascore.codabench import score_main, use_vendored_packages  # noqa: E402

if __name__ == "__main__":
    use_vendored_packages(HERE)
    sys.exit(score_main(sys.argv[1:]))
