"""The real Codabench site on this machine, for the tests that talk to the platform (make test-codabench).

It runs the unmodified source snapshot of ``../shared/codabench`` (its README says what it takes), never a
stand-in: the snapshot is extracted into the build folder, its locked package versions (``uv.lock``, read
with tomllib) are installed into a Python 3.13 environment cached as ``.venv-codabench`` (a stamp file
holds the snapshot's sha256, as ``.venv-image`` has its stamp), and then:

- PostgreSQL (Debian's binaries: ``initdb``, ``pg_ctl``) runs as the ``postgres`` user with a data folder of
  its own under the build folder, on a free port of 127.0.0.1 (its socket in the build folder too);
- moto's S3 server serves the two buckets the site's ``STORAGE_TYPE=minio`` settings name;
- Debian's RabbitMQ is the site's Celery broker, as in production: a node of its own (name, Erlang cookie,
  data, logs, its own epmd) in the build folder, with the management plugin through which the site makes a
  queue's virtual host and user (apps/queues/rabbit.py); what the site sends the compute worker waits in a
  ``compute-worker`` queue there, of the default virtual host or of a competition's own queue;
- the site runs with its own ``settings.test`` (eager Celery for its own tasks: a bundle is unpacked inside
  the request that completes its upload), migrated once per data folder, served by gunicorn with uvicorn's
  worker; Redis holds its cache and channels.

Every port is chosen free at start time, so two sites (two build folders) can run at once.

    python tests/codabench_site.py start --dir build/codabench    # one JSON line: url, users, tokens
    python tests/codabench_site.py stop --dir build/codabench
    python tests/codabench_site.py env                            # only build the cached environment
    python tests/codabench_site.py restart-broker --dir build/codabench   # RabbitMQ stopped and started again

``start`` is idempotent: a running site is reported again, a stopped one is started on fresh ports with
its data kept. This file runs under the project's Python (stdlib only); it runs the site's own
``manage.py`` for the migration and the users.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DIR = Path(os.environ.get("CODASCORE_SHARED", REPO_ROOT.parent / "shared"))
#: The snapshot: $CODABENCH_SNAPSHOT (make test-codabench sets it from CODABENCH_SHARED), else the sibling shared/'s.
SNAPSHOT = Path(os.environ.get("CODABENCH_SNAPSHOT") or SHARED_DIR / "codabench" / "codabench-c7dbc756.tar.gz")
VENV = REPO_ROOT / ".venv-codabench"
PYENV_ROOT = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
#: Packages of the lock not installed: the project itself, Windows-only ones, linters and its test runner.
NOT_INSTALLED = {"codabench", "ansicon", "jinxed", "colorama", "win32-setctime",
                 "flake8", "mccabe", "pycodestyle", "pyflakes", "pytest", "pytest-django", "iniconfig", "pluggy"}
#: moto's S3 server (not in the lock: the site's MinIO in docker-compose), with the lock's versions kept.
MOTO = "moto[server]==5.1.21"
PG_BIN_DIRS = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
PG_USER = "postgres"
#: The site's database, copied at each start from the migrated template.
SITE_DB, TEMPLATE_DB = "codabench", "codabench_migrated"
BUCKETS = ("public", "private")
ADMIN = ("organiser", "organiser-password-1")
PARTICIPANTS = (("participant", "participant-password-1"), ("participant2", "participant-password-2"))
START_TIMEOUT = 180
#: The broker's user: RabbitMQ's default one, which accepts connections from the loopback only.
BROKER_USER = ("guest", "guest")
RABBITMQ_BIN = Path("/usr/lib/rabbitmq/bin")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def python313() -> str:
    """Python 3.13: CODABENCH_PYTHON, else python3.13 on PATH when it runs (a pyenv shim may not), else the
    newest of pyenv's 3.13 versions."""
    if os.environ.get("CODABENCH_PYTHON"):
        return os.environ["CODABENCH_PYTHON"]
    found = shutil.which("python3.13")
    if found and subprocess.run([found, "-c", ""], capture_output=True).returncode == 0:
        return found
    versions = sorted(PYENV_ROOT.glob("versions/3.13*/bin/python3.13"),
                      key=lambda p: [int(x) for x in p.parts[-3].split(".") if x.isdigit()])
    if not versions:
        sys.exit("no Python 3.13: install one (pyenv install 3.13) or set CODABENCH_PYTHON")
    return str(versions[-1])


def locked_requirements(lock_text: bytes) -> list[str]:
    """``name==version`` for every package of uv.lock the site needs (see NOT_INSTALLED)."""
    lock = tomllib.loads(lock_text.decode())
    return sorted(f"{p['name']}=={p['version']}" for p in lock["package"]
                  if p["name"] not in NOT_INSTALLED and "registry" in p.get("source", {}))


def extract(snapshot: Path, root: Path) -> Path:
    """The snapshot extracted under ROOT/codabench (once per snapshot hash); its folder."""
    stamp = root / ".extracted"
    digest = sha256_of(snapshot)
    site = root / "codabench"
    if stamp.is_file() and stamp.read_text() == digest and site.is_dir():
        return site
    shutil.rmtree(site, ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    with tarfile.open(snapshot) as archive:
        archive.extractall(root, filter="data")
    stamp.write_text(digest)
    return site


def ensure_env(snapshot: Path, venv: Path) -> Path:
    """The cached environment (built when its stamp differs from the snapshot's hash); its python."""
    stamp = venv / ".installed"
    key = f"{sha256_of(snapshot)} {MOTO}"
    python = venv / "bin" / "python"
    if stamp.is_file() and stamp.read_text() == key and python.exists():
        return python
    with tarfile.open(snapshot) as archive:
        lock = archive.extractfile("codabench/uv.lock").read()
    pins = locked_requirements(lock)
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([python313(), "-m", "venv", str(venv)], check=True)
    constraints = venv / "constraints.txt"
    constraints.write_text("\n".join(pins) + "\n")
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run(pip + ["--no-deps"] + pins, check=True)
    # moto's own dependencies, with every package the lock names held at its version
    subprocess.run(pip + ["-c", str(constraints), MOTO], check=True)
    subprocess.run([str(python), "-m", "pip", "check"], check=True)  # every requirement of the lock is there
    stamp.write_text(key)
    return python


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def pg_folder(root: Path) -> Path:
    """The server's folder (data, socket, log). As root the server runs as the postgres user, who may not
    reach ROOT (a clone in a private temporary folder, mode 0700): the folder then lies in the system's
    temporary folder, named after ROOT."""
    if os.geteuid() != 0:
        return root / "postgres"
    digest = hashlib.sha256(str(Path(root).resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"codascore-postgres-{digest}"


def run_as_pg(args: list[str]) -> None:
    """A PostgreSQL command as the postgres user when this runs as root (the server refuses root), from a
    folder that user can enter."""
    done = subprocess.run(args, user=PG_USER if os.geteuid() == 0 else None, capture_output=True, text=True,
                          cwd="/")
    if done.returncode != 0:
        raise RuntimeError(f"{Path(args[0]).name} exited {done.returncode}: {done.stdout}{done.stderr}")


def pg_binary(name: str) -> str:
    for folder in PG_BIN_DIRS:
        if (folder / name).exists():
            return str(folder / name)
    found = shutil.which(name)
    if not found:
        sys.exit(f"no {name}: install PostgreSQL (apt-get install postgresql)")
    return found


def start_postgres(root: Path, port: int) -> None:
    """initdb once (trust authentication; ROOT/postgres owned by the server's user: data, socket and log),
    then pg_ctl start on PORT of 127.0.0.1."""
    folder = pg_folder(root)
    data = folder / "data"
    folder.mkdir(exist_ok=True)
    if os.geteuid() == 0:
        shutil.chown(folder, PG_USER)
    if not (data / "PG_VERSION").exists():
        shutil.rmtree(data, ignore_errors=True)
        run_as_pg([pg_binary("initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"])
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1"
    run_as_pg([pg_binary("pg_ctl"), "start", "-w", "-t", "60", "-D", str(data), "-l", str(folder / "log"),
               "-o", options])


def stop_postgres(root: Path) -> None:
    """The server stopped, when one runs: a postmaster.pid left by a killed server (its process gone, which
    pg_ctl status tells) is no server to stop, and the next start replaces it."""
    data = pg_folder(root) / "data"
    if not (data / "postmaster.pid").exists():
        return
    status = subprocess.run([pg_binary("pg_ctl"), "status", "-D", str(data)], capture_output=True, cwd="/",
                            user=PG_USER if os.geteuid() == 0 else None)
    if status.returncode == 0:
        run_as_pg([pg_binary("pg_ctl"), "stop", "-w", "-m", "fast", "-D", str(data)])


def spawn(args: list[str], log: Path, **kwargs) -> int:
    """A daemon in a session of its own (so stop can end its whole group); its pid."""
    with log.open("ab") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True, **kwargs)
    return process.pid


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def broker_url(ports: dict[str, int]) -> str:
    """The site's broker (RabbitMQ's default virtual host) as Celery names it."""
    return f"pyamqp://{BROKER_USER[0]}:{BROKER_USER[1]}@127.0.0.1:{ports['amqp']}//"


def rabbitmq_env(root: Path, ports: dict[str, int]) -> dict[str, str]:
    """The environment of this site's RabbitMQ node and of rabbitmqctl: every file in ROOT/rabbitmq (the
    Erlang cookie in its HOME), its own ports and epmd, nothing read from /etc/rabbitmq."""
    folder = root / "rabbitmq"
    digest = hashlib.sha256(str(root).encode()).hexdigest()[:12]
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL")}
    env.update({
        "HOME": str(folder), "RABBITMQ_NODENAME": f"codascore-{digest}@localhost",
        "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1", "RABBITMQ_NODE_PORT": str(ports["amqp"]),
        "RABBITMQ_DIST_PORT": str(ports["rabbitmq_dist"]), "ERL_EPMD_PORT": str(ports["epmd"]),
        "RABBITMQ_CONF_ENV_FILE": str(folder / "rabbitmq-env.conf"),
        "RABBITMQ_CONFIG_FILE": str(folder / "rabbitmq.conf"),
        "RABBITMQ_ADVANCED_CONFIG_FILE": str(folder / "advanced.config"),
        "RABBITMQ_ENABLED_PLUGINS_FILE": str(folder / "enabled_plugins"),
        "RABBITMQ_MNESIA_BASE": str(folder / "mnesia"), "RABBITMQ_LOG_BASE": str(folder / "log"),
        "RABBITMQ_PID_FILE": str(folder / "rabbitmq.pid"),
    })
    return env


def rabbitmq_binary(name: str) -> str:
    path = RABBITMQ_BIN / name
    if not path.exists():
        sys.exit(f"no {path}: install RabbitMQ (apt-get install rabbitmq-server)")
    return str(path)


def start_rabbitmq(root: Path, ports: dict[str, int]) -> int:
    """RabbitMQ with the management plugin on the ports given (its data kept across starts: the virtual
    hosts and users the site made, and the messages waiting); its pid once it accepts connections."""
    folder = root / "rabbitmq"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "enabled_plugins").write_text("[rabbitmq_management].\n")
    (folder / "rabbitmq.conf").write_text(
        f"listeners.tcp.default = 127.0.0.1:{ports['amqp']}\n"
        f"management.tcp.ip = 127.0.0.1\nmanagement.tcp.port = {ports['rabbitmq_management']}\n")
    env = rabbitmq_env(root, ports)
    pid = spawn([rabbitmq_binary("rabbitmq-server")], root / "rabbitmq.log", env=env)
    done = subprocess.run([rabbitmq_binary("rabbitmqctl"), "wait", "--timeout", str(START_TIMEOUT),
                           env["RABBITMQ_PID_FILE"]], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        log = (root / "rabbitmq.log").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"RabbitMQ did not start: {done.stdout}{done.stderr}\n{log}")
    return pid


def stop_rabbitmq(root: Path, ports: dict[str, int], pid: int | None) -> None:
    """Stop the node (rabbitmqctl, else its process group) and the epmd it started on its own port."""
    env = rabbitmq_env(root, ports)
    if pid is not None and alive(pid):
        subprocess.run([rabbitmq_binary("rabbitmqctl"), "stop", env["RABBITMQ_PID_FILE"]], env=env,
                       capture_output=True, timeout=120)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    epmd = shutil.which("epmd") or "epmd"
    subprocess.run([epmd, "-port", str(ports["epmd"]), "-kill"], capture_output=True, check=False)


def site_env(site: Path, root: Path, ports: dict[str, int]) -> dict[str, str]:
    """The site's environment: .env_sample's names, pointed at this machine's services."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL", "TZ")}
    http = f"127.0.0.1:{ports['http']}"
    env.update({
        "DJANGO_SETTINGS_MODULE": "settings.test",
        "PYTHONPATH": f"{site / 'src'}:{site / 'src' / 'apps'}",
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:{ports['postgres']}/{SITE_DB}",
        "DOMAIN_NAME": http, "SITE_DOMAIN": f"http://{http}", "SUBMISSIONS_API_URL": f"http://{http}/api",
        "STORAGE_TYPE": "minio", "AWS_ACCESS_KEY_ID": "testkey", "AWS_SECRET_ACCESS_KEY": "testsecret",
        "AWS_STORAGE_BUCKET_NAME": BUCKETS[0], "AWS_STORAGE_PRIVATE_BUCKET_NAME": BUCKETS[1],
        "AWS_S3_ENDPOINT_URL": f"http://127.0.0.1:{ports['s3']}/", "AWS_QUERYSTRING_AUTH": "False",
        "S3_USE_SIGV4": "false",
        "REDIS_URL": f"redis://127.0.0.1:{ports['redis']}",
        # RabbitMQ: the jobs for the compute worker wait in its compute-worker queues; the site makes a
        # competition queue's virtual host and user through the management API (pyrabbit2)
        "BROKER_URL": broker_url(ports), "RABBITMQ_HOST": "127.0.0.1", "RABBITMQ_PORT": str(ports["amqp"]),
        "RABBITMQ_MANAGEMENT_PORT": str(ports["rabbitmq_management"]), "RABBITMQ_DEFAULT_USER": BROKER_USER[0],
        "RABBITMQ_DEFAULT_PASS": BROKER_USER[1],
        "TEMP_SUBMISSION_STORAGE": str(root / "tmp"), "LOG_LEVEL": "WARNING",
    })
    return env


def wait_for(url: str, seconds: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except urllib.error.HTTPError:
            return  # the server answers
        except OSError:
            time.sleep(0.3)
    tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
    raise RuntimeError(f"{what} did not answer at {url} within {seconds} s\n{tail}")


MAKE_BUCKETS = """
import boto3, sys
s3 = boto3.client("s3", endpoint_url=sys.argv[1], aws_access_key_id="testkey",
                  aws_secret_access_key="testsecret", region_name="us-east-1")
have = {b["Name"] for b in s3.list_buckets()["Buckets"]}
for name in sys.argv[2:]:
    if name not in have:
        s3.create_bucket(Bucket=name)
"""

#: Run by the site's manage.py shell: the users (organiser a superuser) and their API tokens, as JSON.
MAKE_USERS = """
import json
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
User = get_user_model()
out = {}
for name, password, is_admin in %s:
    user = User.objects.filter(username=name).first()
    if user is None:
        make = User.objects.create_superuser if is_admin else User.objects.create_user
        user = make(username=name, email=name + "@example.org", password=password)
    out[name] = Token.objects.get_or_create(user=user)[0].key
print("USERS " + json.dumps(out))
"""


def manage(python: Path, site: Path, env: dict, *args: str) -> str:
    done = subprocess.run([str(python), str(site / "manage.py"), *args], cwd=site / "src", env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)[:60]} exited {done.returncode}:\n{done.stderr[-4000:]}")
    return done.stdout


def psql(root: Path, port: int, sql: str) -> None:
    run_as_pg([pg_binary("psql"), "-h", str(pg_folder(root)), "-p", str(port), "-U", "postgres", "-d", "postgres",
               "-v", "ON_ERROR_STOP=1", "-q", "-c", sql])


def fresh_database(python: Path, site: Path, env: dict, root: Path, port: int, snapshot_hash: str) -> None:
    """The site's database, empty as after a fresh install: a copy of a migrated template (migrated once per
    snapshot), since moto's buckets start empty too and files must match the rows that name them."""
    marker, key = pg_folder(root) / "migrated", f"{snapshot_hash} {TEMPLATE_DB}"
    if not marker.is_file() or marker.read_text() != key:
        psql(root, port, f"DROP DATABASE IF EXISTS {TEMPLATE_DB}")
        psql(root, port, f"CREATE DATABASE {TEMPLATE_DB}")
        migrate_env = dict(env, DATABASE_URL=env["DATABASE_URL"].rsplit("/", 1)[0] + "/" + TEMPLATE_DB)
        manage(python, site, migrate_env, "migrate", "--noinput")
        marker.write_text(key)
    psql(root, port, f"DROP DATABASE IF EXISTS {SITE_DB}")
    psql(root, port, f"CREATE DATABASE {SITE_DB} TEMPLATE {TEMPLATE_DB}")


def make_users(python: Path, site: Path, env: dict) -> dict:
    users = [(ADMIN[0], ADMIN[1], True)] + [(n, p, False) for n, p in PARTICIPANTS]
    out = manage(python, site, env, "shell", "-c", MAKE_USERS % repr(users))
    tokens = json.loads(out.split("USERS ", 1)[1].splitlines()[0])
    return {
        "organiser": {"username": ADMIN[0], "password": ADMIN[1], "token": tokens[ADMIN[0]]},
        "participants": [{"username": n, "password": p, "token": tokens[n]} for n, p in PARTICIPANTS],
    }
def running_state(root: Path) -> dict | None:
    """The state of a site started from ROOT whose every process still runs and answers, else None."""
    path = root / "state.json"
    if not path.is_file():
        return None
    state = json.loads(path.read_text())
    if not all(alive(pid) for pid in state["pids"].values()):
        return None
    try:
        wait_for(state["url"] + "/api/", 5, "the site", root / "gunicorn.log")
    except RuntimeError:
        return None
    return state


def start(root: Path, snapshot: Path, venv: Path) -> dict:
    """Start every service (or find them running); the state: url, users with tokens, ports, pids."""
    root = root.resolve()
    state = running_state(root)
    if state is not None:
        return state
    stop(root)
    python = ensure_env(snapshot, venv)
    site = extract(snapshot, root)
    (root / "tmp").mkdir(parents=True, exist_ok=True)
    ports = {name: free_port() for name in ("postgres", "s3", "redis", "http", "amqp", "rabbitmq_management",
                                            "rabbitmq_dist", "epmd")}
    pids = {}
    start_postgres(root, ports["postgres"])
    pids["redis"] = spawn([shutil.which("redis-server") or "/usr/bin/redis-server", "--port", str(ports["redis"]),
                           "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                           "--dir", str(root / "tmp")], root / "redis.log")
    pids["s3"] = spawn([str(venv / "bin" / "moto_server"), "-H", "127.0.0.1", "-p", str(ports["s3"])],
                       root / "moto.log")
    url = f"http://127.0.0.1:{ports['http']}"
    state = {"url": url, "ports": ports, "pids": pids, "dir": str(root), "python": str(python),
             "site": str(site)}
    (root / "state.json").write_text(json.dumps(state))  # so that stop finds what runs even if start fails
    # an empty broker, as the database is: no job of an earlier session waits for a submission id reused
    shutil.rmtree(root / "rabbitmq" / "mnesia", ignore_errors=True)
    pids["rabbitmq"] = start_rabbitmq(root, ports)
    (root / "state.json").write_text(json.dumps(state))
    wait_for(f"http://127.0.0.1:{ports['s3']}/", 60, "moto", root / "moto.log")
    env = site_env(site, root, ports)
    subprocess.run([str(python), "-c", MAKE_BUCKETS, env["AWS_S3_ENDPOINT_URL"], *BUCKETS], check=True)
    fresh_database(python, site, env, root, ports["postgres"], sha256_of(snapshot))
    state.update(make_users(python, site, env))
    pids["http"] = spawn([str(venv / "bin" / "gunicorn"), "asgi:application", "-k", "uvicorn.workers.UvicornWorker",
                          "-b", f"127.0.0.1:{ports['http']}", "--workers", "2", "--timeout", "600"],
                         root / "gunicorn.log", cwd=site / "src", env=env)
    state["env"] = env
    state["broker"] = env["BROKER_URL"]
    (root / "state.json").write_text(json.dumps(state))
    wait_for(url + "/api/", START_TIMEOUT, "the site", root / "gunicorn.log")
    return state


def stop(root: Path) -> None:
    """Stop every process a start from ROOT left (each by its recorded pid and process group)."""
    root = root.resolve()
    path = root / "state.json"
    if path.is_file():
        state = json.loads(path.read_text())
        pids = state["pids"]
        stop_rabbitmq(root, state["ports"], pids.pop("rabbitmq", None))
        for pid in pids.values():
            if alive(pid):
                os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        while any(alive(pid) for pid in pids.values()) and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid in pids.values():
            if alive(pid):
                os.killpg(pid, signal.SIGKILL)
        path.unlink()
    stop_postgres(root)


def restart_broker(root: Path) -> None:
    """Stop the running site's RabbitMQ and start it again on the same ports, its data kept."""
    root = root.resolve()
    state = json.loads((root / "state.json").read_text())
    stop_rabbitmq(root, state["ports"], state["pids"].get("rabbitmq"))
    state["pids"]["rabbitmq"] = start_rabbitmq(root, state["ports"])
    (root / "state.json").write_text(json.dumps(state))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("start", "stop", "env", "status", "restart-broker"))
    parser.add_argument("--dir", type=Path, default=REPO_ROOT / "build" / "codabench")
    parser.add_argument("--snapshot", type=Path, default=SNAPSHOT)
    parser.add_argument("--venv", type=Path, default=VENV)
    args = parser.parse_args(argv)
    # absolute: the site's commands run from its own src/ folder
    args.dir, args.snapshot, args.venv = args.dir.resolve(), args.snapshot.resolve(), args.venv.resolve()
    if args.action == "env":
        print(ensure_env(args.snapshot, args.venv))
    elif args.action == "start":
        try:
            state = start(args.dir, args.snapshot, args.venv)
        except BaseException:
            stop(args.dir)  # nothing left running from a start that failed
            raise
        print(json.dumps({k: state[k] for k in ("url", "organiser", "participants", "ports", "dir", "broker")}))
    elif args.action == "stop":
        stop(args.dir)
    elif args.action == "restart-broker":
        restart_broker(args.dir)
    else:
        state = running_state(args.dir.resolve())
        print(json.dumps({"running": state is not None, "url": state and state["url"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
