"""What `codascore run` shows on the terminal: the steps' progress lines (codascore.progress.Counter), their
warnings once each, and a counter while a step runs (docs/codabench.md#what-the-terminal-shows)."""

from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path

import pytest
import yaml

from codascore import containers, progress, runner
from codascore.progress import Counter, Display
from codascore.runner import logs
from codascore.runner.view import StepView, TerminalView
from codascore.cli import main as cli_main

TASK = "weak_lensing.phase1"
#: Plain processes, so that these tests need no bubblewrap.
UNISOLATED = containers.Container("none")


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


# --------------------------------------------------------------------------- the protocol

def test_a_progress_line_is_written_at_most_every_interval_and_each_percent_and_always_the_last():
    clock, stream = Clock(), io.StringIO()
    counter = Counter("models scored", 1000, Display(stream), clock=clock)
    assert counter.update(0)                 # the first count is written at once
    assert not counter.update(50)            # 5 % more, but within the interval
    clock.now = 0.6
    assert not counter.update(5)             # the interval is over, but not 1 % more
    assert counter.update(10)
    clock.now = 0.7
    assert counter.update(1000, failed=3)    # the last count, whatever the time
    assert not counter.update(1000, failed=3)
    assert stream.getvalue().splitlines() == ["progress: models scored 0/1000", "progress: models scored 10/1000",
                                              "progress: models scored 1000/1000 (3 failed)"]
    assert all(progress.LINE.match(line) for line in stream.getvalue().splitlines())


def test_a_small_total_writes_each_count_after_the_interval():
    clock, stream = Clock(), io.StringIO()
    counter = Counter("instances solved", 7, Display(stream), clock=clock)
    for done in range(8):
        clock.now = done * 0.5
        counter.update(done)
    assert len(stream.getvalue().splitlines()) == 8


def test_on_a_terminal_the_line_is_redrawn_in_place():
    stream = Terminal()
    counter = Counter("runs fitted", 2, Display(stream))
    counter.update(0)
    counter.update(2)
    assert stream.getvalue() == "\r\x1b[Kprogress: runs fitted 0/2\r\x1b[Kprogress: runs fitted 2/2\n"


def test_the_progress_generator_counts_the_items_of_a_loop(capsys):
    assert list(progress.counted(iter(["a", "b", "c"]), "items read")) == ["a", "b", "c"]
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "progress: items read 0/3" and lines[-1] == "progress: items read 3/3"


# --------------------------------------------------------------------------- the view of a step

def test_the_view_echoes_each_warning_once_and_shows_the_latest_count(tmp_path):
    log = tmp_path / "scoring_stderr.txt"
    log.write_text("codascore scoring program\nprogress: models scored 3/160\nWARNING: 1 of 160 runs have no mod")
    clock, stream = Clock(), io.StringIO()
    view = StepView("scoring", [log], Display(stream), clock=clock)
    view.poll()
    assert stream.getvalue() == ""          # a half-written line waits; nothing is shown before 2 s
    with log.open("a") as handle:
        handle.write("el\nWARNING: 1 of 160 runs have no model\nprogress: models scored 80/160 (2 failed)\n")
    clock.now = 2.5
    view.poll()
    assert stream.getvalue().splitlines() == [
        "WARNING: 1 of 160 runs have no model",
        "[scoring] models scored [##########..........] 80/160 (2 failed), 2 s"]
    clock.now = 4.0
    view.poll()                             # off a terminal: a plain line at most every 5 s
    assert len(stream.getvalue().splitlines()) == 2
    with log.open("a") as handle:
        handle.write("progress: models scored 160/160 (2 failed)\n")
    view.finish()
    assert stream.getvalue().splitlines()[-1] == \
        "[scoring] models scored [####################] 160/160 (2 failed), finished in 4.0 s"


def test_on_a_terminal_the_view_redraws_one_line_and_clears_it_for_a_warning(tmp_path):
    log = tmp_path / "ingestion_stderr.txt"
    log.write_text("")
    clock, stream = Clock(), Terminal()
    view = StepView("prediction", [log], Display(stream), clock=clock)
    clock.now = 3.0
    view.poll()
    assert stream.getvalue() == "\r\x1b[K[prediction] running, 3 s"
    clock.now = 3.3
    view.poll()
    assert stream.getvalue() == "\r\x1b[K[prediction] running, 3 s"  # nothing changed, nothing redrawn
    log.write_text("WARNING: the solver failed on 1 of 7 instances\n")
    clock.now = 3.5
    view.poll()
    assert stream.getvalue().endswith("\r\x1b[KWARNING: the solver failed on 1 of 7 instances\n"
                                      "\r\x1b[K[prediction] running, 4 s")


def test_a_quiet_view_shows_the_warnings_but_no_status(tmp_path):
    log = tmp_path / "scoring_stderr.txt"
    log.write_text("WARNING: something partial\nprogress: x 1/2\n")
    clock, stream, shown = Clock(), Terminal(), []
    view = StepView("scoring", [log], Display(stream, hidden=True), shown_warnings=shown, clock=clock)
    clock.now = 10.0
    view.poll()
    view.finish()
    assert stream.getvalue() == "WARNING: something partial\n" and shown == ["WARNING: something partial"]


def test_a_participants_log_cannot_drive_the_terminal_or_flood_it(tmp_path, monkeypatch):
    monkeypatch.setattr("codascore.runner.view.MAX_SHOWN_WARNINGS", 3)
    log = tmp_path / "program_stderr.txt"
    log.write_text("WARNING: \x1b]0;owned\x07 title\n" + "".join(f"WARNING: number {i}\n" for i in range(10))
                   + "WARNING: " + "x" * 5000 + "\n")
    stream = io.StringIO()
    view = StepView("prediction", [log], Display(stream), clock=Clock())
    view.finish()
    assert stream.getvalue().splitlines() == ["WARNING: ?]0;owned? title", "WARNING: number 0", "WARNING: number 1",
                                              "(more than 3 warnings: the rest are in the logs)"]
    assert len(view.warnings) == 3
    assert logs.printable("WARNING: " + "x" * 5000).endswith("x ...")


# --------------------------------------------------------------------------- through the runner

SCORER = """
import json, os, sys
out = sys.argv[1]
for done in (0, 1, 2):
    print("progress: maps compared %d/2" % done, file=sys.stderr, flush=True)
print("WARNING: answered 1 of 2 maps", file=sys.stderr, flush=True)
print("WARNING: answered 1 of 2 maps", file=sys.stderr, flush=True)
json.dump({"score": 1.0}, open(os.path.join(out, "scores.json"), "w"))
"""


def scorer_root(project_data: Path, tmp_path: Path) -> Path:
    """A bundle source whose scoring program logs progress lines and a warning twice."""
    root = tmp_path / "bundle"
    (root / "scoring_program").mkdir(parents=True)
    (root / "scoring_program" / "metadata.yaml").write_text(
        yaml.safe_dump({"command": "python3 /app/program/probe.py /app/output"}))
    (root / "scoring_program" / "probe.py").write_text(SCORER)
    shutil.copytree(project_data / "reference_data" / TASK, root / "reference_data" / TASK)
    return root


@pytest.mark.parametrize("quiet", [False, True])
def test_the_run_shows_a_steps_progress_and_warnings_with_a_terminal_view_only(project_data, tmp_path, capsys,
                                                                                 monkeypatch, quiet):
    """The library entry prints nothing; the terminal view, which `codascore run` hands it, shows the steps."""
    monkeypatch.setattr("codascore.runner.view.QUIET_SECONDS", 0.0)  # show the counter however fast the step is
    root = scorer_root(project_data, tmp_path)
    sample = project_data / "sample_submissions" / TASK / "calibrated"
    result = runner.run(TASK, sample, tmp_path / "run", root=root, container=UNISOLATED,
                        observer=None if quiet else TerminalView())
    assert result.exit_code == 0 and result.warnings == ["WARNING: answered 1 of 2 maps"]
    err = capsys.readouterr().err
    if quiet:
        assert "WARNING: answered" not in err and "[scoring]" not in err
    else:
        assert err.count("WARNING: answered 1 of 2 maps") == 1
        assert "[scoring] maps compared [####################] 2/2, finished in" in err
        assert "1 warning (printed above" in runner.format_run(result)


@pytest.mark.parametrize("quiet", [[], ["--quiet"]], ids=["shown", "quiet"])
def test_the_wrapper_folder_warning_reaches_the_terminal(project_data, tmp_path, capsys, monkeypatch, quiet):
    """--quiet hides the commands and the status line, never a warning or the outcome."""
    monkeypatch.setattr("codascore.runner.view.QUIET_SECONDS", 0.0)
    data = (project_data / "sample_submissions" / TASK / "calibrated" / "result.json").read_bytes()
    archive = tmp_path / "wrapped.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("my_submission/result.json", data)
    assert cli_main([*quiet, "run", TASK, str(archive), "--root", str(project_data), "--out",
                     str(tmp_path / "run"), "--no-sandbox"]) == 0
    out, err = capsys.readouterr()
    assert err.count("WARNING: the submission zip holds a wrapper folder 'my_submission/'") == 1
    assert ("[scoring]" in err) is not bool(quiet)
    assert "scored in" in out
