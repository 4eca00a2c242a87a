"""Timing helpers shared by the benchmarks: medians of repeated wall-clock measurements."""

from __future__ import annotations

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
    def once():
        completed = subprocess.run(list(argv), cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if completed.returncode != check_code:
            raise RuntimeError(f"{argv} exited {completed.returncode}: {completed.stderr.decode()[-2000:]}")
    return median_time(once, repeat=repeat)


def print_table(rows: list[tuple], header: tuple) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    print("  ".join(str(h).ljust(w) for h, w in zip(header, widths)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)))
