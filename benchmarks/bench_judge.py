"""The final judgement (codascore.judge, docs/judge.md) on a LocalCluster of this machine.

- Units per minute with 1 and with 2 workers, and the scaling (2 workers / 1): every workload judges
  ``teams`` copies of one sample submission into a fresh folder, the cluster started and its workers'
  imports made before the clock (a cluster's workers pay them once, not per unit), the median of ROUNDS.
- The overhead of one unit: judging a single team of a trivial results submission (the cluster already
  running) against a plain ``codascore.runner.run`` of the same submission, medians of a few.
- The workers' cache of archives (docs/judge.md#workers), two ways. The archives one unit of each task
  receives (programs with the library, data, the submission) made for it, against taken from the cache
  by digest: the time saved per unit, and its share of that unit's time at 1 worker. And a whole
  judgement on 2 workers that keep the archives, against 2 that zip them for every unit
  (CODASCORE_ARCHIVE_CACHE_BYTES=0): a saving of milliseconds per unit hides in its noise.

The machine's load (1-minute average) is printed with each table: the rates mean something on a quiet one.

A workload names a task, a sample and its judge options: the finer unit kinds (SRBench fits, UAI solver
runs) come from the official2022 profile cut to fit here; the units counted are those the judge ran, parts
and score units. SRBENCH (whole pipelines) is not in the default list: one takes most of a minute here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import median_time, print_table

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
#: Judgements per workload and worker count; the rate is their median.
ROUNDS = 3
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


def warm_workers(cluster, task: str) -> None:
    """Every worker imports what a unit of the task runs, before the clock."""
    from distributed import Client

    with Client(cluster) as client:
        client.run(_import_unit_code, task)


def _import_unit_code(task: str) -> None:
    from codascore.judge import units  # noqa: F401  (what every unit runs)
    from codascore.registry import get_task

    get_task(task)


def rate_rows(tmp: Path, workloads, workers=WORKERS, rounds=ROUNDS) -> tuple[list[tuple], dict]:
    """The table's rows, and {workload's label: seconds of one unit at the first worker count}."""
    rows, unit_seconds = [], {}
    for number, load in enumerate(workloads):
        submissions = teams_folder(tmp / f"load-{number}", load.task, load.sample, load.teams)
        rates = {count: [] for count in workers}
        for round_ in range(rounds):  # the counts alternate, so a drift of the machine's load hits both
            for count in workers:
                units, seconds = judged_on(count, submissions, load, tmp / f"out-{number}-{count}-{round_}")
                rates[count].append(units / seconds * 60)
        rate = {count: statistics.median(rates[count]) for count in workers}
        unit_seconds[load.label] = 60 / rate[workers[0]]
        rows.append((load.label, units, *(f"{rate[count]:.1f}" for count in workers),
                     f"{rate[workers[-1]] / rate[workers[0]]:.2f}x"))
    return rows, unit_seconds


@contextlib.contextmanager
def archive_cache(keep: bool):
    """Within the block, this process and the workers it starts keep their archives (the default bound) or
    keep none."""
    from codascore.runner.worker import ARCHIVE_CACHE_VARIABLE

    before = os.environ.pop(ARCHIVE_CACHE_VARIABLE, None)
    if not keep:
        os.environ[ARCHIVE_CACHE_VARIABLE] = "0"
    try:
        yield
    finally:
        os.environ.pop(ARCHIVE_CACHE_VARIABLE, None)
        if before is not None:
            os.environ[ARCHIVE_CACHE_VARIABLE] = before


def judged_on(workers: int, submissions: Path, load: Workload, out: Path, cache: bool = True) -> tuple[int, float]:
    """(units, seconds) of one judgement on a new LocalCluster of this many workers, whose workers keep their
    archives or not (the environment they start with)."""
    from codascore.judge.cluster import local_cluster

    with archive_cache(cache), local_cluster(workers) as cluster:
        warm_workers(cluster, load.task)
        return judged(cluster, submissions, load.task, out, **load.options)


def archive_rows(workloads, unit_seconds: dict) -> list[tuple]:
    """Per workload: the archives one of its units receives, their size, the time to make them and to take
    them from the cache by digest, and the saving as a share of the unit's time at 1 worker."""
    from codascore.digests import folder_sha256
    from codascore.judge.fingerprint import Sources
    from codascore.runner import find_layout, known_digests
    from codascore.runner.worker import folder_archive

    rows = []
    for load in workloads:
        layout = find_layout(ROOT, load.task)
        submission = ROOT / "sample_submissions" / load.task / load.sample
        code = load.sample.startswith("code_")
        folders = [(layout.scoring_program, True), (layout.reference_data, False), (submission, False)]
        if code:
            folders += [(layout.ingestion_program, True), (layout.input_data, False)]
        folders = [(folder, program) for folder, program in folders if folder is not None]
        digests = {**Sources.of(layout).folders(layout), str(submission): folder_sha256(submission)}

        def archives() -> int:
            return sum(len(folder_archive(folder, program)) for folder, program in folders)

        size = archives()
        with archive_cache(False):
            made = median_time(archives, repeat=5)
        with archive_cache(True), known_digests(digests):
            kept = median_time(archives, repeat=5)
        saved = made - kept
        rows.append((load.label, len(folders), f"{size / 1e6:.1f} MB", f"{made * 1000:.0f} ms",
                     f"{kept * 1000:.1f} ms", f"{saved * 1000:.0f} ms",
                     f"{saved / unit_seconds[load.label] * 100:.1f} %"))
    return rows


def cache_rows(tmp: Path, load: Workload = UAI, workers: int = 2, rounds: int = ROUNDS) -> list[tuple]:
    """The workload judged with and without the workers' cache of archives (medians of rounds): seconds,
    and saved per unit."""
    submissions = teams_folder(tmp / "cache", load.task, load.sample, load.teams)
    kept, zipped = [], []
    for round_ in range(rounds):
        units, seconds = judged_on(workers, submissions, load, tmp / f"cache-kept-{round_}")
        kept.append(seconds)
        zipped.append(judged_on(workers, submissions, load, tmp / f"cache-none-{round_}", cache=False)[1])
    kept, zipped = statistics.median(kept), statistics.median(zipped)
    return [(load.label, units, f"{zipped:.2f} s", f"{kept:.2f} s", f"{(zipped - kept) / units * 1000:+.0f} ms")]


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
        overhead_rows(tmp / "warm-up", repeat=1)  # the judge's own imports, before any clock
        print(load_line())
        rows, unit_seconds = rate_rows(tmp, workloads, workers)
        print_table(rows, ("workload", "units", *(f"units/min, {n} worker{'s' * (n > 1)}" for n in workers),
                           f"scaling ({workers[-1]}/{workers[0]})"))
        print()
        print(load_line())
        print_table(archive_rows(workloads, unit_seconds),
                    ("archives of one unit", "folders", "size", "made", "kept by digest", "saved per unit",
                     "of a unit's time"))
        print()
        print(load_line())
        print_table(cache_rows(tmp), ("a judgement, 2 workers", "units", "archives made per unit",
                                      "kept by digest", "saved per unit"))
        print()
        print(load_line())
        print_table(overhead_rows(tmp), ("one unit", "judge (median)", "runner.run (median)", "overhead"))


if __name__ == "__main__":
    main(WORKLOADS + ((SRBENCH,) if "--srbench" in sys.argv else ()))
