"""codascore's client of a Codabench site (codascore upload, fetch, leaderboard) against the real site of
tests/codabench_site.py (marker codabench, make test-codabench):

- every zip of ``make bundle`` and the platform's own test bundles uploaded with ``codascore upload``, each
  competition read back from the API as its YAML says; a refused bundle shows the platform's own text;
- participants' submissions scored the way the compute worker reports them (tests/test_codabench_site.py's
  ``scored_phase``: real codascore scoring runs), then ``codascore fetch`` gets every file byte-identical to
  what the platform serves, and ``codascore site-leaderboard`` gives those scores, exact for the
  organiser and rounded for a participant;
- a fetch cut by a dropped connection, then resumed: only what was missing is downloaded;
- the faults: a wrong token, a stopped server, a truncated download (a proxy cutting the storage's answers).
"""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import hashlib
import http.server
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("codabench_fixture", reason="the real site's harness (tests/codabench_fixture.py)")

from codabench_fixture import SITE_SCRIPT, codabench_site  # noqa: E402,F401  (the fixture)
from codabench_fixture import http as site_request  # noqa: E402
from test_codabench_site import (BUNDLE_NAMES, SAMPLES, TASK, expected_view, made_bundles,  # noqa: E402,F401
                                 platform_bundle, platform_bundle_names, refused_bundle, scored_phase, scored_runs,
                                 stored_view, yaml_of, zip_sample)

from codascore import cli
from codascore.judge.teams import read_teams
from codascore.platform import _http

pytestmark = pytest.mark.codabench


def run_cli(capsys, monkeypatch, token: str | None, *argv: str) -> tuple[int, str, str]:
    """codascore ARGV in this process with $CODABENCH_TOKEN set to token: exit code, stdout, stderr."""
    if token is None:
        monkeypatch.delenv("CODABENCH_TOKEN", raising=False)
    else:
        monkeypatch.setenv("CODABENCH_TOKEN", token)
    capsys.readouterr()
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------- upload
# codascore upload runs once per zip in the session (codabench_site.upload_bundle_once, shared with
# tests/test_codabench_site.py): these tests read what it printed, and the competition it made.

def check_uploaded(site, bundle: Path) -> None:
    upload = site.upload_bundle_once(bundle)
    assert upload.code == 0, upload.stderr
    found = re.fullmatch(r"competition (\d+): (\S+)\n", upload.stdout)
    assert found and found.group(2) == f"{site.url}/competitions/{found.group(1)}/"
    size = bundle.stat().st_size
    assert "unpacking: Finished" in upload.stderr and f"{size}/{size} bytes" in upload.stderr
    assert stored_view(site, int(found.group(1))) == expected_view(yaml_of(bundle))


@pytest.mark.parametrize("name", platform_bundle_names())
def test_codascore_uploads_the_platforms_own_bundles(codabench_site, tmp_path, name):
    check_uploaded(codabench_site, platform_bundle(name, tmp_path))


@pytest.mark.parametrize("name", BUNDLE_NAMES)
def test_codascore_uploads_every_bundle_of_make_bundle(codabench_site, made_bundles, name):
    check_uploaded(codabench_site, made_bundles / f"{name}.zip")


def test_a_refused_bundle_shows_the_platforms_own_text(codabench_site, tmp_path):
    """The checker refuses it too (no --force: not uploaded); --force sends it, and the platform's text is
    what the user reads."""
    upload = codabench_site.upload_bundle_once(refused_bundle(tmp_path), force=True)
    assert upload.code == 1 and upload.stdout == ""
    assert "the site refused the bundle: HTML pages could not be found in the yaml file" in upload.stderr


# --------------------------------------------------------------------------- fetch and leaderboard

def platform_files(site, submission_id: int) -> dict[str, bytes]:
    """The bytes the platform serves for a submission, under the names fetch gives them."""
    details = site.api("GET", f"submissions/{submission_id}/get_details/", token=site.organiser.token)
    files = {name: site_request("GET", details[key]).body for key, name in (
        ("data_file", "submission.zip"), ("prediction_result", "prediction_result.zip"),
        ("scoring_result", "scoring_result.zip")) if details.get(key)}
    files |= {f"logs/{log['name']}.txt": site_request("GET", log["data_file"]).body for log in details["logs"]}
    return files


def fetch(site, out: Path, phase_id: int, capsys, monkeypatch, token=None) -> tuple[int, str, str]:
    return run_cli(capsys, monkeypatch, token or site.organiser.token, "fetch", "--site", site.url,
                   "--phase", str(phase_id), str(out))


def test_fetch_gets_every_submission_byte_identical(codabench_site, scored_phase, scored_runs, project_data,
                                                    tmp_path, capsys, monkeypatch):
    site, (_, phase_id, submissions) = codabench_site, scored_phase
    code, out, err = fetch(site, tmp_path / "final", phase_id, capsys, monkeypatch)
    assert code == 0, err
    manifest = json.loads((tmp_path / "final" / "manifest.json").read_text())
    for sample, submission in submissions.items():
        record = manifest["submissions"][str(submission["id"])]
        folder = tmp_path / "final" / record["folder"]
        served = platform_files(site, submission["id"])
        assert set(served) <= set(record["files"])
        for name, data in served.items():
            assert (folder / name).read_bytes() == data, name
            assert record["files"][name] == {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        uploaded = zip_sample(project_data / "sample_submissions" / TASK / sample, tmp_path / f"{sample}.zip")
        assert (folder / "submission.zip").read_bytes() == uploaded.read_bytes()
        run_output = scored_runs[sample] / "scoring" / "output"
        for name in ("scores.json", "details.json"):
            assert (folder / name).read_bytes() == (run_output / name).read_bytes()
        assert record["scores"] == {s["column_key"]: s["score"] for s in submission["scores"]}
        end = site.api("GET", f"phases/{phase_id}/", token=site.organiser.token)["end"]
        late = end is not None and when(submission["created_when"]) > when(end)
        assert (record["status"], record["late"]) == ("Finished", late)
        team = tmp_path / "final" / "teams" / f"{record['team']}.zip"
        assert team.read_bytes() == uploaded.read_bytes()
        judged = {t.name: t for t in read_teams(tmp_path / "final" / "teams")[0]}[record["team"]]
        assert bool(judged.flags) == late  # the judge flags what the platform accepted after the end
    assert not list((tmp_path / "final").rglob("*.part"))



def test_fetch_of_a_competition_fetches_each_phase(codabench_site, scored_phase, tmp_path, capsys, monkeypatch):
    site, (competition_id, phase_id, submissions) = codabench_site, scored_phase
    code, out, err = run_cli(capsys, monkeypatch, site.organiser.token, "fetch", "--site", site.url,
                             "--competition", str(competition_id), str(tmp_path / "all"))
    assert code == 0, err
    phases = [p["id"] for p in site.competition(competition_id)["phases"]]
    assert sorted(p.name for p in (tmp_path / "all").iterdir() if p.name.startswith("phase-")) == \
        sorted(f"phase-{i}" for i in phases)
    assert json.loads((tmp_path / "all" / "competition.json").read_text())["competition"]["id"] == competition_id
    for phase in phases:
        manifest = json.loads((tmp_path / "all" / f"phase-{phase}" / "manifest.json").read_text())
        assert manifest["phase"]["id"] == phase
        ids = {int(i) for i in manifest["submissions"]}
        assert ids >= {s["id"] for s in submissions.values()} if phase == phase_id else ids == set()

def when(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_the_leaderboard_gives_the_reported_scores(codabench_site, scored_phase, tmp_path, capsys, monkeypatch):
    site, (_, phase_id, submissions) = codabench_site, scored_phase
    reported = {s["owner"]: {x["column_key"]: x["score"] for x in s["scores"]} for s in submissions.values()}
    board = site.api("GET", f"phases/{phase_id}/get_leaderboard/")
    column = next(c for c in board["tasks"][0]["columns"] if c["key"] == "score")
    name = f"{board['tasks'][0]['name']}({board['tasks'][0]['id']})-{column['title']}"
    for token, values in ((site.organiser.token, "exact"), (site.participants[0].token, "rounded")):
        out = tmp_path / f"{values}.csv"
        code, _, err = run_cli(capsys, monkeypatch, token, "site-leaderboard", "--site", site.url, "--phase",
                               str(phase_id), "--out", str(out))
        assert code == 0 and f"{values} values" in err, err
        rows = list(csv.DictReader(out.open()))
        assert {row["owner"] for row in rows} == set(reported) and {row["values"] for row in rows} == {values}
        for row in rows:
            exact = reported[row["owner"]]["score"]
            shown = exact if values == "exact" else str(round(float(exact), column["precision"]))
            assert row[name] == shown


def test_a_cut_fetch_resumes_with_only_what_is_missing(codabench_site, scored_phase, tmp_path, capsys,
                                                       monkeypatch):
    site, (_, phase_id, _) = codabench_site, scored_phase
    out = tmp_path / "cut"
    downloads, original = [], _http.Http.download

    def counted(self, url, dest, doing, progress=None, **options):
        downloads.append(Path(dest).relative_to(out).as_posix())
        return original(self, url, dest, doing, progress, **options)

    monkeypatch.setattr(_http.Http, "download", counted)
    real_chunk, cut = _http.read_chunk, {"after": 4}

    def dropped(response, url, doing):
        if len(downloads) > cut["after"]:  # the fifth file's connection drops, at every attempt
            raise _http.platform_error(ConnectionResetError("dropped"), url, doing)
        return real_chunk(response, url, doing)

    monkeypatch.setattr(_http, "read_chunk", dropped)
    code, _, err = fetch(site, out, phase_id, capsys, monkeypatch)
    assert code == 75 and "connection was cut" in err.strip().splitlines()[-1]
    kept = json.loads((out / "manifest.json").read_text())
    recorded = [f"{r['folder']}/{name}" for r in kept["submissions"].values() for name, f in r["files"].items()
                if "from" not in f]
    assert len(recorded) == 4 and not list(out.rglob("*.part"))
    cut["after"], first = 10 ** 9, len(downloads)
    code, _, err = fetch(site, out, phase_id, capsys, monkeypatch)
    assert code == 0, err
    again = downloads[first:]
    assert not set(again) & set(recorded)
    manifest = json.loads((out / "manifest.json").read_text())
    every = [f"{r['folder']}/{name}" for r in manifest["submissions"].values() for name, f in r["files"].items()
             if "from" not in f]
    assert sorted(again + recorded) == sorted(every)
    for path in every:
        record = manifest["submissions"][path.split("/")[2]]["files"][path.split("/", 3)[3]]
        assert hashlib.sha256((out / path).read_bytes()).hexdigest() == record["sha256"]



def test_a_fetch_killed_mid_file_resumes(codabench_site, scored_phase, tmp_path):
    """A real kill: codascore fetch in its own process, stalled half-way through its third file by a proxy,
    killed (SIGKILL); then the same command again completes the folder, the two finished files kept."""
    import os
    import signal
    import subprocess
    import sys
    import time

    site, out = codabench_site, tmp_path / "killed"
    proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), StallingProxy)
    proxy.storage_answers, proxy.release, proxy.stalled = 0, threading.Event(), threading.Event()
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    command = [sys.executable, "-m", "codascore", "fetch", "--site", site.url, "--phase", str(scored_phase[1]),
               str(out)]
    env = {**os.environ, "CODABENCH_TOKEN": site.organiser.token, "PYTHONPATH": str(Path(cli.__file__).parents[1])}
    env.pop("no_proxy", None)
    process = subprocess.Popen(command, env={**env, "http_proxy": f"http://127.0.0.1:{proxy.server_address[1]}"},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not (proxy.stalled.is_set() and list(out.rglob("*.part"))) and time.monotonic() < deadline \
                and process.poll() is None:
            time.sleep(0.05)
        assert list(out.rglob("*.part")), "the fetch never stalled mid-file"
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    finally:
        proxy.release.set()
        proxy.shutdown()
        proxy.server_close()
    kept = json.loads((out / "manifest.json").read_text())
    recorded = {f"{r['folder']}/{name}": f for r in kept["submissions"].values() for name, f in r["files"].items()}
    assert len(recorded) == 2  # two whole files; the third only under its .part name
    (part,) = out.rglob("*.part")
    assert not part.with_name(part.name.removesuffix(".part")).exists()
    before = {path: (out / path).stat().st_mtime_ns for path in recorded}
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert {path: (out / path).stat().st_mtime_ns for path in recorded} == before  # kept, not downloaded again
    manifest = json.loads((out / "manifest.json").read_text())
    for record in manifest["submissions"].values():
        for name, entry in record["files"].items():
            assert hashlib.sha256((out / record["folder"] / name).read_bytes()).hexdigest() == entry["sha256"]
    assert not list(out.rglob("*.part"))

# --------------------------------------------------------------------------- faults

def test_a_wrong_token_is_one_line_and_exit_1(codabench_site, tmp_path, capsys, monkeypatch):
    code, _, err = fetch(codabench_site, tmp_path / "x", 1, capsys, monkeypatch, token="0" * 40)
    assert code == 1 and err.count("\n") == 1 and "Invalid token" in err
    assert not (tmp_path / "x").exists()


def test_a_stopped_server_is_one_line_and_exit_75(codabench_site, tmp_path, capsys, monkeypatch):
    """A second site of its own (below build/, where PostgreSQL's user may write), started then stopped."""
    import subprocess
    import sys

    root = Path(codabench_site.root).parent / f"{Path(codabench_site.root).name}-stopped"
    venv = Path(json.loads((Path(codabench_site.root) / "state.json").read_text())["python"]).parent.parent
    started = subprocess.run([sys.executable, str(SITE_SCRIPT), "start", "--dir", str(root), "--venv", str(venv)],
                             capture_output=True, text=True, check=True)  # the session site's environment
    state = json.loads(started.stdout.strip().splitlines()[-1])
    subprocess.run([sys.executable, str(SITE_SCRIPT), "stop", "--dir", str(root)], check=True)
    code, _, err = run_cli(capsys, monkeypatch, state["organiser"]["token"], "fetch", "--site", state["url"],
                           "--phase", "1", str(tmp_path / "x"))
    assert code == 75 and err.count("\n") == 1 and "nothing answers" in err


class CuttingProxy(http.server.BaseHTTPRequestHandler):
    """An HTTP proxy that passes the site's API through and cuts every answer of the storage (the presigned
    addresses: a path under a bucket) after half its bytes; with stall, it then waits (until the test sets
    the server's release) instead of closing."""

    stall = False

    def log_message(self, *args):
        pass

    def cuts(self) -> bool:
        """Whether this answer of the storage is cut."""
        return True

    def do_GET(self):
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
                urllib.request.Request(self.path, headers={k: v for k, v in self.headers.items()
                                                           if k.lower() not in ("host", "proxy-connection")})) as got:
            body, headers = got.read(), got.headers
        cut = "Signature=" in self.path and self.cuts()  # a presigned address (SigV2 or SigV4), not the API
        self.send_response(got.status)  # a 206 to a Range passed on as such
        for key, value in headers.items():
            if key.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[:len(body) // 2] if cut else body)
        self.wfile.flush()
        if cut and self.stall:
            self.server.stalled.set()
            self.server.release.wait(120)
        self.close_connection = True


class StallingProxy(CuttingProxy):
    """The storage's first two answers whole; the third half-sent, then nothing: the fetch stalls mid-file,
    to be killed there."""

    stall = True

    def cuts(self) -> bool:
        self.server.storage_answers += 1
        return self.server.storage_answers > 2


def test_a_truncated_download_is_one_line_exit_75_and_leaves_nothing(codabench_site, scored_phase, tmp_path,
                                                                     capsys, monkeypatch):
    """Every answer of the storage cut at half its bytes: each cut after which bytes came is resumed at once
    (Range), until a cut brings none; then the retries, and the error."""
    proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), CuttingProxy)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy.server_address[1]}")
        monkeypatch.delenv("no_proxy", raising=False)
        code, _, err = fetch(codabench_site, tmp_path / "t", scored_phase[1], capsys, monkeypatch)
    finally:
        proxy.shutdown()
        proxy.server_close()
    assert code == 75 and "the transfer stopped after" in err.strip().splitlines()[-1]
    manifest = json.loads((tmp_path / "t" / "manifest.json").read_text())
    assert all(not record["files"] for record in manifest["submissions"].values())
    assert not [p for p in (tmp_path / "t").rglob("*.zip")]


# --------------------------------------------------------------------------- one folder, one fetch; resumed; waited

class SiteProxy(http.server.BaseHTTPRequestHandler):
    """An HTTP proxy in front of the site and its storage (every request of a fetch passes through it): it
    records each answer of the storage (its path, the Range asked, its status, the bytes sent) in the
    server's ``answers``, and does with each answer what the server's ``plan(path, asked, body, storage)``
    says: None passes it whole; ("stall", n) sends its first n bytes, then nothing until the test releases
    it; ("hold",) sends nothing until then; ("status", code, headers) answers that instead."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        server = self.server
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "proxy-connection")}
        try:
            with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
                    urllib.request.Request(self.path, headers=headers)) as got:
                status, body, answer = got.status, got.read(), dict(got.headers)
        except urllib.error.HTTPError as error:
            status, body, answer = error.code, error.read(), dict(error.headers)
        path, asked = urllib.parse.urlsplit(self.path).path, self.headers.get("Range")
        storage = "Signature=" in self.path
        action = server.plan(path, asked, body, storage) or ("pass",)
        if action[0] == "hold":
            server.held.set()
            server.release.wait(300)
            self.close_connection = True
            return
        if action[0] == "status":
            status, body, answer = action[1], b'{"detail": "Request was throttled."}', action[2]
        sent = action[1] if action[0] == "stall" else len(body)
        self.send_response(status)
        for key, value in answer.items():
            if key.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[:sent])
        self.wfile.flush()
        if storage:
            server.answers.append((path, asked, status, sent))
        if action[0] == "stall":
            server.held.set()
            server.release.wait(300)
        self.close_connection = True


@contextlib.contextmanager
def site_proxy(plan=lambda path, asked, body, storage: None, monkeypatch=None):
    """A SiteProxy running (the environment of this process pointed at it when monkeypatch is given)."""
    proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SiteProxy)
    proxy.daemon_threads = True
    proxy.plan, proxy.answers, proxy.held, proxy.release = plan, [], threading.Event(), threading.Event()
    proxy.url = f"http://127.0.0.1:{proxy.server_address[1]}"
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    if monkeypatch is not None:
        monkeypatch.setenv("http_proxy", proxy.url)
        monkeypatch.delenv("no_proxy", raising=False)
    try:
        yield proxy
    finally:
        proxy.release.set()
        proxy.shutdown()
        proxy.server_close()


def fetch_process(site, out: Path, phase_id: int, proxy=None, *options: str, **popen) -> subprocess.Popen:
    """codascore fetch as its own process (through proxy when given)."""
    env = {**os.environ, "CODABENCH_TOKEN": site.organiser.token, "PYTHONPATH": str(Path(cli.__file__).parents[1])}
    env.pop("no_proxy", None)
    if proxy is not None:
        env["http_proxy"] = proxy.url
    return subprocess.Popen([sys.executable, "-m", "codascore", "fetch", "--site", site.url, "--phase",
                             str(phase_id), str(out), *options], env=env, **popen)


def measured(line: str) -> None:
    """A number of the closing note, printed (pytest -s shows it)."""
    print(f"\nMEASURED {line}")


#: The participant's submission of the big phase: over 100 MiB, in a zip that does not compress.
BIG_SIZE = 101 << 20


@pytest.fixture(scope="module")
def big_phase(codabench_site, tmp_path_factory):
    """The platform's own competition.zip, on its first phase a submission of 101 MiB by the participant and
    a small one by participant2, each run by the worker with a scoring that failed (so the platform keeps
    its empty scoring_result.zip placeholder, and the state is final): (phase id, {owner: submission},
    {owner: its zip})."""
    site, folder = codabench_site, tmp_path_factory.mktemp("big")
    upload = site.upload_bundle_once(platform_bundle("competition.zip", folder))
    assert upload.code == 0, upload.stderr
    competition = site.competition(upload.competition_id)
    phase = min(competition["phases"], key=lambda p: p["index"])
    site.publish(competition["id"])
    output = folder / "output"
    output.mkdir()
    (output / "predictions.txt").write_text("0\n")
    submissions, archives = {}, {}
    for user, size in zip(site.participants, (BIG_SIZE, 1000)):
        assert site.register(competition["id"], user) == "approved"
        archives[user.username] = folder / f"{user.username}.zip"
        with zipfile.ZipFile(archives[user.username], "w", zipfile.ZIP_STORED) as archive:
            archive.writestr("answer.bin", os.urandom(size))
        created = site.submit(competition["id"], phase["id"], archives[user.username], user)
        submissions[user.username] = site.run_as_worker(created["id"], output, output, scoring_exit_code=1)
        assert submissions[user.username]["status"] == "Failed"
    return phase["id"], submissions, archives


def fetched_files(out: Path) -> dict[str, dict]:
    manifest = json.loads((out / "manifest.json").read_text())
    return {f"{r['folder']}/{name}": f for r in manifest["submissions"].values() for name, f in r["files"].items()}


def test_a_fetch_cut_inside_a_100_mib_file_asks_for_the_rest_only(codabench_site, big_phase, tmp_path, capsys,
                                                                  monkeypatch):
    """The stalling proxy sends half the big file, then nothing: the fetch's --timeout ends the wait, and it
    asks for the rest with Range (no byte asked twice), from the same presigned S3 address."""
    site, (phase_id, _, archives) = codabench_site, big_phase
    size = archives["participant"].stat().st_size

    def plan(path, asked, body, storage):
        return ("stall", len(body) // 2) if storage and asked is None and len(body) == size else None

    out = tmp_path / "cut"
    with site_proxy(plan, monkeypatch) as proxy:
        started = time.monotonic()
        code, _, err = run_cli(capsys, monkeypatch, site.organiser.token, "fetch", "--site", site.url, "--phase",
                               str(phase_id), "--timeout", "5", str(out))
        took = time.monotonic() - started
    assert code == 0, err
    (resumed,) = [answer for answer in proxy.answers if answer[1] is not None]
    (first,) = [answer for answer in proxy.answers if answer[0] == resumed[0] and answer[1] is None]
    assert size >= 100 << 20 and first[3] == size // 2
    assert resumed[1:] == (f"bytes={size // 2}-", 206, size - size // 2)  # the rest, and only the rest
    folder = next(p for p in (out / "submissions" / "participant").iterdir())
    assert (folder / "submission.zip").read_bytes() == archives["participant"].read_bytes()
    assert not [p for p in out.rglob("*") if p.name.endswith(".part")]
    measured(f"cut inside a {size} B file after {first[3]} B: asked after the cut {resumed[1]}, sent "
             f"{resumed[3]} B ({resumed[3] / size:.1%} of the file, not {size} B); fetch {took:.1f} s with "
             f"--timeout 5")


def test_a_site_answering_429_twice_is_waited_for_then_fetched(codabench_site, scored_phase, tmp_path, capsys,
                                                              monkeypatch):
    site, (_, phase_id, submissions) = codabench_site, scored_phase
    busy, waited = {"left": 2}, []

    def plan(path, asked, body, storage):
        if storage and busy["left"]:
            busy["left"] -= 1
            return ("status", 429, {"Retry-After": "2", "Content-Type": "application/json"})
        return None

    def sleep(seconds):
        waited.append(seconds)
        time.sleep(seconds)

    monkeypatch.setattr(_http, "sleep", sleep)
    with site_proxy(plan, monkeypatch) as proxy:
        started = time.monotonic()
        code, _, err = fetch(site, tmp_path / "busy", phase_id, capsys, monkeypatch)
        took = time.monotonic() - started
    assert code == 0, err
    assert waited == [2, 2] and err.count("waiting 2 s: the site answered HTTP 429") == 2
    first = proxy.answers[0][0]
    assert [a[2] for a in proxy.answers if a[0] == first] == [429, 429, 200]
    manifest = json.loads((tmp_path / "busy" / "manifest.json").read_text())
    for submission in submissions.values():
        record = manifest["submissions"][str(submission["id"])]
        for name, data in platform_files(site, submission["id"]).items():
            assert (tmp_path / "busy" / record["folder"] / name).read_bytes() == data
    measured(f"429 with Retry-After: 2, twice: waited {waited} s, fetched ({len(proxy.answers)} storage answers, "
             f"the whole fetch {took:.1f} s)")


def test_fetches_of_two_phases_into_one_folder_are_refused(codabench_site, scored_phase, tmp_path, capsys,
                                                          monkeypatch):
    site, (competition_id, phase_id, _) = codabench_site, scored_phase
    other = next(p["id"] for p in site.competition(competition_id)["phases"] if p["id"] != phase_id)
    out = tmp_path / "one"
    assert fetch(site, out, phase_id, capsys, monkeypatch)[0] == 0
    teams = sorted(p.name for p in (out / "teams").iterdir())
    code, _, err = fetch(site, out, other, capsys, monkeypatch)
    assert code == 1 and err.count("\n") == 1
    assert f"holds the fetch of phase {phase_id} of {site.url}, not the fetch of phase {other}" in err
    code, _, err = run_cli(capsys, monkeypatch, site.organiser.token, "fetch", "--site", site.url, "--competition",
                           str(competition_id), str(out))
    assert code == 1 and f"holds the fetch of phase {phase_id}" in err
    assert sorted(p.name for p in (out / "teams").iterdir()) == teams
    assert json.loads((out / "manifest.json").read_text())["phase"]["id"] == phase_id


def test_a_fetch_killed_during_the_recheck_downloads_nothing_intact_again(codabench_site, big_phase, tmp_path,
                                                                          capsys, monkeypatch):
    """A second fetch of the same folder re-checks the big submission's files (sha256 of 101 MiB), then is
    killed (SIGKILL) while it waits for the next submission's addresses: the manifest still lists every
    verified file, and the next fetch downloads none of them."""
    site, (phase_id, submissions, _) = codabench_site, big_phase
    out = tmp_path / "recheck"
    assert fetch(site, out, phase_id, capsys, monkeypatch)[0] == 0
    before = fetched_files(out)
    second = submissions["participant2"]["id"]

    def plan(path, asked, body, storage):
        return ("hold",) if path == f"/api/submissions/{second}/get_details/" else None

    with site_proxy(plan) as proxy:
        process = fetch_process(site, out, phase_id, proxy, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
        try:
            assert proxy.held.wait(300), "the second fetch never asked for the second submission's files"
        finally:
            os.kill(process.pid, signal.SIGKILL)
            said = process.communicate()[1]
    assert "submission.zip: already here, intact" in said  # the big one, re-checked before the kill
    assert fetched_files(out) == before
    with site_proxy() as recorder:
        resumed = fetch_process(site, out, phase_id, recorder, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        _, said = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, said
    # no byte of the storage's again: every file was intact (the empty placeholders, no file, are looked at)
    assert [answer for answer in recorder.answers if answer[3]] == []
    looked_at = {answer[0].rsplit("/", 1)[1] for answer in recorder.answers}
    assert looked_at <= {"prediction_result.zip", "scoring_result.zip"}
    assert said.count("already here, intact") == len([f for f in before.values() if "from" not in f])
    measured(f"SIGKILL during the re-check: manifest {len(before)} file(s) before the kill, "
             f"{len(fetched_files(out))} after; the resume downloaded {sum(a[3] for a in recorder.answers)} bytes "
             f"({len(recorder.answers)} empty placeholder(s) looked at)")


def test_a_fetch_killed_inside_a_big_file_holds_the_folder_then_is_resumed_from_its_last_byte(
        codabench_site, big_phase, tmp_path, capsys, monkeypatch):
    """A fetch stalled a third of the way into the big file holds the folder: a second one is refused in one
    line (exit 75). Killed (SIGKILL), it leaves the third under the .part name and the object's ETag in the
    manifest; the next fetch asks for the rest only."""
    site, (phase_id, _, archives) = codabench_site, big_phase
    size, out = archives["participant"].stat().st_size, tmp_path / "held"

    def plan(path, asked, body, storage):
        return ("stall", len(body) // 3) if storage and asked is None and len(body) == size else None

    with site_proxy(plan) as proxy:
        first = fetch_process(site, out, phase_id, proxy, "--timeout", "300", stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
        try:
            assert proxy.held.wait(300), "the first fetch never reached the big file"
            parts = wait_for_part(out, size // 3)
            code, _, err = fetch(site, out, phase_id, capsys, monkeypatch)
        finally:
            os.kill(first.pid, signal.SIGKILL)
            first.wait()
    assert code == 75 and err.count("\n") == 1
    assert f"another fetch is writing into this folder (pid {first.pid} on " in err
    (part,) = parts
    record = next(r for r in json.loads((out / "manifest.json").read_text())["submissions"].values()
                  if r["owner"] == "participant")
    assert record["partial"]["submission.zip"]["size"] == size and part.stat().st_size == size // 3
    with site_proxy() as recorder:
        resumed = fetch_process(site, out, phase_id, recorder, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        _, said = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, said
    big = [answer for answer in recorder.answers if answer[3] >= size - size // 3]
    assert [answer[1:] for answer in big] == [(f"bytes={size // 3}-", 206, size - size // 3)]
    assert part.with_name("submission.zip").read_bytes() == archives["participant"].read_bytes()
    assert not part.exists() and not [p for p in out.rglob("*") if p.name.endswith(".part")]
    measured(f"SIGKILL a third into a {size} B file: the next fetch asked {big[0][1]} and got {big[0][3]} B")


def wait_for_part(out: Path, size: int) -> list[Path]:
    """The .part files under out, once one holds size bytes (the first bytes of a stalled answer)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        parts = [p for p in out.rglob("*") if p.name.endswith(".part")]
        if any(p.stat().st_size == size for p in parts):
            return parts
        time.sleep(0.1)
    raise AssertionError(f"no .part of {size} bytes under {out}")


def test_a_team_whose_submission_disappeared_is_removed_and_said(codabench_site, big_phase, tmp_path, capsys,
                                                                 monkeypatch):
    """Last of the big phase's tests: it deletes participant2's submission. The placeholder of the scoring
    that did not run is recorded as not available, with that reason."""
    site, (phase_id, submissions, _) = codabench_site, big_phase
    out = tmp_path / "gone"
    assert fetch(site, out, phase_id, capsys, monkeypatch)[0] == 0
    assert sorted(team.name for team in read_teams(out / "teams")[0]) == ["participant", "participant2"]
    record = json.loads((out / "manifest.json").read_text())["submissions"][str(submissions["participant"]["id"])]
    assert "prediction_result.zip" in record["files"] and "scoring_result.zip" not in record["files"]
    assert "the scoring step did not run or left nothing (status Failed)" in record["missing"]["scoring_result.zip"]
    assert "the scoring step did not run" in record["missing"]["details.json"]
    gone = submissions["participant2"]["id"]
    site.api("DELETE", f"submissions/{gone}/", token=site.organiser.token, expect=(204,))
    code, _, err = fetch(site, out, phase_id, capsys, monkeypatch)
    assert code == 0, err
    assert f"team participant2: its submission {gone} is no longer listed by the site; teams/participant2.zip " \
           "removed" in err
    assert [team.name for team in read_teams(out / "teams")[0]] == ["participant"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert list(manifest["teams"]) == ["participant"] and str(gone) in manifest["gone"]


# --------------------------------------------------------------------------- rerun (last: it adds submissions)

def test_a_rerun_is_waited_for_until_the_worker_finishes_it(codabench_site, scored_phase, scored_runs):
    from codascore.platform import Site

    site, (_, _, submissions) = codabench_site, scored_phase
    client = Site(site.url, site.organiser.token)
    old = submissions["calibrated"]["id"]
    new = client.rerun(submission_ids=(old,))
    assert len(new) == 1 and new[0] > old
    run = scored_runs["calibrated"]
    worker = threading.Thread(target=site.run_as_worker, args=(new[0], run / "prediction" / "output",
                                                               run / "scoring" / "output"))
    said: list[str] = []
    worker.start()
    try:
        states = client.wait(new, said.append, timeout=300, poll=0.5)
    finally:
        worker.join()
    assert states == {new[0]: "Finished"} and said[-1] == f"submission {new[0]}: Finished"


def test_a_rerun_is_refused_to_a_participant_and_counted_for_the_organiser(codabench_site, scored_phase, capsys,
                                                                          monkeypatch):
    site, (_, phase_id, submissions) = codabench_site, scored_phase
    target = str(submissions["dummy"]["id"])
    code, out, err = run_cli(capsys, monkeypatch, site.participants[1].token, "rerun", "--site", site.url,
                             "--submission", target)
    assert code == 1 and out == "" and "You do not have permission to re-run submissions" in err
    code, out, err = run_cli(capsys, monkeypatch, site.organiser.token, "rerun", "--site", site.url, "--phase",
                             str(phase_id), "--wait", "0")
    top = [s for s in site.api("GET", f"submissions/?phase={phase_id}", token=site.organiser.token)
           if s["parent"] is None]
    assert code == 0, err
    assert len(out.splitlines()) == len(top) // 2 and all(line.split("\t")[1] for line in out.splitlines())


def test_the_judge_scores_what_fetch_got_as_the_platform_did(codabench_site, scored_phase, project_data, tmp_path,
                                                             capsys, monkeypatch):
    """fetch, then judge: the judge's scores are those the platform holds, and a late submission is
    flagged in its listing and its results."""
    from codascore.judge import judge

    site, (_, phase_id, submissions) = codabench_site, scored_phase
    assert fetch(site, tmp_path / "final", phase_id, capsys, monkeypatch)[0] == 0
    manifest = json.loads((tmp_path / "final" / "manifest.json").read_text())
    said: list[str] = []
    summary = judge(tmp_path / "final" / "teams", TASK, tmp_path / "judgement", root=project_data, workers=1,
                    progress=said.append)
    assert summary.finished
    rows = {row["team"]: row for row in csv.DictReader(summary.results.open())}
    assert all(row["state"] == "done" for row in rows.values()), summary.results.read_text()
    for submission in submissions.values():
        team = manifest["submissions"][str(submission["id"])]["team"]
        for score in submission["scores"]:
            assert float(rows[team][score["column_key"]]) == pytest.approx(float(score["score"]), abs=1e-9)
        late = manifest["teams"][team]["late"]
        assert ("after the phase's end" in rows[team]["messages"]) == late
        assert any(line.startswith(f"flagged {team}:") for line in said) == late
