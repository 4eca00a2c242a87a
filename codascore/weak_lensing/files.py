"""File names and writers of the weak lensing tasks that scoring, ingestion and generation all use.

Kept apart from :mod:`codascore.weak_lensing.generate`, so that the scoring and ingestion programs of a
bundle run without the generators (which a bundle leaves out).
"""

from __future__ import annotations

import json
from pathlib import Path

#: input_data/<task>/: noiseless training maps and their labels, noisy test maps.
TRAIN_MAPS, TRAIN_LABELS, TEST_MAPS = "train_maps.npy", "train_labels.npy", "test_maps.npy"
#: A result submission (both phases).
RESULT_FILE = "result.json"


def write_result(folder: Path, data: dict) -> None:
    """A result.json, deterministic (repr of floats, fixed key order)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / RESULT_FILE).write_text(json.dumps(data, allow_nan=True, separators=(",", ":")) + "\n")
