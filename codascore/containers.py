"""The container a runner step runs in: bubblewrap, Docker, or none (docs/codabench.md#isolating-a-step).

Codabench's worker runs each program in a container of the competition's image that mounts only the step's
folders at ``/app/...`` (docs/codabench.md#the-compute-worker). Here a step's programs run

- in a bubblewrap sandbox (``bwrap``): new user, PID, IPC, UTS and cgroup namespaces, the network of the
  worker's default (shared), the step's folders at their real ``/app/...`` paths, the Python runtime and the
  system's ``/usr`` read-only, a fresh ``/tmp`` and home, a minimal environment; when the sandbox's first
  process ends the kernel kills every process left in its PID namespace;
- or in the real image with ``docker run`` (same mounts, working folder and environment as the worker), or
  ``podman run``, as the worker runs it with CONTAINER_ENGINE_EXECUTABLE=podman;
- or, with neither, as plain processes in their own session, under a guard that kills every process of the
  step when it ends (the runner then warns on every run).

:class:`Container` says which, and :meth:`Container.start` starts one program of a step; the runner waits
for all of a step's programs under one time limit (:func:`wait_all`).

No program outlives the process that started it (a judge's worker SIGKILLed, a node gone): bubblewrap's
``--die-with-parent`` kills its sandbox, and a plain process or a ``docker run`` starts under a small guard
(:data:`GUARD`) that the kernel signals when its parent dies (``PR_SET_PDEATHSIG``), and that then kills the
program's whole process group (and removes the docker container). :func:`stop_all` stops every program
this process still runs (what a judge's worker does when it closes).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from .errors import RunnerError

#: The environment of the step besides the image's own (compute_worker.py's create_container).
WORKER_ENVIRONMENT = {"PYTHONUNBUFFERED": "1", "http_proxy": "", "https_proxy": ""}
#: What bubblewrap gives the step of the image's environment: a search path, a home, a locale.
SANDBOX_HOME = "/root"
SANDBOX_PATH = "/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"
#: The system folders a step sees read-only (what an image's file system would hold); links are kept.
SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: The files of /etc a dynamic linker, a resolver and TLS read; the rest of the host's /etc stays hidden.
ETC_ENTRIES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "nsswitch.conf",
               "hosts", "resolv.conf", "ssl", "ca-certificates", "ca-certificates.conf", "passwd", "group",
               "mime.types")
#: The guard a plain process or a docker client runs under (``python -I -S -c GUARD PARENT [CLEANUP...] --
#: COMMAND...``). It asks the kernel for SIGTERM when its parent dies and leaves at once when the parent is
#: already gone; it becomes the subreaper of what COMMAND starts (a process whose parent dies is given to the
#: guard, not to init), so that every process of the step stays its descendant, whatever session or group it
#: makes. It passes COMMAND's exit status on, once it has killed what COMMAND left behind (as a container's
#: end does). On SIGTERM (the parent died, or the runner stops the step) it runs CLEANUP (docker rm -f), kills
#: every descendant and leaves.
GUARD = """
import ctypes, os, signal, subprocess, sys
signal.signal(signal.SIGTERM, signal.SIG_IGN)
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(1, signal.SIGTERM)
libc.prctl(36, 1)
parent, rest = int(sys.argv[1]), sys.argv[2:]
split = rest.index("--")
cleanup, command = rest[:split], rest[split + 1:]
def descendants():
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as handle:
                    stat = handle.read()
                children.setdefault(int(stat[stat.rindex(b")") + 2:].split()[1]), []).append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    found, todo = [], [os.getpid()]
    while todo:
        for pid in children.get(todo.pop(), []):
            found.append(pid)
            todo.append(pid)
    return found
def kill_all():
    for _ in range(100):
        pids = descendants()
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break
def stop(*_):
    if cleanup:
        subprocess.run(cleanup, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    kill_all()
    os.kill(os.getpid(), signal.SIGKILL)
signal.signal(signal.SIGTERM, stop)
if os.getppid() != parent:
    stop()
child = os.fork()
if child == 0:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        os.execvp(command[0], command)
    except OSError as error:
        print(f"{command[0]}: {error.strerror}", file=sys.stderr)
        os._exit(127)
status = os.waitpid(child, 0)[1]
signal.signal(signal.SIGTERM, signal.SIG_IGN)
kill_all()
signal.signal(signal.SIGTERM, signal.SIG_DFL)
if os.WIFSIGNALED(status):
    if os.WTERMSIG(status) not in (signal.SIGKILL, signal.SIGSTOP):
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
    os.kill(os.getpid(), os.WTERMSIG(status))
os._exit(os.waitstatus_to_exitcode(status))
"""
#: The programs this process runs now (Popen -> (container, name)), for stop_all.
RUNNING: dict[subprocess.Popen, tuple["Container", str]] = {}

UNISOLATED_WARNING = ("warning: the steps are NOT isolated (no bubblewrap sandbox, no --docker): the "
                      "submission's code can read the reference data and the project, and write outside its "
                      "output. Install bubblewrap (apt-get install bubblewrap) or "
                      "pass --docker IMAGE.")


@dataclasses.dataclass(frozen=True)
class Mount:
    """A host folder at a container path, read-write unless read_only."""

    host: Path
    container: str
    read_only: bool = False


@dataclasses.dataclass(frozen=True)
class Container:
    """How a step's programs run: kind is "bwrap", "docker" or "none"; python stands in for the image's
    interpreter (bwrap and none); network follows the worker's default (on) unless turned off; engine is the
    command that runs a "docker" container (docker, or podman)."""

    kind: str
    python: str = sys.executable
    image: str | None = None
    network: bool = True
    engine: str = "docker"

    @property
    def isolated(self) -> bool:
        return self.kind != "none"

    def argv(self, command: list[str], mounts: list[Mount], name: str) -> list[str]:
        """The host command that runs command (already shlex-split) in this container."""
        if self.kind == "bwrap":
            return bwrap_argv(command, mounts, self.python, self.network)
        if self.kind == "docker":
            return docker_argv(command, mounts, self.image, self.network, name, self.engine)
        return unisolated_argv(command, mounts, self.python)

    def environment(self) -> dict[str, str] | None:
        """The environment of the host command: bubblewrap and docker set the step's themselves."""
        if self.kind == "none":
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            env.update(WORKER_ENVIRONMENT, PYTHONDONTWRITEBYTECODE="1")
            return env
        return {"PATH": os.environ.get("PATH", SANDBOX_PATH)}

    def start(self, command: list[str], mounts: list[Mount], name: str, stdout, stderr) -> subprocess.Popen:
        """Start one program of a step, in its own session (so that the runner can kill what it started),
        dying with this process (bubblewrap's --die-with-parent, or the GUARD)."""
        cwd = next((m.host for m in mounts if m.container == "/app/program"), None)
        argv = self.argv(command, mounts, name)
        if self.kind != "bwrap":
            cleanup = [self.engine, "rm", "-f", name] if self.kind == "docker" else []
            argv = [sys.executable, "-I", "-S", "-c", GUARD, str(os.getpid()), *cleanup, "--", *argv]
        proc = subprocess.Popen(argv, cwd=cwd, env=self.environment(), stdout=stdout, stderr=stderr,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        RUNNING[proc] = (self, name)
        return proc

    def stop(self, proc: subprocess.Popen, name: str) -> None:
        """Kill a program and everything it started (the sandbox's PID namespace; the guard's descendants and
        the docker container; its session)."""
        if self.kind != "bwrap":
            try:
                proc.send_signal(signal.SIGTERM)  # the guard kills its descendants, then itself
                proc.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.kind == "docker":
            subprocess.run([self.engine, "rm", "-f", name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           check=False)
        proc.wait()
        RUNNING.pop(proc, None)


def ended(proc: subprocess.Popen) -> None:
    """A program has ended: no longer one stop_all stops."""
    RUNNING.pop(proc, None)


def stop_all() -> int:
    """Stop every program this process still runs (a judge's worker closing); how many there were."""
    running = list(RUNNING.items())
    for proc, (container, name) in running:
        container.stop(proc, name)
    return len(running)


def choose(docker_image: str | None = None, sandbox: bool = True, python: str | None = None,
           network: bool = True) -> Container:
    """The container of every step: docker_image with Docker; else bubblewrap when sandbox and it works
    here; else none. RunnerError when docker_image is given and Docker cannot run."""
    python = python or sys.executable
    if docker_image:
        if not shutil.which("docker"):
            raise RunnerError("--docker: no docker command on this machine (Debian: apt-get install docker.io)")
        probe = subprocess.run(["docker", "image", "inspect", docker_image], capture_output=True, text=True)
        if probe.returncode:
            reason = (probe.stderr.strip().splitlines() or ["docker failed"])[-1]
            raise RunnerError(f"--docker {docker_image}: {reason}")
        return Container("docker", python=python, image=docker_image, network=network)
    if sandbox and bubblewrap_works():
        return Container("bwrap", python=python, network=network)
    return Container("none", python=python, network=network)


@functools.lru_cache(maxsize=1)
def bubblewrap_works() -> bool:
    """Whether bwrap is installed and can create the namespaces a step needs (a container or a kernel may
    forbid user namespaces: then the runner falls back, with its warning)."""
    if not shutil.which("bwrap"):
        return False
    probe = bwrap_argv(["/bin/true"], [], sys.executable, network=True)
    try:
        return not subprocess.run(probe, capture_output=True, timeout=30).returncode
    except (OSError, subprocess.SubprocessError):
        return False


@functools.lru_cache(maxsize=8)
def runtime_folders(python: str) -> tuple[str, ...]:
    """The folders the interpreter needs (its environment and its base installation), and the interpreter
    itself when it lies elsewhere (a wrapper script): each is bound read-only at its own path."""
    # Compared unresolved: two virtual environments of one base Python resolve to the same binary, yet
    # each has its own prefix (its site-packages).
    if os.path.abspath(python) == os.path.abspath(sys.executable):
        prefixes = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    else:
        script = "import json, sys; print(json.dumps([sys.prefix, sys.base_prefix, sys.exec_prefix, " \
                 "sys.base_exec_prefix]))"
        found = subprocess.run([python, "-I", "-c", script], capture_output=True, text=True, timeout=60)
        if found.returncode:
            raise RunnerError(f"python interpreter {python!r} does not run: {found.stderr.strip()[-200:]}")
        prefixes = json.loads(found.stdout.strip().splitlines()[-1])
    folders = {os.path.abspath(p) for p in prefixes}
    if not any(os.path.abspath(python).startswith(f + os.sep) for f in folders):
        folders.add(os.path.abspath(python))
    system = tuple(f + os.sep for f in SYSTEM_FOLDERS)
    return tuple(sorted(f for f in folders if not (f + os.sep).startswith(system)))


def bwrap_argv(command: list[str], mounts: list[Mount], python: str, network: bool) -> list[str]:
    """A bubblewrap command line: the step's mounts at their /app paths and nothing else of the host but
    the system folders, /etc's few files and the Python runtime, all read-only."""
    argv = ["bwrap", "--unshare-all", *(["--share-net"] if network else []), "--die-with-parent",
            "--new-session", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", SANDBOX_HOME]
    for folder in SYSTEM_FOLDERS:
        if os.path.islink(folder):
            argv += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            argv += ["--ro-bind", folder, folder]
    for entry in ETC_ENTRIES:
        argv += ["--ro-bind-try", f"/etc/{entry}", f"/etc/{entry}"]
    for folder in runtime_folders(python):
        argv += ["--ro-bind", folder, folder]
    for mount in sorted(mounts, key=lambda m: m.container):
        argv += ["--ro-bind" if mount.read_only else "--bind", str(mount.host), mount.container]
    bin_dir = os.path.dirname(os.path.abspath(python))
    workdir = "/app/program" if any(m.container == "/app/program" for m in mounts) else "/"
    argv += ["--chdir", workdir, "--clearenv", "--setenv", "PATH", f"{bin_dir}:{SANDBOX_PATH}",
             "--setenv", "HOME", SANDBOX_HOME, "--setenv", "LANG", "C.UTF-8"]
    for key, value in WORKER_ENVIRONMENT.items():
        argv += ["--setenv", key, value]
    return argv + ["--", *_with_interpreter(command, python)]


def docker_argv(command: list[str], mounts: list[Mount], image: str, network: bool, name: str,
                engine: str = "docker") -> list[str]:
    """``docker run`` as the worker creates its container: the mounts, /app/program as the working folder,
    the worker's environment, the capabilities it drops and no-new-privileges (podman: label=disable, as
    the worker gives it)."""
    security = "label=disable" if engine == "podman" else "no-new-privileges"
    argv = [engine, "run", "--rm", "--name", name, "--workdir", "/app/program",
            "--security-opt", security, *(["--network", "none"] if not network else [])]
    for capability in ("AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                       "NET_BIND_SERVICE", "NET_RAW", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"):
        argv += ["--cap-drop", capability]
    for mount in mounts:
        argv += ["--volume", f"{mount.host.resolve()}:{mount.container}" + (":ro" if mount.read_only else "")]
    for key, value in WORKER_ENVIRONMENT.items():
        argv += ["--env", f"{key}={value}"]
    return argv + [image, *command]


def unisolated_argv(command: list[str], mounts: list[Mount], python: str) -> list[str]:
    """Without a container, /app/... arguments are mapped onto the step's folders (the longest container
    path wins) and python3/python onto the interpreter: only the command line sees the /app paths."""
    ordered = sorted(mounts, key=lambda m: -len(m.container))
    mapped = []
    for arg in _with_interpreter(command, python):
        for mount in ordered:
            if arg == mount.container or arg.startswith(mount.container + "/"):
                arg = str(mount.host) + arg[len(mount.container):]
                break
        mapped.append(arg)
    return mapped


def _with_interpreter(command: list[str], python: str) -> list[str]:
    if command and command[0] in ("python3", "python"):
        return [os.path.abspath(python), *command[1:]]
    return list(command)


def wait_all(container: Container, running: dict[str, subprocess.Popen], timeout: float,
             on_poll: Callable[[], None] | None = None) -> tuple[dict[str, int | None], dict[str, float], bool]:
    """Wait for a step's programs, started at the same time, under one time limit for the step (the
    worker's alarm). Returns each program's exit code (None when it was stopped), its elapsed seconds (the
    limit when stopped, as the worker counts), and whether the limit was exceeded. on_poll is called
    between two looks at the programs (the runner follows their logs then)."""
    started = time.perf_counter()
    deadline = started + timeout
    codes: dict[str, int | None] = {}
    elapsed: dict[str, float] = {}
    while len(codes) < len(running):
        for name, proc in running.items():
            if name not in codes and proc.poll() is not None:
                codes[name], elapsed[name] = proc.returncode, time.perf_counter() - started
                ended(proc)
        if len(codes) == len(running):
            break
        if time.perf_counter() >= deadline:
            for name, proc in running.items():
                if name not in codes:
                    container.stop(proc, name)
                    codes[name], elapsed[name] = None, timeout
            return codes, elapsed, True
        if on_poll is not None:
            on_poll()
        time.sleep(0.02)
    return codes, elapsed, False
