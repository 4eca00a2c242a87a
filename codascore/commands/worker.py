"""``codascore worker [BROKER_URL]``: serve a Codabench queue as its compute worker does, without Docker, on
this machine or a batch cluster (docs/worker.md)."""

from __future__ import annotations

import os
import urllib.parse
from pathlib import Path

from ..errors import UsageError
from ..outcomes import ExitCode
from .base import Command

#: The variable compute_worker.py's .env names the broker with (so that the password stays off the
#: command line, where ps shows it).
BROKER_VARIABLE = "BROKER_URL"
SCHEMES = ("pyamqp", "amqp", "amqps")


class Worker(Command):
    name = "worker"
    description = ("Take the compute_worker_run jobs of a Codabench queue and run each as Codabench's compute "
                   "worker does: statuses, logs, outputs, detailed results and scores reported to the site. "
                   "Each step runs in a bubblewrap sandbox under the environment standing for the "
                   "competition's image (or in the image, --engine docker or podman), here or as a unit of a "
                   "Dask cluster (--cluster FILE: SLURM, LSF, PBS...). A job is acknowledged once it has "
                   "ended: a worker that dies leaves it to another. SIGTERM or Ctrl-C: no new job, the "
                   "running ones finish (or are given back after --grace); twice: given back at once.")
    epilog = ("example: BROKER_URL=pyamqp://USER:PASSWORD@HOST:5672/VHOST codascore worker --dir worker\n"
              "         codascore worker --cluster slurm.yaml --cores 2 --memory 8GiB  (BROKER_URL set)")

    @classmethod
    def add_options(cls, parser):
        parser.add_argument("broker", nargs="?", metavar="BROKER_URL",
                            help=f"the queue's broker URL as the site's queue page gives it (default: "
                                 f"${BROKER_VARIABLE}, which keeps the password off the command line)")
        parser.add_argument("--dir", default="worker", help="the worker's folder: worker.log, the jobs' run "
                            "folders, the data cache (on a cluster, one its nodes see; default: worker)")
        parser.add_argument("--engine", choices=("bwrap", "docker", "podman"), default="bwrap",
                            help="bwrap (default): a bubblewrap sandbox under the environment standing for "
                                 "each image; docker or podman: each job's own image")
        parser.add_argument("--image", action="append", default=[], metavar="IMAGE=PYTHON",
                            help="serve IMAGE with this interpreter's environment in the sandbox; repeatable "
                                 "(default: codalab/codalab-legacy:py312 with the project's .venv-image)")
        parser.add_argument("--root", help="project folder whose .venv-image stands for the stock image "
                                           "(default: the installed project's)")
        parser.add_argument("--no-network", action="store_true",
                            help="no network in the steps (the compute worker's default gives them the network)")
        where = parser.add_mutually_exclusive_group()
        where.add_argument("--jobs", type=int, default=1, metavar="N",
                           help="steps at once on this machine (default 1, as the compute worker)")
        where.add_argument("--scheduler", metavar="ADDRESS", help="run each step on this Dask scheduler's workers")
        where.add_argument("--cluster", metavar="FILE", help="run each step on a batch system's cluster through "
                           "dask-jobqueue, described in a cluster file (docs/judge_cluster.md)")
        parser.add_argument("--cores", type=float, default=1,
                            help="cores a step asks of a cluster's worker (default 1)")
        parser.add_argument("--memory", metavar="SIZE", help="memory a step asks of a cluster's worker, e.g. 4GiB")
        parser.add_argument("--retries", type=int, default=2,
                            help="runs after the first of a step the cluster lost (default 2)")
        parser.add_argument("--max-jobs", type=int, metavar="N", help="stop after taking N jobs (once they end)")
        parser.add_argument("--grace", type=float, default=60.0, metavar="SECONDS",
                            help="seconds the running jobs have to finish after a stop, before they are given "
                                 "back to the queue (default 60)")
        parser.add_argument("--keep", action="store_true", help="keep each job's run folder in DIR/jobs")

    def run(self, args) -> ExitCode:
        broker = args.broker or os.environ.get(BROKER_VARIABLE)
        if not broker:
            raise UsageError(f"give the queue's broker URL, as an argument or in ${BROKER_VARIABLE}")
        if urllib.parse.urlsplit(broker).scheme not in SCHEMES:
            raise UsageError(f"the broker URL must start with {', '.join(s + '://' for s in SCHEMES)} (the "
                             f"site's queue page gives it)")
        if args.jobs < 1 or args.retries < 0 or (args.max_jobs is not None and args.max_jobs < 1) \
                or args.grace < 0 or args.cores <= 0:
            raise UsageError("--jobs, --max-jobs and --cores must be positive, --retries and --grace 0 or more")
        try:
            from ..worker import parse_images, serve, serving_environments
        except ModuleNotFoundError as exc:
            raise UsageError(f"codascore worker needs {exc.name}, which the worker extra installs: "
                             f"pip install -e '.[worker]'") from None

        memory = None
        if args.memory:
            from dask.utils import parse_bytes

            try:
                memory = parse_bytes(args.memory)
            except ValueError:
                raise UsageError(f"--memory {args.memory}: a size such as 4GiB or 500MB") from None
        where = serving_environments(args.engine, parse_images(args.image), not args.no_network,
                             Path(args.root) if args.root else None)
        serve(broker, Path(args.dir), where, jobs=args.jobs, scheduler=args.scheduler,
              cluster_file=Path(args.cluster) if args.cluster else None, cores=args.cores, memory=memory,
              retries=args.retries, max_jobs=args.max_jobs, grace=args.grace, keep=args.keep,
              show=lambda line: print(line, flush=True))
        return ExitCode.OK
