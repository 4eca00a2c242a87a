"""codascore fetch against a small stand-in of a Codabench API on http.server (no real site; seconds): the
transfers (a cut file resumed with Range, a 200 starting it again, another object's bytes refused, 429 and
503 waited for as Retry-After asks, one kept connection per host) and the folder (one fetch per folder, its
lock, a team whose submission disappeared, the placeholders of a step that did not run, the verified files
kept through a kill during their re-check). The real site's tests of the same points are in
tests/test_platform_site.py (marker codabench)."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import re
import signal
import subprocess
import sys
import threading
import zipfile
from io import BytesIO
from pathlib import Path

import pytest

from codascore import cli
from codascore.errors import FetchFolderBusy, PlatformThrottled, TransferInterrupted
from codascore.formats.fetch import LOCK, part_path
from codascore.judge.teams import read_teams
from codascore.outcomes import ExitCode, exit_code_of_error
from codascore.platform import Site, _http
from codascore.platform._folder import holding
from codascore.platform._http import Http

REPO_ROOT = Path(__file__).resolve().parents[1]


def zip_bytes(text: str | bytes) -> bytes:
    buffer = BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("answer.txt", text)
    return buffer.getvalue()


#: A submission over three chunks, that does not compress.
BIG = zip_bytes(os.urandom(3 * _http.CHUNK + 12345))


class FakeSite(http.server.BaseHTTPRequestHandler):
    """The API calls fetch makes (a phase, its submissions, each one's get_details) and the files they name,
    on HTTP/1.1 with kept connections. Files honour Range and carry an ETag (the md5 of their bytes). Faults,
    set on the server: ``cut`` {path: bytes} sends that many bytes of the next answer and closes; ``busy``
    {path: [status, ...]} answers each status (with Retry-After ``wait``) before the file; ``ignore_range``
    answers 200 to every Range."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status: int, body: bytes, headers: dict | None = None, send: int | None = None):
        self.send_response(status)
        for key, value in {"Content-Length": str(len(body)), **(headers or {})}.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body if send is None else body[:send])
        if send is not None:
            self.wfile.flush()
            self.close_connection = True

    def do_GET(self):
        server, path = self.server, self.path.split("?")[0]
        server.seen.append((path, self.headers.get("Range"), self.client_address[1]))
        if path.startswith("/files/"):
            return self.file(path)
        found = re.fullmatch(r"/api/submissions/(\d+)/get_details/", path)
        if path == "/api/phases/1/":
            body = {"id": 1, "name": "p", "start": "2026-01-01T00:00:00Z", "end": None}
        elif path == "/api/competitions/1/":
            body = {"id": 1, "title": "c", "phases": [{"id": 1, "name": "p"}]}
        elif path == "/api/submissions/":
            body = [{k: v for k, v in s.items() if k != "files"} for s in server.submissions]
        elif found:
            submission = next(s for s in server.submissions if s["id"] == int(found.group(1)))
            body = {key: f"{server.url}/files/{submission['id']}/{name}" if name in submission["files"] else None
                    for key, name in (("data_file", "submission.zip"), ("prediction_result", "prediction_result.zip"),
                                      ("scoring_result", "scoring_result.zip"), ("detailed_result", "x.html"))}
            body["logs"] = []
        else:
            return self.reply(404, b'{"detail": "Not found."}')
        self.reply(200, json.dumps(body).encode(), {"Content-Type": "application/json"})

    def file(self, path: str):
        server = self.server
        _, _, number, name = path.split("/")
        data = next(s for s in server.submissions if s["id"] == int(number))["files"][name]
        waiting = server.busy.get(path) or []
        if waiting:
            return self.reply(waiting.pop(0), b'{"detail": "slow down"}', {"Retry-After": str(server.wait)})
        headers = {"ETag": '"%s"' % hashlib.md5(data).hexdigest()}
        asked = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
        status, body = 200, data
        if asked and not server.ignore_range:
            start = int(asked.group(1))
            status, body = 206, data[start:]
            headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
        send = server.cut.pop(path, None)
        server.sent.setdefault(path, []).append(len(body) if send is None else min(send, len(body)))
        self.reply(status, body, headers, send=send)


@pytest.fixture
def site():
    """The stand-in site: two teams, a submission each (one a big file), both Finished."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeSite)
    httpd.daemon_threads = True
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.seen, httpd.sent, httpd.cut, httpd.busy, httpd.wait, httpd.ignore_range = [], {}, {}, {}, 2, False
    httpd.submissions = [
        submission(1, "ann", {"submission.zip": zip_bytes("ann"), "prediction_result.zip": zip_bytes("p"),
                              "scoring_result.zip": zip_bytes("s")}),
        submission(2, "bob", {"submission.zip": BIG, "prediction_result.zip": zip_bytes("q"),
                              "scoring_result.zip": zip_bytes("t")})]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def submission(number: int, owner: str, files: dict, status: str = "Finished") -> dict:
    return {"id": number, "owner": owner, "status": status, "created_when": f"2026-01-0{number}T00:00:00Z",
            "parent": None, "children": [], "on_leaderboard": False, "scores": [], "files": files}


@pytest.fixture
def waits(monkeypatch):
    """Every wait of the client, recorded instead of slept."""
    seen: list[float] = []
    monkeypatch.setattr(_http, "sleep", seen.append)
    return seen


def fetch(site, out: Path, capsys, monkeypatch, phase: int = 1, url: str | None = None) -> tuple[int, str]:
    monkeypatch.setenv("CODABENCH_TOKEN", "tok")
    capsys.readouterr()
    code = cli.main(["fetch", "--site", url or site.url, "--phase", str(phase), str(out)])
    return code, capsys.readouterr().err


def file_gets(site) -> list[tuple[str, str | None]]:
    return [(path, asked) for path, asked, _ in site.seen if path.startswith("/files/")]


# --------------------------------------------------------------------------- transfers

def test_a_cut_file_is_resumed_from_its_last_byte_without_spending_a_retry(site, tmp_path, waits):
    path = "/files/2/submission.zip"
    site.cut[path] = len(BIG) // 3
    size, sha256 = Http(site.url, retries=0).download(site.url + path, tmp_path / "big.zip", "fetching")
    assert (size, sha256) == (len(BIG), hashlib.sha256(BIG).hexdigest())
    assert (tmp_path / "big.zip").read_bytes() == BIG and not part_path(tmp_path / "big.zip").exists()
    assert file_gets(site) == [(path, None), (path, f"bytes={len(BIG) // 3}-")]
    assert site.sent[path] == [len(BIG) // 3, len(BIG) - len(BIG) // 3]  # after the cut: the rest, no more
    assert waits == []


def test_a_200_to_a_range_starts_the_file_again(site, tmp_path, waits):
    path = "/files/2/submission.zip"
    site.cut[path], site.ignore_range = 1000, True
    size, _ = Http(site.url, retries=0).download(site.url + path, tmp_path / "big.zip", "fetching")
    assert size == len(BIG) and (tmp_path / "big.zip").read_bytes() == BIG
    assert [asked for _, asked in file_gets(site)] == [None, "bytes=1000-"]


def test_a_part_of_another_object_is_not_resumed(site, tmp_path):
    """A .part left by an earlier fetch is resumed only while the object has the ETag it was started from."""
    path, dest = "/files/2/submission.zip", tmp_path / "big.zip"
    etag = '"%s"' % hashlib.md5(BIG).hexdigest()
    part_path(dest).write_bytes(BIG[:5000])
    Http(site.url).download(site.url + path, dest, "fetching", validator=etag)
    part_path(dest).write_bytes(b"x" * 5000)  # the bytes of another object
    Http(site.url).download(site.url + path, dest, "fetching", validator='"another"')
    part_path(dest).write_bytes(BIG[:5000])
    Http(site.url).download(site.url + path, dest, "fetching", validator=None)
    assert [asked for _, asked in file_gets(site)] == ["bytes=5000-", "bytes=5000-", None, None]
    assert dest.read_bytes() == BIG


def test_429_and_503_are_waited_for_as_retry_after_asks(site, tmp_path, waits):
    path = "/files/1/submission.zip"
    site.busy[path] = [429, 503]
    said: list[str] = []
    Http(site.url, retries=0, say=said.append).download(site.url + path, tmp_path / "a.zip", "fetching a")
    assert waits == [2, 2] and (tmp_path / "a.zip").read_bytes() == zip_bytes("ann")
    assert said == ["    waiting 2 s: the site answered HTTP 429 (fetching a)",
                    "    waiting 2 s: the site answered HTTP 503 (fetching a)"]


def test_a_wait_longer_than_the_cap_is_told_not_waited(site, tmp_path, waits):
    path = "/files/1/submission.zip"
    site.busy[path], site.wait = [429], 3600
    with pytest.raises(PlatformThrottled) as caught:
        Http(site.url).download(site.url + path, tmp_path / "a.zip", "fetching a")
    assert waits == [] and caught.value.status == 429 and caught.value.retry_after == 3600
    assert "asks to wait 3600 s" in str(caught.value) and exit_code_of_error(caught.value) is ExitCode.TRY_AGAIN
    assert list(tmp_path.iterdir()) == []


def test_every_wait_is_capped_and_counted(site, tmp_path, waits):
    path = "/files/1/submission.zip"
    site.busy[path] = [429] * (_http.WAITS + 1)
    with pytest.raises(PlatformThrottled):
        Http(site.url).download(site.url + path, tmp_path / "a.zip", "fetching a")
    assert waits == [2] * _http.WAITS


def test_a_cut_with_no_byte_spends_a_retry_and_the_error_keeps_the_part_only_when_resumable(site, tmp_path, waits):
    path = "/files/2/submission.zip"
    site.cut[path] = 0
    with pytest.raises(TransferInterrupted):
        Http(site.url, retries=0).download(site.url + path, tmp_path / "big.zip", "fetching")
    assert list(tmp_path.iterdir()) == []


def test_one_connection_serves_every_request_to_a_host(site, tmp_path):
    http = Site(site.url, "tok").http
    for _ in range(3):
        http.json("GET", "api/phases/1/", "reading")
    http.download(site.url + "/files/2/submission.zip", tmp_path / "big.zip", "fetching")
    http.json("GET", "api/submissions/", "listing")
    assert http.opened == 1 and http.sent == 5
    assert len({port for _, _, port in site.seen}) == 1


def test_a_kept_connection_the_server_closed_is_replaced(site, tmp_path):
    http = Http(site.url)
    http.json("GET", "api/phases/1/", "reading")
    for connection in http.connections.values():  # as a server closing an idle connection does
        connection.sock.shutdown(2)
    assert http.json("GET", "api/phases/1/", "reading")["id"] == 1
    assert http.opened == 2


# --------------------------------------------------------------------------- the folder

def test_a_second_fetch_keeps_every_file_and_leaves_no_part(site, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    assert fetch(site, out, capsys, monkeypatch)[0] == 0
    before = len(file_gets(site))
    code, err = fetch(site, out, capsys, monkeypatch)
    assert code == 0 and len(file_gets(site)) == before and err.count("already here, intact") == 6
    assert not [p for p in out.rglob("*") if p.name.endswith(".part")]
    assert (out / "teams" / "bob.zip").read_bytes() == BIG


def test_a_folder_of_another_phase_or_site_or_other_files_is_refused(site, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    assert fetch(site, out, capsys, monkeypatch)[0] == 0
    seen = len(site.seen)
    code, err = fetch(site, out, capsys, monkeypatch, phase=2)
    assert code == ExitCode.INVALID and err.count("\n") == 1
    assert f"holds the fetch of phase 1 of {site.url}, not the fetch of phase 2" in err
    code, err = fetch(site, out, capsys, monkeypatch, url=site.url.replace("127.0.0.1", "localhost"))
    assert code == ExitCode.INVALID and "holds the fetch of phase 1" in err
    code, err = fetch(site, out, capsys, monkeypatch, url=site.url + "/other")
    assert code == ExitCode.INVALID and "holds the fetch of phase 1" in err
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    code, err = fetch(site, tmp_path / "mine", capsys, monkeypatch)
    assert code == ExitCode.INVALID and "holds files that are no codascore fetch (notes.txt)" in err
    assert len(site.seen) == seen  # refused before any request
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["notes.txt"]


def test_a_competitions_fetch_is_a_folder_of_its_own(site, tmp_path, capsys, monkeypatch):
    out = tmp_path / "all"
    monkeypatch.setenv("CODABENCH_TOKEN", "tok")
    assert cli.main(["fetch", "--site", site.url, "--competition", "1", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == [LOCK, "competition.json", "phase-1"]
    assert (out / "phase-1" / "teams" / "ann.zip").is_file()
    assert cli.main(["fetch", "--site", site.url, "--competition", "1", str(out)]) == 0  # again: its own
    code, err = fetch(site, out, capsys, monkeypatch)
    assert code == ExitCode.INVALID
    assert f"holds the fetch of competition 1 of {site.url}, not the fetch of phase 1" in err
    capsys.readouterr()
    assert cli.main(["fetch", "--site", site.url, "--competition", "1", str(out / "phase-1")]) == ExitCode.INVALID
    assert "holds the fetch of phase 1" in capsys.readouterr().err


def test_a_team_whose_submission_disappeared_is_removed_from_teams_and_said(site, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    assert fetch(site, out, capsys, monkeypatch)[0] == 0
    assert sorted(team.name for team in read_teams(out / "teams")[0]) == ["ann", "bob"]
    site.submissions = site.submissions[:1]
    code, err = fetch(site, out, capsys, monkeypatch)
    assert code == 0
    assert "team bob: its submission 2 is no longer listed by the site; teams/bob.zip removed" in err
    assert [team.name for team in read_teams(out / "teams")[0]] == ["ann"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert list(manifest["teams"]) == ["ann"] and list(manifest["submissions"]) == ["1"]
    assert manifest["gone"] == {"2": {"team": "bob", "folder": "submissions/bob/2",
                                      "why": "the site no longer lists it"}}
    assert (out / "submissions" / "bob" / "2" / "submission.zip").read_bytes() == BIG  # kept, said where


def test_a_second_fetch_while_one_runs_is_refused_and_a_dead_ones_lock_is_taken(site, tmp_path, capsys,
                                                                                  monkeypatch):
    out = tmp_path / "out"
    with holding(out):
        code, err = fetch(site, out, capsys, monkeypatch)
        assert code == ExitCode.TRY_AGAIN and err.count("\n") == 1
        assert f"another fetch is writing into this folder (pid {os.getpid()} on " in err
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom codascore.platform._folder import holding"
                               "\nwith holding(sys.argv[1]):\n    print('held', flush=True)\n    time.sleep(600)",
                               str(out)], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(FetchFolderBusy):
            Site(site.url, "tok").fetch(1, out)
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    assert fetch(site, out, capsys, monkeypatch)[0] == 0  # the killed holder's lock is taken
    assert (out / LOCK).exists() and (out / "teams" / "ann.zip").is_file()


def test_an_empty_result_of_a_step_that_did_not_run_is_not_available(site, tmp_path, capsys, monkeypatch):
    site.submissions = [submission(3, "cat", {"submission.zip": zip_bytes("c"), "prediction_result.zip": b"",
                                              "scoring_result.zip": b""}, status="Failed")]
    out = tmp_path / "out"
    assert fetch(site, out, capsys, monkeypatch)[0] == 0
    record = json.loads((out / "manifest.json").read_text())["submissions"]["3"]
    assert sorted(record["files"]) == ["submission.zip"]
    assert record["missing"]["scoring_result.zip"] == ("the platform keeps an empty placeholder (0 bytes, not a "
                                                      "zip): the scoring step did not run or left nothing (status "
                                                      "Failed)")
    assert "prediction step did not run" in record["missing"]["prediction_result.zip"]
    assert "scoring step did not run" in record["missing"]["details.json"]
    assert not (out / "submissions" / "cat" / "3" / "scoring_result.zip").exists()


def test_a_kill_during_the_recheck_forgets_no_verified_file(site, tmp_path, capsys, monkeypatch):
    """The second fetch dies (as a SIGKILL would leave it: nothing after) while it re-checks bob's files; the
    manifest still lists every file, and the next fetch downloads none of them again."""
    from codascore.platform import _fetch

    out = tmp_path / "out"
    assert fetch(site, out, capsys, monkeypatch)[0] == 0
    listed = json.loads((out / "manifest.json").read_text())["submissions"]
    real, checked = _fetch.reusable, []

    def dies(old, status, name, folder):
        checked.append(name)
        if len(checked) == 5:  # bob's second file
            raise SystemExit("killed")
        return real(old, status, name, folder)

    monkeypatch.setattr(_fetch, "reusable", dies)
    with pytest.raises(SystemExit):
        Site(site.url, "tok").fetch(1, out)
    assert {k: r["files"] for k, r in json.loads((out / "manifest.json").read_text())["submissions"].items()} == \
        {k: r["files"] for k, r in listed.items()}
    monkeypatch.setattr(_fetch, "reusable", real)
    before = len(file_gets(site))
    code, err = fetch(site, out, capsys, monkeypatch)
    assert code == 0 and len(file_gets(site)) == before and err.count("already here, intact") == 6


def test_a_killed_download_is_resumed_by_the_next_fetch(site, tmp_path, capsys, monkeypatch):
    """bob's big file cut half-way, and the fetch stopped (Ctrl-C) before it asked for the rest: its .part
    kept, the object's ETag in the manifest; the next fetch asks for the rest only."""
    out, path = tmp_path / "out", "/files/2/submission.zip"
    site.cut[path] = len(BIG) // 2
    real, calls = _http.Download.attempt, []

    def attempt(self):
        calls.append(self.url)
        if self.url.endswith(path) and calls.count(self.url) == 2:
            raise KeyboardInterrupt
        return real(self)

    monkeypatch.setattr(_http.Download, "attempt", attempt)
    assert fetch(site, out, capsys, monkeypatch)[0] == ExitCode.INTERRUPTED
    folder = out / "submissions" / "bob" / "2"
    assert part_path(folder / "submission.zip").stat().st_size == len(BIG) // 2
    assert not (folder / "submission.zip").exists()
    record = json.loads((out / "manifest.json").read_text())["submissions"]["2"]
    assert record["partial"] == {"submission.zip": {"etag": '"%s"' % hashlib.md5(BIG).hexdigest(), "size": len(BIG)}}
    monkeypatch.setattr(_http.Download, "attempt", real)
    assert fetch(site, out, capsys, monkeypatch)[0] == 0
    assert [asked for name, asked in file_gets(site) if name == path] == [None, f"bytes={len(BIG) // 2}-"]
    assert site.sent[path] == [len(BIG) // 2, len(BIG) - len(BIG) // 2]
    assert (folder / "submission.zip").read_bytes() == BIG and not part_path(folder / "submission.zip").exists()
    assert json.loads((out / "manifest.json").read_text())["submissions"]["2"]["partial"] == {}


def test_no_token_is_a_usage_error_and_a_site_fault_is_try_again_later(site, tmp_path, capsys, monkeypatch, waits):
    """Two codes a job can tell apart: 2 is never worth trying again as it is, 75 is."""
    monkeypatch.delenv("CODABENCH_TOKEN", raising=False)
    assert cli.main(["fetch", "--site", site.url, "--phase", "1", str(tmp_path / "out")]) == ExitCode.ORGANISER_ERROR
    assert "sign in: set $CODABENCH_TOKEN" in capsys.readouterr().err
    site.busy["/files/1/submission.zip"], site.wait = [503] * 9, 1
    code, err = fetch(site, tmp_path / "out", capsys, monkeypatch)
    assert code == ExitCode.TRY_AGAIN == 75 and "the site failed (HTTP 503" in err
    assert not (tmp_path / "out" / "teams").exists()
