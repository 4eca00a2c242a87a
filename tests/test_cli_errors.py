"""The command line's mistakes, as a person makes them: each is told in one or two lines (what was wrong,
what to do), with the right exit code, and never as a traceback unless --debug is given.

Each test runs ``python -m codascore`` in a subprocess from an empty folder, so that what it writes (or must
not write) is in plain sight.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from codascore.cli import main
from codascore.errors import SubmissionError
from codascore.registry import all_tasks
from codascore.sandbox import locate_submission


def codascore(cwd, *args):
    """Run the command line in cwd: (exit code, stdout, stderr)."""
    done = subprocess.run([sys.executable, "-m", "codascore", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=600)
    return done.returncode, done.stdout, done.stderr


def told_briefly(stderr: str) -> list[str]:
    """The error's lines, checked to be one or two and no traceback."""
    lines = stderr.strip().splitlines()
    assert "Traceback" not in stderr
    assert 1 <= len(lines) <= 2, stderr
    return lines


# ----------------------------------------------------------------- unknown task names, for every verb


@pytest.mark.parametrize("verb", [["run", "{task}", "{submission}"], ["reference", "{task}"],
                                  ["demo", "--tasks", "{task}"]], ids=lambda verb: verb[0])
def test_an_unknown_task_names_the_closest_known_one_and_lists_them_all(tmp_path, project_data, verb):
    (tmp_path / "sub.zip").write_bytes(b"")
    args = [a.format(task="weak_lensing.phase3", submission=tmp_path / "sub.zip") for a in verb]
    code, out, err = codascore(tmp_path, *args, "--root", project_data)
    lines = told_briefly(err)
    assert code == 2
    assert "unknown task 'weak_lensing.phase3'" in lines[0] and "did you mean weak_lensing.phase" in lines[0]
    assert all(name in lines[0] for name in all_tasks())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sub.zip"]


def test_an_unknown_family_is_matched_against_the_task_names(tmp_path):
    code, out, err = codascore(tmp_path, "reference", "lensing.phase1")
    assert code == 2 and "did you mean weak_lensing.phase1?" in told_briefly(err)[0]
    assert list(tmp_path.iterdir()) == []


def test_bundle_with_a_misspelt_name_draws_no_seed_and_names_the_closest(tmp_path, repo_root):
    project = tmp_path / "project"
    (project / "competitions").mkdir(parents=True)
    for name in ("uai", "ariel"):
        (project / "competitions" / f"{name}.yaml").write_bytes((repo_root / "competitions" / f"{name}.yaml")
                                                                .read_bytes())
    code, out, err = codascore(tmp_path, "bundle", "uia", "--root", project)
    assert code == 2 and "no competition named 'uia' (did you mean uai?)" in told_briefly(err)[0]
    assert sorted(p.name for p in project.iterdir()) == ["competitions"]  # no bundle.seed, no data


# ----------------------------------------------------------------- reference


def test_build_reference_says_which_tasks_it_builds_and_what_to_do_instead(tmp_path):
    (tmp_path / "DIR").mkdir()
    code, out, err = codascore(tmp_path, "build-reference", "weak_lensing.phase1", "DIR", "OUT")
    lines = told_briefly(err)
    assert code == 2
    assert "uai.pr" in lines[0] and "generator" in lines[0]
    assert "codascore reference weak_lensing.phase1 --root" in lines[1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["DIR"]


def test_build_reference_with_a_missing_source_writes_nothing(tmp_path):
    code, out, err = codascore(tmp_path, "build-reference", "uai.pr", "no_such_dir", "out")
    assert code == 2 and "no_such_dir: no such folder" in told_briefly(err)[0]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args", [["uai.pr", "models"], ["uai.pr"], ["no_such_task", "models", "out"],
                                  ["uai.pr", "models", "out", "more"]], ids=lambda args: str(len(args)))
def test_build_reference_with_wrong_arguments_is_a_one_line_usage_error(tmp_path, args):
    (tmp_path / "models").mkdir()
    code, out, err = codascore(tmp_path, "build-reference", *args)
    lines = told_briefly(err)
    assert code == 2 and lines[0].startswith(("codascore build-reference: error: ", "codascore: error: "))
    assert lines[1].startswith("see: codascore") and lines[1].endswith(" --help")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["models"]


def test_reference_in_the_old_three_word_form_points_to_build_reference(tmp_path):
    (tmp_path / "models").mkdir()
    code, out, err = codascore(tmp_path, "reference", "uai.pr", "models", "out")
    lines = told_briefly(err)
    assert code == 2 and "task names only" in lines[0] and "'models'" in lines[0]
    assert "codascore build-reference uai.pr models out" in lines[1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["models"]


def test_reference_with_a_task_and_a_folder_only_writes_nothing_and_shows_the_form(tmp_path):
    code, out, err = codascore(tmp_path, "reference", "uai.pr", "no_such_dir")
    lines = told_briefly(err)
    assert code == 2 and "unknown task 'no_such_dir'" in lines[0]
    assert "codascore build-reference uai.pr SOURCE OUT" in lines[1]
    assert list(tmp_path.iterdir()) == []  # main generated uai.pr's demo data here first


def test_build_reference_with_a_wrong_source_leaves_no_folder_behind(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "broken.uai").write_text("MARKOV\n2\n")
    code, out, err = codascore(tmp_path, "build-reference", "uai.pr", "models", tmp_path / "new" / "deep" / "out")
    told_briefly(err)
    assert code == 2  # the organiser's own files are wrong: a ReferenceDataError
    assert sorted(p.name for p in tmp_path.iterdir()) == ["models"]


# ----------------------------------------------------------------- run


def test_run_with_a_missing_submission_is_refused_before_anything_is_made(tmp_path, project_data):
    code, out, err = codascore(tmp_path, "run", "uai.pr", "nothere.zip", "--root", project_data)
    lines = told_briefly(err)
    assert code == 2 and "nothere.zip: no such file or folder" in lines[0] and "--help" in lines[1]
    assert out == "" and list(tmp_path.iterdir()) == []


def test_run_with_a_file_that_is_not_a_zip_says_so_once_on_one_line(tmp_path, project_data):
    (tmp_path / "a.zip").write_text("not a zip\n")
    code, out, err = codascore(tmp_path, "run", "uai.pr", "a.zip", "--root", project_data,
                               "--out", tmp_path / "run")
    assert code == 1 and "Traceback" not in err
    assert len(out.strip().splitlines()) == 1 and out.count("not a zip file") == 1
    assert "exit code None" not in out and "contract violation" not in out


def test_the_zip_hint_is_given_only_when_the_files_sit_in_a_folder(tmp_path):
    empty, nested = tmp_path / "empty", tmp_path / "nested"
    empty.mkdir()
    (empty / "notes.txt").write_text("")
    for folder in ("a", "b"):
        (nested / folder).mkdir(parents=True)
        (nested / folder / "result.json").write_text("{}")
    with pytest.raises(SubmissionError) as missing:
        locate_submission(empty, ("result.json",))
    with pytest.raises(SubmissionError) as wrapped:
        locate_submission(nested, ("result.json",))
    assert "found notes.txt" in str(missing.value) and "Zip the files themselves" not in str(missing.value)
    assert "Zip the files themselves" in str(wrapped.value)


def test_run_of_a_zip_without_the_result_file_gives_no_zip_hint(tmp_path, project_data):
    with zipfile.ZipFile(tmp_path / "sub.zip", "w") as archive:
        archive.writestr("README.txt", "no answers here")
    code, out, err = codascore(tmp_path, "run", "uai.pr", "sub.zip", "--root", project_data, "--out",
                               tmp_path / "run")
    assert code == 1 and "no result file found" in out
    assert "Zip the files themselves" not in out


# ----------------------------------------------------------------- help


def test_the_top_level_help_speaks_to_users_and_names_the_tasks(tmp_path):
    code, out, err = codascore(tmp_path, "--help")
    assert code == 0
    assert "``" not in out and "Command line:" not in out and "Makefile" not in out
    assert "codascore run TASK SUBMISSION" in out and "uai.pr" in out


def test_run_help_lists_every_task(tmp_path):
    code, out, err = codascore(tmp_path, "run", "--help")
    assert code == 0 and all(name in out for name in all_tasks())


@pytest.mark.parametrize("verb, metavars", [(["check"], ["BUNDLE"]), (["score"], ["INPUT", "OUTPUT"]),
                                            (["ingest"], ["INPUT_DATA", "OUTPUT", "PROGRAM", "SUBMISSION"]),
                                            (["uai", "update-best"], ["REF_DIR", "DETAILS_JSON"])],
                         ids=lambda value: "-".join(value) if isinstance(value[0], str) else None)
def test_every_positional_argument_is_explained(tmp_path, verb, metavars):
    code, out, err = codascore(tmp_path, *verb, "--help")
    assert code == 0
    positional = out.split("positional arguments:")[1].split("options:")[0]
    explained = {line.split()[0]: len(line.split()) > 1 for line in positional.splitlines() if line.strip()}
    for metavar in metavars:
        assert explained.get(metavar), f"{metavar} has no explanation in:\n{positional}"


# ----------------------------------------------------------------- --debug, and bugs


def test_debug_after_the_verb_shows_the_traceback(tmp_path):
    (tmp_path / "models").mkdir()
    code, out, err = codascore(tmp_path, "build-reference", "uai.pr", "models", "out", "--debug")
    assert code == 1 and "Traceback" in err and "ReferenceDataError" in err
    code, out, err = codascore(tmp_path, "build-reference", "uai.pr", "models", "out")
    assert code == 2 and len(told_briefly(err)) == 1


def test_a_bug_is_told_in_two_lines_with_exit_3(monkeypatch, capsys):
    from codascore.commands.bundles import Check

    def broken(self, args):
        raise KeyError("surprise")

    monkeypatch.setattr(Check, "run", broken)
    assert main(["check", "--rules"]) == 3
    lines = told_briefly(capsys.readouterr().err)
    assert lines[0] == "error: KeyError: 'surprise'" and "--debug" in lines[1]
    with pytest.raises(KeyError):
        main(["--debug", "check", "--rules"])


# ----------------------------------------------------------------- numbers in messages


def test_shown_prints_numbers_plainly_whatever_numpy_writes_for_a_repr():
    from codascore.validate import shown

    class Numpy2Scalar:  # what numpy >= 2 gives: a 0-d scalar whose repr names its type
        shape = ()

        def item(self):
            return -0.1

        def __repr__(self):
            return "np.float64(-0.1)"

    assert shown(Numpy2Scalar()) == "-0.1"
    assert shown(np.float64(-0.1)) == "-0.1" and shown(np.int64(7)) == "7" and shown(np.float32(0.5)) == "0.5"
    assert shown([np.float64(1.5), np.int32(2)]) == "[1.5, 2]"
    assert shown("x" * 100, limit=10) == repr("x" * 10 + "...")


def test_submission_messages_print_numbers_not_numpy_reprs(tmp_path):
    from codascore.weak_lensing.files import read_phase1_result, read_phase2_result

    rows = [[0.3, 0.8]] * 3
    (tmp_path / "result.json").write_text(json.dumps({"means": rows, "errorbars": [[0.1, 0.1], [0.1, -0.1],
                                                                                   [0.1, 0.1]]}))
    with pytest.raises(SubmissionError) as phase1:
        read_phase1_result(tmp_path, 3)
    assert "errorbars[1][1] (S_8) = -0.1 must be > 0" in str(phase1.value)
    (tmp_path / "result.json").write_text(json.dumps({"p_ind": [0.5, 1.5]}))
    with pytest.raises(SubmissionError) as phase2:
        read_phase2_result(tmp_path, 2)
    assert "p_ind[1] = 1.5 is outside [0, 1]" in str(phase2.value)
    assert "np." not in str(phase1.value) + str(phase2.value)
