"""The local runner reproduces Codabench's compute worker: layout, safe extraction, no shell, time limit,
res/metadata, and the scores.json contract check."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import yaml

from codascore import containers, errors, runner, sandbox
from codascore.outcomes import Outcome
from codascore.weak_lensing import metrics
from sandbox_fixture import bubblewrap_sandbox

TASK = "weak_lensing.phase1"
#: Plain processes: the runner's behaviour without a sandbox (the /app paths rewritten on the command line).
UNISOLATED = containers.Container("none")


def sample(root: Path, name: str) -> Path:
    return root / "sample_submissions" / TASK / name


def test_calibrated_sample_end_to_end_matches_the_metrics(project_data, tmp_path):
    result = runner.run(TASK, sample(project_data, "calibrated"), tmp_path / "run", root=project_data)
    assert result.scored and result.outcome is Outcome.SCORED, (result.violations, result.error)
    truth = np.load(project_data / "reference_data" / TASK / "label_test.npy")[:, :2]
    submitted = json.loads((sample(project_data, "calibrated") / "result.json").read_text())
    expected = metrics.inference_score(truth, submitted["means"], submitted["errorbars"])
    assert result.scores["score"] == pytest.approx(expected, rel=1e-12)
    assert 0.6 < result.scores["avg_coverage"] < 0.76
    scoring = result.run_dir / "scoring"
    res_metadata = yaml.safe_load((scoring / "input" / "res" / "metadata").read_text())
    assert set(res_metadata) == {"exitCode", "elapsedTime", "ingestionExitCode", "ingestionElapsedTime"}
    assert not (scoring / "output" / "metadata").exists()
    # The program folder holds the library, as the bundle's zip does, without execute bits.
    assert (scoring / "program" / "codascore" / "codabench.py").is_file()
    assert not (scoring / "program" / "score.py").stat().st_mode & stat.S_IXUSR


def test_invalid_sample_fails_with_exit_1(project_data, tmp_path):
    result = runner.run(TASK, sample(project_data, "invalid_nan"), tmp_path / "run", root=project_data)
    assert result.exit_code == 1 and not result.scores and not result.violations
    assert result.outcome is Outcome.INVALID
    assert "means[1333][1]" in result.error


def zip_with(path: Path, entries: dict[str, bytes], modes: dict[str, int] | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in entries.items():
            info = zipfile.ZipInfo(name)
            if modes and name in modes:
                info.external_attr = modes[name] << 16
            archive.writestr(info, data)
    return path


def test_zipped_wrapper_folder_is_scored_with_a_warning(project_data, tmp_path):
    data = (sample(project_data, "calibrated") / "result.json").read_bytes()
    archive = zip_with(tmp_path / "sub.zip", {"my_submission/result.json": data})
    result = runner.run(TASK, archive, tmp_path / "run", root=project_data)
    assert result.scored
    details = json.loads((result.run_dir / "scoring" / "output" / "details.json").read_text())
    assert any("wrapper folder" in w for w in details["warnings"])


@pytest.mark.parametrize("name, mode, message", [
    ("../escaped.txt", None, "escapes"),
    ("a/../../escaped.txt", None, "escapes"),
    ("/tmp/absolute.txt", None, "absolute"),
    ("link", 0o120777, "symbolic link"),
])
def test_unsafe_zip_entries_are_refused_before_anything_is_written(project_data, tmp_path, name, mode, message):
    archive = zip_with(tmp_path / "evil.zip", {"result.json": b"{}", name: b"/etc/passwd"},
                       {name: mode} if mode else None)
    result = runner.run(TASK, archive, tmp_path / "run", root=project_data)
    assert result.exit_code is None and not result.scores
    assert any(message in v for v in result.violations)
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path / "run" / "escaped.txt").exists()
    assert not (tmp_path / "run" / "prediction" / "ingested_program" / "result.json").exists()


def test_archive_over_the_size_limit_is_refused(project_data, tmp_path):
    archive = zip_with(tmp_path / "big.zip", {"result.json": b"0" * 5000})
    result = runner.run(TASK, archive, tmp_path / "run", root=project_data, max_submission_bytes=1000)
    assert any("more than 1000 bytes" in v for v in result.violations)


def fake_root(project_data: Path, tmp_path: Path, command: str, script: str) -> Path:
    """A bundle source whose scoring program is a small script, to observe how the runner runs it."""
    root = tmp_path / "bundle"
    (root / "scoring_program").mkdir(parents=True)
    (root / "scoring_program" / "metadata.yaml").write_text(yaml.safe_dump({"command": command}))
    (root / "scoring_program" / "probe.py").write_text(script)
    shutil.copytree(project_data / "reference_data" / TASK, root / "reference_data" / TASK)
    return root


PROBE = """
import json, sys, os

out = sys.argv[1]
json.dump({"argv": sys.argv[2:], "cwd": os.getcwd()}, open(os.path.join(out, "argv.json"), "w"))
json.dump({"score": 1.0}, open(os.path.join(out, "scores.json"), "w"))
"""


@pytest.mark.parametrize("isolated", [True, False])
def test_command_is_split_with_shlex_and_run_without_a_shell(project_data, tmp_path, isolated):
    """In a sandbox the /app paths are real; without one they are rewritten onto the step's folders."""
    root = fake_root(project_data, tmp_path,
                     "python3 /app/program/probe.py /app/output '$HOME' && touch /app/output/pwned ; echo `id`",
                     PROBE)
    result = runner.run(TASK, sample(project_data, "calibrated"), tmp_path / "run", root=root, container=bubblewrap_sandbox() if isolated else UNISOLATED)
    output = result.run_dir / "scoring" / "output"
    probe = json.loads((output / "argv.json").read_text())
    app_output = "/app/output" if isolated else str(output)
    assert probe["argv"] == ["$HOME", "&&", "touch", f"{app_output}/pwned", ";", "echo", "`id`"]
    assert probe["cwd"] == ("/app/program" if isolated else str(result.run_dir / "scoring" / "program"))
    assert not (output / "pwned").exists()


def wrapper_interpreter(folder: Path) -> tuple[Path, Path]:
    """An executable standing in for another interpreter: it records each call, then runs this Python."""
    log = folder / "calls.txt"
    wrapper = folder / "other-python"
    wrapper.write_text(f'#!/bin/sh\necho "$0 $@" >> "{log}"\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper, log


def test_run_python_maps_python3_onto_the_given_interpreter(project_data, tmp_path):
    root = fake_root(project_data, tmp_path, "python3 /app/program/probe.py /app/output", PROBE)
    wrapper, log = wrapper_interpreter(tmp_path)
    result = runner.run(TASK, sample(project_data, "calibrated"), tmp_path / "run", root=root, python=str(wrapper), container=UNISOLATED)
    assert result.exit_code == 0 and result.scores == {"score": 1.0}, result.error
    program = result.run_dir / "scoring" / "program"
    assert log.read_text().splitlines() == [f"{wrapper} {program / 'probe.py'} {result.run_dir / 'scoring' / 'output'}"]
    # Without it, this interpreter runs the command and the wrapper is not called again.
    assert runner.run(TASK, sample(project_data, "calibrated"), tmp_path / "again", root=root,
                      container=UNISOLATED).exit_code == 0
    assert len(log.read_text().splitlines()) == 1


def test_cli_run_python_uses_the_interpreter_or_names_a_missing_one(project_data, tmp_path, capsys, monkeypatch):
    from codascore.cli import main as cli_main

    wrapper, log = wrapper_interpreter(tmp_path)
    monkeypatch.chdir(tmp_path)  # a relative --python is found from here, though the step runs elsewhere
    assert cli_main(["run", TASK, str(sample(project_data, "calibrated")), "--root", str(project_data),
                     "--out", str(tmp_path / "run"), "--python", "./other-python", "--no-sandbox"]) == 0
    assert "score.py" in log.read_text()
    assert cli_main(["run", TASK, str(sample(project_data, "calibrated")), "--root", str(project_data),
                     "--out", str(tmp_path / "run"), "--python", "no-such-python3.12"]) == 2
    assert "error: --python: python interpreter 'no-such-python3.12' not found" in capsys.readouterr().err


def test_contract_check_reports_missing_and_non_finite_keys(project_data, tmp_path):
    script = PROBE.replace('{"score": 1.0}', '{"score": float("nan")}')
    root = fake_root(project_data, tmp_path, "python3 /app/program/probe.py /app/output", script)
    result = runner.run(TASK, sample(project_data, "calibrated"), tmp_path / "run", root=root)
    assert not result.scored and result.outcome is Outcome.FAILED
    assert any("'score' = nan" in v for v in result.violations)
    assert any("lacks the column key 'avg_coverage'" in v for v in result.violations)


def test_time_limit_is_enforced(project_data, tmp_path):
    root = fake_root(project_data, tmp_path, "python3 /app/program/probe.py",
                     "import time, subprocess, sys\n"
                     "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
                     "time.sleep(60)\n")
    result = runner.run(TASK, sample(project_data, "calibrated"), tmp_path / "run", root=root, time_limit=1.0)
    assert result.exit_code is None and not result.scores and result.outcome is Outcome.TIMED_OUT
    assert "Execution Time Limit exceeded" in result.error
    assert result.elapsed < 30


def test_call_with_time_limit_returns_raises_and_kills():
    assert sandbox.call_with_time_limit(sum, ([1, 2, 3],), timeout=30) == 6
    with pytest.raises(errors.ParticipantCodeError, match="ZeroDivisionError"):
        sandbox.call_with_time_limit(lambda: 1 / 0, timeout=30)
    import time

    with pytest.raises(errors.TimeLimitExceeded):
        sandbox.call_with_time_limit(time.sleep, (60,), timeout=0.5)


class _Sneaky:
    """A value whose unpickling would run a command in the parent."""

    def __reduce__(self):
        return (os.system, ("touch sandbox_pwned",))


def _return_sneaky():
    return _Sneaky()


def _return_arrays():
    return {"traces": [np.arange(6.0).reshape(2, 3)], "weights": np.ones(2, dtype=np.float32), "n": 3}


def test_child_results_are_plain_data_only(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(errors.ParticipantCodeError, match="plain data"):
        sandbox.call_with_time_limit(_return_sneaky, timeout=30)
    assert not (tmp_path / "sandbox_pwned").exists()
    result = sandbox.call_with_time_limit(_return_arrays, timeout=30)
    np.testing.assert_array_equal(result["traces"][0], np.arange(6.0).reshape(2, 3))
    assert result["weights"].dtype == np.float32 and result["n"] == 3


def test_the_sandbox_shows_the_given_interpreters_own_environment(tmp_path):
    """A second virtual environment of this same base Python (as .venv-image is of .venv's) resolves to
    the same binary, but the step must see its own site-packages, not this environment's."""
    import venv

    other = tmp_path / "other-venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(other)
    python = str(other / "bin" / "python")
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "only_in_other_venv.py").write_text("WHERE = 'other'\n")
    assert str(other) in containers.runtime_folders(python)
    container = bubblewrap_sandbox()
    probe = ["python3", "-c", "import only_in_other_venv, sys; print(only_in_other_venv.WHERE, sys.prefix)"]
    found = subprocess.run(containers.bwrap_argv(probe, [], python, network=False), capture_output=True,
                           text=True)
    assert container.kind == "bwrap"
    assert found.returncode == 0 and found.stdout.split() == ["other", str(other)], found.stderr


def test_the_library_entry_prints_nothing_and_reads_the_warnings_from_the_logs(project_data, tmp_path, capfd):
    """runner.run is what the judge calls in a loop: no terminal output, even unisolated; what the steps
    warned is read back from their logs, once each."""
    root = fake_root(project_data, tmp_path, "python3 /app/program/probe.py /app/output",
                     PROBE + "print('WARNING: twice', file=sys.stderr)\nprint('WARNING: twice', file=sys.stderr)\n")
    result = runner.run(TASK, sample(project_data, "calibrated"), tmp_path / "run", root=root, container=UNISOLATED)
    assert result.exit_code == 0 and result.warnings == ["WARNING: twice"]
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_the_layout_names_root_when_a_program_is_missing(project_data, tmp_path):
    with pytest.raises(errors.RunnerError, match="--root"):
        runner.run(TASK, sample(project_data, "calibrated"), tmp_path / "run", root=tmp_path / "empty")
