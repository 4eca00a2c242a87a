"""The judge at scale on the SLURM of tests/slurm_fixture.py (``make test-scale``; skipped otherwise):
about 2,000 real units of the cheapest kind (UAI solver runs of a solver that answers at once, a part per
instance, and a score unit per team) judged while worker processes are SIGKILLed at random. Nothing is lost
(every unit done), nothing runs twice (every attempt folder is an attempt recorded, every attempt lost ran
on a worker that was killed), and every team's results equal those of an undisturbed judgement of the same
submission. It prints the judge's own CPU time per unit and the units per minute.

The instances are the demo's, cloned under new names into a project of the test's own (input and reference
data), so that a team has hundreds of parts; every team holds the same solver, so that each equals the one
judged undisturbed. CODASCORE_SCALE_UNITS sets how many parts (default 2,000).
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import random
import resource
import shutil
import signal
import sqlite3
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from slurm_fixture import need_nodes, slurm_cluster  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.slurm,
              pytest.mark.skipif(not os.environ.get("CODASCORE_SCALE"), reason="make test-scale runs it")]
pytest.importorskip("dask_jobqueue")

from codascore.judge import judge  # noqa: E402

TASK = "uai.pr"
PARTS = int(os.environ.get("CODASCORE_SCALE_UNITS", "2000"))
TEAMS = 8
#: The solver of every team: the exact answer of the instance a clone was made from (its name before _c).
SOLVER = '''import os, re, shutil, sys
here = os.path.dirname(os.path.abspath(__file__))
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
name = re.sub(r"_c\\d+$", "", os.path.basename(args["--model"])[:-len(".uai")])
shutil.copy(os.path.join(here, "answers", name + ".uai.PR"), args["--result"])
'''
BUDGET = {"time_limits": [20], "memory": 500_000_000}
#: Seconds between two kills, at random in this range.
KILL_EVERY = (6.0, 14.0)


def cloned_project(project_data: Path, dest: Path, copies: int) -> Path:
    """A project whose uai.pr input and reference data hold each demo instance `copies` times
    (``<id>_c<k>``), with the programs of project_data."""
    dest.mkdir()
    for name in ("scoring_program", "ingestion_program"):
        (dest / name).symlink_to(project_data / name)
    for kind in ("input_data", "reference_data"):
        source, target = project_data / kind / TASK, dest / kind / TASK
        (target / "models").mkdir(parents=True)
        shutil.copy(source / "task.yaml", target / "task.yaml")
        for model in sorted((source / "models").iterdir()):
            stem, dot, suffix = model.name.partition(".")
            for copy in range(copies):
                shutil.copyfile(model, target / "models" / f"{stem}_c{copy}{dot}{suffix}")
    reference = json.loads((project_data / "reference_data" / TASK / "reference.json").read_text())
    reference["instances"] = [{**entry, "id": f"{entry['id']}_c{copy}"}
                              for entry in reference["instances"] for copy in range(copies)]
    (dest / "reference_data" / TASK / "reference.json").write_text(json.dumps(reference))
    return dest


def solver(project_data: Path, dest: Path) -> Path:
    (dest / "answers").mkdir(parents=True)
    for answer in (project_data / "sample_submissions" / TASK / "exact").iterdir():
        shutil.copy(answer, dest / "answers")
    (dest / "solver.py").write_text(SOLVER)
    return dest


def rows(out: Path) -> list[dict]:
    with sqlite3.connect(out / "judge.sqlite") as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT * FROM units")]


def stamp(iso: str) -> float:
    return datetime.datetime.fromisoformat(iso).timestamp()


def attempts(out: Path) -> list[dict]:
    with sqlite3.connect(out / "judge.sqlite") as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT * FROM attempts ORDER BY team, unit, attempt")]


def listening(pid: int) -> list[tuple[str, int]]:
    """The (IPv4 address, port) a process listens on, read from its own network namespace's table (psutil
    reads the caller's)."""
    import ipaddress

    sockets = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                sockets.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
            except OSError:  # closed meanwhile
                continue
        lines = Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split()
        if fields[3] == "0A" and f"socket:[{fields[9]}]" in sockets:  # LISTEN
            address, port = fields[1].split(":")
            found.append((str(ipaddress.IPv4Address(int(address, 16).to_bytes(4, "little"))), int(port, 16)))
    return found


class Killer:
    """SIGKILLs a worker process of the cluster's jobs at random moments while another one runs (its nanny
    starts another), and remembers the address each killed worker listened on."""

    def __init__(self, slurm):
        self.slurm, self.killed, self.stop = slurm, {}, threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def workers(self) -> dict[int, str]:
        """pid -> address of each worker process of the cluster's jobs (a nanny's child, listening on its
        node's address)."""
        import psutil

        found = {}
        for node in self.slurm.nodes:
            for pid in self.slurm.node_pids(node):
                try:
                    parent = psutil.Process(pid).parent()
                    if parent is None or "dask_worker" not in " ".join(parent.cmdline()):
                        continue
                except psutil.Error:
                    continue
                for ip, port in listening(pid):
                    if ip == self.slurm.node_address(node):
                        found[pid] = f"tcp://{ip}:{port}"
        return found

    def run(self) -> None:
        chooser = random.Random(20260101)
        while not self.stop.wait(chooser.uniform(*KILL_EVERY)):
            workers = self.workers()
            if len(workers) < 2:  # the last one spared: random deaths, not a cluster where every job dies
                continue
            pid = chooser.choice(sorted(workers))
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            self.killed[workers[pid]] = time.monotonic()


def test_two_thousand_units_with_workers_killed_at_random_lose_nothing_and_run_nothing_twice(  # noqa: F811
        slurm_cluster, project_data, tmp_path, monkeypatch, caplog):
    need_nodes(slurm_cluster)
    caplog.set_level(logging.INFO, logger="distributed.scheduler")
    copies = -(-PARTS // (TEAMS * 7))
    root = cloned_project(project_data, tmp_path / "project", copies)
    teams = tmp_path / "teams"
    for number in range(TEAMS):
        solver(project_data, teams / f"team{number}")
    shutil.copytree(teams / "team0", tmp_path / "one" / "team0")
    undisturbed = judge(tmp_path / "one", TASK, tmp_path / "undisturbed", root=root, workers=2, overrides=BUDGET)
    assert undisturbed.finished and undisturbed.counts["done"] == undisturbed.total

    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    file = tmp_path / "slurm.yaml"
    file.write_text(yaml.safe_dump({
        "system": "slurm", "cores": 1, "memory": "2GiB", "processes": 1, "maximum_jobs": 4, "walltime": "02:00:00",
        "queue": "debug", "interface": slurm_cluster.interface, "python": sys.executable, "worker_timeout": 300,
        "log_directory": str(tmp_path / "logs"), "job_script_prologue": [f"cd {tmp_path}"]}))
    killer = Killer(slurm_cluster)
    cpu_before, started = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    killer.thread.start()
    try:
        summary = judge(teams, TASK, tmp_path / "out", root=root, cluster_file=file, overrides=BUDGET, retries=5)
    finally:
        killer.stop.set()
        killer.thread.join()
    elapsed, cpu_after = time.monotonic() - started, resource.getrusage(resource.RUSAGE_SELF)
    judge_cpu = (cpu_after.ru_utime + cpu_after.ru_stime) - (cpu_before.ru_utime + cpu_before.ru_stime)

    units, tried = rows(tmp_path / "out"), attempts(tmp_path / "out")
    assert summary.finished and len(units) == summary.total == TEAMS * (7 * copies + 1)
    assert {unit["state"] for unit in units} == {"done"}, "a unit was lost"
    by_unit: dict[tuple, list] = {}
    for attempt in tried:
        by_unit.setdefault((attempt["team"], attempt["unit"]), []).append(attempt)
    assert set(by_unit) == {(unit["team"], unit["unit"]) for unit in units}
    lost = []
    for key, its in by_unit.items():
        assert [a["result"] for a in its] == ["retried"] * (len(its) - 1) + ["done"], (key, its)
        lost += its[:-1]
    assert all(attempt["worker"] in killer.killed for attempt in lost), "an attempt lost on a worker not killed"
    folders = {(path.parent.parent.name, path.name) for path in (tmp_path / "out" / "runs").glob(f"*/{TASK}/*.attempt-*")}
    assert folders == {(a["team"], f"{a['unit']}.attempt-{a['attempt']}") for a in lost}, \
        "an attempt folder no attempt accounts for: a unit ran unrecorded"

    # The adaptive scaling retires jobs by name; none while a unit waited to start: before its first attempt
    # started, or between a lost attempt's end and the next one's start. Idle jobs retired while the last
    # units run are what adaptive scaling is for. (A job whose worker is found gone twice within Dask's
    # lost-worker-timeout is replaced: more jobs than maximum_jobs is fine.)
    waits = [(float("-inf") if number == 0 else stamp(its[number - 1]["ended"]), stamp(attempt["started"]))
             for its in by_unit.values() for number, attempt in enumerate(its)]
    retired = [(record.created, record.getMessage()) for record in caplog.records
               if record.name == "distributed.scheduler" and record.getMessage().startswith("Retire worker names")]
    assert not [(at, message) for at, message in retired if any(since < at < until for since, until in waits)], \
        f"the adaptive scaling retired jobs while units waited: {retired}"
    jobs = len(list((tmp_path / "logs").glob("*.err")))  # one per job submitted (dask-jobqueue's sbatch -e)

    reference = {unit["unit"]: (unit["outcome"], unit["exit_code"], unit["scores"]) for unit in rows(tmp_path / "undisturbed")}
    for unit in units:
        assert (unit["outcome"], unit["exit_code"], unit["scores"]) == reference[unit["unit"]], unit

    print(f"\nscale: {len(units)} units ({TEAMS} teams x {7 * copies} parts + 1 score unit each) in {elapsed:.0f} s "
          f"({len(units) / elapsed * 60:.0f} units/min), {len(killer.killed)} workers SIGKILLed, {len(lost)} attempts "
          f"lost and retried, {jobs} jobs; the judge's own CPU: {judge_cpu:.0f} s, {judge_cpu / len(units) * 1000:.0f} ms per unit; "
          f"load {os.getloadavg()[0]:.1f}")
