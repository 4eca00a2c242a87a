"""The site as a compute worker sees it for one job (``codascore worker``, docs/worker.md): the submission's
status and fields changed with its secret, its files fetched from and stored at the presigned addresses the
job names, its scores posted, as compute_worker.py's ``_update_submission``, ``_get_bundle``, ``_put_file``
and ``push_scores`` do. No token: the secret is the job's only right, and it travels only in a request's
body, never in an address or a message.

A request that may be repeated (a status, a file stored at its address, a download) is repeated after a
fault of the site; the scores, which the site adds to the submission at each post, are posted once.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import SiteUnreachable
from ._http import Http

#: Content types of compute_worker.py's PUTs (a presigned address may sign it): its zips and logs, the page.
ZIP, HTML = "application/zip", "text/html"


class JobSite:
    """One submission's job: the site's API address (the job's ``submissions_api_url``), the submission's
    id and secret."""

    def __init__(self, api_url: str, submission_id: int, secret: str, timeout: float | None = None,
                 retries: int | None = None):
        options = {k: v for k, v in (("timeout", timeout), ("retries", retries)) if v is not None}
        self.http = Http(api_url, None, **options)
        self.submission_id, self.secret = submission_id, secret

    def update(self, **fields) -> dict:
        """PATCH the submission's fields with the secret (``PATCH submissions/<id>/``); the submission as the
        site then holds it (status, status_details, scores...). Nothing given: it is only read. A field None
        is left out, as compute_worker.py's form leaves it (the site reads status_details as a string)."""
        fields = {key: value for key, value in fields.items() if value is not None}
        path = f"submissions/{self.submission_id}/"
        doing = f"updating submission {self.submission_id} ({', '.join(sorted(fields)) or 'reading it'})"
        return self.http.repeat(lambda: self.http.json("PATCH", path, doing, {**fields, "secret": self.secret}))

    def post_scores(self, scores: dict) -> None:
        """POST the scores once (the site stores every post): repeated only when nothing reached it."""
        path = f"upload_submission_scores/{self.submission_id}/"
        doing = f"posting the scores of submission {self.submission_id}"
        for attempt in range(self.http.retries + 1):
            try:
                self.http.json("POST", path, doing, {"secret": self.secret, "scores": scores})
                return
            except SiteUnreachable:
                if attempt == self.http.retries:
                    raise

    def put(self, url: str, path: Path, what: str, content_type: str = ZIP) -> None:
        """Store a file at a presigned address (the whole file again on a retry)."""
        doing = f"storing {what} of submission {self.submission_id}"
        self.http.repeat(lambda: self.http.put_file(url, Path(path), doing, content_type=content_type))

    def download(self, url: str, dest: Path, what: str) -> int:
        """Download a presigned address into dest (whole, or nothing under its name); its size."""
        return self.http.download(url, Path(dest), f"downloading {what} of submission {self.submission_id}")[0]
