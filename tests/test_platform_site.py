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

import csv
import datetime as dt
import hashlib
import http.server
import json
import re
import threading
import urllib.request
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
    assert sorted(p.name for p in (tmp_path / "all").iterdir()) == sorted(f"phase-{i}" for i in phases)
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

    def counted(self, url, dest, doing, progress=None):
        downloads.append(Path(dest).relative_to(out).as_posix())
        return original(self, url, dest, doing, progress)

    monkeypatch.setattr(_http.Http, "download", counted)
    real_chunk, cut = _http.read_chunk, {"after": 4}

    def dropped(response, url, doing):
        if len(downloads) > cut["after"]:  # the fifth file's connection drops, at every attempt
            raise _http.platform_error(ConnectionResetError("dropped"), url, doing)
        return real_chunk(response, url, doing)

    monkeypatch.setattr(_http, "read_chunk", dropped)
    code, _, err = fetch(site, out, phase_id, capsys, monkeypatch)
    assert code == 2 and "connection was cut" in err.strip().splitlines()[-1]
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
    proxy.storage_answers, proxy.release = 0, threading.Event()
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    command = [sys.executable, "-m", "codascore", "fetch", "--site", site.url, "--phase", str(scored_phase[1]),
               str(out)]
    env = {**os.environ, "CODABENCH_TOKEN": site.organiser.token, "PYTHONPATH": str(Path(cli.__file__).parents[1])}
    env.pop("no_proxy", None)
    process = subprocess.Popen(command, env={**env, "http_proxy": f"http://127.0.0.1:{proxy.server_address[1]}"},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not list(out.rglob("*.part")) and time.monotonic() < deadline and process.poll() is None:
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


def test_a_stopped_server_is_one_line_and_exit_2(codabench_site, tmp_path, capsys, monkeypatch):
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
    assert code == 2 and err.count("\n") == 1 and "nothing answers" in err


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
        self.send_response(200)
        for key, value in headers.items():
            if key.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[:len(body) // 2] if cut else body)
        self.wfile.flush()
        if cut and self.stall:
            self.server.release.wait(120)
        self.close_connection = True


class StallingProxy(CuttingProxy):
    """The storage's first two answers whole; the third half-sent, then nothing: the fetch stalls mid-file,
    to be killed there."""

    stall = True

    def cuts(self) -> bool:
        self.server.storage_answers += 1
        return self.server.storage_answers > 2


def test_a_truncated_download_is_one_line_exit_2_and_leaves_nothing(codabench_site, scored_phase, tmp_path,
                                                                    capsys, monkeypatch):
    proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), CuttingProxy)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy.server_address[1]}")
        monkeypatch.delenv("no_proxy", raising=False)
        code, _, err = fetch(codabench_site, tmp_path / "t", scored_phase[1], capsys, monkeypatch)
    finally:
        proxy.shutdown()
        proxy.server_close()
    assert code == 2 and "the transfer stopped after" in err.strip().splitlines()[-1]
    manifest = json.loads((tmp_path / "t" / "manifest.json").read_text())
    assert all(not record["files"] for record in manifest["submissions"].values())
    assert not [p for p in (tmp_path / "t").rglob("*.zip")]


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
