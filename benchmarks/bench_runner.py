"""The local runner and the bounded readers: what isolation and the limits on participant files cost.

- A whole local run (prediction and scoring step, from the submission folder to the checked scores) of a
  small results submission and of a code submission, each step in a bubblewrap sandbox against plain
  processes (docs/codabench.md#isolating-a-step).
- Reading a participant's JSON with the project's limits (validate.read_participant_json: size, depth,
  number literals) against a bare json.loads, on a Phase 2 result.json of 10,000 maps
  (docs/codabench.md#limits-of-participant-files).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
from common import median_time, print_table

from codascore import competition, containers, runner, validate

ROOT = competition.project_root()
#: (task, sample): a results submission and a code submission, both small.
RUNS = (("uai.pr", "exact"), ("weak_lensing.phase1", "code_baseline"))


def run_rows(tmp: Path) -> list[tuple]:
    kinds = [("none", containers.Container("none"))]
    if containers.bubblewrap_works():
        kinds.append(("bwrap", containers.Container("bwrap")))
    rows = []
    for task, sample in RUNS:
        submission = ROOT / "sample_submissions" / task / sample
        times = {}
        for label, container in kinds:
            def once(label=label, container=container):
                out = tmp / f"{task}-{sample}-{label}"
                result = runner.run(task, submission, out, root=ROOT, container=container)
                if not result.scored:
                    raise RuntimeError(f"{task}/{sample} under {label}: {result.violations or result.error}")
            times[label] = median_time(once, repeat=5)
        bwrap = times.get("bwrap")
        rows.append((task, sample, f"{times['none']:.2f} s", f"{bwrap:.2f} s" if bwrap else "n/a (no bwrap)",
                     f"{bwrap - times['none']:+.2f} s" if bwrap else "n/a"))
    return rows


def json_rows(tmp: Path, n: int = 10_000) -> list[tuple]:
    rng = np.random.default_rng(0)
    path = tmp / "result.json"
    path.write_text(json.dumps({"p_ind": rng.random(n).tolist(), "ood_scores": rng.random(n).tolist()}))
    bounded = median_time(lambda: validate.read_participant_json(path), repeat=15)
    bare = median_time(lambda: json.loads(path.read_bytes()), repeat=15)
    return [(f"Phase 2 result.json, {n} maps ({path.stat().st_size // 1024} KiB)", f"{bare * 1e3:.2f} ms",
             f"{bounded * 1e3:.2f} ms", f"{bounded / bare:.2f}x")]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        print_table(run_rows(tmp), ("task", "sample", "plain processes", "bubblewrap", "sandbox cost"))
        print()
        print_table(json_rows(tmp), ("participant JSON", "json.loads", "bounded reader", "ratio"))
