"""Fuzz test of the UAI scorer (PR, MAR, MPE, MMAP, MLC): 1,000 seeded malformed result submissions made
from the sample submissions, each held to the scoring contract of tests/fuzzing.py.

A malformed answer file scores that instance 0 with a reason (the submission is still scored), so most
cases end in exit 0: the contract then checks the scores and details.json. The reference is cut to its
first three instances per task so that each case stays cheap.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

from fuzzing import Campaign, case_count, mutate_bytes, mutate_structure, pick

SEED = 15_003
CASES = case_count()
TASKS = ("uai.pr", "uai.mar", "uai.mpe", "uai.mmap", "uai.mlc")
N_INSTANCES = 3
#: Tokens that a reader of numbers, counts, indices and task words must survive.
TOKENS = ("1e308", "-1e308", "1.7976931348623157e308", "1e309", "nan", "NaN", "inf", "-inf", "Infinity", "0",
          "-0", "-1", "1", "2", "1e-320", "5e-324", "9" * 25, "1" * 5000, "-9223372036854775809",
          "9223372036854775807", "18446744073709551616", "0x10", "1_000", "\u0663", "1.5", "L", "U", "-BEGIN-",
          "MAR", "MPE", "MAP", "PR", "MMAP", "MLC", "\u00e9", "1e", "+1", "0.0", "1e-300")


def cut_task(project: Path, task: str, out: Path) -> tuple[Path, dict[str, dict[str, bytes]]]:
    """reference_data/<task> with its first N_INSTANCES instances, and the results samples' files for them."""
    ref = out / "ref" / task
    shutil.copytree(project / "reference_data" / task, ref)
    data = json.loads((ref / "reference.json").read_text())
    data["instances"] = data["instances"][:N_INSTANCES]
    (ref / "reference.json").write_text(json.dumps(data))
    kind = task.split(".")[1].upper()
    wanted = {f"{record['id']}.uai.{kind}" for record in data["instances"]}
    samples = {}
    for folder in sorted((project / "sample_submissions" / task).iterdir()):
        found = {p.name: p.read_bytes() for p in folder.iterdir() if p.name in wanted}
        if found:
            samples[folder.name] = found
    return ref, samples


def mutate_tokens(text: str, rng: random.Random) -> tuple[str, str]:
    """One to three token-level changes of a result file: a token replaced, deleted, repeated or inserted;
    a task word or block line changed."""
    lines = [line.split() for line in text.splitlines()] or [[]]
    kind = ""
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(("replace", "replace", "replace", "delete", "repeat", "insert", "begin", "word", "line"))
        row = rng.randrange(len(lines))
        tokens = lines[row]
        if kind == "begin":
            lines.insert(rng.randrange(len(lines) + 1), ["-BEGIN-"])
        elif kind == "word":
            lines[0] = [rng.choice(("MAR", "MPE", "MAP", "PR", "MMAP", "MLC", "mar", "", "BEGIN", "-BEGIN-"))]
        elif kind == "line":
            lines.insert(rng.randrange(len(lines) + 1), [rng.choice(TOKENS) for _ in range(rng.randint(0, 6))])
        elif kind == "insert" or not tokens:
            tokens.insert(rng.randrange(len(tokens) + 1), rng.choice(TOKENS))
        elif kind == "replace":
            tokens[rng.randrange(len(tokens))] = rng.choice(TOKENS)
        elif kind == "delete":
            del tokens[rng.randrange(len(tokens))]
        else:
            i = rng.randrange(len(tokens))
            tokens[i:i] = [tokens[i]] * rng.randint(1, 50)
    return "\n".join(" ".join(tokens) for tokens in lines) + "\n", f"tokens: {kind}"


#: Integers beyond what an index of a model can be (int64), and floats at float64's ends.
HUGE_INTEGERS = ("9" * 25, "18446744073709551616", "-9223372036854775809", "1" + "0" * 400)
EXTREME_FLOATS = ("1e308", "1.7976931348623157e308", "5e-324", "1e-300", "1e300", "-1e308")


def extreme_numbers(text: str, rng: random.Random) -> tuple[str, str]:
    """Answers at the ends of the number types: probabilities (MAR) or log10 Z (PR) as large or small as a
    float64 holds, every probability of a variable at 1e308 (their sum overflows), or indices and values
    (MPE, MMAP, MLC) beyond int64."""
    lines = text.splitlines()
    head, tokens = lines[:2], [t for line in lines[2:] for t in line.split()]
    floats = [i for i, t in enumerate(tokens) if "." in t or "e" in t]
    if floats:
        value = rng.choice(EXTREME_FLOATS)
        if rng.random() < 0.5 and len(floats) > 1:  # a whole vector, as in a MAR answer "2 p p"
            start = rng.randrange(len(floats) - 1)
            chosen = floats[start:start + 2]
        else:
            chosen = rng.sample(floats, min(len(floats), rng.randint(1, 10)))
    else:
        value = rng.choice(HUGE_INTEGERS)
        chosen = rng.sample(range(len(tokens)), min(len(tokens), rng.randint(1, 3)))
    for i in chosen:
        tokens[i] = value
    return "\n".join(head + [" ".join(tokens)]) + "\n", f"extreme: {value[:25]}"


def test_fuzz_uai(project_data, tmp_path, capsys):
    rng = random.Random(SEED)
    tasks = [cut_task(project_data, task, tmp_path) for task in TASKS]
    campaign = Campaign("uai", tmp_path / "runs")
    for _ in range(CASES):
        ref, samples = rng.choice(tasks)
        files = dict(samples[rng.choice(sorted(samples))])
        target = rng.choice(sorted(files))
        mutator = pick(rng, [(0.5, mutate_tokens), (0.1, extreme_numbers), (0.25, mutate_bytes),
                             (0.15, None)])
        if mutator is None:
            files, description = mutate_structure(files, rng)
        elif mutator is mutate_bytes:
            files[target], description = mutate_bytes(files[target], rng)
        else:
            text, description = mutator(files[target].decode("utf-8"), rng)
            files[target] = text.encode("utf-8")
        campaign.run(ref, files, f"{description} [{ref.name}]", draw=mutator is extreme_numbers)
    campaign.assert_contract(capsys)
