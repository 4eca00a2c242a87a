"""Budget profiles of ``codascore judge --profile NAME``: per task, the organisers' own budgets of the final
judgement. Every number's source is listed in docs/judge.md#profiles; any value can be overridden.
"""

PROFILES = {
    "official2022": {
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
