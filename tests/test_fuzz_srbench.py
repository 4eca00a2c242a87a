"""Fuzz test of the SRBench scorer: 1,000 seeded malformed models.json files made from the sample
submissions (the JSON and the model strings in it), each held to the scoring contract of tests/fuzzing.py.

The real-world and qualification references are cut to one dataset and two seeds, with one scoring worker
and a 5 s limit per model in their task.yaml, so that a case whose model strings are still accepted stays
cheap to score. (The synthetic track simplifies every model with sympy and takes minutes per submission;
its reader is the same read_models.)
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
import shutil
from pathlib import Path

import yaml

from fuzzing import Campaign, case_count, mutate_bytes, mutate_json, mutate_structure, pick

SEED = 15_004
CASES = case_count()
TASKS = ("srbench.realworld", "srbench.qualification")
N_SEEDS = 2
#: Numbers that push a model's evaluation to its extremes.
NUMBERS = ("1e308", "1e309", "1e-320", "5e-324", "9" * 400, "0", "-0", "1e999", "0.0", "1e-300", "123456789" * 3)
FUNCTIONS = ("exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "abs", "asin", "acos", "atan", "sinh", "cosh",
             "max", "min", "pow", "exp2", "__import__", "eval", "lambda", "os.system")
JUNK = ("*", "**", "/", "(", ")", ",", ".", "_", ";", "'", '"', "\\", "\x00", "\n", "\u00e9", "\u2212", "1e", "..",
        "[", "]", "{", "}", "=", "==", "@", "#", "$", "^", "&", "|", "~", "%", "!", "?", ":", "`")


def cut_task(project: Path, task: str, out: Path) -> tuple[Path, dict[str, bytes], dict[str, list[str]]]:
    """The reference cut to its first dataset and N_SEEDS seeds, the results samples' models.json cut to
    match, and each dataset's feature names."""
    ref = out / "ref" / task
    shutil.copytree(project / "reference_data" / task, ref)
    meta = json.loads((ref / "datasets.json").read_text())
    meta["seeds"], meta["datasets"] = meta["seeds"][:N_SEEDS], meta["datasets"][:1]
    (ref / "datasets.json").write_text(json.dumps(meta))
    if (ref / "pool.csv").is_file():
        keep = {(meta["datasets"][0]["name"], str(s)) for s in meta["seeds"]}
        rows = list(csv.reader(io.StringIO((ref / "pool.csv").read_text())))
        (ref / "pool.csv").write_text("\n".join(",".join(r) for r in rows[:1] + [r for r in rows[1:]
                                                                                 if (r[1], r[3]) in keep]) + "\n")
    config = yaml.safe_load((ref / "task.yaml").read_text())
    config.update(workers=1, model_time_limit=5.0, simplify_time_limit=2.0)
    (ref / "task.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    prefixes = tuple(f"{d['name']}/{s}" for d in meta["datasets"] for s in meta["seeds"])
    samples = {}
    for folder in sorted((project / "sample_submissions" / task).iterdir()):
        if (folder / "models.json").is_file():
            models = json.loads((folder / "models.json").read_text())
            samples[folder.name] = json.dumps({k: v for k, v in models.items() if k in prefixes}).encode()
    names = {d["name"]: list(d.get("feature_names", [])) for d in meta["datasets"]}
    return ref, samples, names


def mutate_expression(text: str, names: list[str], rng: random.Random) -> tuple[str, str]:
    """One change of a model string: a number or name replaced, a function wrapped around it, deep
    parentheses, extreme powers, a division by zero, a cut, junk characters, or a very long repetition."""
    kind = rng.choice(("number", "number", "name", "wrap", "parens", "power", "zero", "cut", "junk", "long"))
    numbers = list(re.finditer(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?", text))
    if kind == "number" and numbers:
        match = rng.choice(numbers)
        return text[:match.start()] + rng.choice(NUMBERS) + text[match.end():], f"expression: {kind}"
    if kind == "name":
        new = rng.choice(names + ["x_unknown", "__class__", "X", "pi", "E", "I", "oo", "nan", "zoo", "y"])
        words = list(re.finditer(r"[A-Za-z_]\w*", text))
        if words:
            match = rng.choice(words)
            return text[:match.start()] + new + text[match.end():], f"expression: {kind}"
        return new, f"expression: {kind}"
    if kind == "wrap":
        for _ in range(rng.choice((1, 2, 5, 40))):
            text = f"{rng.choice(FUNCTIONS)}({text})"
        return text, f"expression: {kind}"
    if kind == "parens":
        depth = rng.choice((50, 500, 5000))
        return "(" * depth + text + ")" * depth, f"expression: {kind}"
    if kind == "power":
        return rng.choice((f"({text})**1e308", f"({text})**-1", f"({text})**({text})", "9**9**9**9",
                           f"({text})**1000000", f"exp(exp(exp({text})))")), f"expression: {kind}"
    if kind == "zero":
        return rng.choice((f"({text})/0", f"1/({text}-({text}))", f"log(0*({text}))", f"({text})/0.0")), \
            f"expression: {kind}"
    if kind == "cut" and text:
        return text[:rng.randrange(len(text))], f"expression: {kind}"
    if kind == "junk":
        at = rng.randrange(len(text) + 1)
        return text[:at] + "".join(rng.choice(JUNK) for _ in range(rng.randint(1, 4))) + text[at:], \
            f"expression: {kind}"
    term = f"+{rng.choice(names) if names else 'x'}"
    return text + term * rng.choice((100, 3000, 20000)), "expression: long"


def test_fuzz_srbench(project_data, tmp_path, capsys):
    rng = random.Random(SEED)
    tasks = [cut_task(project_data, task, tmp_path) for task in TASKS]
    campaign = Campaign("srbench", tmp_path / "runs")
    for _ in range(CASES):
        ref, samples, names = rng.choice(tasks)
        raw = samples[rng.choice(sorted(samples))]
        mutator = pick(rng, [(0.3, "expression"), (0.35, "json"), (0.2, "bytes"), (0.15, "structure")])
        if mutator == "expression":
            models = json.loads(raw)
            key = rng.choice(sorted(models))
            dataset = key.rsplit("/", 1)[0]
            models[key], description = mutate_expression(models[key], names.get(dataset) or [], rng)
            if rng.random() < 0.3:  # the same string in every run, as one formula submitted everywhere
                models = {k: models[key] for k in models}
            files = {"models.json": json.dumps(models).encode()}
        elif mutator == "json":
            data, description = mutate_json(raw, rng, leaf_bias=0.5)
            files = {"models.json": data}
        elif mutator == "bytes":
            data, description = mutate_bytes(raw, rng)
            files = {"models.json": data}
        else:
            files, description = mutate_structure({"models.json": raw}, rng)
        campaign.run(ref, files, f"{description} [{ref.name}]", draw=mutator == "expression")
    campaign.assert_contract(capsys)
