"""The harness of tests/codabench_site.py against the real platform (marker codabench, make test-codabench).

- What a competition read back from the API must hold: the phases, tasks and leaderboard columns its YAML
  says, read here as the platform's v2 or v1.5 parser reads it (``stored_view``, ``expected_view``); every
  zip of ``make bundle`` and the platform's own test bundles (``tests/test_files/competitions/*.zip`` of
  the snapshot) are uploaded with ``codascore upload`` and compared so in tests/test_platform_site.py
  (once per zip in the session, shared with tests/test_codabench_checker_agreement.py); a bundle the
  platform refuses gets its own text.
- Participants' submissions on a phase, given the scores of real ``codascore run`` scorings the way the
  compute worker reports them: the API then shows those scores, the leaderboard ranks them, and the files
  the worker stored come back byte-identical.

The bundles of ``make bundle`` are taken from ``$CODABENCH_BUNDLES`` (make test-codabench builds them
there with the public test seed); elsewhere they are built here with that seed.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml

from codabench_fixture import SNAPSHOT, codabench_site, http  # noqa: F401  (the fixture)

pytestmark = pytest.mark.codabench

REPO_ROOT = Path(__file__).resolve().parents[1]
PLATFORM_BUNDLES = "codabench/tests/test_files/competitions/"
#: The public seed of make test-image and tests/test_bundle.py.
TEST_SEED = "271828182845904523536028747135266249775"
BUNDLE_NAMES = ("ariel", "srbench", "suite", "uai", "weak_lensing")


#: The one parameter of the tests of the platform's own bundles when there is no snapshot: each fails.
NO_SNAPSHOT = "no snapshot"


def platform_bundle_names() -> list[str]:
    """The platform's own test bundles in the snapshot; without a snapshot one name, whose test fails
    (never an empty list: pytest would skip those tests, and a run without the snapshot would pass)."""
    if not SNAPSHOT.is_file():
        return [NO_SNAPSHOT]
    with tarfile.open(SNAPSHOT) as archive:
        return sorted(Path(n).name for n in archive.getnames()
                      if n.startswith(PLATFORM_BUNDLES) and n.endswith(".zip"))


def platform_bundle(name: str, folder: Path) -> Path:
    """One of the platform's own test bundles, taken from the snapshot."""
    if not SNAPSHOT.is_file():
        pytest.fail(f"no Codabench snapshot at {SNAPSHOT}: make test-codabench CODABENCH_SHARED=DIR names the folder "
                    "that holds it (or set CODABENCH_SNAPSHOT)")
    with tarfile.open(SNAPSHOT) as archive:
        data = archive.extractfile(PLATFORM_BUNDLES + name).read()
    target = folder / name
    target.write_bytes(data)
    return target


@pytest.fixture(scope="session")
def made_bundles(tmp_path_factory) -> Path:
    """The folder of make bundle's zips: $CODABENCH_BUNDLES, or built here with the public test seed."""
    given = os.environ.get("CODABENCH_BUNDLES")
    if given and all((Path(given) / f"{n}.zip").is_file() for n in BUNDLE_NAMES):
        return Path(given)
    out = tmp_path_factory.mktemp("bundles")
    subprocess.run([sys.executable, "-m", "codascore", "bundle", "--out", str(out), "--root", str(REPO_ROOT)],
                   check=True, env={**os.environ, "CODASCORE_BUNDLE_SEED": TEST_SEED,
                                    "PYTHONPATH": str(REPO_ROOT)}, capture_output=True)
    return out


def yaml_of(bundle: Path) -> dict:
    with zipfile.ZipFile(bundle) as archive:
        return yaml.safe_load(archive.read("competition.yaml"))


def expected_view(competition: dict) -> dict:
    """What the platform should store for a bundle, read from its YAML as the platform's parser reads it
    (v2, or v1.5 when the version is not 2): phase names with their task names, and leaderboards[0]'s
    columns (key -> title, sorting)."""
    if str(competition.get("version", "1")) == "2":
        tasks = {t["index"]: t["name"] for t in competition["tasks"]}
        phases = [(p["name"], sorted(tasks[i] for i in p["tasks"])) for p in competition["phases"]]
        columns = {c["key"]: (c["title"], c.get("sorting", "desc")) for c in competition["leaderboards"][0]["columns"]}
        return {"title": competition["title"], "phases": sorted(phases), "columns": columns}
    ordered = sorted(competition["phases"].values(), key=lambda p: p["phasenumber"])
    if any(p.get("is_parallel_parent") or p.get("parent_phasenumber") for p in ordered):
        ordered = ordered[1:]  # v1.8: the parent phase is dropped
    phases = [(p["label"], [f"{p['label']} Task"]) for p in ordered]
    columns = {key: (c.get("label", key), c.get("sort") or "desc")
               for key, c in competition["leaderboard"]["columns"].items()}
    return {"title": competition["title"], "phases": sorted(phases), "columns": columns}


def stored_view(site, competition_id: int) -> dict:
    """The same view of the competition, read back from the API."""
    competition = site.competition(competition_id)
    phases = [(p["name"], sorted(t["name"] for t in p["tasks"])) for p in competition["phases"]]
    board = min(competition["leaderboards"], key=lambda b: b["id"])
    columns = {c["key"]: (c["title"], c["sorting"]) for c in board["columns"]}
    return {"title": competition["title"], "phases": sorted(phases), "columns": columns}


def refused_bundle(folder: Path) -> Path:
    """A bundle without `version`: the platform's v1.5 parser reads it and wants `html` pages. Its bytes are
    the same in every test (a fixed date), so the session uploads it once."""
    bundle = folder / "no_version.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        archive.writestr(zipfile.ZipInfo("competition.yaml", date_time=(2020, 1, 1, 0, 0, 0)),
                         "title: t\nimage: logo.png\n")
    return bundle


def test_a_refused_bundle_gets_the_platforms_own_text(codabench_site, tmp_path):
    upload = codabench_site.upload_bundle_once(refused_bundle(tmp_path), force=True)
    assert upload.status == "Failed"
    assert upload.details == "HTML pages could not be found in the yaml file"


# --------------------------------------------------------------------------- submissions and the worker

TASK, SAMPLES = "weak_lensing.phase1", ("calibrated", "dummy")


def zip_sample(folder: Path, target: Path) -> Path:
    with zipfile.ZipFile(target, "w") as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder).as_posix())
    return target


@pytest.fixture(scope="module")
def scored_runs(project_data, tmp_path_factory) -> dict[str, Path]:
    """Each sample scored by `codascore run` (the local runner, as Codabench's worker runs it): run folders."""
    runs = {}
    for sample in SAMPLES:
        out = tmp_path_factory.mktemp(f"run-{sample}")
        subprocess.run([sys.executable, "-m", "codascore", "run", TASK,
                        str(project_data / "sample_submissions" / TASK / sample), "--root", str(project_data),
                        "--out", str(out), "--no-sandbox"], check=True, capture_output=True,
                       env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
        runs[sample] = out
    return runs


@pytest.fixture(scope="module")
def scored_phase(codabench_site, made_bundles, scored_runs, project_data, tmp_path_factory):
    """The weak lensing competition with one submission per sample on its first phase, each run through
    both worker steps with its real scoring run's outputs; (competition id, phase id, {sample: submission})."""
    site = codabench_site
    upload = site.upload_bundle_once(made_bundles / "weak_lensing.zip")
    competition = site.competition(upload.competition_id)
    phase = min(competition["phases"], key=lambda p: p["index"])
    site.publish(competition["id"])
    submissions = {}
    folder = tmp_path_factory.mktemp("submissions")
    for user, sample in zip(site.participants, SAMPLES):
        assert site.register(competition["id"], user) == "approved"
        archive = zip_sample(project_data / "sample_submissions" / TASK / sample, folder / f"{sample}.zip")
        created = site.submit(competition["id"], phase["id"], archive, user)
        run = scored_runs[sample]
        logs = {"prediction_stdout": (run / "logs" / "ingestion_stdout.txt").read_text(),
                "scoring_stdout": (run / "logs" / "scoring_stdout.txt").read_text()}
        submissions[sample] = site.run_as_worker(created["id"], run / "prediction" / "output",
                                                 run / "scoring" / "output", logs=logs)
    return competition["id"], phase["id"], submissions


def test_the_worker_reported_scores_are_the_scoring_runs(scored_phase, scored_runs, codabench_site):
    competition_id, _, submissions = scored_phase
    board = min(codabench_site.competition(competition_id)["leaderboards"], key=lambda b: b["id"])
    keys = {c["key"] for c in board["columns"]}
    for sample, submission in submissions.items():
        assert submission["status"] == "Finished"
        written = json.loads((scored_runs[sample] / "scoring" / "output" / "scores.json").read_text())
        stored = {s["column_key"]: float(s["score"]) for s in submission["scores"]}
        assert stored == pytest.approx({k: v for k, v in written.items() if k in keys}, abs=1e-9)


def test_the_stored_outputs_and_logs_come_back_byte_identical(scored_phase, scored_runs, codabench_site):
    _, _, submissions = scored_phase
    site = codabench_site
    for sample, submission in submissions.items():
        details = site.api("GET", f"submissions/{submission['id']}/get_details/", token=site.organiser.token)
        logs = {log["name"]: http("GET", log["data_file"]).body for log in details["logs"]}
        run = scored_runs[sample]
        assert logs["scoring_stdout"] == (run / "logs" / "scoring_stdout.txt").read_bytes()
        with zipfile.ZipFile(io.BytesIO(http("GET", details["scoring_result"]).body)) as archive:
            assert archive.read("scores.json") == (run / "scoring" / "output" / "scores.json").read_bytes()


def test_the_leaderboard_ranks_the_reported_scores(scored_phase, codabench_site):
    """The phase's rule (Force_Last) puts each scored submission on the leaderboard by itself; the public
    view shows each score rounded to its column's precision, rows ranked by the primary column."""
    _, phase_id, submissions = scored_phase
    board = codabench_site.api("GET", f"phases/{phase_id}/get_leaderboard/")
    columns = {c["key"]: c for task in board["tasks"] for c in task["columns"]}
    primary = next(c for c in columns.values() if c["index"] == board["primary_index"])
    reported = {s["owner"]: {x["column_key"]: float(x["score"]) for x in s["scores"]} for s in submissions.values()}
    rows = board["submissions"]
    assert [row["owner"] for row in rows] == sorted(reported, key=lambda owner: reported[owner][primary["key"]],
                                                     reverse=primary["sorting"] == "desc")
    for row in rows:
        shown = {x["column_key"]: float(x["score"]) for x in row["scores"]}
        assert shown == {key: round(value, columns[key]["precision"]) for key, value in reported[row["owner"]].items()}
