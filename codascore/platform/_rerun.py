"""Submissions run again by the platform, for a competition's organisers, through the two endpoints that
check the caller's rights before re-running anything (docs/end_of_competition.md#running-submissions-again):

- ``POST /api/submissions/<id>/re_run_submission/``: the competition's organisers, collaborators and the
  site's admins only (its ``has_admin_permission``), a finished, failed or cancelled submission only; the
  answer names the new submission;
- ``GET /api/phases/<id>/rerun_submissions/``: every top-level submission of the phase, for the
  competition's organisers (within the site's RERUN_SUBMISSION_LIMIT on the public queue) and the site's
  admins; the answer gives their number.

Not ``POST /api/submissions/re_run_many_submissions/``: in the platform's code its check of the caller's
rights builds a ValidationError without raising it, so anyone signed in could re-run anyone's submissions.
"""

from __future__ import annotations

import time
from typing import Callable

from ..errors import PlatformTimeout
from ._fetch import list_submissions
from ._manifest import FINAL_STATES
from ._http import Http

#: Seconds between two looks at the new submissions' states.
POLL_SECONDS = 5.0


def rerun_submission(http: Http, submission_id: int) -> int:
    """Ask the platform to run a submission again; the new submission's id."""
    answer = http.json("POST", f"api/submissions/{submission_id}/re_run_submission/",
                       f"re-running submission {submission_id}")
    return int(answer["id"])


def rerun_phase(http: Http, phase_id: int) -> list[int]:
    """Ask the platform to run every top-level submission of a phase again; the new submissions' ids (those
    of the phase's list that were not there before)."""
    before = {s["id"] for s in list_submissions(http, phase_id)}
    answer = http.json("GET", f"api/phases/{phase_id}/rerun_submissions/", f"re-running phase {phase_id}")
    after = list_submissions(http, phase_id)
    new = sorted(s["id"] for s in after if s["id"] not in before and s.get("parent") is None)
    count = int((answer or {}).get("count", len(new)))
    if count != len(new):  # another run started meanwhile, or children listed: say what is known
        new = new[-count:] if count else []
    return new


def wait_for_states(http: Http, ids: list[int], say: Callable[[str], None], timeout: float,
                    poll: float = POLL_SECONDS) -> dict[int, str]:
    """Each submission's state, polled until every one is final (Finished, Failed, Cancelled); each change
    said. PlatformTimeout naming those still running after timeout seconds (0: look once, do not wait)."""
    started, states = time.monotonic(), {}
    while True:
        for submission_id in ids:
            answer = http.json("GET", f"api/submissions/{submission_id}/", f"reading submission {submission_id}")
            state = str(answer.get("status"))
            if states.get(submission_id) != state:
                say(f"submission {submission_id}: {state}")
            states[submission_id] = state
        running = [i for i in ids if states[i] not in FINAL_STATES]
        if not running or timeout == 0:
            return states
        if time.monotonic() - started > timeout:
            raise PlatformTimeout(f"after {timeout:.0f} s, submission(s) {', '.join(map(str, running))} still "
                                  f"{', '.join(sorted({states[i] for i in running}))}: the platform goes on; look "
                                  "again later", http.url("api/submissions/"), "waiting for the re-runs")
        time.sleep(poll)
