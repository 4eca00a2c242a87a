"""The formats the tools hand each other (codascore/formats/, docs/architecture.md#hand-offs): each file
name declared once, there, and written nowhere else in the package; details.json checked once for every
reader; a judgement's store read read-only, also where it cannot be written."""

from __future__ import annotations

import ast
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from codascore.errors import ReferenceDataError
from codascore.formats import environment, fetch, judgement, outputs, run_folder
from codascore.formats.details import NotScored, checked, read_details, unit_id
from test_imports import MODULES

FORMAT_MODULES = (outputs, judgement, fetch, run_folder, environment)


def declared_names() -> dict[str, str]:
    """Every file name a formats module declares (a module-level string constant holding a dot) -> its
    module."""
    found = {}
    for module in FORMAT_MODULES:
        for name, value in vars(module).items():
            if name.isupper() and isinstance(value, str) and "." in value and " " not in value:
                found[value] = module.__name__
    return found


DECLARED = declared_names()


def names_written(module: str, names: set[str]) -> list[str]:
    """The declared names a module writes as a string of its own (a path: the name alone or as one of its
    components; prose that mentions a name, and docstrings, are not a declaration)."""
    tree = ast.parse(MODULES[module].read_text())
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or any(c.isspace() for c in node.value):
            continue
        parts = node.value.split("/")
        found += [name for name in names if name in parts]
    return sorted(set(found))


def test_the_handed_over_files_are_declared():
    for name in ("results.csv", "judge.sqlite", "manifest.json", "ingestion_error.txt", "details.json",
                 "scores.json", "detailed_results.html", ".codascore-fetch.json", ".codascore-run"):
        assert name in DECLARED


@pytest.mark.parametrize("module", sorted(name for name in MODULES if not name.startswith("codascore.formats")))
def test_no_module_but_its_format_names_a_handed_over_file(module):
    assert names_written(module, set(DECLARED)) == [], f"{module} writes a name its format declares"


def test_a_second_declaration_is_found(tmp_path, monkeypatch):
    fake = tmp_path / "fake.py"
    fake.write_text('"""A reader of results.csv."""\nRESULTS = "results.csv"\nmessage = "see results.csv"\n'
                    'path = "runs/x/scoring/output/details.json"\n')
    monkeypatch.setitem(MODULES, "codascore.fake", fake)
    assert names_written("codascore.fake", set(DECLARED)) == ["details.json", "results.csv"]


def test_unit_names_are_one_for_every_tool():
    assert unit_id("20s", "grid5x5_1") == "20s/grid5x5_1" and unit_id("", "grid5x5_1") == "grid5x5_1"


def test_details_are_checked_once_for_task_status_and_fields(tmp_path):
    scored = {"task": "uai.pr", "status": "scored", "reference_sha256": "ab", "group": "20s",
              "board_settings": {"tolerance": 1e-6}, "instances": [{"id": "a"}]}
    details = checked(scored, tmp_path / "details.json", "uai.pr")
    assert (details.task, details.group, details.board_settings, details.unit("a")) == \
        ("uai.pr", "20s", {"tolerance": 1e-6}, "20s/a")
    with pytest.raises(ReferenceDataError, match="field 'task' is 'uai.pr', not 'uai.mar'"):
        checked(scored, "details.json", "uai.mar")
    with pytest.raises(NotScored, match="field 'status' is 'invalid'"):
        checked({**scored, "status": "invalid"})
    with pytest.raises(ReferenceDataError, match="field 'group'"):
        checked({**scored, "group": 20})
    with pytest.raises(ReferenceDataError, match="field 'board_settings'"):
        checked({**scored, "board_settings": [1]})
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ReferenceDataError, match="broken.json: not a readable JSON file"):
        read_details(tmp_path / "broken.json")
    # a details.json of an earlier version holds no group, settings or digest: read as none
    assert checked({"task": "uai.pr", "status": "scored"}).group == ""


def make_store(out):
    out.mkdir()
    db = sqlite3.connect(out / judgement.DATABASE)
    db.executescript(judgement.SCHEMA)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA user_version={judgement.SCHEMA_VERSION}")
    db.execute("INSERT INTO units (team, task, unit, kind, state, submission_sha256, reference_sha256, run_dir) "
               "VALUES ('alice', 'uai.pr', 'pipeline', 'pipeline', 'done', 's', 'r', 'runs/alice/uai.pr/pipeline')")
    db.commit()
    db.close()


@pytest.mark.skipif(not shutil.which("bwrap"), reason="bubblewrap mounts the folder read-only")
def test_a_judgement_is_read_on_read_only_media(tmp_path):
    """Read from a read-only mount (bubblewrap's --ro-bind: read-only media, where SQLite cannot make its
    write-ahead log's index), in a child process."""
    out = tmp_path / "judgement"
    make_store(out)
    code = ("import os, sys; from codascore.formats.judgement import Judgement, DONE\n"
            "with Judgement.open(sys.argv[1]) as store:\n"
            "    print(store.counts('uai.pr')[DONE], store.reference_digests('uai.pr'), "
            "os.statvfs(sys.argv[1]).f_flag & os.ST_RDONLY)")
    done = subprocess.run(["bwrap", "--dev-bind", "/", "/", "--ro-bind", str(out), str(out), sys.executable, "-c",
                           code, str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == f"1 {{'alice': 'r'}} {os.ST_RDONLY}"


def test_a_store_of_a_newer_schema_or_no_store_is_refused_by_name(tmp_path):
    out = tmp_path / "judgement"
    make_store(out)
    with sqlite3.connect(out / judgement.DATABASE) as db:
        db.execute(f"PRAGMA user_version={judgement.SCHEMA_VERSION + 1}")
    with pytest.raises(ReferenceDataError, match="written by a newer codascore"):
        judgement.Judgement.open(out)
    with pytest.raises(ReferenceDataError, match="no judgement in"):
        judgement.Judgement.open(tmp_path)


def test_a_fetch_folder_is_told_by_its_manifest(tmp_path):
    assert not fetch.is_fetch(tmp_path)
    (tmp_path / fetch.MANIFEST).write_text(json.dumps({"format": "another"}))
    assert not fetch.is_fetch(tmp_path)
    (tmp_path / fetch.MANIFEST).write_text(json.dumps(fetch.new_manifest("https://site", {"id": 1})))
    assert fetch.is_fetch(tmp_path) and fetch.chosen_submissions(tmp_path) == []
