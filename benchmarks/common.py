"""Timing helpers shared by the benchmarks: medians of repeated wall-clock measurements."""

from __future__ import annotations

import resource
import statistics
import subprocess
import time
from typing import Callable, Sequence


def median_time(func: Callable[[], object], repeat: int = 7, warmup: int = 1) -> float:
    """Median wall time of func() in seconds."""
    for _ in range(warmup):
        func()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def median_process_time(argv: Sequence[str], repeat: int = 7, cwd=None, check_code: int = 0) -> float:
    """Median wall time of a whole process, from start to exit."""
    return median_process_times(argv, repeat, cwd, check_code)[0]


def median_process_times(argv: Sequence[str], repeat: int = 7, cwd=None, check_code: int = 0) -> tuple[float, float]:
    """Median wall time and median CPU time (user and system) of a whole process, from start to exit, after
    one run that is not counted. On a busy machine the CPU time is the steadier of the two."""
    walls, cpus = [], []
    for _ in range(repeat + 1):
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        completed = subprocess.run(list(argv), cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        walls.append(time.perf_counter() - start)
        now = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(now.ru_utime + now.ru_stime - used.ru_utime - used.ru_stime)
        if completed.returncode != check_code:
            raise RuntimeError(f"{argv} exited {completed.returncode}: {completed.stderr.decode()[-2000:]}")
    return statistics.median(walls[1:]), statistics.median(cpus[1:])


def print_table(rows: list[tuple], header: tuple) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    print("  ".join(str(h).ljust(w) for h, w in zip(header, widths)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)))
