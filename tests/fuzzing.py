"""The machinery of the fuzz tests (``tests/test_fuzz_<family>.py``); not a test module.

Each case is a malformed submission made by a seeded mutator from a sample submission. It is scored by
``codabench.score_main``, the function ``scoring_program/score.py`` calls, in the test's own process:
a forked child per case costs about ten times more than a malformed case's scoring itself, and the
fuzz tests must stay within a few minutes of CI. stderr and stdout are captured per case, and an
exception escaping score_main is recorded as exit 70 with its traceback.

Memory is the peak resident set size of the whole test process during the case (Linux's VmHWM, reset
before each case through /proc/self/clear_refs; where that reset is refused, the process's peak so
far, which only makes the bound stricter). It counts every allocation, numpy's and those of h5py's C
library alike, plus what the process held before the case, so "under 1 GiB" bounds the case with room
to spare. tracemalloc would count only Python's and numpy's allocations, and slows drawing threefold.
The memory of an SRBench worker process is bounded by that worker's own address-space limit.

The contract every case is held to (issue 15): exit 0 or 1, never anything else; no traceback on stderr;
``scores.json`` exactly on exit 0, every value finite with |v| < 1e10; no ``OUTPUT/metadata``;
``details.json`` strict JSON; peak memory under 1 GiB.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import io
import json
import math
import os
import random
import re
import shutil
import resource
import traceback
from pathlib import Path
from typing import Callable

#: Peak memory allowed to one scoring run (the process's peak resident set size during it).
MEMORY_LIMIT = 1024**3
#: A submission's files: relative path -> bytes (None: a folder of that name).
Files = dict[str, bytes | None]
#: Cases per family in CI (issue 15 asks for at least 1,000).
DEFAULT_CASES = 1000


def case_count() -> int:
    """How many cases each fuzz test runs: DEFAULT_CASES, or CODASCORE_FUZZ_CASES when set (more, for a
    longer campaign by hand; fewer while developing)."""
    return int(os.environ.get("CODASCORE_FUZZ_CASES", DEFAULT_CASES))


#: Exit code recorded when an exception escapes score_main (the scoring program would die with it).
EXIT_ESCAPED = 70


@dataclasses.dataclass
class Outcome:
    exit_code: int
    stderr: str
    peak_memory: int
    scores: dict | None
    details: str | None
    metadata_written: bool


def _no_figure(*args, **kwargs):
    raise RuntimeError("this fuzz case draws no figure")


@contextlib.contextmanager
def figures_refused():
    """Every matplotlib Figure fails to be created inside the block (the report shows its notes)."""
    import matplotlib.figure

    original = matplotlib.figure.Figure.__init__
    matplotlib.figure.Figure.__init__ = _no_figure
    try:
        yield
    finally:
        matplotlib.figure.Figure.__init__ = original


def _reset_peak_memory() -> None:
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current resident set size


def _peak_memory() -> int:
    """The process's peak resident set size in bytes (since the last reset, where that is possible)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def score_case(ref_dir: Path, files: Files, work: Path, draw: bool = True) -> Outcome:
    """Lay out ``work/input/{ref,res}`` (ref a link to ref_dir) and run the scoring step on it.

    draw=False makes every matplotlib Figure fail to be created, so that the page shows the report's
    notes instead of figures: drawing costs most of a scored case's time, and only the cases made to push
    values to their extremes need it (the report's contract, docs/codabench.md#reports, keeps the scores
    either way)."""
    from codascore.codabench import score_main

    if work.exists():
        shutil.rmtree(work)
    res = work / "input" / "res"
    res.mkdir(parents=True)
    (work / "input" / "ref").symlink_to(Path(ref_dir).resolve())
    for name, data in files.items():
        path = res / name
        if data is None:
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    output, log = work / "output", io.StringIO()
    _reset_peak_memory()
    with contextlib.redirect_stderr(log), contextlib.redirect_stdout(log), \
            (contextlib.nullcontext() if draw else figures_refused()):
        try:
            code = score_main([str(work / "input"), str(output)])
        except Exception:  # noqa: BLE001: the scoring program would die with it; the contract check says so
            traceback.print_exc(file=log)
            code = EXIT_ESCAPED
    peak = _peak_memory()
    scores_path, details_path = output / "scores.json", output / "details.json"
    return Outcome(exit_code=code, stderr=log.getvalue(), peak_memory=peak,
                   scores=_strict_json(scores_path.read_text()) if scores_path.is_file() else None,
                   details=details_path.read_text() if details_path.is_file() else None,
                   metadata_written=(output / "metadata").exists())


def _refuse_constant(name: str):
    raise ValueError(f"non-standard JSON constant {name}")


def _strict_json(text: str):
    """Parsed JSON, or the string ``"not strict JSON: ..."`` (NaN and Infinity are not JSON)."""
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except ValueError as exc:
        return f"not strict JSON: {exc}"


def contract_violations(outcome: Outcome) -> list[str]:
    """Every way the outcome breaks the scoring program's contract (empty when it keeps it)."""
    found = []
    if outcome.exit_code not in (0, 1):
        found.append(f"exit code {outcome.exit_code}")
    if "Traceback" in outcome.stderr:
        found.append("a traceback on stderr")
    if (outcome.scores is not None) != (outcome.exit_code == 0):
        found.append(f"scores.json {'present' if outcome.scores is not None else 'absent'} on exit "
                     f"{outcome.exit_code}")
    if isinstance(outcome.scores, str) or outcome.scores is not None and not isinstance(outcome.scores, dict):
        found.append(f"scores.json: {outcome.scores}")
    elif outcome.scores:
        for key, value in outcome.scores.items():
            if not isinstance(value, (int, float)) or not math.isfinite(value) or abs(value) >= 1e10:
                found.append(f"scores.json: {key} = {value!r}")
    if outcome.metadata_written:
        found.append("OUTPUT/metadata written")
    if outcome.details is None:
        found.append("no details.json")
    elif isinstance(_strict_json(outcome.details), str):
        found.append(f"details.json: {_strict_json(outcome.details)}")
    if outcome.peak_memory >= MEMORY_LIMIT:
        found.append(f"peak memory {outcome.peak_memory / 1024**2:.0f} MiB")
    return found


def warm_up() -> None:
    """Import matplotlib and draw one figure with text, so that the first drawn case does not pay for the
    imports and the font cache."""
    from codascore.report import figure_html, new_figure

    fig, ax = new_figure(3, 2)
    ax.hist([0.0, 1.0], bins=3)
    ax.set_xlabel("x (μ − σ)")
    ax.legend(["a"])
    figure_html(fig, "warm-up")


class Campaign:
    """Runs the cases of one family, counts the outcomes, and holds every contract violation."""

    def __init__(self, family: str, work: Path):
        self.family, self.work = family, Path(work)
        self.outcomes: collections.Counter = collections.Counter()
        self.by_mutation: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.violations: list[str] = []
        self.peak_memory = 0
        self.runs = 0
        warm_up()

    def run(self, ref_dir: Path, files: Files, description: str, draw: bool = False) -> Outcome:
        """Score one case (draw: whether its figures are drawn, see score_case) and check the contract."""
        outcome = score_case(ref_dir, files, self.work / "case", draw)
        self.runs += 1
        self.outcomes[f"exit {outcome.exit_code}"] += 1
        self.by_mutation[description.split(":")[0]][f"exit {outcome.exit_code}"] += 1
        self.peak_memory = max(self.peak_memory, outcome.peak_memory)
        problems = contract_violations(outcome)
        if problems:
            tail = outcome.stderr.strip().splitlines()[-6:]
            self.violations.append(f"case {self.runs} ({description}): {'; '.join(problems)}\n    "
                                   + "\n    ".join(tail))
        return outcome

    def summary(self) -> str:
        counts = ", ".join(f"{key}: {n}" for key, n in sorted(self.outcomes.items()))
        return (f"fuzz {self.family}: {self.runs} runs ({counts}); {len(self.violations)} contract violations; "
                f"peak memory of the process during a case {self.peak_memory / 1024**2:.0f} MiB")

    def record(self, capsys=None) -> None:
        """Print the summary (through pytest's capsys fixture, shown under -q too) and, when
        CODASCORE_FUZZ_REPORT names a folder, write it there as <family>.json for CI's record."""
        if capsys is not None:
            with capsys.disabled():
                print("\n" + self.summary())
        folder = os.environ.get("CODASCORE_FUZZ_REPORT")
        if folder:
            Path(folder).mkdir(parents=True, exist_ok=True)
            (Path(folder) / f"{self.family}.json").write_text(json.dumps({
                "family": self.family, "runs": self.runs, "outcomes": dict(self.outcomes),
                "by_mutation": {k: dict(v) for k, v in sorted(self.by_mutation.items())},
                "violations": len(self.violations), "peak_memory_mib": round(self.peak_memory / 1024**2)}, indent=1))

    def assert_contract(self, capsys=None) -> None:
        self.record(capsys)
        assert not self.violations, f"{len(self.violations)} of {self.runs} cases broke the contract:\n" + \
            "\n".join(self.violations[:10])


# --------------------------------------------------------------------------- generic mutators

#: Byte values that parsers treat specially.
INTERESTING_BYTES = (0x00, 0x01, 0x7F, 0x80, 0xFF, 0xFE, 0x20, 0x0A, 0x22, 0x5B, 0x7B, 0x2D, 0x2E, 0x65)


def mutate_bytes(data: bytes, rng: random.Random, region: tuple[int, int] | None = None) -> tuple[bytes, str]:
    """One byte-level change: flipped bits, special bytes, a cut, an insertion, a deleted or repeated span.
    region (start, end) confines where it happens (for example a file's header)."""
    if not data:
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 64))), "bytes: random content"
    lo, hi = region or (0, len(data))
    hi = max(lo + 1, min(hi, len(data)))
    at = rng.randrange(lo, hi)
    kind = rng.choice(("flip", "flip", "special", "truncate", "insert", "delete", "repeat", "zero_span"))
    buf = bytearray(data)
    if kind == "flip":
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(lo, hi)
            buf[i] ^= 1 << rng.randrange(8)
    elif kind == "special":
        for _ in range(rng.randint(1, 4)):
            buf[rng.randrange(lo, hi)] = rng.choice(INTERESTING_BYTES)
    elif kind == "truncate":
        del buf[at:]
    elif kind == "insert":
        buf[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 32)))
    elif kind == "delete":
        del buf[at:at + rng.randint(1, 64)]
    elif kind == "repeat":
        span = bytes(buf[at:at + rng.randint(1, 64)])
        buf[at:at] = span * rng.randint(1, 8)
    else:
        n = rng.randint(1, 64)
        buf[at:at + n] = b"\xff" * len(buf[at:at + n])
    return bytes(buf), f"bytes: {kind}"


def mutate_structure(files: Files, rng: random.Random) -> tuple[Files, str]:
    """A change of the submission's layout: a file dropped, renamed, emptied, made a folder, wrapped in a
    folder, or joined by junk."""
    files = dict(files)
    names = [n for n, d in files.items() if d is not None]
    kind = rng.choice(("drop", "rename", "empty", "folder", "wrap", "junk", "duplicate"))
    if kind == "drop" and names:
        del files[rng.choice(names)]
    elif kind == "rename" and names:
        name = rng.choice(names)
        new = rng.choice((name.upper(), name + ".bak", "x" + name, name.replace(".", "_"), "." + name))
        files[new] = files.pop(name)
    elif kind == "empty" and names:
        files[rng.choice(names)] = b""
    elif kind == "folder" and names:
        name = rng.choice(names)
        del files[name]
        files[name] = None
    elif kind == "wrap":
        folder = rng.choice(("submission", "a/b", "__MACOSX"))
        files = {f"{folder}/{n}": d for n, d in files.items()}
    elif kind == "junk":
        files[rng.choice(("readme.txt", "metadata", "x.json", "extra.npz", ".hidden"))] = b"junk\x00\xff"
    else:
        name = rng.choice(names) if names else "x"
        files[f"copy/{name}"] = files.get(name) or b""
    return files, f"structure: {kind}"


# --------------------------------------------------------------------------- JSON mutators

#: Raw JSON literals (written into the text as they are), valid or not, finite or not.
JSON_LITERALS = ("0", "-0.0", "1", "-1", "0.5", "2", "1e308", "-1e308", "1.7976931348623157e308", "1e-308",
                 "5e-324", "1e-320", "1e999", "-1e999", "NaN", "Infinity", "-Infinity", "1" + "0" * 320,
                 "-" + "9" * 399, "9" * 5000, "0." + "1" * 300, "123456789012345678901234567890", "true", "false",
                 "null", '"0.5"', '""', '"\\ud800"', "[]", "{}", "[0.5]", "[[0.5, 0.5]]", '{"a": 1}',
                 "[" * 70 + "]" * 70, '"' + "x" * 2000 + '"', "1e", "-", "01", ".5", "+1", "0x10", "1_0")

_PLACEHOLDER = "\u2063fuzz\u2063"


def json_paths(data, limit: int = 5000) -> list[tuple]:
    """Paths (tuples of keys and indices) to nodes of parsed JSON, breadth first, at most limit."""
    paths, queue = [], collections.deque([()])
    while queue and len(paths) < limit:
        path = queue.popleft()
        paths.append(path)
        node = _at(data, path)
        if isinstance(node, dict):
            queue.extend(path + (k,) for k in node)
        elif isinstance(node, list):
            queue.extend(path + (i,) for i in range(len(node)))
    return paths


def _at(data, path: tuple):
    for key in path:
        data = data[key]
    return data


def _replaced(data, path: tuple, value):
    """A copy of data with the node at path replaced by value (only the path's containers are copied)."""
    if not path:
        return value
    node = data.copy()
    node[path[0]] = _replaced(data[path[0]], path[1:], value)
    return node


def mutate_json(raw: bytes, rng: random.Random, literals: tuple[str, ...] = JSON_LITERALS,
                leaf_bias: float = 0.8) -> tuple[bytes, str]:
    """One change of a JSON document's tree: a node replaced by a raw literal, deleted, duplicated, a
    list shortened or lengthened; or the text itself mutated when it does not parse."""
    try:
        data = json.loads(raw)
    except ValueError:
        return mutate_bytes(raw, rng)
    paths = json_paths(data)
    leaves = [p for p in paths if not isinstance(_at(data, p), (dict, list))]
    path = rng.choice(leaves if leaves and rng.random() < leaf_bias else paths)
    kind = rng.choice(("literal", "literal", "literal", "delete", "duplicate", "truncate_list", "wrap"))
    parent = _at(data, path[:-1]) if path else None
    if kind == "literal" or not path:
        literal = rng.choice(literals)
        text = json.dumps(_replaced(data, path, _PLACEHOLDER)).replace(json.dumps(_PLACEHOLDER), literal)
        return text.encode(), f"json: {path[-1] if path else 'root'} = {literal[:20]}"
    if kind == "delete":
        copy = parent.copy()
        del copy[path[-1]]
        data = _replaced(data, path[:-1], copy)
    elif kind == "duplicate" and isinstance(parent, list):
        data = _replaced(data, path[:-1], parent + [parent[path[-1]]])
    elif kind == "truncate_list" and isinstance(parent, list):
        data = _replaced(data, path[:-1], parent[:rng.randrange(len(parent) + 1)])
    else:
        data = _replaced(data, path, [_at(data, path)])
    return json.dumps(data).encode(), f"json: {kind}"


def number_literals(text: str) -> list[re.Match]:
    return list(re.finditer(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", text))


def mutate_numbers(text: str, rng: random.Random, values: tuple[str, ...]) -> tuple[str, str]:
    """Replace one to three number literals of a text by values (extreme but often valid numbers)."""
    found = number_literals(text)
    if not found:
        return text, "numbers: none"
    for match in sorted(rng.sample(found, min(len(found), rng.randint(1, 3))), key=lambda m: -m.start()):
        text = text[:match.start()] + rng.choice(values) + text[match.end():]
    return text, "numbers: replaced"


def pick(rng: random.Random, weighted: list[tuple[float, Callable]]):
    """One of the callables, chosen by weight."""
    return rng.choices([f for _, f in weighted], weights=[w for w, _ in weighted])[0]
