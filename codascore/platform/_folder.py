"""A fetch's hold on its folder (docs/end_of_competition.md#one-folder-one-fetch): the folder's lock, taken
for the whole fetch, and the check that the folder is the fetch of this site and this phase (or
competition), or new.

The lock is ``fcntl.flock`` on OUT/.codascore-fetch.lock (codascore/formats/fetch.py): the system releases
it when the process ends, however it ends, so a lock left by a killed fetch is simply taken by the next
one, and two fetches can never both hold it. The file stays (removing it would let a third fetch lock
another file of the same name); what it holds (the pid, host and start of its holder) is only for the
message a second fetch gets.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import socket
from pathlib import Path
from typing import Iterator

from ..errors import FetchFolderBusy, FetchFolderError
from ..formats.fetch import LOCK, Identity, foreign_files, identity_of, site_key

try:
    import fcntl
except ImportError:  # not a POSIX system: no lock is taken (the identity is still checked)
    fcntl = None


@contextlib.contextmanager
def holding(out: Path) -> Iterator[None]:
    """OUT made if absent and locked for as long as the block runs; FetchFolderBusy when another fetch
    holds it."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(out / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise FetchFolderBusy(f"{out}: another fetch is writing into this folder ({holder(descriptor)}); "
                                      "wait for it to end, or fetch into another folder") from None
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                          "since": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
                                         ).encode() + b"\n", 0)
        yield
    finally:
        os.close(descriptor)  # the lock goes with it


def holder(descriptor: int) -> str:
    """Who holds a lock, as its file says."""
    try:
        said = json.loads(os.pread(descriptor, 4096, 0) or b"{}")
        return f"pid {said['pid']} on {said['host']}, since {said['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "its holder did not say who it is"


def check_identity(out: Path, site: str, kind: str, wanted_id: int) -> None:
    """FetchFolderError unless OUT is new (nothing but its lock) or already the fetch of this site and this
    phase or competition: a fetch never mixes with another one, nor with other files."""
    wanted = Identity(site_key(site), kind, wanted_id)
    found = identity_of(out)
    if found == wanted:
        return
    if found is not None:
        raise FetchFolderError(f"{out} holds {found}, not {wanted}: a folder holds one fetch; give a new folder")
    others = foreign_files(out)
    if others:
        shown = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
        raise FetchFolderError(f"{out} holds files that are no codascore fetch ({shown}); give a new folder")
