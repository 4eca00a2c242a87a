"""A competition bundle uploaded as the site's own upload page does it (its client.js ``create_dataset``, then
its upload.tag polling loop), in four requests:

1. ``POST /api/datasets/`` with ``type: competition_bundle``, the file's name and ``file_size`` (the site
   checks the user's storage quota): the answer holds the dataset's ``key`` and a presigned ``sassy_url``;
2. ``PUT`` the zip's bytes to ``sassy_url`` (the storage, not the site: no token goes there);
3. ``PUT /api/datasets/completed/<key>/``: the answer's ``status_id`` names the unpacking;
4. ``GET /api/competitions/<status_id>/creation_status/`` every few seconds until its ``status`` is
   ``Finished`` (``resulting_competition``) or ``Failed`` (``details``: the text the upload page shows).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Callable

from ..errors import BundleRefusedError, PlatformTimeout
from ._http import Http, Progress

#: Seconds between two looks at the unpacking's status (the upload page waits 2 s).
POLL_SECONDS = 2.0
#: Seconds to wait for the unpacking before giving up (the site keeps unpacking: look at its page).
UNPACK_TIMEOUT = 1800.0
#: Seconds to wait for the answer of ``completed``: a site whose Celery runs eagerly (Codabench's own test
#: settings) unpacks the bundle inside that request, minutes for a large one.
COMPLETED_TIMEOUT = 900.0


@dataclasses.dataclass(frozen=True)
class Uploaded:
    """A bundle the site unpacked: the competition's id and its page's address."""

    competition_id: int
    url: str


def upload_bundle(http: Http, bundle: Path, progress: Progress | None = None,
                  status: Callable[[str], None] | None = None, poll: float = POLL_SECONDS,
                  timeout: float = UNPACK_TIMEOUT) -> Uploaded:
    """Upload a bundle zip and wait for the site to unpack it. progress: called with the bytes sent and the
    total; status: called with each new unpacking status. BundleRefusedError holds the site's own
    ``details`` when it refuses the bundle."""
    bundle = Path(bundle)
    doing = f"uploading {bundle.name}"
    size = bundle.stat().st_size
    dataset = http.json("POST", "api/datasets/", doing, {
        "type": "competition_bundle", "request_sassy_file_name": bundle.name, "file_name": bundle.name,
        "file_size": size})
    http.put_file(dataset["sassy_url"], bundle, doing, progress)
    completed = http.json("PUT", f"api/datasets/completed/{dataset['key']}/", doing,
                          timeout=max(http.timeout, COMPLETED_TIMEOUT))
    return wait_for_unpacking(http, completed["status_id"], doing, status, poll, timeout)


def wait_for_unpacking(http: Http, status_id, doing: str, status: Callable[[str], None] | None,
                       poll: float, timeout: float) -> Uploaded:
    """Poll the unpacking's status until it is Finished or Failed (or timeout seconds have passed)."""
    path = f"api/competitions/{status_id}/creation_status/"
    started, shown = time.monotonic(), None
    while True:
        answer = http.json("GET", path, f"{doing}: waiting for the site to unpack it")
        state = str(answer.get("status") or "")
        if state != shown and status:
            status(state)
        shown = state
        if state.lower() == "finished":
            competition = int(answer["resulting_competition"])
            return Uploaded(competition, http.url(f"competitions/{competition}/"))
        if state.lower() == "failed":
            details = str(answer.get("details") or "").strip()
            raise BundleRefusedError(f"the site refused the bundle: {details or '(it gave no details)'}",
                                     details, url=http.url(path), doing=doing)
        if time.monotonic() - started > timeout:
            raise PlatformTimeout(f"still {state or 'unpacking'} after {timeout:.0f} s; its page will say "
                                  "how it ended", http.url(path), doing)
        time.sleep(poll)
