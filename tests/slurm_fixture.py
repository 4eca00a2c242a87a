"""A one-node SLURM cluster on this machine, for the tests that run work through a batch scheduler.

``slurm_cluster`` (session scope) writes a minimal slurm.conf into a temporary folder, starts munged with a
key, socket, pid and log file of its own, then ``slurmctld -D`` and ``slurmd -D`` on two free ports (so it
never clashes with a system SLURM nor with a second pytest worker), waits until ``sinfo`` shows the node
idle, and yields a :class:`SlurmCluster`. Teardown cancels every job, stops the daemons and checks that no
process of this cluster is left. Debian's ``slurm-wlm`` and ``munge`` give the daemons; CI installs them
(.ci/run), so there a missing daemon fails the tests, and elsewhere they are skipped with the reason.
The choices are explained in docs/judge_cluster.md#the-tests-one-node-slurm.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sinfo", "squeue", "sbatch", "scancel")
#: Seconds for the node to come up idle, and for the daemons to stop, before the fixture gives up.
START_TIMEOUT = 60
STOP_TIMEOUT = 20


@dataclass
class SlurmCluster:
    """A running one-node cluster: its folder, slurm.conf, and the environment its commands need."""

    root: Path
    conf: Path
    env: dict[str, str]
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    #: How long the start took, node idle included (seconds).
    start_seconds: float = 0.0

    def run(self, *args: str, timeout: float = 30, check: bool = True) -> str:
        """Run a SLURM client command (sinfo, sbatch, ...) against this cluster; its stdout."""
        done = subprocess.run(args, env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
        return done.stdout

    def job_ids(self) -> list[str]:
        """The jobs squeue lists (pending, running or completing)."""
        return self.run("squeue", "-h", "-o", "%i").split()

    def logs(self) -> str:
        """Every daemon's log file, for an error message."""
        parts = []
        for path in sorted((self.root / "log").glob("*")):
            text = path.read_text(errors="replace")[-4000:]
            parts.append(f"--- {path.name}\n{text}")
        return "\n".join(parts)


def missing_programs() -> list[str]:
    return [name for name in DAEMONS + CLIENTS if shutil.which(name) is None and not Path("/usr/sbin", name).exists()]


def program(name: str) -> str:
    """The path of a daemon (Debian puts them in /usr/sbin, which a user's PATH may lack)."""
    return shutil.which(name) or str(Path("/usr/sbin", name))


def free_ports(count: int) -> list[int]:
    """Ports on the loopback that nothing listens on now (held together, so they differ)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def machine_node() -> dict[str, str]:
    """The node's hardware as slurmd reads it (``slurmd -C``): CPUs, sockets, cores, threads, RealMemory (MiB).

    Declaring exactly what slurmd finds keeps the node from being drained for a mismatch."""
    out = subprocess.run([program("slurmd"), "-C"], capture_output=True, text=True, timeout=30, check=True).stdout
    fields = dict(re.findall(r"(\w+)=(\S+)", out.splitlines()[0]))
    keys = ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore", "RealMemory")
    return {key: fields[key] for key in keys if key in fields}


def slurm_conf(root: Path, ctld_port: int, slurmd_port: int, node: dict[str, str], munge_socket: Path) -> str:
    """A minimal slurm.conf: one node ``localhost``, one default partition ``debug``, no accounting."""
    hardware = " ".join(f"{key}={value}" for key, value in node.items())
    lines = [
        "ClusterName=codascore-test",
        "SlurmctldHost=localhost",
        f"SlurmctldPort={ctld_port}",
        f"SlurmdPort={slurmd_port}",
        "SlurmUser=root",
        "SlurmdUser=root",
        # munge with a socket of its own: auth/none still exists in 22.05 but is gone from later releases.
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={munge_socket}",
        "MpiDefault=none",
        # No cgroups: linuxproc follows a job's processes through their parents; it needs no cgroup.conf.
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        # A job that asks no memory gets this much per CPU, not the whole node (which would run one job at once).
        "DefMemPerCPU=512",
        "ReturnToService=2",
        "MinJobAge=10",
        "KillWait=5",
        "InactiveLimit=0",
        "MailProg=/bin/true",
        f"StateSaveLocation={root / 'state'}",
        f"SlurmdSpoolDir={root / 'spool'}",
        f"SlurmctldPidFile={root / 'run' / 'slurmctld.pid'}",
        f"SlurmdPidFile={root / 'run' / 'slurmd.pid'}",
        f"SlurmctldLogFile={root / 'log' / 'slurmctld.log'}",
        f"SlurmdLogFile={root / 'log' / 'slurmd.log'}",
        "SlurmctldDebug=info",
        "SlurmdDebug=info",
        f"NodeName=localhost NodeAddr=127.0.0.1 {hardware} State=UNKNOWN",
        "PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP",
    ]
    return "\n".join(lines) + "\n"


def start_munged(root: Path) -> tuple[subprocess.Popen, Path]:
    """munged in the foreground with a fresh key, and its socket, pid, seed and log file under ``root``."""
    munge = root / "munge"
    munge.mkdir(mode=0o755)  # munged wants the socket's folder searchable by all
    key = munge / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    sock = munge / "munge.socket"
    args = [
        program("munged"), "--foreground", "--force",
        f"--socket={sock}", f"--key-file={key}", f"--pid-file={munge / 'munged.pid'}",
        f"--seed-file={munge / 'munged.seed'}", f"--log-file={root / 'log' / 'munged.log'}",
    ]
    return daemon(args, root / "log" / "munged.out"), sock


def die_with_parent() -> None:
    """In the child before exec: SIGTERM when pytest dies, so a killed test run leaves no daemon behind."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def daemon(args: list[str], output: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    with output.open("wb") as out:
        return subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                                preexec_fn=die_with_parent)


def wait_for(condition, timeout: float, what: str, cluster: SlurmCluster) -> None:
    """Poll ``condition`` until true; past ``timeout`` fail with the daemons' logs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for name, process in cluster.processes.items():
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited {process.returncode} while waiting for {what}\n{cluster.logs()}")
        if condition():
            return
        time.sleep(0.25)
    raise RuntimeError(f"SLURM: no {what} after {timeout} s\n{cluster.logs()}")


def node_state(cluster: SlurmCluster) -> str:
    try:
        return cluster.run("sinfo", "-h", "-N", "-o", "%t", timeout=10).strip()
    except (RuntimeError, subprocess.TimeoutExpired):
        return ""


def start(root: Path) -> SlurmCluster:
    """Configure and start munged, slurmctld and slurmd under ``root``; return once the node is idle."""
    for name in ("log", "run", "state", "spool"):
        (root / name).mkdir(parents=True)
    conf = root / "slurm.conf"
    env = dict(os.environ, SLURM_CONF=str(conf))
    cluster = SlurmCluster(root=root, conf=conf, env=env)
    munged, munge_socket = start_munged(root)
    cluster.processes["munged"] = munged
    try:
        wait_for(munge_socket.exists, START_TIMEOUT, "munge socket", cluster)
        ctld_port, slurmd_port = free_ports(2)
        conf.write_text(slurm_conf(root, ctld_port, slurmd_port, machine_node(), munge_socket))
        cluster.processes["slurmctld"] = daemon(
            [program("slurmctld"), "-D", "-f", str(conf)], root / "log" / "slurmctld.out", env)
        cluster.processes["slurmd"] = daemon(
            [program("slurmd"), "-D", "-N", "localhost", "-f", str(conf)], root / "log" / "slurmd.out", env)
        wait_for(lambda: node_state(cluster) == "idle", START_TIMEOUT, "idle node in sinfo", cluster)
    except BaseException:
        stop(cluster)
        raise
    return cluster


def processes_of(conf: Path) -> list[int]:
    """Processes whose environment names this cluster's slurm.conf: the daemons, job steps and jobs."""
    marker = f"SLURM_CONF={conf}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            pass
    return found


def stop(cluster: SlurmCluster) -> list[str]:
    """Cancel every job, stop the daemons (slurmd, slurmctld, munged), and kill what remains; the problems."""
    problems = []
    if all(cluster.processes.get(name) and cluster.processes[name].poll() is None for name in DAEMONS):
        try:
            jobs = cluster.job_ids()
            if jobs:
                cluster.run("scancel", *jobs)
            deadline = time.monotonic() + STOP_TIMEOUT
            while cluster.job_ids() and time.monotonic() < deadline:
                time.sleep(0.25)
            if cluster.job_ids():
                problems.append(f"jobs still queued after scancel: {cluster.job_ids()}")
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            problems.append(f"could not cancel the jobs: {error}")
    for name in ("slurmd", "slurmctld", "munged"):
        process = cluster.processes.get(name)
        if process is None or process.poll() is not None:
            continue
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            problems.append(f"{name} ignored SIGTERM for {STOP_TIMEOUT} s")
    # slurmctld's slurmscriptd and a job's last processes may outlive the daemons by a moment.
    deadline = time.monotonic() + STOP_TIMEOUT
    while processes_of(cluster.conf) and time.monotonic() < deadline:
        time.sleep(0.25)
    left = {pid: command_line(pid) for pid in processes_of(cluster.conf)}
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if left:
        problems.append(f"processes of the cluster left running {STOP_TIMEOUT} s after its daemons (killed): {left}")
    return problems


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """A one-node SLURM cluster (see the module docstring); skipped where the daemons are missing, but CI."""
    missing = missing_programs()
    if missing:
        message = f"SLURM is not installed ({', '.join(missing)} missing; apt-get install slurm-wlm munge)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{message}: CI must run the SLURM tests")
        pytest.skip(f"{message}: the SLURM tests did not run")
    started = time.monotonic()
    cluster = start(tmp_path_factory.mktemp("slurm"))
    cluster.start_seconds = time.monotonic() - started
    yield cluster
    problems = stop(cluster)
    assert not problems, "SLURM teardown: " + "; ".join(problems)
