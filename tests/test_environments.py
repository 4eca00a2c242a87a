"""Each team's environment (docs/judge.md#environments), built for real: uv from PyPI (binary wheels only), on
this machine's interpreters, cached by digest. A team asking for a Python version the machine lacks and one
asking for a package with no wheel are named before any unit runs and skipped with their reasons in
results.csv while the others are judged; two teams declaring the same things share one environment; parts on
both workers of the cluster run under it; the import is checked once per team and environment.

The packages come from PyPI through uv's cache (its default folder), so a second run downloads nothing but
the index pages: inflection (a 6 KB wheel) and what the programs need (numpy, scipy, pandas, ...)."""

from __future__ import annotations

import csv
import json
import sqlite3
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

pytest.importorskip("distributed")
pytest.importorskip("uv")

from codascore.environments import (Settings, declared_environment, find_interpreter, programs_python,  # noqa: E402
                                    team_environments)
from codascore.errors import TeamEnvironmentError  # noqa: E402
from codascore.formats.environment import ENVIRONMENT_RECORD, ENVIRONMENTS, read_record  # noqa: E402
from codascore.formats.run_folder import IMPORT_CHECK_RECORD, IMPORT_CHECKS  # noqa: E402
from codascore.judge import judge  # noqa: E402
from codascore.judge.parts import DEFAULT_IMPORT_TIME_LIMIT  # noqa: E402

from test_judge import cluster  # noqa: E402,F401  (the module's LocalCluster of 2 workers)

TASK = "srbench.qualification"
#: The official profile cut to a test: 1 seed of the 3 datasets (3 parts a team), 1 core, 4 GiB.
CUT = {"seeds": 1, "cores": 1, "memory": 4 * 1024**3, "fit_time_limit_small": 120}
#: A package no environment of this machine has but the team's (a 6 KB pure-Python wheel).
TEAM_PACKAGE = "inflection==0.5.1"
#: A release PyPI holds as a source distribution only.
SDIST_ONLY = "docopt==0.6.2"


def other_python() -> tuple[int, int]:
    """A Python version the machine has that is not the judge's (the newest such), else the judge's own."""
    floor = programs_python() or (3, 10)
    found = [minor for minor in range(floor[1], 20) if minor != sys.version_info[1]
             and find_interpreter((3, minor))[0] is not None]
    return (3, found[-1]) if found else tuple(sys.version_info[:2])


def missing_python() -> str:
    """A Python version the programs could run on that this machine lacks."""
    floor = programs_python() or (3, 10)
    return next(f"3.{minor}" for minor in range(floor[1], 40) if find_interpreter((3, minor))[0] is None)


def regressor(version: tuple[int, int]) -> str:
    """A least-squares regressor that imports the team's own package and checks the team's Python."""
    return f'''import sys

import inflection
from sklearn.linear_model import LinearRegression

assert sys.version_info[:2] == {version!r}, sys.version

est = LinearRegression()


def model(est, X):
    names = [inflection.underscore(name) for name in X.columns]
    return " + ".join([repr(float(est.intercept_))] + [f"{{float(w)!r}}*{{n}}" for w, n in zip(est.coef_, names)])
'''


def team_folder(folder: Path, version: str, requirements: str, code: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "regressor.py").write_text(code)
    (folder / "requirements.txt").write_text(requirements + "\n")
    (folder / ".python-version").write_text(version + "\n")
    return folder


@pytest.fixture(scope="module")
def judged(cluster, project_data, tmp_path_factory):  # noqa: F811
    """alice (a folder) and bob (a zip) declare the same environment, on another Python than the judge's
    when the machine has one; carol asks for a Python the machine lacks; dave for a package with no wheel."""
    folder = tmp_path_factory.mktemp("environments")
    teams = folder / "submissions"
    version = other_python()
    shown = f"{version[0]}.{version[1]}"
    alice = team_folder(teams / "alice", shown, TEAM_PACKAGE, regressor(version))
    with zipfile.ZipFile(teams / "bob.zip", "w") as archive:
        for path in sorted(alice.iterdir()):
            archive.write(path, f"bob/{path.name}")  # in a wrapper folder, as many zips are
    team_folder(teams / "carol", missing_python(), TEAM_PACKAGE, regressor(version))
    team_folder(teams / "dave", shown, SDIST_ONLY, regressor(version))
    lines: list[str] = []
    summary = judge(teams, TASK, folder / "out", root=project_data, scheduler=cluster.scheduler_address,
                    profile="official2022", overrides=CUT, environments=Settings(), progress=lines.append)
    return folder / "out", summary, lines, version


def rows(out: Path) -> list[dict]:
    with sqlite3.connect(out / "judge.sqlite") as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT * FROM units ORDER BY team, unit")]


def test_a_team_asking_for_a_python_the_machine_lacks_is_named_and_skipped_the_others_judged(judged):
    out, summary, lines, _ = judged
    results = {row["team"]: row for row in csv.DictReader((out / "results.csv").open())}
    carol = results["carol"]
    assert carol["state"] == "skipped"
    assert "team carol: .python-version asks for Python 3." in carol["messages"]
    assert "this machine has none (looked in: pyenv's versions folder" in carol["messages"]
    assert {row["team"] for row in rows(out)} == {"alice", "bob"}  # no unit of carol's or dave's
    assert results["alice"]["state"] == results["bob"]["state"] == "done"
    assert float(results["alice"]["mean_r2"]) > 0.5 and results["alice"]["mean_r2"] == results["bob"]["mean_r2"]
    said = [line for line in lines if line.startswith("environment of carol")]
    assert said and lines.index(said[0]) < min(i for i, line in enumerate(lines) if "units to run" in line)


def test_a_package_without_a_wheel_is_named_with_the_team_and_its_file(judged):
    out, _, _, _ = judged
    dave = {row["team"]: row for row in csv.DictReader((out / "results.csv").open())}["dave"]
    assert dave["state"] == "skipped"
    assert dave["messages"].startswith("team dave: its environment (requirements.txt and .python-version, Python 3.")
    assert "binary wheels only" in dave["messages"] and "docopt" in dave["messages"]


def test_two_teams_declaring_the_same_share_one_environment(judged):
    out, _, lines, version = judged
    built = sorted(path.parent for path in (out / ENVIRONMENTS).glob(f"*/{ENVIRONMENT_RECORD}"))
    assert len(built) == 1  # alice's, reused for bob; carol's and dave's never finished
    record = read_record(built[0])
    assert record["python_version"].startswith(f"{version[0]}.{version[1]}.")
    assert TEAM_PACKAGE in record["packages"] and record["binary_only"]
    assert [line.split(":")[1].strip() for line in lines if line.startswith(("environment of alice",
                                                                            "environment of bob"))] == ["built", "reused"]
    digests = {json.loads(row["inputs"])["team environment"] for row in rows(out) if row["kind"] == "part"}
    assert digests == {record["digest"]}


def test_parts_on_both_workers_run_under_the_built_environment(judged):
    out, _, _, _ = judged
    parts = [row for row in rows(out) if row["kind"] == "part"]
    assert len(parts) == 6 and all(row["state"] == "done" for row in parts)
    assert len({row["worker"] for row in parts}) == 2  # the environment reached from a second worker
    for row in parts:  # the team's package imported and its Python asserted, in every part
        models = json.loads((out / row["run_dir"] / "prediction" / "output" / "models.json").read_text())
        assert len(models) == 1


def test_the_import_is_checked_once_per_team_and_environment_and_not_again_in_its_parts(judged):
    out, _, lines, _ = judged
    for team in ("alice", "bob"):
        record = json.loads((out / IMPORT_CHECKS / team / TASK / IMPORT_CHECK_RECORD).read_text())
        assert record["reason"] == "" and record["environment"] and record["time_limit"] == DEFAULT_IMPORT_TIME_LIMIT
    assert sum(line.startswith("import check of ") for line in lines) == 2
    part = next(row for row in rows(out) if row["kind"] == "part" and row["team"] == "alice")
    assert yaml.safe_load((out / part["run_dir"] / "part_input" / "task.yaml").read_text())["import_check"] is False
    log = (out / part["run_dir"] / "logs" / "ingestion_stderr.txt").read_text()
    assert "checked once for this team by the judge" in log and "eval_kwargs applied" not in log


def test_a_judgement_run_again_builds_and_checks_nothing_again(judged, cluster, project_data):  # noqa: F811
    out, _, _, _ = judged
    lines: list[str] = []
    again = judge(out.parent / "submissions", TASK, out, root=project_data, scheduler=cluster.scheduler_address,
                  profile="official2022", overrides=CUT, environments=Settings(), progress=lines.append)
    assert again.ran == 0
    assert [line.split(":")[1].strip() for line in lines if line.startswith(("environment of alice",
                                                                            "environment of bob"))] == ["reused", "reused"]
    assert not any(line.startswith("import check of ") for line in lines)


def test_what_a_team_declares_is_read_from_its_files_without_running_them(tmp_path):
    folder = tmp_path / "team"
    folder.mkdir()
    (folder / "regressor.py").write_text("raise SystemExit('never imported here')\n")
    (folder / "environment.yml").write_text(yaml.safe_dump({"dependencies": [
        "python=3.8", "numpy==1.22.3", "pip", {"pip": ["pmlb==1.*", "feyn==3.0.1"]}]}))
    (folder / "install.sh").write_text("pip install git+https://example.invalid/x.git\n")
    declared = declared_environment(folder, "regressor.py")
    assert declared.requirements == ("pmlb==1.*", "feyn==3.0.1") and declared.python == "3.8"
    assert declared.sources == ("environment.yml",)
    assert declared.ignored == ("environment.yml: conda's 'numpy==1.22.3'", "install.sh (never run)")
    (folder / "requirements.txt").write_text("feyn==3.0.5\n")
    (folder / ".python-version").write_text("3.11\n")
    declared = declared_environment(folder, "regressor.py")
    assert (declared.requirements, declared.python) == (("feyn==3.0.5",), "3.11")
    (folder / "requirements.txt").write_text("numpy\ngit+https://example.invalid/x.git  # the method\n")
    with pytest.raises(TeamEnvironmentError, match=r"requirements.txt, line 2: 'git\+https://example.invalid/x.git'"):
        declared_environment(folder, "regressor.py")
    (tmp_path / "nothing").mkdir()
    (tmp_path / "nothing" / "regressor.py").write_text("est = None\n")
    assert declared_environment(tmp_path / "nothing", "regressor.py") is None


def test_the_programs_python_floor_is_named_before_anything_is_built(tmp_path):
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "environment.yml").write_text("dependencies:\n  - python=3.8\n")
    found, failed = team_environments([("old", folder)], "regressor.py", Settings(), tmp_path / "cache")
    assert not found and "team old: environment.yml asks for Python 3.8; the ingestion and scoring programs need " \
                         "Python >= 3." in failed["old"]
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


def test_the_organisers_entry_gives_another_version_and_adds_requirements(tmp_path):
    folder = tmp_path / "team"
    folder.mkdir()
    (folder / "environment.yml").write_text(f"dependencies:\n  - python=3.8\n  - pip:\n    - {SDIST_ONLY}\n")
    settings_file = tmp_path / "environments.yml"
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    settings_file.write_text(yaml.safe_dump({"cache": "built", "teams": {"team": {
        "python": here, "declared": False, "requirements": [TEAM_PACKAGE]}}}))
    settings = Settings.read(settings_file)
    found, failed = team_environments([("team", folder)], "regressor.py", settings, settings.cache)
    assert not failed
    record = read_record(found["team"].folder)
    assert record["python_version"].startswith(here + ".") and TEAM_PACKAGE in record["packages"]
    assert not any(line.startswith("docopt") for line in record["packages"])
    assert found["team"].folder.parent == tmp_path / "built"
