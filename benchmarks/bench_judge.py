"""The final judgement (codascore.judge, docs/judge.md) on a LocalCluster of this machine.

- Units per minute with 1 and with 2 workers, and the scaling (2 workers / 1): every workload judges
  ``teams`` copies of one sample submission into a fresh folder, the cluster started before the clock.
- The overhead of one unit: judging a single team of a trivial results submission (the cluster already
  running) against a plain ``codascore.runner.run`` of the same submission, medians of a few.
- The workers' cache of archives (docs/judge.md#workers): the UAI solver runs judged on 2 workers that keep
  the programs, the data and the submissions zipped once, and on 2 that zip them for every unit
  (CODASCORE_ARCHIVE_CACHE_BYTES=0), and the time it saves per unit.

The machine's load (1-minute average) is printed with each table: the rates mean something on a quiet one.

A workload names a task, a sample and its judge options: the finer unit kinds (SRBench fits, UAI solver
runs) come from the official2022 profile cut to fit here; the units counted are those the judge ran, parts
and score units. SRBENCH (whole pipelines) is not in the default list: one takes most of a minute here.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import print_table

from codascore import competition, runner

ROOT = competition.project_root()


@dataclasses.dataclass(frozen=True)
class Workload:
    """teams copies of the task's sample judged as one judgement; options go to judge() as they are."""

    label: str
    task: str
    sample: str
    teams: int
    options: dict = dataclasses.field(default_factory=dict)


UAI = Workload("uai.pr pipeline units (exact)", "uai.pr", "exact", 8)
#: UAI solver runs: the official2022 profile's parts (one per instance and time limit), cut to one 5 s limit.
UAI_SOLVER_RUNS = Workload("uai.pr solver runs (code_loopy_bp, 1 limit)", "uai.pr", "code_loopy_bp", 2,
                           {"profile": "official2022", "overrides": {"time_limits": [5], "memory": 2_000_000_000}})
#: SRBench fits: the official2022 profile's parts (one per dataset and seed), cut to one seed and seconds.
SRBENCH_FITS = Workload("srbench fits (code_linear_regression, 1 seed)", "srbench.qualification",
                        "code_linear_regression", 2,
                        {"profile": "official2022",
                         "overrides": {"seeds": 1, "fit_time_limit_small": 5, "fit_time_limit_large": 10,
                                       "memory": 2 * 1024**3, "cores": 1}})
SRBENCH = Workload("srbench pipeline units (code_linear_regression)", "srbench.qualification",
                   "code_linear_regression", 4)
WORKLOADS = (UAI, UAI_SOLVER_RUNS, SRBENCH_FITS)
WORKERS = (1, 2)
#: The empty unit of the overhead row: a results submission that scores at once.
EMPTY = ("uai.pr", "trivial")


def teams_folder(folder: Path, task: str, sample: str, teams: int) -> Path:
    for i in range(teams):
        shutil.copytree(ROOT / "sample_submissions" / task / sample, folder / f"team-{i:02d}")
    return folder


def judged(cluster, submissions: Path, task: str, out: Path, **options) -> tuple[int, float]:
    """(units run, seconds) of one judgement on a running cluster; every unit must finish."""
    from codascore.judge import judge

    started = time.perf_counter()
    summary = judge(submissions, task, out, root=ROOT, scheduler=cluster.scheduler_address, **options)
    elapsed = time.perf_counter() - started
    if not summary.finished or summary.counts["done"] != summary.total:
        raise RuntimeError(f"{task}: not every unit done: {summary.counts}")
    return summary.ran, elapsed


def rate_rows(tmp: Path, workloads, workers=WORKERS) -> list[tuple]:
    rows = []
    for number, load in enumerate(workloads):
        submissions = teams_folder(tmp / f"load-{number}", load.task, load.sample, load.teams)
        rates = {}
        for count in workers:
            units, seconds = judged_on(count, submissions, load, tmp / f"out-{number}-{count}")
            rates[count] = units / seconds * 60
        scaling = rates[workers[-1]] / rates[workers[0]]
        rows.append((load.label, units, *(f"{rates[count]:.1f}" for count in workers), f"{scaling:.2f}x"))
    return rows


def judged_on(workers: int, submissions: Path, load: Workload, out: Path, cache: bool = True) -> tuple[int, float]:
    """(units, seconds) of one judgement on a new LocalCluster of this many workers, whose workers keep their
    archives or not (the environment they start with)."""
    from codascore.judge.cluster import local_cluster
    from codascore.runner.worker import ARCHIVE_CACHE_VARIABLE

    before = os.environ.get(ARCHIVE_CACHE_VARIABLE)
    if not cache:
        os.environ[ARCHIVE_CACHE_VARIABLE] = "0"
    try:
        with local_cluster(workers) as cluster:
            return judged(cluster, submissions, load.task, out, **load.options)
    finally:
        if before is None:
            os.environ.pop(ARCHIVE_CACHE_VARIABLE, None)
        else:
            os.environ[ARCHIVE_CACHE_VARIABLE] = before


def cache_rows(tmp: Path, load: Workload = UAI_SOLVER_RUNS, workers: int = 2) -> list[tuple]:
    """The workload judged with and without the workers' cache of archives: seconds, and saved per unit."""
    submissions = teams_folder(tmp / "cache", load.task, load.sample, load.teams)
    units, kept = judged_on(workers, submissions, load, tmp / "cache-kept")
    _, zipped = judged_on(workers, submissions, load, tmp / "cache-none", cache=False)
    return [(load.label, units, f"{zipped:.1f} s", f"{kept:.1f} s", f"{(zipped - kept) / units * 1000:+.0f} ms")]


def load_line() -> str:
    return f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"


def overhead_rows(tmp: Path, repeat: int = 3) -> list[tuple]:
    from codascore.judge.cluster import local_cluster

    task, sample = EMPTY
    submissions = teams_folder(tmp / "empty", task, sample, 1)
    with local_cluster(1) as cluster:
        judge_times = [judged(cluster, submissions, task, tmp / f"empty-out-{i}")[1] for i in range(repeat)]
    run_times = []
    for i in range(repeat):
        started = time.perf_counter()
        result = runner.run(task, ROOT / "sample_submissions" / task / sample, tmp / f"empty-run-{i}", root=ROOT)
        run_times.append(time.perf_counter() - started)
        if not result.scored:
            raise RuntimeError(f"{task}/{sample}: {result.error}")
    judged_median, run_median = statistics.median(judge_times), statistics.median(run_times)
    return [(f"{task} {sample}, 1 team", f"{judged_median:.2f} s", f"{run_median:.2f} s",
             f"{judged_median - run_median:+.2f} s")]


def main(workloads=WORKLOADS, workers=WORKERS) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        print(load_line())
        print_table(rate_rows(tmp, workloads, workers),
                    ("workload", "units", *(f"units/min, {n} worker{'s' * (n > 1)}" for n in workers),
                     f"scaling ({workers[-1]}/{workers[0]})"))
        print()
        print(load_line())
        print_table(cache_rows(tmp), ("workers' cache of archives", "units", "zipped per unit", "kept by digest",
                                      "saved per unit"))
        print()
        print(load_line())
        print_table(overhead_rows(tmp), ("one unit", "judge (median)", "runner.run (median)", "overhead"))


if __name__ == "__main__":
    main(WORKLOADS + ((SRBENCH,) if "--srbench" in sys.argv else ()))
