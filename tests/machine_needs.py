"""What a test needs of the machine (a program, a package, an environment a make target builds). Where it is
missing the test is skipped, but under CI (CI=true) it fails: .ci/run installs all of it, so a skip there
would hide a test that never ran."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def missing(message: str, tests: str) -> NoReturn:
    """End the test for want of what message names: fail under CI, else skip; tests says which did not run."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message}: CI must run {tests}")
    pytest.skip(f"{message}: {tests} did not run")
