"""Where a judgement's units run: a Dask cluster, reached through a ``distributed.Client``.

Three ways, one answer (a client): a ``LocalCluster`` of worker processes on this machine (the default);
the address of a running scheduler; or a batch system's cluster built by dask-jobqueue from a YAML file
(docs/judge.md#clusters). Every worker offers Dask resources, ``cores`` and ``memory`` (bytes), which units
ask for, so that a unit asking for a whole worker's memory never shares it.

A batch system's cluster adapts between the file's ``minimum_jobs`` and ``maximum_jobs`` (dask-jobqueue's
``adapt``: a job that ends, at its walltime or with its node, is replaced), and each worker has a Dask
lifetime below the job's walltime, staggered, so that jobs do not all end at once; the judge's worker
plugin (:mod:`.worker`) makes a worker retire between units rather than inside one.

Nothing waits forever: a batch system that refuses a job (``sbatch: fatal: ...``) and a cluster without
any worker for ``worker_timeout`` seconds end the judgement with the reason (:func:`check_cluster`), and a
unit no worker can hold is refused before anything is submitted (:func:`check_resources`, against what
one worker of a cluster file offers, or against the workers of a running scheduler).

A worker lost while it runs a unit (SIGKILL, out of memory, a node gone) is the judge's to retry, so that
each attempt is recorded: the clusters the judge starts say ``allowed-failures: 0`` (the scheduler's own
silent rescheduling would run the unit again without the judge knowing), and Dask's ``retries`` covers
only exceptions a task raises, not its worker's death. A scheduler started by someone else keeps its own
setting: a unit may then run more often than its attempts say.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
import time
import weakref
from pathlib import Path
from typing import Iterator

import yaml

from ..errors import JudgeError

#: The keys of a cluster file (docs/judge.md#clusters); anything else is refused by name.
CLUSTER_FILE_KEYS = {"system", "cores", "memory", "walltime", "queue", "job_script_prologue", "processes",
                     "minimum_jobs", "maximum_jobs", "account", "interface", "log_directory", "local_directory",
                     "python", "job_extra_directives", "lifetime", "lifetime_stagger", "worker_timeout"}
#: Keys of earlier versions, refused with what replaced them.
RENAMED_KEYS = {"jobs": "maximum_jobs (the cluster adapts between minimum_jobs and maximum_jobs)",
                "scheduler": "system (slurm, lsf, pbs, sge or htcondor)"}
#: dask-jobqueue's cluster class of each batch system a cluster file may name.
JOBQUEUE_CLASSES = {"slurm": "SLURMCluster", "lsf": "LSFCluster", "pbs": "PBSCluster", "sge": "SGECluster",
                    "htcondor": "HTCondorCluster"}
#: Seconds without any worker after which a judgement ends (the cluster file's worker_timeout, or the
#: judge's --worker-timeout, overrides it): long enough for a batch job to leave a queue that is not full.
DEFAULT_WORKER_TIMEOUT = 600.0
#: The scheduler settings of the clusters the judge starts: a unit whose worker died errs at once (the
#: judge retries it and records the attempt); a unit no worker can take errs after the worker timeout.
SCHEDULER_CONFIG = {"distributed.scheduler.allowed-failures": 0}


def local_cluster(workers: int | None = None, cores_per_worker: int = 1, memory_per_worker: int | None = None,
                  worker_timeout: float | None = None):
    """A LocalCluster of worker processes, one thread each, each offering its share of this machine's
    memory and cores_per_worker cores as resources; the dashboard on a free port."""
    import dask
    import psutil
    from distributed import LocalCluster

    workers = workers or os.cpu_count() or 1
    memory = memory_per_worker or psutil.virtual_memory().total // workers
    with dask.config.set(scheduler_config(worker_timeout)):
        return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                            resources={"cores": cores_per_worker, "memory": memory},
                            dashboard_address=":0", silence_logs=logging.ERROR)


def scheduler_config(worker_timeout: float | None) -> dict:
    """SCHEDULER_CONFIG, and the seconds a unit may wait without a worker that can take it."""
    return {**SCHEDULER_CONFIG, "distributed.scheduler.no-workers-timeout": f"{worker_timeout or DEFAULT_WORKER_TIMEOUT}s"}


def read_cluster_file(path: Path) -> dict:
    """A cluster file's settings: a YAML mapping whose keys are CLUSTER_FILE_KEYS, with a known system,
    cores and memory, and lifetimes that fit the walltime. JudgeError naming the file and what is wrong."""
    from dask.utils import parse_bytes

    try:
        config = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise JudgeError(f"cluster file {path} cannot be read: {exc}") from exc
    if not isinstance(config, dict):
        raise JudgeError(f"cluster file {path}: a mapping of settings expected")
    for key, replaced in RENAMED_KEYS.items():
        if key in config:
            raise JudgeError(f"cluster file {path}: unknown key {key!r}: write {replaced}")
    unknown = sorted(set(config) - CLUSTER_FILE_KEYS)
    if unknown:
        raise JudgeError(f"cluster file {path}: unknown key {unknown[0]!r} (known: {', '.join(sorted(CLUSTER_FILE_KEYS))})")
    system = str(config.get("system", "")).lower()
    if system not in JOBQUEUE_CLASSES:
        raise JudgeError(f"cluster file {path}: system must be one of {', '.join(sorted(JOBQUEUE_CLASSES))}, "
                         f"not {config.get('system')!r}")
    for key in ("cores", "memory"):
        if key not in config:
            raise JudgeError(f"cluster file {path}: {key} is required")
    try:
        checked = {**config, "system": system, "cores": int(config["cores"]),
                   "memory_bytes": parse_bytes(str(config["memory"])), "processes": int(config.get("processes", 1)),
                   "minimum_jobs": int(config.get("minimum_jobs", 0)), "maximum_jobs": int(config.get("maximum_jobs", 1))}
        for key in ("walltime", "lifetime", "lifetime_stagger", "worker_timeout"):
            if config.get(key) is not None:
                checked[f"{key}_seconds"] = seconds_of(config[key], key)
    except (TypeError, ValueError) as exc:
        raise JudgeError(f"cluster file {path}: {exc}") from exc
    if checked["cores"] < 1 or checked["processes"] < 1 or checked["cores"] < checked["processes"]:
        raise JudgeError(f"cluster file {path}: cores ({checked['cores']}) and processes ({checked['processes']}) "
                         f"must be 1 or more, and a process needs a core")
    if not 0 <= checked["minimum_jobs"] <= checked["maximum_jobs"] or checked["maximum_jobs"] < 1:
        raise JudgeError(f"cluster file {path}: 0 <= minimum_jobs <= maximum_jobs and maximum_jobs >= 1 expected")
    checked.update(lifetimes(checked, path))
    return checked


def seconds_of(value, key: str) -> float:
    """A duration of a cluster file: seconds, or a walltime "HH:MM:SS" (or "HH:MM", LSF's), or a Dask
    duration ("55 minutes")."""
    from dask.utils import parse_timedelta

    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    text = str(value).strip()
    if ":" in text:
        fields = [float(field) for field in text.split(":")]
        if len(fields) == 2:  # LSF's HH:MM
            fields.append(0.0)
        if len(fields) != 3:
            raise ValueError(f"{key}: {value!r} is not HH:MM:SS")
        return fields[0] * 3600 + fields[1] * 60 + fields[2]
    seconds = parse_timedelta(text, default="seconds")
    if seconds is None or seconds <= 0:
        raise ValueError(f"{key}: {value!r} is not a duration")
    return float(seconds)


def lifetimes(config: dict, path: Path) -> dict:
    """A job's worker lifetime, its stagger and the margin kept before the walltime (seconds; none without
    a walltime). By default the stagger is a twentieth of the walltime (at most 5 minutes), the margin a
    tenth (at most 2 minutes), and the lifetime what is left: lifetime + stagger + margin = walltime."""
    walltime = config.get("walltime_seconds")
    if walltime is None:
        if config.get("lifetime") is not None:
            raise JudgeError(f"cluster file {path}: lifetime needs the job's walltime")
        return {"margin_seconds": 0.0}
    margin = min(120.0, walltime / 10)
    stagger = config.get("lifetime_stagger_seconds", min(300.0, walltime / 20))
    lifetime = config.get("lifetime_seconds", walltime - margin - stagger)
    if lifetime - stagger <= 0 or lifetime + stagger > walltime:
        raise JudgeError(f"cluster file {path}: a worker's lifetime ({lifetime:g} s, give or take its stagger of "
                         f"{stagger:g} s) must be above 0 and end before the walltime ({walltime:g} s)")
    return {"lifetime_seconds": lifetime, "lifetime_stagger_seconds": stagger,
            "margin_seconds": walltime - lifetime - stagger}


def worker_offer(config: dict) -> dict:
    """What one worker of a cluster file offers a unit: cores, memory (bytes), and the seconds it lives at
    the least (its lifetime less the stagger; None without a walltime)."""
    processes = config["processes"]
    seconds = config["lifetime_seconds"] - config["lifetime_stagger_seconds"] if "lifetime_seconds" in config else None
    return {"cores": max(config["cores"] // processes, 1), "memory": config["memory_bytes"] // processes,
            "seconds": seconds}


def jobqueue_cluster(config: dict, job_failures: list | None = None, worker_timeout: float | None = None):
    """The dask-jobqueue cluster a cluster file describes, not yet scaled (no job submitted): each job runs
    ``processes`` workers that share its cores and memory, and offer them as resources (a worker's threads
    are its cores: the resources, not the threads, keep a unit that asks for them all alone); each worker
    lives its lifetime, staggered. A job the batch system refuses is appended to job_failures (its
    submission command's own message) instead of raising in the cluster's event loop."""
    import dask
    import dask_jobqueue

    offer = worker_offer(config)
    resources = f"cores={offer['cores']},memory={offer['memory']}"
    extra = ["--resources", resources]
    if "lifetime_seconds" in config:
        extra += ["--lifetime", f"{config['lifetime_seconds']:.0f}s",
                  "--lifetime-stagger", f"{config['lifetime_stagger_seconds']:.0f}s"]
    options = {"cores": config["cores"], "memory": str(config["memory"]), "processes": config["processes"],
               "worker_extra_args": extra, "scheduler_options": {"dashboard_address": ":0"},
               "job_script_prologue": list(config.get("job_script_prologue") or [])}
    for key in ("walltime", "queue", "account", "interface", "log_directory", "local_directory", "python"):
        if config.get(key) is not None:
            options[key] = str(config[key])
    if config.get("job_extra_directives"):
        options["job_extra_directives"] = [str(line) for line in config["job_extra_directives"]]
    cluster_class = getattr(dask_jobqueue, JOBQUEUE_CLASSES[config["system"]])
    if job_failures is not None:
        options["job_cls"] = recording_job_class(cluster_class.job_cls, job_failures)
    if config["processes"] > 1:
        cluster_class = replacing_grouped_jobs(cluster_class)
    with dask.config.set(scheduler_config(worker_timeout or config.get("worker_timeout_seconds"))):
        return cluster_class(**options)


def replacing_grouped_jobs(cluster_class: type) -> type:
    """A subclass of a dask-jobqueue cluster class that forgets a job of several workers once all of them
    have left the scheduler, as Dask's SpecCluster does for a job of one (its workers are named after the
    job with a suffix, ``<job>-0``, which SpecCluster does not match): the adaptive scaling then submits a
    new job in its place."""
    import asyncio

    import dask
    from dask.utils import parse_timedelta

    class Replacing(cluster_class):
        def _update_worker_status(self, op, msg):
            if op == "remove" and msg in self.scheduler_info.get("workers", {}):
                name = str(self.scheduler_info["workers"][msg].get("name", ""))
                job = name.rsplit("-", 1)[0]
                if name not in self.workers and job in self.workers:
                    def forget() -> None:
                        left = [info for info in self.scheduler_info["workers"].values()
                                if str(info.get("name", "")).rsplit("-", 1)[0] == job]
                        if job in self.workers and not left:
                            self._futures.add(asyncio.ensure_future(self.workers[job].close()))
                            del self.workers[job]

                    delay = parse_timedelta(dask.config.get("distributed.deploy.lost-worker-timeout"))
                    asyncio.get_running_loop().call_later(delay, forget)
            super()._update_worker_status(op, msg)

    Replacing.__name__ = Replacing.__qualname__ = cluster_class.__name__
    return Replacing


def recording_job_class(job_class: type, failures: list) -> type:
    """A subclass of a dask-jobqueue Job class whose failed submission is recorded in failures (one line:
    the submission command's stderr) rather than raised where no one would catch it."""
    from distributed.core import Status

    class RecordedJob(job_class):
        async def start(self):
            try:
                await super().start()
            except Exception as exc:  # noqa: BLE001  (sbatch's, bsub's ... failure, whatever its type)
                failures.append(submission_error(exc, self.submit_command))
                self.status = Status.running  # nothing to wait for: the judge ends the judgement

    RecordedJob.__name__ = RecordedJob.__qualname__ = f"Recorded{job_class.__name__}"
    return RecordedJob


def submission_error(exc: Exception, command: str) -> str:
    """A refused job's reason on one line: the submission command's stderr (dask-jobqueue's RuntimeError
    quotes it), or that the command is missing."""
    text = str(exc)
    if isinstance(exc, FileNotFoundError):
        return f"{command.split()[0]} not found: {exc}"
    if "stderr:" in text:
        text = text.split("stderr:", 1)[1]
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return "; ".join(lines[-3:]) or f"{type(exc).__name__} from {command}"


@dataclasses.dataclass
class Watch:
    """What the judge checks while it waits on a cluster (:func:`check_cluster`): the batch system's
    refusals, and since when the cluster has had no worker."""

    worker_timeout: float
    job_failures: list = dataclasses.field(default_factory=list)
    system: str = ""
    no_worker_since: float | None = None
    #: What each worker the cluster may come to have offers (a cluster file's maximum_jobs of them, a
    #: LocalCluster's workers): work is kept outstanding for them too, so that adaptive scaling sees it.
    planned: list = dataclasses.field(default_factory=list)
    #: The workers the judge's unfinished units could use now (:func:`want_workers`): the adaptive scaling
    #: keeps at least these, up to maximum_jobs (:func:`judge_adaptive`).
    wanted: int = 0


#: The watch of each client open_client made.
WATCHES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


@contextlib.contextmanager
def open_client(workers: int | None = None, scheduler: str | None = None, cluster_file: Path | None = None,
                worker_timeout: float | None = None) -> Iterator:
    """A client of the cluster asked for: the scheduler at its address, the cluster file's (adapting
    between its minimum_jobs and maximum_jobs), or a LocalCluster of workers processes. The judge's worker
    plugin (:class:`.worker.UnitGuard`) is registered on its workers. What the judge started is closed
    after. worker_timeout: seconds without any worker before :func:`check_cluster` ends the judgement
    (default: the cluster file's, else DEFAULT_WORKER_TIMEOUT)."""
    from distributed import Client

    from .worker import PLUGIN_NAME, UnitGuard

    if sum(option is not None for option in (scheduler, cluster_file)) > 1:
        raise JudgeError("give a scheduler address or a cluster file, not both")
    if scheduler is not None:
        try:
            client = Client(scheduler, timeout="30s")
        except OSError as exc:
            raise JudgeError(f"no Dask scheduler answers at {scheduler}: {exc}") from exc
        with client:
            WATCHES[client] = Watch(worker_timeout or DEFAULT_WORKER_TIMEOUT)
            client.register_plugin(UnitGuard(), name=PLUGIN_NAME)
            yield client
        return
    if cluster_file is not None:
        config = read_cluster_file(cluster_file)
        watch = Watch(worker_timeout or config.get("worker_timeout_seconds") or DEFAULT_WORKER_TIMEOUT,
                      system=config["system"],
                      planned=[worker_offer(config)] * (config["maximum_jobs"] * config["processes"]))
        cluster = jobqueue_cluster(config, watch.job_failures, watch.worker_timeout)
        plugin = UnitGuard(config.get("walltime_seconds"), config["margin_seconds"])
    else:
        watch = Watch(worker_timeout or DEFAULT_WORKER_TIMEOUT,
                      planned=[{"cores": 1}] * (workers or os.cpu_count() or 1))
        cluster = local_cluster(workers, worker_timeout=watch.worker_timeout)
        plugin = UnitGuard()
    with cluster, Client(cluster) as client:
        WATCHES[client] = watch
        client.register_plugin(plugin, name=PLUGIN_NAME)
        if cluster_file is not None:
            cluster.adapt(minimum_jobs=config["minimum_jobs"], maximum_jobs=config["maximum_jobs"],
                          Adaptive=judge_adaptive(watch))
        yield client


def check_cluster(client) -> None:
    """JudgeError when the judgement cannot go on: the batch system refused a job (its own message), or the
    cluster has had no worker for its worker timeout. Call it while waiting on the cluster."""
    watch = WATCHES.get(client)
    if watch is None:
        return
    if watch.job_failures:
        raise JudgeError(f"the batch system ({watch.system}) refused a job: {watch.job_failures[0]}")
    if workers_of(client):
        watch.no_worker_since = None
        return
    now = time.monotonic()
    if watch.no_worker_since is None:
        watch.no_worker_since = now
    elif now - watch.no_worker_since > watch.worker_timeout:
        raise JudgeError(f"no worker joined the cluster for {watch.worker_timeout:g} s (the worker timeout): the "
                         f"batch system's queue may be full, or its jobs fail before their worker starts (see "
                         f"their logs); the units not run are pending for the next judgement")


def workers_of(client) -> dict:
    """The scheduler's workers as the client last heard of them (address -> info)."""
    try:  # all workers: some versions list only the first few unless told
        info = client.scheduler_info(n_workers=-1)
    except TypeError:
        info = client.scheduler_info()
    return info.get("workers") or {}


def wait_for_a_worker(client, timeout: float) -> None:
    """JudgeError when no worker joins a running scheduler within timeout seconds."""
    try:
        client.wait_for_workers(1, timeout=timeout)
    except (TimeoutError, OSError) as exc:
        raise JudgeError(f"no worker joined the scheduler within {timeout:g} s: start workers for it, or give "
                         f"another --scheduler") from exc


def check_resources(client, asked: list[dict[str, float]]) -> None:
    """JudgeError when the cluster's workers are known and none offers what some unit asks for (resources):
    such a unit would wait forever. A cluster without workers yet (a batch job still queued) is not
    checked: check_units against what a worker of the cluster file offers instead."""
    offered = resources_of(client)
    if offered:
        check_units(offered, [(str(resources), resources, 0.0) for resources in asked], "the cluster")


def check_units(offered: list[dict], asked: list[tuple[str, dict[str, float], float]], where: str) -> None:
    """JudgeError naming the first unit no worker can hold: asked is (unit, its resources, the seconds it
    may take); offered, each worker's resources, with "seconds" the least it lives (None: no limit). A unit
    that fits no worker would wait forever, or be cut by a job's walltime."""
    for name, resources, seconds in asked:
        fits = [offer for offer in offered
                if all(offer.get(key, 0) >= amount for key, amount in resources.items())]
        if not fits:
            shown = {key: readable(key, amount) for key, amount in resources.items()}
            offers = {key: readable(key, amount) for key, amount in (offered[0] if offered else {}).items()
                      if key != "seconds"}
            raise JudgeError(f"no worker of {where} can hold unit {name}: it asks for {shown}, a worker offers "
                             f"{offers or 'nothing'}")
        if not any(offer.get("seconds") is None or seconds <= offer["seconds"] for offer in fits):
            raise JudgeError(f"unit {name} may take up to {seconds:g} s, but a worker of {where} lives at least "
                             f"{min(offer['seconds'] for offer in fits):g} s (its lifetime, below the job's "
                             f"walltime): give the jobs a longer walltime")


def readable(key: str, amount: float) -> str:
    """A resource as a person reads it: memory in bytes with its unit, cores as a number."""
    from dask.utils import format_bytes

    return format_bytes(amount) if key == "memory" else f"{amount:g}"


def cores_for_units(client) -> float:
    """The cores the judge keeps units outstanding for: twice what the cluster has or may come to have. Dask
    hands a unit that asks for resources to a worker at once, where it waits its turn; a worker that dies
    sends back all it held, so the judge holds back the rest (scheduler.Scheduler.pump) and a death costs
    at most a few units queued again."""
    joined = sum(float((worker.get("resources") or {}).get("cores", 1)) for worker in workers_of(client).values())
    return 2 * max(joined, sum(float(offer.get("cores", 1)) for offer in planned_offers(client)))


def judge_adaptive(watch: Watch) -> type:
    """Dask's Adaptive, asking for at least the workers the judge's units could use (watch.wanted). Dask's
    own target counts only the work the scheduler holds, at its estimate of each task's duration (half a
    second until one has ended): the judge holds most units back (scheduler.Scheduler.pump), so Dask alone
    would retire jobs while units wait and start few for units of an hour."""
    from distributed.deploy import Adaptive

    class JudgeAdaptive(Adaptive):
        async def target(self) -> int:
            return max(await super().target(), watch.wanted)

    return JudgeAdaptive


def want_workers(client, units: list[dict]) -> int:
    """Tell the adaptive scaling how many workers the unfinished units (their resources) could use: enough
    for their cores and their memory, at most the workers planned. Returns that number (0 without a
    plan: a LocalCluster's or someone else's scheduler does not adapt)."""
    watch = WATCHES.get(client)
    if watch is None or not watch.planned:
        return 0
    offer = watch.planned[0]
    needed = max([math.ceil(sum(float(unit.get(kind, 0) or 0) for unit in units) / float(offer[kind]))
                  for kind in ("cores", "memory") if offer.get(kind)] or [len(units)])
    watch.wanted = min(needed, len(units), len(watch.planned))
    return watch.wanted


def planned_offers(client) -> list[dict]:
    """What each worker the cluster of a client open_client made may come to have offers (none known for a
    scheduler started by someone else)."""
    watch = WATCHES.get(client)
    return list(watch.planned) if watch else []


def resources_of(client) -> list[dict]:
    """The resources each worker of a running cluster offers."""
    return [dict(worker.get("resources") or {}, seconds=None) for worker in workers_of(client).values()]
