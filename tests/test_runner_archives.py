"""Hostile archives and names through the runner (issue 15, "Archives in the runner"): entries that cannot be
created and archives at the entry limit are refused with a one-line reason; the submission's metadata is
read with bounds; the default run folder is always a new folder below runs/<task>/, and nothing outside a
run folder is ever deleted (docs/codabench.md#archives-and-run-folders)."""

from __future__ import annotations

import shutil
import threading
import time
import zipfile
from pathlib import Path

import pytest
import yaml

from codascore import runner, zips
from codascore.outcomes import Outcome
from codascore.cli import main as cli_main

TASK = "weak_lensing.phase1"


def result_json(project_data: Path) -> bytes:
    return (project_data / "sample_submissions" / TASK / "calibrated" / "result.json").read_bytes()


def write_zip(path: Path, entries: list[tuple[str, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in entries:
            archive.writestr(zipfile.ZipInfo(name), data)
    return path


def assert_refused(result: runner.RunResult, reason: str) -> None:
    """Refused before any step ran, with one line that names the reason."""
    assert result.exit_code is None and not result.scores and result.outcome is Outcome.INVALID
    assert len(result.violations) == 1 and "\n" not in result.violations[0], result.violations
    assert reason in result.violations[0], result.violations
    assert "Traceback" not in result.error
    assert not (result.run_dir / "scoring").exists()


@pytest.mark.parametrize("entries, reason", [
    ([(".", b"x")], "file without a name"),
    ([("a" * 251 + ".json", b"x")], "256 bytes, over the 255"),
    ([("dir/" + "é" * 128, b"x")], "256 bytes, over the 255"),
    ([("result", b"x"), ("result/inner.json", b"x")], "'result' both as a file and as a folder"),
    ([("result/inner.json", b"x"), ("result", b"x")], "'result' both as a file and as a folder"),
    ([("a/b/", b""), ("a/b", b"x")], "'a/b' both as a file and as a folder"),
], ids=["dot", "long-name", "long-utf8-name", "file-then-folder", "folder-then-file", "folder-entry-and-file"])
def test_entries_that_cannot_be_created_are_refused(project_data, tmp_path, entries, reason):
    archive = write_zip(tmp_path / "sub.zip", [("result.json", result_json(project_data)), *entries])
    result = runner.run(TASK, archive, tmp_path / "run", root=project_data)
    assert_refused(result, reason)


def test_an_archive_at_the_entry_limit_is_refused(project_data, tmp_path):
    entries = [("result.json", result_json(project_data))]
    entries += [(f"f/{i}", b"") for i in range(zips.MAX_ARCHIVE_MEMBERS - 1)]
    archive = write_zip(tmp_path / "many.zip", entries)
    result = runner.run(TASK, archive, tmp_path / "run", root=project_data)
    assert_refused(result, f"{zips.MAX_ARCHIVE_MEMBERS} entries, at or over the limit")


def test_entries_below_the_limits_are_extracted(tmp_path):
    archive = write_zip(tmp_path / "ok.zip", [("./a.txt", b"1"), ("d/" + "b" * 255, b"2"), ("d/", b"")])
    zips.safe_extract(archive, tmp_path / "out", max_members=4)
    assert (tmp_path / "out" / "a.txt").read_bytes() == b"1"
    assert (tmp_path / "out" / "d" / ("b" * 255)).read_bytes() == b"2"


ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(20)
) + "command: python3 -c pass\n"


@pytest.mark.parametrize("text, reason", [
    (ALIAS_BOMB, "anchors and aliases are not allowed"),
    ("command: &c python3 -c pass\n", "anchors and aliases are not allowed"),
    ("x: " + "[" * 50 + "]" * 50 + "\ncommand: python3 -c pass\n", "nested deeper than"),
    ("command: python3 -c pass\n#" + "x" * 70_000 + "\n", "over the limit of 65536"),
    ("command: python3 -c 'unbalanced\n", "cannot be split"),
], ids=["alias-bomb", "anchor", "deep", "large", "unbalanced-quote"])
def test_the_submission_metadata_is_read_with_bounds(project_data, tmp_path, text, reason):
    archive = write_zip(tmp_path / "sub.zip", [("metadata.yaml", text.encode())])
    started = time.monotonic()
    result = runner.run(TASK, archive, tmp_path / "run", root=project_data)
    assert_refused(result, reason)
    assert "metadata.yaml" in result.violations[0]
    assert time.monotonic() - started < 60  # the bomb is refused, not expanded (a generous bound, no timing)


@pytest.fixture
def quick_root(project_data, tmp_path) -> Path:
    """A bundle source whose scoring program only writes a score: the run folders are what is observed."""
    root = tmp_path / "bundle"
    (root / "scoring_program").mkdir(parents=True)
    command = "python3 -c \"import sys; open(sys.argv[1] + '/scores.txt', 'w').write('score: 1')\" /app/output"
    (root / "scoring_program" / "metadata.yaml").write_text(yaml.safe_dump({"command": command}))
    shutil.copytree(project_data / "reference_data" / TASK, root / "reference_data" / TASK)
    return root


@pytest.mark.parametrize("zip_name", ["..zip", "...zip", ".zip", "calibrated.zip"])
def test_the_default_run_folder_is_new_and_below_runs_task(project_data, quick_root, tmp_path, monkeypatch,
                                                           zip_name):
    """The stem of '..zip' is '.': once the run folder runs/<task>/. (the task's folder itself, its earlier
    runs deleted). Earlier runs, this task's and another's, survive two runs of the same zip."""
    monkeypatch.chdir(tmp_path)
    earlier = tmp_path / "runs" / TASK / "earlier" / "kept.txt"
    other_task = tmp_path / "runs" / "uai.pr" / "kept.txt"
    for path in (earlier, other_task):
        path.parent.mkdir(parents=True)
        path.write_text("an earlier run")
    archive = write_zip(tmp_path / zip_name, [("result.json", result_json(project_data))])
    folders = []
    for _ in range(2):
        cli_main(["run", TASK, str(archive), "--root", str(quick_root)])
        new = sorted(set((tmp_path / "runs" / TASK).iterdir()) - {earlier.parent, *folders})
        assert len(new) == 1 and (new[0] / runner.RUN_MARKER).is_file()
        assert (new[0] / "scoring" / "output" / "scores.txt").is_file()
        folders.append(new[0])
    assert earlier.read_text() == other_task.read_text() == "an earlier run"


def test_an_existing_folder_that_is_not_a_run_folder_is_never_emptied(project_data, quick_root, tmp_path, capsys):
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    sample = project_data / "sample_submissions" / TASK / "calibrated"
    assert cli_main(["run", TASK, str(sample), "--root", str(quick_root), "--out", str(precious)]) == 1
    assert "is not empty and is not a run folder" in capsys.readouterr().err
    assert (precious / "thesis.tex").read_text() == "years of work"
    # A folder holding only the runner's own folders (a run of a version without the mark) is a run folder.
    (precious / "thesis.tex").unlink()
    (precious / "logs").mkdir()
    (precious / "logs" / "old.txt").write_text("an old log")
    cli_main(["run", TASK, str(sample), "--root", str(quick_root), "--out", str(precious)])
    assert not (precious / "logs" / "old.txt").exists() and (precious / runner.RUN_MARKER).is_file()
    # A run folder is reused: emptied, then filled again.
    run_dir = tmp_path / "run"
    for _ in range(2):
        cli_main(["run", TASK, str(sample), "--root", str(quick_root), "--out", str(run_dir)])
        assert (run_dir / runner.RUN_MARKER).is_file() and (run_dir / "scoring" / "output" / "scores.txt").is_file()


def archived_files(data: bytes) -> dict[str, bytes]:
    import io

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_a_worker_keeps_an_archive_by_its_digest_within_the_block_only(tmp_path, monkeypatch):
    """docs/judge.md#workers: inside known_digests a folder is zipped once and then served by its digest,
    even when the folder changes (the caller vouched); after the block an edit in place is zipped again,
    and a cache of 0 bytes zips every time."""
    from codascore.runner.worker import ARCHIVE_CACHE_VARIABLE, folder_archive

    folder = tmp_path / "team"
    folder.mkdir()
    (folder / "result.json").write_text("1")
    monkeypatch.delenv(ARCHIVE_CACHE_VARIABLE, raising=False)
    with runner.known_digests({str(folder): "a" * 64}):
        first = folder_archive(folder)
        (folder / "result.json").write_text("2")
        assert folder_archive(folder) is first
        beside: list[bytes] = []  # another unit's thread, at the same time: this block does not vouch for it
        thread = threading.Thread(target=lambda: beside.append(folder_archive(folder)))
        thread.start()
        thread.join()
        assert archived_files(beside[0]) == {"result.json": b"2"}
    assert archived_files(folder_archive(folder)) == {"result.json": b"2"}
    monkeypatch.setenv(ARCHIVE_CACHE_VARIABLE, "0")
    with runner.known_digests({str(folder): "b" * 64}):
        folder_archive(folder)
        (folder / "result.json").write_text("3")
        assert archived_files(folder_archive(folder)) == {"result.json": b"3"}
