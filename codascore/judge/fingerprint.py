"""What a unit's result depends on, and its fingerprint (docs/judge.md#resume).

A unit finished once is judged again when, and only when, something its result depends on changed. Those
inputs are named in one place, :func:`unit_inputs`: the team's submission, the reference data, the input
data, the programs that run it, codascore itself (its version and its source), the team's environment
(the digest of what it was built from, when it has one), and the unit's whole spec (kind, key, group, time
limit, resources, a part's settings, the scoring settings). Each is a digest; the
store keeps them by name beside their fingerprint, so that a judge or ``judge --status`` can say which one
changed. One more input is one more line of :func:`unit_inputs`.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from pathlib import Path

from .. import __version__
from ..digests import file_sha256, folder_sha256
from ..formats.judgement import PART
from .units import Unit

#: The input that is the command line's (the unit's spec): every other one is read from disk.
SPEC = "unit"
#: The inputs only the scoring step reads (a part unit, a prediction step alone, does not depend on them).
SCORING_ONLY = ("reference data", "scoring program", "phase")


@dataclasses.dataclass(frozen=True)
class Sources:
    """The digests of what every unit of a task's judgement shares ("" for what the task has none of)."""

    reference_data: str
    input_data: str
    scoring_program: str
    ingestion_program: str
    codascore: str
    phase: str = ""

    @classmethod
    def of(cls, layout) -> "Sources":
        """The digests of a runner.TaskLayout's folders, of this codascore, and of the phase's settings the
        runner holds the output to (the leaderboard's columns of a competition YAML)."""
        phase = json.dumps({"leaderboard_keys": layout.leaderboard_keys}, sort_keys=True, default=str)
        return cls(folder_digest(layout.reference_data), folder_digest(layout.input_data),
                   folder_digest(layout.scoring_program), folder_digest(layout.ingestion_program),
                   codascore_digest(), hashlib.sha256(phase.encode()).hexdigest())

    def folders(self, layout) -> dict[str, str]:
        """Each folder of the layout (as a string) and its digest: what a worker keys its archives by."""
        pairs = ((layout.reference_data, self.reference_data), (layout.input_data, self.input_data),
                 (layout.scoring_program, self.scoring_program), (layout.ingestion_program, self.ingestion_program))
        return {str(Path(folder).resolve()): digest for folder, digest in pairs if folder is not None and digest}


def unit_inputs(unit: Unit | None, submission: str, sources: Sources) -> dict[str, str]:
    """Everything the unit's result depends on, each named, as digests (unit None: its spec left empty). A
    part runs the prediction step alone: the reference data, the scoring program and the phase's columns
    are not among its inputs (its group's score unit has them). A new input is one line here."""
    inputs = {
        "submission": submission,
        "reference data": sources.reference_data,
        "input data": sources.input_data,
        "scoring program": sources.scoring_program,
        "ingestion program": sources.ingestion_program,
        "codascore": sources.codascore,
        "phase": sources.phase,
        SPEC: spec_digest(unit) if unit is not None else "",
    }
    if unit is not None and unit.kind == PART:
        for name in SCORING_ONLY:
            del inputs[name]
    if unit is not None and unit.environment:  # the team's own environment (its digest), when it has one
        inputs["team environment"] = unit.environment
    return inputs


def on_disk(submission: str, sources: Sources) -> dict[str, str]:
    """The inputs of a team's units that are read from disk (all but the spec), as unit_inputs names them."""
    return {name: digest for name, digest in unit_inputs(None, submission, sources).items() if name != SPEC}


def fingerprint(inputs: dict[str, str]) -> str:
    """The fingerprint of a unit's inputs: the sha256 of their names and digests."""
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def changed(recorded: dict[str, str], current: dict[str, str]) -> list[str]:
    """The names of the inputs that differ between two records (in current's order); every input when
    nothing was recorded (a unit judged before fingerprints were kept)."""
    if not recorded:
        return ["what it was judged with (not recorded)"]
    return [name for name in current if recorded.get(name) != current[name]]


def spec_digest(unit: Unit) -> str:
    """The digest of what the unit runs, apart from the files: its kind, key, group, time limit, resources,
    the units it needs, a part's settings and the scoring settings."""
    spec = {"kind": unit.kind, "key": unit.key, "group": unit.group, "time_limit": unit.time_limit,
            "resources": unit.resources, "needs": list(unit.needs), "part": unit.part, "scoring": unit.scoring}
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()


def folder_digest(folder: Path | None) -> str:
    """A folder's sha256 (digests.folder_sha256); "" for none."""
    return folder_sha256(Path(folder)) if folder is not None else ""


@functools.lru_cache(maxsize=1)
def codascore_digest() -> str:
    """This codascore: its version and the sha256 of its package's sources (an edited module changes it)."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256(__version__.encode() + b"\0")
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + bytes.fromhex(file_sha256(path)))
    return f"{__version__}+{digest.hexdigest()[:16]}"
