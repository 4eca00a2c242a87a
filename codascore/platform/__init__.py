"""A client of a Codabench site, on the standard library's http.client (docs/end_of_competition.md): upload
a competition bundle, fetch every submission of a phase, read its leaderboard, run submissions again.

One public face, :class:`Site`, behind which private modules each hold one conversation with the API:
``_http`` (the only door: one kept connection per host, token header, time limits, retries of GETs that
read the server, downloads resumed inside a file, every failure as a PlatformError of codascore.errors
with its address, what was being done and the HTTP status), ``_auth`` (where the token comes from),
``_upload``, ``_manifest``, ``_folder`` (a fetch's lock and folder check) and ``_fetch``, ``_leaderboard``,
``_rerun``; and, for ``codascore worker``, ``_job`` (:class:`JobSite`: one job's submission, reached with
its secret as the compute worker does)::

    from codascore.platform import Site
    site = Site.connect("https://www.codabench.org")          # $CODABENCH_TOKEN
    site.upload(Path("dist/uai.zip"))                         # Uploaded(competition_id, url)
    site.fetch(phase_id=1234, out=Path("final"))              # the manifest
    site.leaderboard(phase_id=1234)                           # Leaderboard: exact or rounded values

Nothing here prints: each call takes a ``say`` (lines) and a ``progress`` (bytes) to show what it does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

from ..formats.fetch import MANIFEST, load_manifest
from ._auth import PASSWORD_VARIABLE, TOKEN_VARIABLE, find_token
from ._fetch import PhaseFetch, fetch_competition, summary_line
from ._http import RETRIES, TIMEOUT, Http, Progress
from ._job import HTML, ZIP, JobSite
from ._leaderboard import EXACT, ROUNDED, Leaderboard, read_leaderboard
from ._rerun import rerun_phase, rerun_submission, wait_for_states
from ._upload import Uploaded, upload_bundle

__all__ = ["EXACT", "HTML", "MANIFEST", "PASSWORD_VARIABLE", "ROUNDED", "TOKEN_VARIABLE", "ZIP", "JobSite",
           "Leaderboard", "Site", "Uploaded", "load_manifest", "summary_line"]


def _quiet(line: str) -> None:
    """The default ``say``: nothing shown."""


class Site:
    """A Codabench site at url, with a token (None: anonymous). timeout: seconds per request; retries:
    attempts after the first of a GET after a fault of the site; say: where a wait the site asked for is
    told."""

    def __init__(self, url: str, token: str | None = None, timeout: float = TIMEOUT, retries: int = RETRIES,
                 backoff: float = 1.0, say: Callable[[str], None] | None = None):
        self.http = Http(url, token, timeout, retries, backoff, say)

    @classmethod
    def connect(cls, url: str, token_file: str | None = None, username: str | None = None,
                password: str | None = None, **options) -> "Site":
        """A Site signed in with --token-file, --username (password asked or $CODABENCH_PASSWORD), or
        $CODABENCH_TOKEN, in that order (docs/end_of_competition.md#signing-in)."""
        site = cls(url, **options)
        site.http.token = find_token(site.http, token_file, username, password)
        return site

    @property
    def url(self) -> str:
        return self.http.base_url

    def whoami(self) -> dict:
        """The signed-in user's profile (``GET /api/my_profile/``): proves the site is Codabench and the
        token good."""
        return self.http.json("GET", "api/my_profile/", "checking who you are on the site")

    def upload(self, bundle: Path, progress: Progress | None = None,
               status: Callable[[str], None] | None = None, **polling) -> Uploaded:
        """Upload a competition bundle as the upload page does, and wait for the site to unpack it."""
        return upload_bundle(self.http, Path(bundle), progress, status, **polling)

    def competition(self, competition_id: int) -> dict:
        return self.http.json("GET", f"api/competitions/{competition_id}/", f"reading competition {competition_id}")

    def phase(self, phase_id: int) -> dict:
        return self.http.json("GET", f"api/phases/{phase_id}/", f"reading phase {phase_id}")

    def fetch(self, phase_id: int, out: Path, say: Callable[[str], None] = _quiet,
              progress: Callable[[str], Progress] | None = None) -> dict:
        """Every submission of a phase into out (resumable; out new, or the fetch of this phase of this
        site); the manifest."""
        return PhaseFetch(self.http, phase_id, Path(out), say, progress).run()

    def fetch_competition(self, competition_id: int, out: Path, say: Callable[[str], None] = _quiet,
                          progress: Callable[[str], Progress] | None = None) -> Iterator[tuple[int, Path, dict]]:
        """Every phase of a competition, each into out/phase-<id>/: (phase id, folder, manifest) as each
        ends."""
        return fetch_competition(self.http, competition_id, Path(out), say, progress)

    def leaderboard(self, phase_id: int, competition_id: int | None = None) -> Leaderboard:
        """The phase's leaderboard: exact values from the results export when the caller may read it,
        else the public rounded ones."""
        return read_leaderboard(self.http, phase_id, competition_id)

    def rerun(self, phase_id: int | None = None, submission_ids: tuple[int, ...] = ()) -> list[int]:
        """Ask the platform to run again a phase's submissions or the ones named; the new ids."""
        if phase_id is not None:
            return rerun_phase(self.http, phase_id)
        return [rerun_submission(self.http, submission_id) for submission_id in submission_ids]

    def wait(self, submission_ids: list[int], say: Callable[[str], None] = _quiet,
             timeout: float = 3600.0, poll: float = 5.0) -> dict[int, str]:
        """Each submission's state once every one is final (PlatformTimeout after timeout seconds)."""
        return wait_for_states(self.http, submission_ids, say, timeout, poll)
