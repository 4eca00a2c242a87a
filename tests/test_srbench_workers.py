"""The worker pool: results in order, errors reported per job, hard time limit, dead workers replaced."""

from __future__ import annotations

import io
import os
import time

import pytest

from codascore.srbench.workers import run_jobs
from codascore.progress import Counter, Display


def _job(kind: str, value: int):
    if kind == "ok":
        return value * 2
    if kind == "raise":
        raise ValueError(f"bad value {value}")
    if kind == "sleep":
        time.sleep(value)
        return value
    if kind == "die":
        os._exit(3)
    if kind == "object":
        return object()  # not plain data: the parent never unpickles a worker's reply


def test_results_errors_timeouts_and_deaths_each_stay_with_their_job():
    stream = io.StringIO()
    jobs = [("ok", 1), ("raise", 2), ("sleep", 60), ("die", 0), ("ok", 5), ("ok", 6)]
    outcomes = run_jobs(_job, jobs, time_limit=2, n_workers=2, progress=Counter("test", len(jobs), Display(stream)))
    assert [o.status for o in outcomes] == ["ok", "error", "timeout", "error", "ok", "ok"]
    assert outcomes[0].value == 2 and outcomes[5].value == 12
    assert "bad value 2" in outcomes[1].message
    assert "time limit of 2 s" in outcomes[2].message
    assert "died" in outcomes[3].message
    assert stream.getvalue().strip().endswith("progress: test 6/6 (3 failed)")


def test_time_limit_must_be_positive():
    with pytest.raises(ValueError, match="time_limit"):
        run_jobs(_job, [("ok", 1)], time_limit=0)


def test_no_jobs_no_workers():
    assert run_jobs(_job, [], time_limit=1) == []


def test_replies_must_be_plain_data():
    [outcome] = run_jobs(_job, [("object", 0)], time_limit=10)
    assert outcome.status == "error" and "not plain data" in outcome.message
