"""The command line loads what it runs (docs/architecture.md#commands): the help and ``judge status`` import
no family, no numpy and no judge; a verb's modes are verbs of their own (``judge status``, ``judge phase``,
``site-leaderboard``), and their old forms say the new one in one line with the usage code; ``--quiet``
hides the progress, never a warning or a result."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys

import pytest

from codascore.cli import main
from codascore.commands import VERBS, family_verbs
from codascore.formats.judgement import DATABASE, RESULTS, SCHEMA
from codascore.outcomes import ExitCode
from codascore.registry import FAMILIES, task_names

#: Modules the help and the reading of a judgement must not import: each takes a noticeable part of a second.
HEAVY = ("numpy", "yaml", "distributed", "codascore.judge", "codascore.runner", "codascore.leaderboard",
         "codascore.platform", *(f"codascore.{family}" for family in FAMILIES))


#: ``python -m codascore ARGS`` that lists, at its exit, every module it imported (-X importtime misses
#: those imported through importlib, as the verbs are).
RUN_AND_LIST = ("import atexit, runpy, sys\n"
                "atexit.register(lambda: print('imported:', *sorted(sys.modules), file=sys.stderr))\n"
                "sys.argv[0] = 'codascore'\n"
                "runpy.run_module('codascore', run_name='__main__', alter_sys=True)\n")


def imported(cwd, *args) -> tuple[subprocess.CompletedProcess, set[str]]:
    """Run ``python -m codascore ARGS`` in cwd: the process and the modules it imported."""
    done = subprocess.run([sys.executable, "-c", RUN_AND_LIST, *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=600)
    modules = set(done.stderr.rsplit("imported:", 1)[1].split())
    assert "codascore.cli" in modules, done.stderr[-2000:]
    return done, modules


def heavy(modules: set[str]) -> list[str]:
    return sorted(name for name in modules if any(name == h or name.startswith(h + ".") for h in HEAVY))


def empty_judgement(out):
    """A judgement's folder as the judge starts one: its store with the schema, no unit yet."""
    out.mkdir()
    with sqlite3.connect(out / DATABASE) as db:
        db.executescript(SCHEMA)
    (out / RESULTS).write_text("")
    return out


# ----------------------------------------------------------------- loaded when used


def test_the_help_imports_no_family_and_no_numpy_and_lists_every_verb_and_task(tmp_path):
    done, modules = imported(tmp_path, "--help")
    assert done.returncode == 0 and heavy(modules) == []
    listed = done.stdout.split("positional arguments:")[1].split("options:")[0]
    assert all(re.search(rf"^\s+{verb.name}\b", listed, re.M) for verb in VERBS + family_verbs())
    assert all(name in done.stdout for name in task_names())


def test_judge_status_imports_no_judge_and_no_numpy(tmp_path):
    done, modules = imported(tmp_path, "judge", "status", empty_judgement(tmp_path / "judgement"))
    assert (done.returncode, done.stdout.strip()) == (0, "no units recorded yet")
    assert heavy(modules) == []


def test_a_verbs_help_imports_that_verb_only(tmp_path):
    done, modules = imported(tmp_path, "run", "--help")
    assert done.returncode == 0 and all(name in done.stdout for name in task_names())
    assert "codascore.commands.run" in modules and "codascore.commands.judge" not in modules
    assert heavy(modules) == []


def test_a_familys_verbs_load_the_family_when_used(tmp_path):
    done, modules = imported(tmp_path, "uai", "--help")
    assert done.returncode == 0 and "update-best" in done.stdout and "codascore.uai.cli" in modules


# ----------------------------------------------------------------- the verbs of their own, and the old forms


def test_judge_status_of_a_folder_without_a_judgement_says_so(tmp_path, capsys):
    assert main(["judge", "status", str(tmp_path)]) == ExitCode.ORGANISER_ERROR
    assert capsys.readouterr().err.strip() == f"error: no judgement in {tmp_path}: {DATABASE} not found"


def test_the_judge_help_lists_its_own_verbs_and_each_has_its_help(capsys):
    with pytest.raises(SystemExit):
        main(["judge", "--help"])
    out = capsys.readouterr().out
    assert "codascore judge status" in out and "codascore judge phase" in out
    with pytest.raises(SystemExit):
        main(["judge", "phase", "--help"])
    usage = capsys.readouterr().out.split("\n\n")[0]
    assert usage.startswith("usage: codascore judge phase") and usage.endswith("BUNDLE PHASE SUBMISSIONS")


@pytest.mark.parametrize("old, new", [
    (["judge", "--status", "judgement"], "codascore judge status judgement"),
    (["judge", "--bundle", "dist/uai.zip", "--phase", "1", "teams", "--out", "j"],
     "codascore judge phase dist/uai.zip PHASE SUBMISSIONS --out OUT"),
    (["judge", "teams", "--phase", "Final", "--out", "j"], "codascore judge phase BUNDLE Final SUBMISSIONS --out OUT"),
    (["leaderboard", "--site", "https://www.codabench.org", "--phase", "3"],
     "codascore site-leaderboard --site https://www.codabench.org --phase ID"),
    (["leaderboard", "--phase", "3"], "codascore site-leaderboard --site URL --phase 3"),
], ids=["judge --status", "judge --bundle", "judge --phase", "leaderboard --site", "leaderboard --phase"])
def test_an_old_form_says_the_new_one_in_one_line_with_the_usage_code(old, new, capsys):
    with pytest.raises(SystemExit) as ended:
        main(old)
    err = capsys.readouterr().err
    assert ended.value.code == ExitCode.ORGANISER_ERROR
    assert err.count("\n") == 1 and err.startswith(f"codascore {old[0]} --") and err.strip().endswith(new)


# ----------------------------------------------------------------- --quiet


@pytest.mark.parametrize("where", ["before", "after"])
def test_quiet_hides_the_progress_but_not_the_work(tmp_path, capsys, where):
    args = ["reference", "weak_lensing.phase1", "--root", str(tmp_path)]
    assert main(["--quiet", *args] if where == "before" else [*args, "-q"]) == ExitCode.OK
    assert capsys.readouterr().err == ""
    assert (tmp_path / "reference_data" / "weak_lensing.phase1" / "task.yaml").is_file()


def test_without_quiet_the_same_verb_shows_its_progress(tmp_path, capsys):
    assert main(["reference", "weak_lensing.phase1", "--root", str(tmp_path)]) == ExitCode.OK
    assert "weak_lensing.phase1: 1010 training maps" in capsys.readouterr().err
