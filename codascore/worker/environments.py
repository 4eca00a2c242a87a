"""Where a job's step runs, by the image the competition names (docs/worker.md#where-a-step-runs).

Two ways, chosen when the worker starts, both isolated: a bubblewrap sandbox (:mod:`codascore.containers`)
under a Python environment that stands for the image (for the stock ``codalab/codalab-legacy:py312``, the
image's Python 3.12 and packages as ``make image-env`` builds them in ``.venv-image``), or the named image
itself in Docker or Podman, as compute_worker.py runs it. A job whose image this worker cannot serve is
refused with the reason (the job then fails on the site), never run in another environment; a worker that
cannot isolate a step does not start.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

from .. import containers
from ..competition import project_root
from ..errors import RunnerError, WorkerError
from ..runner import interpreter

#: Codabench's stock image, and the environment that stands for it in a clone of the project.
STOCK_IMAGE = "codalab/codalab-legacy:py312"
STOCK_PYTHON = Path(".venv-image") / "bin" / "python"
ENGINES = ("bwrap", "docker", "podman")
#: Seconds a container engine may take to pull an image.
PULL_TIMEOUT = 1800


class ImageRefused(Exception):
    """This worker cannot serve the job's image; the message says why (the job fails with it)."""


@dataclasses.dataclass(frozen=True)
class Environments:
    """How this worker runs steps: engine "bwrap" with an interpreter per image it serves, or "docker" /
    "podman" running whatever image a job names; network as the worker's default (on) unless turned off."""

    engine: str
    pythons: dict[str, str] = dataclasses.field(default_factory=dict)
    network: bool = True

    def container(self, image: str) -> containers.Container:
        """The container of a job's steps; ImageRefused when this worker serves no environment for image.
        A container engine pulls the image where the step runs (:func:`ensure_image`)."""
        if self.engine == "bwrap":
            if image not in self.pythons:
                served = ", ".join(sorted(self.pythons))
                raise ImageRefused(f"the image {image} is not served by this worker (it serves {served} in a "
                                   f"bubblewrap sandbox; give it --image {image}=PYTHON, or run the worker with "
                                   f"--engine docker)")
            return containers.Container("bwrap", python=self.pythons[image], network=self.network)
        return containers.Container("docker", image=image, network=self.network, engine=self.engine)

    def describe(self) -> str:
        if self.engine == "bwrap":
            served = "; ".join(f"{image} as {python}" for image, python in sorted(self.pythons.items()))
            return f"bubblewrap sandbox ({served})"
        return f"{self.engine}, each job's own image"


def parse_images(values: list[str]) -> dict[str, str]:
    """``IMAGE=PYTHON`` options as a mapping; WorkerError naming a malformed one."""
    pythons = {}
    for value in values:
        image, sep, python = value.partition("=")
        if not sep or not image.strip() or not python.strip():
            raise WorkerError(f"--image {value!r}: give IMAGE=PYTHON, e.g. {STOCK_IMAGE}={STOCK_PYTHON}")
        pythons[image.strip()] = python.strip()
    return pythons


def serving_environments(engine: str = "bwrap", images: dict[str, str] | None = None, network: bool = True,
                 root: Path | None = None) -> Environments:
    """The worker's environments, checked: bubblewrap must work here (or the engine answer), and each
    image's interpreter run. Without images, the stock image is served by root's .venv-image (root: the
    project's folder). WorkerError saying what is missing and what to do."""
    if engine not in ENGINES:
        raise WorkerError(f"--engine {engine}: one of {', '.join(ENGINES)}")
    if engine != "bwrap":
        if images:
            raise WorkerError(f"--image maps images to environments of the bubblewrap sandbox; with --engine "
                              f"{engine} each job runs in its own image")
        check_engine(engine)
        return Environments(engine, {}, network)
    if not containers.bubblewrap_works():
        raise WorkerError("nothing isolates a step here: bubblewrap cannot make its sandbox (apt-get install "
                          "bubblewrap; a container may forbid user namespaces) and no --engine docker or podman "
                          "was given. The worker does not run submissions unisolated.")
    if not images:
        stock = Path(root or project_root()) / STOCK_PYTHON
        if not stock.exists():
            raise WorkerError(f"no environment stands for {STOCK_IMAGE}: {stock} is missing (make image-env "
                              f"builds it) or give --image IMAGE=PYTHON")
        images = {STOCK_IMAGE: str(stock)}
    pythons = {}
    for image, python in images.items():
        try:
            pythons[image] = interpreter(python)
            containers.runtime_folders(pythons[image])  # runs it: a broken environment is told now
        except RunnerError as exc:
            raise WorkerError(f"--image {image}: {exc}") from None
    return Environments("bwrap", pythons, network)


def check_engine(engine: str) -> None:
    """WorkerError unless the container engine's command answers."""
    if not shutil.which(engine):
        raise WorkerError(f"--engine {engine}: no {engine} command on this machine")
    done = subprocess.run([engine, "version"], capture_output=True, text=True, timeout=60)
    if done.returncode:
        reason = (done.stderr.strip().splitlines() or [f"{engine} version failed"])[-1]
        raise WorkerError(f"--engine {engine}: {reason}")


def ensure_image(container: containers.Container) -> None:
    """A container engine's image present where the step runs: inspected, else pulled. ImageRefused with
    the engine's reason when it cannot be had."""
    if container.kind != "docker":
        return
    engine, image = container.engine, container.image
    if not subprocess.run([engine, "image", "inspect", image], capture_output=True).returncode:
        return
    try:
        pulled = subprocess.run([engine, "pull", image], capture_output=True, text=True, timeout=PULL_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ImageRefused(f"Pull for {image} failed: {exc}") from None
    if pulled.returncode:
        reason = (pulled.stderr.strip().splitlines() or ["no reason given"])[-1]
        raise ImageRefused(f"Pull for {image} failed: {reason}")
