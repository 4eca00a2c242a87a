"""A small valid competition bundle, and the helpers that write and zip it: the fixture that the checker's
tests break one rule at a time (test_checker, test_checker_run, test_answers)."""

from __future__ import annotations

from pathlib import Path

import yaml

from codascore import bundle, zips
from codascore.registry import get_task

TASK = "weak_lensing.phase1"
PHASE1_KEYS = get_task(TASK).score_keys  # score, avg_coverage, R_squared, MSE

# The smallest real PNG: signature, IHDR (1x1 grey), IDAT, IEND.
PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108000000003a7e9b55"
                    "0000000a49444154789c63600000000200015f8cd6a50000000049454e44ae426082")


def valid_yaml() -> dict:
    columns = [{"title": key, "key": key, "index": i, "sorting": "asc" if key == "MSE" else "desc",
                "precision": 4} for i, key in enumerate(PHASE1_KEYS)]
    return {
        "version": 2,
        "title": "Fixture competition",
        "image": "logo.png",
        "terms": "pages/terms.md",
        "pages": [{"title": "Overview", "file": "pages/overview.md"}],
        "docker_image": bundle.DOCKER_IMAGE,
        "enable_detailed_results": True,
        "tasks": [{"index": 0, "name": "Phase 1", "scoring_program": "scoring_program",
                   "reference_data": f"reference_data/{TASK}"}],
        "phases": [
            {"name": "First", "start": "2026-01-01", "end": "2026-01-31 23:59:59", "tasks": [0],
             "execution_time_limit": 600},
            {"name": "Second", "start": "2026-02-01", "tasks": [0], "execution_time_limit": 600},
        ],
        "leaderboards": [{"title": "Results", "key": "main", "submission_rule": "Force_Last",
                          "primary_index": 0, "columns": columns}],
    }


SCORER = "import sys\nprint('scoring', sys.argv[1:])\n"


def write_bundle(folder: Path, competition: dict | str,
                 files: dict[str, bytes | str | None] | None = None) -> Path:
    """A bundle folder: the YAML plus the files a valid bundle needs; files overrides (None deletes)."""
    base: dict[str, bytes | str | None] = {
        "logo.png": PNG,
        "pages/terms.md": "# Terms\n\nBe fair.\n",
        "pages/overview.md": "# Overview\n\nA fixture.\n",
        "scoring_program/metadata.yaml": "command: python3 /app/program/score.py /app/input /app/output\n",
        "scoring_program/score.py": SCORER,
        f"reference_data/{TASK}/task.yaml": f"task: {TASK}\n",
    }
    base.update(files or {})
    folder.mkdir(parents=True, exist_ok=True)
    text = competition if isinstance(competition, str) else yaml.safe_dump(competition, sort_keys=False)
    (folder / "competition.yaml").write_text(text)
    for name, content in base.items():
        if content is None:
            continue
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return folder


def zip_folder(folder: Path, target: Path) -> Path:
    target.write_bytes(zips.zip_bytes(zips.folder_entries(folder)))
    return target
