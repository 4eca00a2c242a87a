"""The worker's log file and terminal lines, with what must never be written taken out of every line: the
broker's password, each job's secret (the site quotes a refused secret back in its error), and the query of
a presigned address (its signature is a right to the file).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from pathlib import Path
from typing import Callable

#: What stands for a secret taken out of a line.
HIDDEN = "***"
#: A secret shorter than this is not looked for in text (it would hide every such run of letters; the
#: site's passwords and secrets are UUIDs, and kombu shows an address's password as ``**`` anyway).
MIN_SECRET = 6
#: The query of an http(s) address: a presigned address's signature and key.
URL_QUERY = re.compile(r"(https?://[^\s?#'\"]+)\?[^\s'\"]*")
#: Libraries whose own log lines go to the worker's file (through the same filter), not to the terminal.
LIBRARY_LOGGERS = ("kombu", "amqp", "distributed", "dask_jobqueue")


class Redactor:
    """The secrets held now (the broker's password, the secrets of the jobs running); called on a text, the
    text without them and without any address's query."""

    def __init__(self, *secrets: str):
        self.lock = threading.Lock()
        self.secrets = {s for s in secrets if len(s) >= MIN_SECRET}

    def add(self, secret: str) -> None:
        with self.lock:
            if len(secret) >= MIN_SECRET:
                self.secrets.add(secret)

    def discard(self, secret: str) -> None:
        with self.lock:
            self.secrets.discard(secret)

    def __call__(self, text: str) -> str:
        with self.lock:
            secrets = sorted(self.secrets, key=len, reverse=True)
        for secret in secrets:
            text = text.replace(secret, HIDDEN)
        return URL_QUERY.sub(lambda found: f"{found.group(1)}?{HIDDEN}", text)


class RedactingFilter(logging.Filter):
    """Formats each record's message once, through the redactor."""

    def __init__(self, redactor: Redactor):
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = self.redactor(record.getMessage()), None
        if record.exc_info:
            record.exc_text = self.redactor(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


class ToHandler(logging.Handler):
    """Hands each record to another handler. Not a StreamHandler, on purpose: a Dask cluster started through
    dask-jobqueue raises every StreamHandler of the ``distributed`` logger to ERROR for as long as it runs
    (distributed.utils.silence_logging_cmgr); the worker's file handler given to that logger directly would
    be silenced for the worker's own lines too."""

    def __init__(self, target: logging.Handler):
        super().__init__()
        self.target = target

    def emit(self, record: logging.LogRecord) -> None:
        self.target.handle(record)


def worker_log(path: Path, redactor: Redactor) -> logging.Logger:
    """A logger writing to path (appended), each line time-stamped and redacted; the libraries' loggers
    write there too (through :class:`ToHandler`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s [%(threadName)s] %(message)s"))
    handler.addFilter(RedactingFilter(redactor))
    log = logging.getLogger(f"codascore.worker.{path.resolve()}")
    log.setLevel(logging.INFO)
    log.propagate = False
    log.handlers = [handler]
    to_file = ToHandler(handler)
    for name in LIBRARY_LOGGERS:
        library = logging.getLogger(name)
        library.setLevel(logging.WARNING)
        library.propagate = False
        library.handlers = [to_file]
    return log


def terminal(log: logging.Logger, redactor: Redactor, show: Callable[[str], None]) -> Callable[[str], None]:
    """The worker's say: a line shown (time-stamped) and logged, redacted."""

    def say(line: str) -> None:
        line = redactor(line)
        log.info("%s", line)
        show(f"{time.strftime('%H:%M:%S')} {line}")

    return say
