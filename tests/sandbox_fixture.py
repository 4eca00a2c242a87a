"""The bubblewrap sandbox for the tests that need it. CI installs bubblewrap (.ci/run), so there a missing or
unusable bwrap fails those tests; elsewhere they are skipped with a reason that `make test` lists (-rs), since
the runner itself falls back to plain processes, with its warning (docs/codabench.md#isolating-a-step)."""

from __future__ import annotations

from codascore import containers
from machine_needs import missing


def bubblewrap_sandbox() -> containers.Container:
    container = containers.choose()
    if container.kind == "bwrap":
        return container
    message = "bubblewrap is not installed or cannot create namespaces here (apt-get install bubblewrap)"
    missing(message, "the sandbox tests")
