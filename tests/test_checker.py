"""The bundle checker rejects each broken fixture bundle with the right rule, YAML path and message, and
accepts the valid one. Fixture bundles are made here in code: a valid minimal bundle, then one change each."""

from __future__ import annotations

import copy
import datetime as dt
from pathlib import Path
from typing import Callable

import pytest
import yaml

from codascore import bundle, checker, competition, zips
from codascore.checker import refusals, schema
from codascore.cli import main as cli_main
from codascore.task import Task

from bundle_fixture import TASK, valid_yaml, write_bundle, zip_folder


def errors(report: checker.CheckReport) -> list[str]:
    return [str(f) for f in report.errors]


def test_the_valid_fixture_passes_as_folder_and_zip(tmp_path):
    folder = write_bundle(tmp_path / "ok", valid_yaml())
    for target in (folder, zip_folder(folder, tmp_path / "ok.zip")):
        report = checker.check_bundle(target)
        assert report.ok, errors(report)
        assert "leaderboard 'main' with 4 column(s), primary 'score'" in report.summary


def _set(path: str, value) -> Callable[[dict], None]:
    """A mutation setting a dotted YAML path (list items as [i]); value checker.DELETE removes it."""
    def mutate(data: dict) -> None:
        parts = path.replace("[", ".").replace("]", "").split(".")
        node = data
        for part in parts[:-1]:
            node = node[int(part)] if part.isdigit() else node[part]
        last = int(parts[-1]) if parts[-1].isdigit() else parts[-1]
        if value is DELETE:
            del node[last]
        else:
            node[last] = copy.deepcopy(value)
    return mutate


DELETE = object()


def _rename_leaderboards(data):
    data["leaderboard"] = data.pop("leaderboards")[0]


def _add_column(**column):
    def mutate(data):
        data["leaderboards"][0]["columns"].append({"title": "Extra", "index": 9, "sorting": "desc", **column})
    return mutate


def _many(*mutations):
    def mutate(data):
        for m in mutations:
            m(data)
    return mutate


# (id, YAML mutation, file overrides, rule, YAML path, message fragment)
YAML_CASES = [
    ("missing version", _set("version", DELETE), None, 2, "version", "no version: Codabench uses its v1.5 parser"),
    ("version 2.0", _set("version", 2.0), None, 2, "version", "A suitable version could not be found"),
    ("version 3", _set("version", "3"), None, 2, "version", "str(version) is '3'"),
    ("singular leaderboard", _rename_leaderboards, None, 15, "leaderboards",
     "Could not find leaderboards in the competition yaml"),
    ("37-char column key", _set("leaderboards[0].columns[1].key", "k" * 37), None, 17,
     "leaderboards[0].columns[1].key", "37 characters; Codabench allows at most 36"),
    ("37-char column title", _set("leaderboards[0].columns[3].title", "t" * 37), None, 17,
     "leaderboards[0].columns[3].title", "37 characters; Codabench allows at most 36"),
    ("duplicate column index", _set("leaderboards[0].columns[2].index", 1), None, 17,
     "leaderboards[0].columns[2].index", "Columns must have unique indexes!"),
    ("duplicate column key", _set("leaderboards[0].columns[2].key", "avg_coverage"), None, 17,
     "leaderboards[0].columns[2].key", "Columns must have unique keys!"),
    ("negative column index", _set("leaderboards[0].columns[3].index", -1), None, 17,
     "leaderboards[0].columns[3].index", "is negative"),
    ("overlapping phases", _set("phases[1].start", "2026-01-15"), None, 11, "phases[1].start",
     "Phases must be sequential"),
    ("equal phase dates", _many(_set("phases[0].end", "2026-02-01"), _set("phases[1].start", "2026-02-01")),
     None, 11, "phases[1].start", "Phases dates conflict"),
    ("missing end on a non-last phase", _set("phases[0].end", DELETE), None, 11, "phases[0].end",
     "Phase: First must have an end time because it has a phase after it."),
    ("phase ends before it starts", _set("phases[0].end", "2025-12-01"), None, 11, "phases[0].end",
     "before it starts"),
    ("unknown task index in a phase", _set("phases[1].tasks", [0, 7]), None, 10, "phases[1].tasks[1]",
     "unknown task index 7"),
    ("phase without tasks", _set("phases[0].tasks", []), None, 10, "phases[0].tasks",
     "no task can be submitted to"),
    ("phase without start", _set("phases[0].start", DELETE), None, 10, "phases[0].start",
     "missing: phase needs `start`"),
    ("month-first date", _set("phases[1].start", "2-01-2026"), None, 12, "phases[1].start",
     "is not an ISO date"),
    ("auto_migrate on the first phase", _set("phases[0].auto_migrate_to_this_phase", True), None, 13,
     "phases[0].auto_migrate_to_this_phase", "You cannot auto migrate to the first phase of a competition"),
    ("no execution_time_limit", _set("phases[1].execution_time_limit", DELETE), None, 14,
     "phases[1].execution_time_limit", "missing: phase needs `execution_time_limit`"),
    ("missing terms file", None, {"pages/terms.md": None}, 3, "terms", "Unable to find page: pages/terms.md"),
    ("no terms key", _set("terms", DELETE), None, 3, "terms",
     "A file containing the terms of this competition has not been supplied"),
    ("page of blanks only", None, {"pages/overview.md": "  \n"}, 3, "pages[0].file",
     "Page 'pages/overview.md' is empty, it must contain content."),
    ("empty page", None, {"pages/overview.md": ""}, 3, "pages[0].file",
     "Page 'pages/overview.md' is empty, it must contain content."),
    ("missing page", _set("pages[0].file", "pages/missing.md"), None, 3, "pages[0].file",
     "Unable to find page: pages/missing.md"),
    ("no pages key", _set("pages", DELETE), None, 3, "pages", "'NoneType' object is not iterable"),
    ("page title over 255", _set("pages[0].title", "p" * 256), None, 3, "pages[0].title",
     "256 characters; Codabench allows at most 255"),
    ("title over 256", _set("title", "c" * 257), None, 3, "title", "257 characters"),
    ("missing image", None, {"logo.png": None}, 3, "image", "Unable to find image: logo.png"),
    ("no image key", _set("image", DELETE), None, 3, "image",
     "An image for this competition could not be found in the yaml"),
    ("non-image logo", None, {"logo.png": "not a picture"}, 3, "image", "is not a PNG or JPEG image"),
    ("wrong docker_image", _set("docker_image", "codalab/codalab-legacy:py37"), None, 4, "docker_image",
     "is not the expected image 'codalab/codalab-legacy:py312'"),
    ("no docker_image", _set("docker_image", DELETE), None, 4, "docker_image",
     "missing: Codabench then uses codalab/codalab-legacy:py37"),
    ("duplicate task index", lambda d: d["tasks"].append({**d["tasks"][0], "name": "Again"}), None, 6,
     "tasks[1].index", "ERROR: Duplicate task indexes. Index: 0"),
    ("task without scoring_program", _set("tasks[0].scoring_program", DELETE), None, 6,
     "tasks[0].scoring_program", "missing: task needs `scoring_program`"),
    ("no tasks", _set("tasks", []), None, 6, "tasks", "No tasks listed in this competition"),
    ("missing reference data", _set("tasks[0].reference_data", "reference_data/nowhere"), None, 7,
     "tasks[0].reference_data", 'Cannot find dataset: "reference_data/nowhere"'),
    ("path escaping the bundle", _set("tasks[0].scoring_program", "../scoring_program"), None, 7,
     "tasks[0].scoring_program", "must be a relative path inside the bundle"),
    ("program zip with a wrapper folder", _set("tasks[0].scoring_program", "scoring.zip"),
     {"scoring.zip": "WRAPPED"}, 7, "tasks[0].scoring_program", "holds a single wrapper folder 'scoring_program'"),
    ("program without metadata", None, {"scoring_program/metadata.yaml": None}, 8, "tasks[0].scoring_program",
     "has no metadata.yaml (or metadata) at its root"),
    ("program without metadata command", None, {"scoring_program/metadata.yaml": "description: no command\n"},
     8, "tasks[0].scoring_program", "has no `command`: nothing runs"),
    ("command with shell syntax", None,
     {"scoring_program/metadata.yaml": "command: cd /app/program && python3 score.py > log.txt\n"},
     8, "tasks[0].scoring_program (scoring_program/metadata.yaml: command)", "shell syntax && >"),
    ("legacy $tokens", None,
     {"scoring_program/metadata.yaml": "command: python3 $program/score.py $input $output\n"},
     8, "tasks[0].scoring_program (scoring_program/metadata.yaml: command)",
     "legacy token(s) $program, $input, $output"),
    ("command relying on execute bits", None,
     {"scoring_program/metadata.yaml": "command: /app/program/score.py /app/input /app/output\n"},
     8, "tasks[0].scoring_program (scoring_program/metadata.yaml: command)", "is not an interpreter"),
    ("command naming a missing script", None,
     {"scoring_program/metadata.yaml": "command: python3 /app/program/scorer.py /app/input /app/output\n"},
     8, "tasks[0].scoring_program (scoring_program/metadata.yaml: command)", "which the program does not hold"),
    ("ingestion_only_during_scoring without ingestion", _set("tasks[0].ingestion_only_during_scoring", True),
     None, 9, "tasks[0].ingestion_only_during_scoring", "the task has no ingestion_program"),
    ("two leaderboards", lambda d: d["leaderboards"].append(copy.deepcopy(d["leaderboards"][0])) or
     _set("leaderboards[1].submission_rule", "Force_Everything")(d), None, 16,
     "leaderboards[1].submission_rule", "'Force_Everything' is not one of"),
    ("leaderboard key over 36", _set("leaderboards[0].key", "b" * 37), None, 15, "leaderboards[0].key",
     "37 characters"),
    ("leaderboard without columns", _set("leaderboards[0].columns", []), None, 15, "leaderboards[0].columns",
     "Leaderboards require at least 1 column"),
    ("bad submission_rule", _set("leaderboards[0].submission_rule", "Force_Everything"), None, 16,
     "leaderboards[0].submission_rule", "'Force_Everything' is not one of Add, "),
    ("default Add submission_rule", _set("leaderboards[0].submission_rule", "Add"), None, 16,
     "leaderboards[0].submission_rule", "this product uses Force_Last or Force_Best"),
    ("missing submission_rule", _set("leaderboards[0].submission_rule", DELETE), None, 16,
     "leaderboards[0].submission_rule", "missing: leaderboard needs `submission_rule`"),
    ("missing sorting", _set("leaderboards[0].columns[1].sorting", DELETE), None, 18,
     "leaderboards[0].columns[1].sorting", "missing: column needs `sorting`"),
    ("bad sorting", _set("leaderboards[0].columns[1].sorting", "descending"), None, 18,
     "leaderboards[0].columns[1].sorting", "'descending' is not one of asc, desc"),
    ("primary_index not a column", _set("leaderboards[0].primary_index", 9), None, 19,
     "leaderboards[0].primary_index", "9 is not the index of any column"),
    ("computation without indexes", _add_column(key="mean_two", computation="avg"), None, 20,
     "leaderboards[0].columns[4].computation_indexes", "Column with computation must have at least 1 column"),
    ("computation self-reference", _add_column(key="mean_two", computation="avg", computation_indexes=[1, 9]),
     None, 20, "leaderboards[0].columns[4].computation_indexes[1]", "Cannot self-reference"),
    ("computation of an unknown column", _add_column(key="mean_two", computation="max",
                                                     computation_indexes=[1, 12]),
     None, 20, "leaderboards[0].columns[4].computation_indexes[1]", "12 is not the index of any column"),
    ("computation: null without indexes", _add_column(key="plain", computation=None), None, 20,
     "leaderboards[0].columns[4].computation", "`computation: null` without `computation_indexes`"),
    ("indexes without a computation", _add_column(key="plain", computation_indexes=[1]), None, 20,
     "leaderboards[0].columns[4].computation_indexes",
     "Cannot add computation columns without a computation function set"),
    ("unknown computation", _add_column(key="plain", computation="median", computation_indexes=[1]), None, 20,
     "leaderboards[0].columns[4].computation", "'median' is not one of avg, sum, min, max"),
    ("missing column key in a task's scores", _add_column(key="tpr_low_fpr"), None, 21,
     "leaderboards[0].columns[4].key", "no task of any phase writes 'tpr_low_fpr'"),
    ("computed key written by a task", _many(_set("leaderboards[0].columns[3].computation", "avg"),
                                             _set("leaderboards[0].columns[3].computation_indexes", [1, 2])),
     None, 21, "tasks[0]", "writes 'MSE', a computed column"),
]


def broken_bundle(tmp_path: Path, mutate, files) -> Path:
    """The valid fixture with one YAML mutation and file overrides (WRAPPED: a program zip in a folder)."""
    data = valid_yaml()
    if mutate:
        mutate(data)
    if files and files.get("scoring.zip") == "WRAPPED":
        files = {"scoring.zip": zips.zip_bytes([("scoring_program/metadata.yaml", b"command: python3 s.py\n"),
                                                  ("scoring_program/s.py", b"print(1)\n")])}
    return write_bundle(tmp_path / "b", data, files)


@pytest.mark.parametrize("mutate, files, rule, path, fragment",
                         [case[1:] for case in YAML_CASES], ids=[case[0] for case in YAML_CASES])
def test_each_broken_fixture_is_rejected_with_its_rule_path_and_message(tmp_path, mutate, files, rule, path,
                                                                        fragment):
    report = checker.check_bundle(broken_bundle(tmp_path, mutate, files))
    assert not report.ok
    matching = [f for f in report.errors if f.rule == rule and f.path == path and fragment in f.message]
    assert matching, f"wanted [rule {rule}] {path}: ...{fragment}...; got:\n" + "\n".join(errors(report))


#: The fixtures Codabench itself accepts at upload (house rules and run-time failures): --platform-only is
#: silent on them and reports every other one.
HOUSE_ONLY = {
    "page of blanks only", "phase ends before it starts", "phase without tasks", "month-first date",
    "no execution_time_limit", "wrong docker_image", "no docker_image", "program zip with a wrapper folder",
    "program without metadata", "program without metadata command", "command with shell syntax", "legacy $tokens",
    "command relying on execute bits", "command naming a missing script",
    "ingestion_only_during_scoring without ingestion", "default Add submission_rule", "missing submission_rule",
    "missing sorting", "primary_index not a column", "missing column key in a task's scores",
    "computed key written by a task",
}


@pytest.mark.parametrize("case", YAML_CASES, ids=[case[0] for case in YAML_CASES])
def test_platform_only_reports_exactly_what_codabench_refuses(tmp_path, case):
    name, mutate, files, rule, path, fragment = case
    report = checker.check_bundle(broken_bundle(tmp_path, mutate, files), platform_only=True)
    if name in HOUSE_ONLY:
        assert report.ok, errors(report)
    else:
        assert any(f.rule == rule and f.path == path and fragment in f.message for f in report.errors), \
            errors(report)
    assert all(f.platform for f in report.errors)


def test_version_as_the_string_2_is_accepted(tmp_path):
    data = valid_yaml()
    data["version"] = "2"
    assert checker.check_bundle(write_bundle(tmp_path / "b", data)).ok


def test_an_unquoted_timestamp_is_midnight_of_its_day_as_codabench_stores_it(tmp_path):
    """PyYAML reads an unquoted `2026-01-31 23:59:59` as a datetime, which Codabench keeps only as its day:
    the phase then ends at 00:00:00, exactly when the next one starts."""
    data = valid_yaml()
    data["phases"][0]["end"] = dt.datetime(2026, 1, 31, 23, 59, 59)
    data["phases"][1]["start"] = "2026-01-31 00:00:00"
    text = yaml.safe_dump(data, sort_keys=False)
    assert "end: 2026-01-31 23:59:59\n" in text  # unquoted, as an organiser would write it
    report = checker.check_bundle(write_bundle(tmp_path / "b", text))
    assert any(f.rule == 11 and "Phases dates conflict" in f.message and "2026-01-31 00:00:00" in f.message
               for f in report.errors), errors(report)
    assert any(f.rule == 12 and f.path == "phases[0].end" and "quote it" in f.message for f in report.warnings)


def test_a_date_without_time_as_end_is_warned_as_the_start_of_that_day(tmp_path):
    data = valid_yaml()
    data["phases"][0]["end"] = "2026-01-31"
    report = checker.check_bundle(write_bundle(tmp_path / "b", data))
    assert report.ok, errors(report)
    assert any(f.rule == 12 and f.path == "phases[0].end" and '"2026-01-31 23:59:59"' in f.message
               for f in report.warnings)


def test_a_folder_path_without_trailing_slash_is_warned(tmp_path):
    data = valid_yaml()
    data["tasks"][0]["reference_data"] += "/"
    report = checker.check_bundle(write_bundle(tmp_path / "b", data))
    slashes = {f.path for f in report.warnings if f.rule == 28}
    assert slashes == {"tasks[0].scoring_program"}


def test_at_least_25_distinct_rules_are_covered_by_fixtures():
    assert len(YAML_CASES) >= 25
    assert {case[3] for case in YAML_CASES} >= set(range(2, 22)) - {5}


def test_ignored_and_misspelled_keys_are_warnings(tmp_path):
    data = valid_yaml()
    data["phases"][0]["max_submissions_per_person"] = 3
    data["phases"][0]["accepts_only_result_submissions"] = True
    data["leaderboards"][0]["columns"][0]["sortng"] = "desc"
    report = checker.check_bundle(write_bundle(tmp_path / "b", data))
    assert report.ok, errors(report)
    warned = {(f.rule, f.path) for f in report.warnings}
    assert {(5, "phases[0].max_submissions_per_person"), (5, "phases[0].accepts_only_result_submissions"),
            (5, "leaderboards[0].columns[0].sortng")} <= warned


def test_duplicated_yaml_keys_are_warned_with_their_line(tmp_path):
    text = yaml.safe_dump(valid_yaml(), sort_keys=False) + "title: Second title\n"
    report = checker.check_bundle(write_bundle(tmp_path / "b", text))
    assert any(f.rule == 1 and "duplicated key 'title'" in f.message for f in report.warnings)


def test_not_a_zip_is_rejected(tmp_path):
    fake = tmp_path / "bundle.zip"
    fake.write_text("PK? no")
    report = checker.check_bundle(fake)
    assert [str(f) for f in report.findings] == ["ERROR [rule 1] bundle.zip: Bad zip file uploaded."]


def test_competition_yaml_inside_a_wrapper_folder_is_rejected(tmp_path):
    folder = write_bundle(tmp_path / "b", valid_yaml())
    target = tmp_path / "wrapped.zip"
    target.write_bytes(zips.zip_bytes(zips.folder_entries(folder, prefix="my_bundle/")))
    report = checker.check_bundle(target)
    assert not report.ok
    assert "competition.yaml is missing from zip" in report.errors[0].message
    assert "my_bundle/competition.yaml" in report.errors[0].message


def test_a_zipped_program_importing_the_library_must_hold_it(tmp_path):
    folder = write_bundle(tmp_path / "b", valid_yaml(),
                          {"scoring_program/score.py": "from codascore.codabench import score_main\n"})
    assert checker.check_bundle(folder).ok  # a source folder: the builder adds the library
    report = checker.check_bundle(zip_folder(folder, tmp_path / "b.zip"))
    assert any(f.rule == 8 and "does not hold the library" in f.message for f in report.errors)


def test_explicit_bash_c_may_use_shell_syntax(tmp_path):
    files = {"scoring_program/metadata.yaml": "command: bash -c \"python3 score.py /app/input /app/output\"\n"}
    report = checker.check_bundle(write_bundle(tmp_path / "b", valid_yaml(), files))
    assert report.ok, errors(report)


def test_a_task_not_in_this_build_is_a_warning_not_a_crash(tmp_path):
    data = valid_yaml()
    data["tasks"].append({"index": 1, "name": "Elsewhere", "scoring_program": "scoring_program",
                          "reference_data": "reference_data/nofamily.task"})
    data["phases"][1]["tasks"] = [1]
    data["phases"][1]["starting_kit"] = "sample_submissions/nofamily.task"
    report = checker.check_bundle(write_bundle(tmp_path / "b", data))
    assert report.ok, errors(report)
    [warning] = [f for f in report.warnings if "not available in this build" in f.message]
    assert warning.path == "tasks[1]" and "task nofamily.task not available in this build" in warning.message
    assert "reference_data/nofamily.task" in warning.message
    assert "sample_submissions/nofamily.task" in warning.message


class _Phase2Like(Task):
    """A task the checker reads the keys of; it never scores."""

    name = "weak_lensing.fixture_phase2"
    score_keys = ("score", "tpr_low_fpr")

    def load_reference(self, ref_dir, config):
        raise NotImplementedError

    def load_submission(self, res_dir, reference, config):
        raise NotImplementedError

    def score(self, reference, submission, config):
        raise NotImplementedError


def _with_fixture_task(monkeypatch):
    import codascore.weak_lensing as family

    monkeypatch.setitem(family.TASKS, _Phase2Like.name, _Phase2Like())


def _two_phase_yaml(second_phase_tasks: list[int]) -> dict:
    data = valid_yaml()
    data["tasks"].append({"index": 1, "name": "Phase 2", "scoring_program": "scoring_program",
                          "reference_data": f"reference_data/{_Phase2Like.name}"})
    data["phases"][1]["tasks"] = second_phase_tasks
    _add_column(key="tpr_low_fpr", index=4)(data)
    return data


def test_phase_specific_columns_are_checked_per_phase(tmp_path, monkeypatch):
    """Weak lensing's design: both phases share leaderboards[0]; each phase writes the primary key and its
    own columns, and leaves the other phase's columns empty. That is accepted."""
    _with_fixture_task(monkeypatch)
    files = {f"reference_data/{_Phase2Like.name}/task.yaml": f"task: {_Phase2Like.name}\n"}
    report = checker.check_bundle(write_bundle(tmp_path / "b", _two_phase_yaml([1]), files))
    assert report.ok, errors(report)


def test_a_phase_whose_tasks_write_different_columns_is_rejected(tmp_path, monkeypatch):
    _with_fixture_task(monkeypatch)
    files = {f"reference_data/{_Phase2Like.name}/task.yaml": f"task: {_Phase2Like.name}\n"}
    report = checker.check_bundle(write_bundle(tmp_path / "b", _two_phase_yaml([0, 1]), files))
    messages = errors(report)
    assert any("leaderboards[0].columns[4].key" in m and "task weak_lensing.phase1 never writes 'tpr_low_fpr'"
               in m for m in messages), messages
    assert any("leaderboards[0].columns[1].key" in m and f"task {_Phase2Like.name} never writes 'avg_coverage'"
               in m for m in messages), messages


def test_a_primary_key_missing_from_a_phase_says_it_would_rank_first(tmp_path, monkeypatch):
    _with_fixture_task(monkeypatch)
    data = _two_phase_yaml([1])
    data["leaderboards"][0]["primary_index"] = 1  # avg_coverage, which the Phase 2 task never writes
    files = {f"reference_data/{_Phase2Like.name}/task.yaml": f"task: {_Phase2Like.name}\n"}
    report = checker.check_bundle(write_bundle(tmp_path / "b", data, files))
    assert any("never writes 'avg_coverage'" in f.message and "rank first" in f.message for f in report.errors)


def test_cli_check_exits_1_listing_every_violation_and_0_with_a_summary(tmp_path, capsys):
    good = write_bundle(tmp_path / "good", valid_yaml())
    bad_data = valid_yaml()
    bad_data["version"] = 2.0
    bad_data["leaderboards"][0]["columns"][1]["key"] = "k" * 37
    bad = write_bundle(tmp_path / "bad", bad_data)
    assert cli_main(["check", str(good)]) == 0
    assert "OK " in capsys.readouterr().out
    assert cli_main(["check", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "ERROR [rule 2] version:" in out and "ERROR [rule 17] leaderboards[0].columns[1].key:" in out
    assert "FAILED" in out


def test_check_image_accepts_an_organisers_own_image_and_then_refuses_the_stock_one(tmp_path, capsys):
    own = write_bundle(tmp_path / "own", {**valid_yaml(), "docker_image": "example/scorer:1.0"})
    stock = write_bundle(tmp_path / "stock", valid_yaml())
    assert bundle.DOCKER_IMAGE == "codalab/codalab-legacy:py312"
    assert cli_main(["check", str(stock)]) == 0
    assert cli_main(["check", str(own)]) == 1
    assert "'example/scorer:1.0' is not the expected image 'codalab/codalab-legacy:py312'" in capsys.readouterr().out
    assert cli_main(["check", "--image", "example/scorer:1.0", str(own)]) == 0
    assert cli_main(["check", "--image", "example/scorer:1.0", str(stock)]) == 1


def test_every_rule_has_a_text():
    assert sorted(checker.RULES) == list(range(1, max(checker.RULES) + 1))


def test_reference_data_must_name_its_task(tmp_path):
    files = {f"reference_data/{TASK}/task.yaml": None, f"reference_data/{TASK}/labels.npy": b"0"}
    report = checker.check_bundle(write_bundle(tmp_path / "b", valid_yaml(), files))
    assert any(f.rule == 7 and f.path == "tasks[0].reference_data" and "has no task.yaml" in f.message
               for f in report.errors), errors(report)


def test_input_data_must_name_the_same_task_as_the_reference(tmp_path):
    data = valid_yaml()
    data["tasks"][0]["input_data"] = f"input_data/{TASK}"
    report = checker.check_bundle(write_bundle(tmp_path / "b", data,
                                               {f"input_data/{TASK}/task.yaml": "task: weak_lensing.phase2\n"}))
    assert any(f.path == "tasks[0].input_data" and "names task 'weak_lensing.phase2' but the reference data "
               f"names '{TASK}'" in f.message for f in report.errors), errors(report)


def _paths(node, prefix=""):
    """Every dotted path of a YAML tree (list items as [i])."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, f"{prefix}.{key}" if prefix else key)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _paths(value, f"{prefix}[{i}]")
    if prefix:
        yield prefix


WEIRD_VALUES = [None, 0, -3, 2.5, True, "", "x" * 300, "2-30-2026", [], [None], {}, {"a": 1}, ["..", 1]]


@pytest.mark.parametrize("value", WEIRD_VALUES, ids=[repr(v)[:12] for v in WEIRD_VALUES])
def test_any_value_anywhere_gives_findings_never_a_crash(tmp_path, value):
    folder = write_bundle(tmp_path / "b", valid_yaml())
    for n, path in enumerate(sorted(set(_paths(valid_yaml())))):
        data = valid_yaml()
        _set(path, value)(data)
        (folder / "competition.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
        report = checker.check_bundle(folder)
        assert isinstance(report.findings, list)
        if value in (None, [], {}) and path in ("version", "tasks", "phases", "leaderboards"):
            assert not report.ok, path


@pytest.mark.parametrize("yaml_file", sorted(competition.competition_files(competition.project_root()).values()),
                         ids=lambda path: path.name)
def test_project_phase_dates_are_stored_as_written_with_no_overlap(yaml_file):
    """As Codabench stores them, no phase of the project's YAML files ends before 23:59 on its stated day,
    and each phase starts strictly after the previous one ends."""
    phases = yaml.safe_load(yaml_file.read_text())["phases"]
    stored = []
    for phase in sorted(phases, key=lambda p: p.get("index", 0)):
        start, end = (schema.platform_datetime(phase.get(key)) for key in ("start", "end"))
        if end is not None:
            stated_day = str(phase["end"])[:10]
            assert str(end.date()) == stated_day and end.time() >= dt.time(23, 59), \
                f"{phase['name']} ends at {end} (YAML: {phase['end']!r})"
        stored.append((phase["name"], start, end))
    for (name, _, end), (after, start, _) in zip(stored, stored[1:]):
        assert end is not None and start > end, f"{after} starts at {start}, not after {name} ends at {end}"


@pytest.mark.parametrize("case", [c for c in YAML_CASES if c[0] not in HOUSE_ONLY], ids=lambda c: c[0])
def test_every_platform_error_names_the_refusal_it_predicts(tmp_path, case):
    """So that a client can say which checker rule covers the platform's failure text (checker/refusals.py)."""
    _, mutate, files, *_ = case
    report = checker.check_bundle(broken_bundle(tmp_path, mutate, files), platform_only=True)
    assert report.errors
    assert all(f.rule_id in refusals.BY_ID for f in report.errors), [(f.rule_id, f.message) for f in report.errors]


#: Failure texts the real platform answered (tests/test_codabench_checker_agreement.py, the snapshot's site).
PLATFORM_TEXTS = {
    "HTML pages could not be found in the yaml file": "cb.v15.html",
    'Cannot find dataset: "../scoring_program"': "cb.dataset",
    "columns: index: Ensure this value is greater than or equal to 0.\n\n": "cb.column.negative-index",
    'ERROR: Task "Phase 1" does not have a scoring program': "cb.v2.task-scoring",
    "columns: Column index 12 does not exist in available indexes [0, 1, 2, 3, 9]\n": "cb.column.computation-index",
    "Unpacking the bundle failed. Here is the error log: 'start'": "cb.unpack.crash",
}


@pytest.mark.parametrize("text, rule_id", PLATFORM_TEXTS.items())
def test_a_platform_failure_text_maps_to_its_refusal_id(text, rule_id):
    assert checker.refusal_of(text) == rule_id


def test_refusal_ids_are_unique_and_an_unknown_text_has_none():
    assert len(refusals.BY_ID) == len(refusals.REFUSALS)
    assert checker.refusal_of("something the platform never says") is None


def v15_bundle(folder: Path, drop: str | None = None) -> Path:
    """A minimal bundle for Codabench's v1.5 parser (no `version`), without key DROP."""
    data = {"title": "Old style", "image": "logo.png", "html": {"terms": "terms.html", "overview": "overview.html"},
            "phases": {1: {"phasenumber": 1, "label": "Only", "start_date": dt.date(2026, 1, 1),
                           "scoring_program": "scoring_program/"}},
            "leaderboard": {"leaderboards": {"Results": {"label": "RESULTS"}},
                            "columns": {"score": {"leaderboard": {"label": "RESULTS"}, "label": "Score"}}}}
    if drop:
        del data[drop]
    return write_bundle(folder, data, {"terms.html": "<p>Be fair.</p>", "overview.html": "<p>Hi.</p>"})


def test_a_v15_bundle_is_checked_against_the_v15_parser(tmp_path):
    assert checker.check_bundle(v15_bundle(tmp_path / "ok"), platform_only=True).ok
    for key, rule_id in (("html", "cb.v15.html"), ("phases", "cb.v15.phases"), ("leaderboard", "cb.v15.leaderboard"),
                         ("image", "cb.image.key")):
        report = checker.check_bundle(v15_bundle(tmp_path / key, drop=key), platform_only=True)
        assert rule_id in {f.rule_id for f in report.errors}, errors(report)
        assert all(f.platform for f in report.errors)
