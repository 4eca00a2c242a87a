"""Where a judgement's units run: a Dask cluster, reached through a ``distributed.Client``.

Three ways, one answer (a client): a ``LocalCluster`` of worker processes on this machine (the default);
the address of a running scheduler; or a batch system's cluster built by dask-jobqueue from a YAML file
(docs/judge.md#clusters). Every worker offers Dask resources, ``cores`` and ``memory`` (bytes), which units
ask for, so that a unit asking for a whole worker's memory never shares it.

A worker lost while it runs a unit (SIGKILL, out of memory, a node gone) is the judge's to retry, so that
each attempt is recorded: the clusters the judge starts say ``allowed-failures: 0`` (the scheduler's own
silent rescheduling would run the unit again without the judge knowing), and Dask's ``retries`` covers
only exceptions a task raises, not its worker's death. A scheduler started by someone else keeps its own
setting: a unit may then run more often than its attempts say.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import Iterator

import yaml

from ..errors import JudgeError

#: The keys of a cluster file (docs/judge.md#clusters); anything else is refused by name.
CLUSTER_FILE_KEYS = {"system", "cores", "memory", "walltime", "queue", "job_script_prologue", "processes",
                     "jobs", "account", "interface", "log_directory", "local_directory", "python",
                     "job_extra_directives"}
#: dask-jobqueue's cluster class of each batch system a cluster file may name.
JOBQUEUE_CLASSES = {"slurm": "SLURMCluster", "lsf": "LSFCluster", "pbs": "PBSCluster", "sge": "SGECluster",
                    "htcondor": "HTCondorCluster"}
#: The scheduler setting of the clusters the judge starts: a unit whose worker died errs at once.
SCHEDULER_CONFIG = {"distributed.scheduler.allowed-failures": 0}


def local_cluster(workers: int | None = None, cores_per_worker: int = 1, memory_per_worker: int | None = None):
    """A LocalCluster of worker processes, one thread each, each offering its share of this machine's
    memory and cores_per_worker cores as resources; the dashboard on a free port."""
    import dask
    import psutil
    from distributed import LocalCluster

    workers = workers or os.cpu_count() or 1
    memory = memory_per_worker or psutil.virtual_memory().total // workers
    with dask.config.set(SCHEDULER_CONFIG):
        return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                            resources={"cores": cores_per_worker, "memory": memory},
                            dashboard_address=":0", silence_logs=logging.ERROR)


def read_cluster_file(path: Path) -> dict:
    """A cluster file's settings: a YAML mapping whose keys are CLUSTER_FILE_KEYS, with a known system.
    JudgeError naming the file and what is wrong with it."""
    try:
        config = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise JudgeError(f"cluster file {path} cannot be read: {exc}") from exc
    if not isinstance(config, dict):
        raise JudgeError(f"cluster file {path}: a mapping of settings expected")
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
    return {**config, "system": system}


def jobqueue_cluster(config: dict):
    """The dask-jobqueue cluster a cluster file describes, not yet scaled (no job submitted): each job runs
    ``processes`` workers that share its cores and memory, and offer them as resources (a worker's threads
    are its cores: the resources, not the threads, keep a unit that asks for them all alone)."""
    import dask
    import dask_jobqueue
    from dask.utils import parse_bytes

    processes = int(config.get("processes", 1))
    cores, memory = int(config["cores"]), parse_bytes(str(config["memory"]))
    resources = f"cores={max(cores // processes, 1)},memory={memory // processes}"
    options = {"cores": cores, "memory": str(config["memory"]), "processes": processes,
               "worker_extra_args": ["--resources", resources], "scheduler_options": {"dashboard_address": ":0"},
               "job_script_prologue": list(config.get("job_script_prologue") or [])}
    for key in ("walltime", "queue", "account", "interface", "log_directory", "local_directory", "python"):
        if config.get(key) is not None:
            options[key] = str(config[key])
    if config.get("job_extra_directives"):
        options["job_extra_directives"] = [str(line) for line in config["job_extra_directives"]]
    cluster_class = getattr(dask_jobqueue, JOBQUEUE_CLASSES[config["system"]])
    with dask.config.set(SCHEDULER_CONFIG):
        return cluster_class(**options)


@contextlib.contextmanager
def open_client(workers: int | None = None, scheduler: str | None = None,
                cluster_file: Path | None = None) -> Iterator:
    """A client of the cluster asked for: the scheduler at its address, the cluster file's (scaled to its
    ``jobs``, default 1), or a LocalCluster of workers processes. What the judge started is closed after."""
    from distributed import Client

    if sum(option is not None for option in (scheduler, cluster_file)) > 1:
        raise JudgeError("give a scheduler address or a cluster file, not both")
    if scheduler is not None:
        try:
            client = Client(scheduler, timeout="30s")
        except OSError as exc:
            raise JudgeError(f"no Dask scheduler answers at {scheduler}: {exc}") from exc
        with client:
            yield client
        return
    if cluster_file is not None:
        config = read_cluster_file(cluster_file)
        cluster = jobqueue_cluster(config)
        cluster.scale(jobs=int(config.get("jobs", 1)))
    else:
        cluster = local_cluster(workers)
    with cluster, Client(cluster) as client:
        yield client


def check_resources(client, asked: list[dict[str, float]]) -> None:
    """JudgeError when the cluster's workers are known and none offers what some unit asks for: such a
    unit would wait forever. A cluster without workers yet (a batch job still queued) is not checked."""
    try:  # all workers: some versions list only the first few unless told
        info = client.scheduler_info(n_workers=-1)
    except TypeError:
        info = client.scheduler_info()
    offered = [worker.get("resources") or {} for worker in info["workers"].values()]
    if not offered:
        return
    for resources in asked:
        if not any(all(offer.get(name, 0) >= amount for name, amount in resources.items()) for offer in offered):
            raise JudgeError(f"no worker of the cluster offers the resources a unit asks for ({resources}); "
                             f"workers offer {offered[0]}")
