"""codascore.platform without a Codabench site: the fault mapping of its one HTTP door against a tiny
local http.server that fails on purpose (a 500, an HTML page, a hang, a cut transfer, a stopped server),
what a fetch keeps on resuming (the manifest's records against the bytes on disk), the token's sources,
and the judge's flag of a submission made after its phase's end. The real site's tests are in
tests/test_platform_site.py (marker codabench)."""

from __future__ import annotations

import csv
import hashlib
import http.server
import json
import socket
import threading
import time
import zipfile
from pathlib import Path

import pytest

from codascore import cli
from codascore.checker.schema import Finding
from codascore.commands.platform import covering_findings
from codascore.errors import (NotCodabenchError, PlatformAuthError, PlatformRequestError, PlatformServerError,
                              PlatformTimeout, SiteUnreachable, TransferInterrupted, UsageError)
from codascore.formats.atomic import write_csv_atomic, write_json_atomic
from codascore.formats.fetch import NOTES
from codascore.judge.teams import read_teams
from codascore.outcomes import ExitCode, exit_code_of_error
from codascore.platform import _auth
from codascore.platform._http import Http
from codascore.platform._manifest import choose_team_submission, is_late, reusable

BODY = bytes(range(256)) * 40


class Handler(http.server.BaseHTTPRequestHandler):
    """Answers by path: /json, /500, /html, /hang, /cut (a Content-Length it does not keep), /file, /403,
    /404, /flaky (500 once, then JSON), /token (DRF's obtain_auth_token); records every request."""

    def log_message(self, *args):
        pass

    def answer(self, status: int, body: bytes, kind: str = "application/json", length: int | None = None):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        self.wfile.write(body)

    def handle_any(self):
        server = self.server
        size = int(self.headers.get("Content-Length") or 0)
        payload = self.rfile.read(size) if size else b""
        server.seen.append((self.command, self.path, self.headers.get("Authorization"), payload))
        path = self.path.split("?")[0]
        if path == "/500":
            self.answer(500, b'{"detail": "boom"}')
        elif path == "/html":
            self.answer(200, b"<html><body>Directory listing</body></html>", "text/html")
        elif path == "/hang":
            time.sleep(3)
            self.answer(200, b"{}")
        elif path == "/cut":
            self.answer(200, BODY[:1000], "application/zip", length=len(BODY))
        elif path == "/file":
            self.answer(200, BODY, "application/zip")
        elif path == "/403":
            self.answer(403, b'{"detail": "Invalid token."}')
        elif path == "/404":
            self.answer(404, b'{"detail": "Not found."}')
        elif path == "/404html":
            self.answer(404, b"<html>nothing here</html>", "text/html")
        elif path == "/flaky":
            server.flaky += 1
            self.answer(500, b"{}") if server.flaky == 1 else self.answer(200, b'{"ok": true}')
        elif path == "/api/api-token-auth/":
            good = json.loads(payload) == {"username": "ann", "password": "secret"}
            self.answer(200 if good else 400, b'{"token": "t0k"}' if good else
                        b'{"non_field_errors": ["Unable to log in with provided credentials."]}')
        else:
            self.answer(200, b'{"ok": true}')

    do_GET = do_POST = do_PUT = handle_any


@pytest.fixture
def server():
    """A local stdlib HTTP server (its base URL, the server with .seen), stopped after the test."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.seen, httpd.flaky = [], 0
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def plain_server(tmp_path):
    """A plain http.server serving a folder: an address that answers, but is no Codabench site."""
    (tmp_path / "index.html").write_text("<html><body>hello</body></html>")
    handler = lambda *args: http.server.SimpleHTTPRequestHandler(*args, directory=str(tmp_path))  # noqa: E731
    http.server.SimpleHTTPRequestHandler.log_message = lambda *args: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("path, kind, code", [
    ("500", PlatformServerError, ExitCode.TRY_AGAIN),
    ("html", NotCodabenchError, ExitCode.INVALID),
    ("404html", NotCodabenchError, ExitCode.INVALID),
    ("hang", PlatformTimeout, ExitCode.TRY_AGAIN),
    ("403", PlatformAuthError, ExitCode.INVALID),
    ("404", PlatformRequestError, ExitCode.INVALID),
])
def test_each_fault_is_one_error_with_its_context_and_exit_code(server, path, kind, code):
    url, _ = server
    http = Http(url, "tok", timeout=0.5, retries=0)
    with pytest.raises(kind) as caught:
        http.json("GET", path, "reading the thing")
    assert exit_code_of_error(caught.value) is code
    text = str(caught.value)
    assert text.startswith("reading the thing: ") and f"{url}/{path}" in text and "\n" not in text


def test_a_stopped_server_is_unreachable_and_the_sites_fault():
    http = Http(f"http://127.0.0.1:{closed_port()}", timeout=1, retries=0)
    with pytest.raises(SiteUnreachable) as caught:
        http.json("GET", "api/my_profile/", "checking who you are")
    assert exit_code_of_error(caught.value) is ExitCode.TRY_AGAIN


def test_a_get_is_retried_after_a_fault_and_a_post_is_not(server):
    url, httpd = server
    assert Http(url, retries=1, backoff=0).json("GET", "flaky", "reading") == {"ok": True}
    assert [seen[:2] for seen in httpd.seen] == [("GET", "/flaky"), ("GET", "/flaky")]
    httpd.seen.clear()
    httpd.flaky = 0
    with pytest.raises(PlatformServerError):
        Http(url, retries=3, backoff=0).json("POST", "flaky", "creating", {"a": 1})
    assert len(httpd.seen) == 1


def test_a_cut_download_leaves_nothing_under_its_name(server, tmp_path):
    url, httpd = server
    dest = tmp_path / "submission.zip"
    with pytest.raises(TransferInterrupted) as caught:
        Http(url, retries=1, backoff=0).download(f"{url}/cut", dest, "fetching submission.zip")
    assert exit_code_of_error(caught.value) is ExitCode.TRY_AGAIN
    assert list(tmp_path.iterdir()) == []  # no ETag: its .part could not be resumed by another fetch
    # the first cut brought bytes: asked again for the rest at once, no retry spent; this server answers 200
    # (the file from byte 0) and cuts again at the same byte: no progress, a retry spent; then the last
    assert len(httpd.seen) == 3


def test_a_download_gives_the_bytes_their_size_and_sha256(server, tmp_path):
    url, _ = server
    seen = []
    size, sha256 = Http(url).download(f"{url}/file", tmp_path / "f.zip", "fetching", lambda d, t: seen.append((d, t)))
    assert (tmp_path / "f.zip").read_bytes() == BODY
    assert (size, sha256) == (len(BODY), hashlib.sha256(BODY).hexdigest())
    assert seen[-1] == (len(BODY), len(BODY))


def test_the_token_goes_to_the_site_only(server, tmp_path):
    url, httpd = server
    other = Http(f"http://localhost:{httpd.server_address[1]}", "secret-token")  # another origin's name
    other.json("GET", "api/x/", "reading")
    other.download(f"{url}/file", tmp_path / "f", "fetching")  # a presigned storage address
    assert [seen[2] for seen in httpd.seen] == ["Token secret-token", None]


def test_an_upload_streams_the_file_without_the_token(server, tmp_path):
    url, httpd = server
    bundle = tmp_path / "b.zip"
    bundle.write_bytes(BODY)
    done = []
    Http(f"http://localhost:{httpd.server_address[1]}", "tok").put_file(f"{url}/put", bundle, "uploading",
                                                                        lambda d, t: done.append(d))
    method, _, auth, payload = httpd.seen[0]
    assert (method, auth, payload, done[-1]) == ("PUT", None, BODY, len(BODY))


def test_the_token_comes_from_a_file_a_password_or_the_environment(server, tmp_path):
    url, _ = server
    http = Http(url)
    token_file = tmp_path / "token"
    token_file.write_text("\n  file-token \n")
    assert _auth.find_token(http, token_file=str(token_file), environ={}) == "file-token"
    assert _auth.find_token(http, username="ann", environ={"CODABENCH_PASSWORD": "secret"}) == "t0k"
    assert _auth.find_token(http, username="ann", environ={}, ask=lambda prompt: "secret") == "t0k"
    assert _auth.find_token(http, environ={"CODABENCH_TOKEN": "env-token"}) == "env-token"
    assert _auth.find_token(http, environ={}) is None
    with pytest.raises(PlatformAuthError, match="Unable to log in"):
        _auth.find_token(http, username="ann", password="wrong", environ={})
    with pytest.raises(UsageError):
        _auth.find_token(http, token_file=str(token_file), username="ann", environ={})
    token_file.write_text("")
    with pytest.raises(UsageError, match="empty"):
        _auth.find_token(http, token_file=str(token_file), environ={})


def test_the_command_line_tells_a_fault_in_one_line(plain_server, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("CODABENCH_TOKEN", "tok")
    out = tmp_path / "out"
    assert cli.main(["fetch", "--site", f"http://127.0.0.1:{closed_port()}", "--phase", "1", str(out)]) == 75
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "nothing answers" in err[0]
    for verb in (["site-leaderboard", "--phase", "1"], ["fetch", "--phase", "1", str(out)], ["rerun", "--phase", "1"]):
        assert cli.main([*verb, "--site", plain_server]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "Codabench site" in err[0], err
    assert not out.exists() or list(out.iterdir()) == []


# --------------------------------------------------------------------------- resume and the manifest

def test_a_file_is_kept_only_when_final_unchanged_and_intact(tmp_path):
    data = b"submission bytes"
    (tmp_path / "submission.zip").write_bytes(data)
    record = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    old = {"status": "Finished", "files": {"submission.zip": record}}
    assert reusable(old, "Finished", "submission.zip", tmp_path) == record
    assert reusable(old, "Running", "submission.zip", tmp_path) is None  # the state changed since
    assert reusable({**old, "status": "Running"}, "Running", "submission.zip", tmp_path) is None  # not final
    assert reusable(old, "Finished", "other.zip", tmp_path) is None
    assert reusable(None, "Finished", "submission.zip", tmp_path) is None
    (tmp_path / "submission.zip").write_bytes(b"submission bytez")  # same size, other bytes
    assert reusable(old, "Finished", "submission.zip", tmp_path) is None
    (tmp_path / "submission.zip").write_bytes(data[:-1])
    assert reusable(old, "Finished", "submission.zip", tmp_path) is None


def test_a_submission_after_the_phase_end_is_late():
    assert is_late("2026-03-02T10:00:01.5Z", "2026-03-02T10:00:00Z")
    assert not is_late("2026-03-02T09:59:59Z", "2026-03-02T10:00:00+00:00")
    assert is_late("2026-03-02T11:30:00+01:00", "2026-03-02T10:00:00Z")
    assert not is_late("2026-03-02T10:00:01Z", None)  # a phase without an end never closes


def test_the_judge_gets_the_leaderboard_submission_else_the_latest_in_time():
    def record(id, when, late=False, board=False, parent=None, fetched=True):
        return {"id": id, "created_when": when, "late": late, "on_leaderboard": board, "parent": parent,
                "files": {"submission.zip": {}} if fetched else {}}

    records = [record(1, "2026-01-01"), record(2, "2026-01-03"), record(3, "2026-01-05", late=True),
               record(4, "2026-01-04", parent=2), record(5, "2026-01-04", fetched=False)]
    assert choose_team_submission(records)[0]["id"] == 2
    assert choose_team_submission(records + [record(6, "2025-12-01", board=True)])[0]["id"] == 6
    assert choose_team_submission([records[2]])[0]["id"] == 3
    assert choose_team_submission([records[3], records[4]])[0] is None


def test_the_judge_flags_a_submission_made_after_the_end(tmp_path):
    for team in ("early", "late"):
        with zipfile.ZipFile(tmp_path / f"{team}.zip", "w") as archive:
            archive.writestr("answer.txt", team)
    write_json_atomic(tmp_path / NOTES, {
        "early": {"submission": 1, "created_when": "2026-01-01T00:00:00Z", "late": False, "phase_end": "2026-02-01"},
        "late": {"submission": 2, "created_when": "2026-02-03T00:00:00Z", "late": True, "phase_end": "2026-02-01"}})
    teams, skipped = read_teams(tmp_path)
    flags = {team.name: team.flags for team in teams}
    assert skipped == [] and flags["early"] == ()
    (flag,) = flags["late"]
    assert "submission 2" in flag and "after the phase's end" in flag


def test_the_platforms_unpacking_error_finds_the_checkers_rule():
    findings = [Finding(3, "pages", "absent: the unpacker fails with \"'NoneType' object is not iterable\"",
                        platform=True),
                Finding(10, "phases[0].tasks[0]", "unknown task index 0 (tasks define [])", platform=True),
                Finding(6, "tasks", "No tasks listed in this competition", platform=True)]
    details = "Unpacking the bundle failed. Here is the error log: 'NoneType' object is not iterable"
    assert [f.rule for f in covering_findings(details, findings)] == [3]
    assert [f.rule for f in covering_findings("No tasks listed in this competition", findings)] == [6]
    assert covering_findings("Something else entirely went wrong here", findings) == []


def test_an_atomic_csv_is_whole_or_absent(tmp_path):
    path = tmp_path / "board.csv"
    write_csv_atomic(path, ["a", "b"], [{"a": 1}, {"a": 2, "b": 3}])
    assert list(csv.reader(path.open())) == [["a", "b"], ["1", ""], ["2", "3"]]
    assert [p.name for p in tmp_path.iterdir()] == ["board.csv"]


def test_upload_refuses_a_failing_bundle_before_any_request(tmp_path, capsys, monkeypatch):
    bundle = tmp_path / "bad.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        archive.writestr("competition.yaml", "title: x\nversion: 2\nphases:\n  - name: p\n    tasks: [0]\n")
    monkeypatch.setenv("CODABENCH_TOKEN", "tok")
    code = cli.main(["upload", str(bundle), "--site", f"http://127.0.0.1:{closed_port()}"])
    err = capsys.readouterr().err
    assert code == 1 and "not uploaded" in err and "ERROR [rule" in err and "nothing answers" not in err


def test_why_a_file_is_not_available():
    from codascore.platform._fetch import missing_reason

    finished, phase = {"status": "Finished"}, {"hide_output": False, "hide_score_output": True}
    assert "hide_score_output" in missing_reason("scoring_result", finished, phase)
    assert "status Failed" in missing_reason("prediction_result", {"status": "Failed"}, {})
    assert "7, 8" in missing_reason("scoring_result", {"has_children": True, "children": [7, 8]}, {})
    assert "deleted" in missing_reason("data_file", {"has_children": True}, phase)
