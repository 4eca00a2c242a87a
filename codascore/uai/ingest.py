"""Ingestion of code submissions: run the participant's solver once per instance under the time limit.

The submission holds ``solver.py`` (run with the interpreter running the ingestion) or ``run.sh`` (run
with ``bash``; unzipped files carry no execute bit, so a 2022 Docker image's entry script runs as it is).
Each call gets

    --task TASK --model M.uai --evid M.uai.evid [--query M.uai.query] [--test M.uai.test] --result R

and the 2022 requirements page's environment variables: the same paths in MODEL, EVID, QUERY, TEST and
RESULT, the limits in TIMESEC (task.yaml ``time_limit``) and MEMKB (task.yaml ``memory_kb``), and TASK
(docs/uai.md#code-submissions-and-the-2022-solver-environment).
The result files are written straight into the output folder with the names of a result submission,
so the scorer cannot tell the two apart. An instance whose run fails or times out simply has no
result file (score 0, as in 2022); only a submission that answers no instance at all is rejected.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from ..errors import ReferenceDataError, SubmissionError, TimeLimitExceeded
from ..sandbox import find_entry, run_command
from ..progress import counted
from ..task import log
from ..validate import shown

ENTRY_POINTS = ("solver.py", "run.sh")


def solver_limits(config: dict) -> dict[str, str]:
    """TIMESEC and MEMKB as the 2022 requirements page passes them, from task.yaml; a memory_kb that is not
    a positive whole number is the organiser's error."""
    memory_kb = config["memory_kb"]
    if isinstance(memory_kb, bool) or not isinstance(memory_kb, (int, float)) or memory_kb != int(memory_kb) \
            or memory_kb <= 0:
        raise ReferenceDataError(f"task.yaml: memory_kb must be a positive whole number of KB, got {shown(memory_kb)}")
    return {"TIMESEC": f"{float(config['time_limit']):g}", "MEMKB": str(int(memory_kb))}


def run_solver_submission(task, input_dir: Path, output_dir: Path, submission_dir: Path, config: dict) -> None:
    entry, warnings = find_entry(submission_dir, ENTRY_POINTS)
    if entry is None:
        return  # a result submission: the worker copies its files into the output itself
    for warning in warnings:
        log(f"WARNING: {warning}")
    models = input_dir / "models"
    instances = sorted(p.name[:-4] for p in models.glob("*.uai"))
    if not instances:
        raise SubmissionError(f"input data holds no .uai model in {models.name}/")
    timeout = float(config["time_limit"])
    limits = solver_limits(config)
    output_dir.mkdir(parents=True, exist_ok=True)
    failures: list[str] = []
    for name in counted(instances, "instances solved"):
        result = output_dir / f"{name}.uai.{task.kind}"
        files = {"--model": models / f"{name}.uai", "--evid": models / f"{name}.uai.evid",
                 "--query": models / f"{name}.uai.query", "--test": models / f"{name}.uai.test"}
        argv = [sys.executable if entry.suffix == ".py" else "bash", entry.name, "--task", task.kind]
        env = dict(os.environ, TASK=task.kind, RESULT=str(result.resolve()), **limits)
        for flag, path in files.items():
            if path.exists():
                argv += [flag, str(path.resolve())]
                env[flag[2:].upper()] = str(path.resolve())
        argv += ["--result", str(result.resolve())]
        with tempfile.TemporaryFile() as output:
            try:
                code = run_command(argv, cwd=entry.parent, timeout=timeout, env=env, stdout=output, stderr=output)
            except TimeLimitExceeded:
                failures.append(f"{name}: stopped at the time limit of {timeout:g} s")
                print(f"ingestion: {name}: time limit {timeout:g} s reached; its result file, if any, "
                      "is kept (anytime answers)", file=sys.stderr)
                continue
            output.seek(0)
            tail = output.read()[-4000:].decode("utf-8", "replace")
        if code:  # the participant's program exited non-zero
            failures.append(f"{name}: {entry.name} exited with code {code}:\n{tail}")
            print(f"ingestion: {name}: exit code {code}\n{tail}", file=sys.stderr)
        else:
            print(f"ingestion: {name}: done", file=sys.stderr)
    if failures:
        failed = ", ".join(failure.split(":", 1)[0] for failure in failures[:10])
        log(f"WARNING: the solver failed on {len(failures)} of {len(instances)} instances ({failed}"
            f"{', ...' if len(failures) > 10 else ''}): a result file it left is scored, a missing one scores 0")
    if not any(output_dir.glob(f"*.uai.{task.kind}")):
        raise SubmissionError([f"{entry.name} wrote no result file for any of the {len(instances)} instances"]
                              + failures[:19], total=1 + len(failures))
