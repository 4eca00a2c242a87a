"""Data seeds of the generators: the demo's public seeds, or a bundle's private master seed.

Every generator takes one master seed (``Task.generate(..., seed=...)``):

- ``None`` is the demo (``make data``, the tests): each family keeps its fixed, documented seeds, so the
  demo's data and scores never change. Anyone can rebuild that data; it never goes into a bundle.
- An integer is an organiser's private seed (:mod:`codascore.bundle_data`): every random stream of every
  task is derived from it, one per (task, purpose), so two purposes never share a stream and no value a
  participant sees (a run key, an instance name) tells anything about the others.

Only generation imports this module; the bundle's program folders leave it out.
"""

from __future__ import annotations

import zlib

import numpy as np


def sequence(master: int, task: str, *purpose: str | int) -> np.random.SeedSequence:
    """The seed sequence of one purpose of one task: ``SeedSequence(master, spawn_key)`` with the CRC-32 of
    each name as the spawn key (stable across runs and platforms, unlike ``hash``). Streams with different
    keys are independent, as numpy's ``spawn`` children are."""
    key = tuple(zlib.crc32(str(part).encode()) for part in (task, *purpose))
    return np.random.SeedSequence(int(master), spawn_key=key)


def integer(master: int, task: str, *purpose: str | int) -> int:
    """A 32-bit integer seed from :func:`sequence`, for APIs that take an int (scikit-learn's
    ``random_state``, a generator called as ``default_rng(int)``)."""
    return int(sequence(master, task, *purpose).generate_state(1)[0])


def generator(master: int, task: str, *purpose: str | int) -> np.random.Generator:
    """``default_rng`` on :func:`sequence`."""
    return np.random.default_rng(sequence(master, task, *purpose))
