"""The budget profiles of ``codascore judge --profile NAME``: per task, the organisers' own budgets of the
official judging, each number with its source in docs/judge.md#profiles. A task's entry is handed to
Task.judge_parts and gives the units' resources and time limits; ``--set KEY=VALUE`` overrides any of it.

Keys: time_limits (seconds, one group of parts each), memory (bytes a unit asks of a worker), cores.
"""

from __future__ import annotations

#: UAI 2022: one CPU, 8 GB, three time categories (the tasks page); MEMKB 8000000 (the requirements page).
_UAI_2022 = {"time_limits": [20, 1200, 3600], "memory": 8_000_000_000, "cores": 1}

PROFILES: dict[str, dict[str, dict]] = {
    "official2022": {
        # UAI 2022 (docs/judge.md#profiles)
        "uai.pr": dict(_UAI_2022),
        "uai.mar": dict(_UAI_2022),
        "uai.mpe": dict(_UAI_2022),
        "uai.mmap": dict(_UAI_2022),
        "uai.mlc": dict(_UAI_2022),
        # SRBench 2022 (docs/judge.md#profiles)
        "srbench.synthetic": {"seeds": 10, "fit_time_limit_small": 3600, "fit_time_limit_large": 36000,
                              "large_above_rows": 1000, "walltime": 3900, "memory": 16 * 1024**3, "cores": 8,
                              "accuracy_source": "predictions"},
        "srbench.realworld": {"seeds": 10, "fit_time_limit_small": 3600, "fit_time_limit_large": 36000,
                              "large_above_rows": 1000, "memory": 16 * 1024**3, "cores": 8,
                              "accuracy_source": "predictions"},
        "srbench.qualification": {"seeds": 5, "fit_time_limit_small": 3600, "fit_time_limit_large": 36000,
                                  "large_above_rows": 1000, "memory": 16 * 1024**3, "cores": 4,
                                  "accuracy_source": "predictions"},
    },
}
