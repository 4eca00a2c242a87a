"""The UAI tasks' judging plan for ``codascore judge`` (codascore.plan.JudgePlan; docs/judge.md#plans): one
solver run per (instance, time limit), as the 2022 organisers ran them, each time limit a group scored on
its own.

A part's input data is its instance's files alone (``models/<id>.uai`` and its ``.evid``, ``.query``,
``.test``, ``.data``) and a task.yaml whose time_limit (TIMESEC) and memory_kb (MEMKB) are the part's; the
ingestion program runs the solver on it exactly as on the whole input data. A group is one time limit
(``20s``, :func:`time_limit_group`, also what the scorer writes in details.json's ``group``); its parts'
result files together are the results submission the whole ingestion would have written with that limit:
an instance whose run failed or timed out without an answer is missing (score 0), and only a group with no
answer at all is refused, with the parts' reasons, as the whole ingestion does.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from ..errors import ReferenceDataError, SubmissionError
from ..plan import Group, JudgePlan, Part, PartOutcome

#: Seconds a part's prediction step may take beyond its solver's time limit: the ingestion program's own
#: start, the copying of the instance, the sandbox (the solver itself is stopped at its limit).
STEP_MARGIN = 60.0
#: Bytes in a MEMKB kilobyte: the 2022 requirements page passed MEMKB 8000000 for its 8 GB.
KB = 1000
#: The organisers' budgets (docs/judge.md#profiles). UAI 2022: one CPU, 8 GB, three time categories (the
#: tasks page); MEMKB 8000000 (the requirements page).
PROFILES = {"official2022": {"time_limits": [20, 1200, 3600], "memory": 8_000_000_000, "cores": 1}}


def time_limit_group(seconds: float) -> str:
    """The group of a time limit, as the judge's results, details.json and the final board name it: ``20s``."""
    return f"{float(seconds):g}s"


def group_seconds(group: str) -> float | None:
    """The seconds of a time limit's group (``20s``; ``20`` read too), None for no time limit (``""``)."""
    text = str(group).strip().removesuffix("s")
    try:
        return float(text) if text else None
    except ValueError:
        raise ReferenceDataError(f"time limit {group!r}: expected seconds such as '20s'") from None


def instances(input_dir: Path) -> list[str]:
    """The ids of the input data's instances (``models/<id>.uai``), sorted."""
    models = Path(input_dir) / "models"
    names = sorted(path.name[:-4] for path in models.glob("*.uai"))
    if not names:
        raise ReferenceDataError(f"input data holds no .uai model in {models.name}/")
    return names


class UAIPlan(JudgePlan):
    """One UAI task's plan: its time limits are its groups, an instance under a time limit its part."""

    profiles = PROFILES
    budget_keys = frozenset({"time_limits"})

    def time_limits(self, config: dict, budget: dict) -> list[float]:
        """The budget's time_limits (default: the task.yaml's time_limit alone), distinct and positive."""
        limits = [float(limit) for limit in budget.get("time_limits") or [config["time_limit"]]]
        if any(limit <= 0 for limit in limits) or len(set(limits)) != len(limits):
            raise ReferenceDataError(f"time_limits must be distinct positive seconds, got {limits}")
        return limits

    def groups(self, config: dict, budget: dict) -> list[Group]:
        return [Group(time_limit_group(limit), {"time_limit": limit}) for limit in self.time_limits(config, budget)]

    def group_of(self, config: dict) -> str:
        return time_limit_group(config["time_limit"])

    def parts(self, input_dir: Path, config: dict, budget: dict) -> list[Part]:
        """One part per (instance, time limit); the budget's memory (bytes) is the part's and its MEMKB, its
        cores the part's; the part's step may take STEP_MARGIN more than its solver."""
        memory = budget.get("memory")
        resources = {"cores": float(budget.get("cores", 1))}
        if memory is not None:
            resources["memory"] = float(memory)
        parts = []
        for group in self.groups(config, budget):
            limit = group.config["time_limit"]
            part_config = {**group.config, **({"memory_kb": int(memory) // KB} if memory is not None else {})}
            parts += [Part(f"time_limit={limit:g},instance={name}", group.name, {"instance": name}, part_config,
                           time_limit=limit + STEP_MARGIN, **resources) for name in instances(input_dir)]
        return parts

    def write_part_input(self, input_dir: Path, part: Part, dest: Path) -> None:
        """dest: the part's instance files below models/, and input_dir's task.yaml with the part's config."""
        input_dir, dest = Path(input_dir), Path(dest)
        name = part.item["instance"]
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

    def merge(self, outcomes: list[PartOutcome], dest: Path, config: dict) -> None:
        """dest: every part's result file (``<id>.uai.<kind>``), as the whole ingestion writes them into its
        output (a run that failed or timed out keeps the file it left: anytime answers). SubmissionError when
        no part answered: the whole ingestion's message, then each part's reason."""
        dest = Path(dest)
        dest.mkdir(parents=True, exist_ok=True)
        answered, failures = 0, []
        for outcome in sorted(outcomes, key=lambda o: o.part.item["instance"]):
            results = sorted(Path(outcome.output).glob(f"*.uai.{self.task.kind}"))
            for path in results:
                shutil.copyfile(path, dest / path.name)
            answered += len(results)
            if not results:
                failures.append(f"{outcome.part.item['instance']}: "
                                + (outcome.reason.strip() if not outcome.done else "no result file"))
        if not answered:
            raise SubmissionError([f"the solver wrote no result file for any of the {len(outcomes)} instances"]
                                  + failures[:19], total=1 + len(failures))
