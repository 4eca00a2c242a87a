"""Fuzz test of the weak lensing scorer (both phases): 1,000 seeded malformed result submissions made from
the sample submissions, each held to the scoring contract of tests/fuzzing.py.

The reference and the samples are cut to their first maps, so that a case that is still valid (and is
scored, with its page and figures) stays cheap; the files keep the samples' format and values.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import numpy as np

from fuzzing import Campaign, case_count, mutate_bytes, mutate_json, mutate_numbers, mutate_structure, pick

SEED = 15_001
CASES = case_count()
N_MAPS = 60
#: Numbers that keep a result valid but push the metrics and figures to their extremes.
EXTREME_VALUES = ("1e300", "-1e300", "1e-150", "1e150", "0", "1", "0.9999999999", "1e-160", "5e-324", "-5e-324",
                  "1e308", "123456789", "1e-300", "0.5", "2.5e-8")


def cut_task(project: Path, task: str, out: Path) -> tuple[Path, dict[str, bytes]]:
    """reference_data/<task> and every results sample of sample_submissions/<task>, cut to N_MAPS maps."""
    ref = out / "ref" / task
    shutil.copytree(project / "reference_data" / task, ref)
    for name in ("label_test.npy", "label_test_phase2.npy"):
        if (ref / name).is_file():
            np.save(ref / name, np.load(ref / name)[:N_MAPS])
    samples = {}
    for folder in sorted((project / "sample_submissions" / task).iterdir()):
        if (folder / "result.json").is_file():
            data = json.loads((folder / "result.json").read_text())
            cut = {k: v[:N_MAPS] if isinstance(v, list) else v for k, v in data.items()}
            samples[folder.name] = json.dumps(cut).encode()
    return ref, samples


def hostile_text(raw: bytes, rng: random.Random) -> tuple[bytes, str]:
    """Text-level attacks on a JSON file: deep nesting, huge literals, other encodings, a BOM."""
    kind = rng.choice(("deep", "long_int", "utf16", "bom", "latin1", "huge_array"))
    if kind == "deep":
        depth = rng.choice((65, 1000, 100_000))
        return raw.replace(b"[", b"[" * depth, 1).replace(b"]", b"]" * depth, 1), f"hostile: {kind}"
    if kind == "long_int":
        digits = rng.choice((201, 4301, 50_000))
        return raw.replace(b"0.", b"1" * digits + b".", 1), f"hostile: {kind}"
    if kind == "utf16":
        return raw.decode().encode("utf-16"), f"hostile: {kind}"
    if kind == "bom":
        return b"\xef\xbb\xbf" + raw, f"hostile: {kind}"
    if kind == "latin1":
        return raw.replace(b'"', b'"\xe9', 1), f"hostile: {kind}"
    return b'{"means": [' + b"[0.5, 0.5], " * 200_000 + b"[0.5, 0.5]]}", f"hostile: {kind}"


def extreme_numbers(raw: bytes, rng: random.Random) -> tuple[bytes, str]:
    text, description = mutate_numbers(raw.decode(), rng, EXTREME_VALUES)
    return text.encode(), description


def test_fuzz_weak_lensing(project_data, tmp_path, capsys):
    rng = random.Random(SEED)
    tasks = [cut_task(project_data, task, tmp_path) for task in ("weak_lensing.phase1", "weak_lensing.phase2")]
    campaign = Campaign("weak_lensing", tmp_path / "runs")
    for _ in range(CASES):
        ref, samples = rng.choice(tasks)
        raw = samples[rng.choice(sorted(samples))]
        mutator = pick(rng, [(0.37, mutate_json), (0.05, extreme_numbers), (0.28, mutate_bytes),
                             (0.15, hostile_text), (0.15, None)])
        if mutator is None:
            files, description = mutate_structure({"result.json": raw}, rng)
        else:
            data, description = mutator(raw, rng)
            files = {"result.json": data}
        # Only the cases made to reach the metrics' and figures' extremes draw their figures.
        campaign.run(ref, files, f"{description} [{ref.name}]", draw=mutator is extreme_numbers)
    campaign.assert_contract(capsys)
