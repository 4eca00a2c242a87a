"""The UAI tasks' parts for ``codascore judge`` (Task.judge_parts, write_part_input, merge_part_outputs):
one solver run per (instance, time limit), as the 2022 organisers ran them (docs/judge.md#profiles).

A part's input data is its instance's files alone (``models/<id>.uai`` and its ``.evid``, ``.query``,
``.test``, ``.data``) and a task.yaml whose time_limit (TIMESEC) and memory_kb (MEMKB) are the part's; the
ingestion program runs the solver on it exactly as on the whole input data. A group is one time limit
("20s"); its parts' result files together are the result submission the whole ingestion would have
written with that limit: an instance whose run failed or timed out without an answer is missing (score 0),
and only a group with no answer at all is refused, with the parts' reasons, as the whole ingestion does.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from ..errors import ReferenceDataError, SubmissionError
from ..task import JudgePart

#: The ingestion program's file saying why the participant's code failed (codabench.INGESTION_ERROR_FILE).
INGESTION_ERROR = "ingestion_error.txt"
#: Seconds a part's prediction step may take beyond its solver's time limit: the ingestion program's own
#: start, the copying of the instance, the sandbox (the solver itself is stopped at its limit).
STEP_MARGIN = 60.0
#: Bytes in a MEMKB kilobyte: the 2022 requirements page passed MEMKB 8000000 for its 8 GB.
KB = 1000


def instances(input_dir: Path) -> list[str]:
    """The ids of the input data's instances (``models/<id>.uai``), sorted."""
    models = Path(input_dir) / "models"
    names = sorted(path.name[:-4] for path in models.glob("*.uai"))
    if not names:
        raise ReferenceDataError(f"input data holds no .uai model in {models.name}/")
    return names


def part_key(instance: str, limit: float) -> str:
    return f"time_limit={limit:g},instance={instance}"


def instance_of(part: JudgePart) -> str:
    """The instance a part runs (its key's end)."""
    return part.key.partition(",instance=")[2]


def judge_parts(input_dir: Path, config: dict, profile: dict) -> list[JudgePart]:
    """One part per (instance, time limit): the profile's time_limits (default: the task.yaml's time_limit
    alone), each a group named after it ("20s"); the profile's memory (bytes) is the part's and its MEMKB,
    its cores the part's."""
    limits = [float(limit) for limit in profile.get("time_limits") or [config["time_limit"]]]
    if any(limit <= 0 for limit in limits) or len(set(limits)) != len(limits):
        raise ReferenceDataError(f"time_limits must be distinct positive seconds, got {limits}")
    memory = profile.get("memory")
    resources = {"cores": float(profile.get("cores", 1))}
    if memory is not None:
        resources["memory"] = float(memory)
    parts = []
    for limit in limits:
        part_config = {"time_limit": limit}
        if memory is not None:
            part_config["memory_kb"] = int(memory) // KB
        parts += [JudgePart(part_key(name, limit), f"{limit:g}s", dict(part_config), time_limit=limit + STEP_MARGIN,
                            **resources) for name in instances(input_dir)]
    return parts


def write_part_input(input_dir: Path, part: JudgePart, dest: Path) -> None:
    """dest: the part's instance files below models/, and input_dir's task.yaml with the part's config."""
    input_dir, dest = Path(input_dir), Path(dest)
    name = instance_of(part)
    files = [path for path in (input_dir / "models").glob(f"{name}.uai*")
             if path.name == f"{name}.uai" or path.name.startswith(f"{name}.uai.")]
    if not any(path.name == f"{name}.uai" for path in files):
        raise ReferenceDataError(f"input data has no model {name}.uai for part {part.key}")
    (dest / "models").mkdir(parents=True, exist_ok=True)
    for path in files:
        shutil.copyfile(path, dest / "models" / path.name)
    try:
        raw = yaml.safe_load((input_dir / "task.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ReferenceDataError(f"input data's task.yaml cannot be read: {exc}") from exc
    if not isinstance(raw, dict):
        raise ReferenceDataError("input data's task.yaml is not a mapping")
    (dest / "task.yaml").write_text(yaml.safe_dump({**raw, **part.config}, sort_keys=False))


def merge_part_outputs(kind: str, outputs: dict[str, Path], dest: Path) -> None:
    """dest: every part's result file (``<id>.uai.<kind>``), as the whole ingestion writes them into its
    output. SubmissionError when no part answered: the whole ingestion's message, with each failed part's
    reason (its ingestion_error.txt)."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    answered, failures, entry = 0, [], "the solver"
    for key, folder in sorted(outputs.items()):
        results = sorted(Path(folder).glob(f"*.uai.{kind}"))
        for path in results:
            shutil.copyfile(path, dest / path.name)
        answered += len(results)
        error = Path(folder) / INGESTION_ERROR
        if not results and error.is_file():
            first, _, rest = error.read_text(errors="replace").strip().partition("\n")
            entry = first.split(" wrote no result file")[0] if " wrote no result file" in first else entry
            failures.append(rest.strip() or f"{key}: {first}")
        elif not results:
            failures.append(f"{key}: no result file")
    if not answered:
        raise SubmissionError([f"{entry} wrote no result file for any of the {len(outputs)} instances"]
                              + failures[:19], total=1 + len(failures))
