"""codascore leaderboard from the command line: what it reads (details.json folders, a judgement's output
folder), what it refuses (exit 2, naming the file and the field), what it writes (the same bytes for the same
seed), on a tiny synthetic board standing in for the task's (tests/leaderboard_boards.py); and the scorer's
reference_sha256 in details.json."""

from __future__ import annotations

import csv
import json
import shutil
import sqlite3

import pytest

from codascore.board import Design
from codascore.cli import main
from codascore.digests import folder_sha256
from codascore.registry import get_task

from leaderboard_boards import TASK, MeanBoard, details

UNITS = [("i1", "f1"), ("i2", "f1"), ("i3", "f2"), ("i4", "f2"), ("i5", "f2")]


@pytest.fixture
def board(monkeypatch):
    """The synthetic board as the task's final board, strata by family."""
    board = MeanBoard(design=Design(strata=("family",)))
    monkeypatch.setattr(get_task(TASK), "final_board", lambda config: board)
    return board


def rows(offset: float, units=UNITS) -> list[dict]:
    return [{"unit": unit, "family": family, "value": offset + 0.1 * k} for k, (unit, family) in enumerate(units)]


def team(folder, name: str, offset: float, **kwargs):
    path = folder / name / "details.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(details(rows(offset, kwargs.pop("units", UNITS)), **kwargs)))
    return path.parent


def read_csv(path) -> list[dict]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def run(*args) -> int:
    return main(["leaderboard", *map(str, args)])


def test_three_teams_ranked_with_seed_and_replicates_in_every_file(tmp_path, board, capsys):
    inputs = [team(tmp_path, name, offset) for name, offset in (("alice", 0.5), ("bob", 0.0), ("carol", 0.2))]
    assert run(*inputs, "--replicates", 50, "--seed", 3, "--out", tmp_path / "out") == 0
    ranking = read_csv(tmp_path / "out" / "ranking.csv")
    assert [row["team"] for row in ranking] == ["alice", "carol", "bob"]
    assert [row["rank"] for row in ranking] == ["1", "2", "3"]
    assert all(row["seed"] == "3" and row["replicates"] == "50" for row in ranking)
    pairwise = read_csv(tmp_path / "out" / "pairwise.csv")
    assert len(pairwise) == 6 and all(row["seed"] == "3" and row["replicates"] == "50" for row in pairwise)
    page = (tmp_path / "out" / "leaderboard.html").read_text()
    assert "Seed <b>3</b>" in page and "<b>50</b> paired bootstrap replicates" in page
    assert "replicates 50/50" in capsys.readouterr().err  # the progress line


def test_the_same_seed_gives_the_same_bytes(tmp_path, board):
    inputs = [team(tmp_path, name, offset) for name, offset in (("alice", 0.05), ("bob", 0.0), ("carol", 0.02))]
    for out, seed in (("one", 7), ("two", 7), ("other", 8)):
        assert run(*inputs, "--replicates", 40, "--seed", seed, "--out", tmp_path / out) == 0
    for name in ("ranking.csv", "pairwise.csv", "leaderboard.html"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    assert (tmp_path / "one" / "ranking.csv").read_bytes() != (tmp_path / "other" / "ranking.csv").read_bytes()


def test_names_are_given_by_names_and_escaped_on_the_page(tmp_path, board):
    inputs = [team(tmp_path, "a", 0.3), team(tmp_path, "b", 0.0)]
    hostile = "<script>alert(1)</script>&$x$"
    assert run(*inputs, "--names", hostile, "bob", "--replicates", 20, "--out", tmp_path / "out") == 0
    page = (tmp_path / "out" / "leaderboard.html").read_text()
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;&amp;$x$" in page
    assert read_csv(tmp_path / "out" / "ranking.csv")[0]["team"] == hostile


def refused(capsys, *args) -> str:
    assert run(*args) == 2
    return capsys.readouterr().err


def test_a_details_json_of_another_task_is_refused_naming_file_and_field(tmp_path, board, capsys):
    inputs = [team(tmp_path, "alice", 0.1), team(tmp_path, "bob", 0.0, task="uai.mar")]
    err = refused(capsys, *inputs, "--task", TASK, "--out", tmp_path / "out")
    assert "bob/details.json" in err and "field 'task'" in err and "uai.mar" in err
    err = refused(capsys, *inputs, "--out", tmp_path / "out")
    assert "a mix of tasks" in err and "uai.mar" in err and TASK in err
    assert not (tmp_path / "out").exists()


def test_teams_scored_on_different_reference_data_are_refused(tmp_path, board, capsys, project_data):
    inputs = [team(tmp_path, "alice", 0.1, reference="aa" * 32), team(tmp_path, "bob", 0.0, reference="bb" * 32),
              team(tmp_path, "carol", 0.0)]
    err = refused(capsys, *inputs, "--out", tmp_path / "out")
    assert "reference_sha256" in err and "alice" in err and "bob" in err
    same = [team(tmp_path / "same", name, 0.0, reference="aa" * 32) for name in ("alice", "bob")]
    assert run(*same, "--replicates", 10, "--out", tmp_path / "same_out") == 0
    reference = tmp_path / "reference"
    shutil.copytree(project_data / "reference_data" / TASK, reference)
    err = refused(capsys, *same, "--reference", reference, "--out", tmp_path / "out")
    assert "other reference data" in err and "alice" in err


def test_missing_units_are_refused_or_counted_as_the_board_says(tmp_path, board, capsys):
    inputs = [team(tmp_path, "alice", 0.1), team(tmp_path, "bob", 0.0, units=UNITS[:3])]
    err = refused(capsys, *inputs, "--out", tmp_path / "out")
    assert "team bob lacks 2" in err and "i4" in err and "i5" in err
    board.missing_policy = "skip"
    assert run(*inputs, "--replicates", 20, "--out", tmp_path / "out") == 0
    counts = {row["team"]: row["missing_units"] for row in read_csv(tmp_path / "out" / "ranking.csv")}
    assert counts == {"alice": "0", "bob": "2"}
    assert "team bob lacks 2 units" in (tmp_path / "out" / "leaderboard.html").read_text()


@pytest.mark.parametrize("content, field", [("{not json", "not a readable JSON"), ('["a list"]', "JSON object"),
                                            ('{"task": "uai.pr", "status": "invalid"}', "field 'status'"),
                                            ('{"status": "scored"}', "field 'task'")])
def test_a_broken_details_json_is_refused_naming_it(tmp_path, board, capsys, content, field):
    good = team(tmp_path, "alice", 0.1)
    (tmp_path / "bob").mkdir()
    (tmp_path / "bob" / "details.json").write_text(content)
    err = refused(capsys, good, tmp_path / "bob", "--out", tmp_path / "out")
    assert "bob/details.json" in err and field in err


def test_a_unit_given_twice_or_described_differently_is_refused(tmp_path, board, capsys):
    twice = team(tmp_path, "bob", 0.0, units=[*UNITS, UNITS[0]])
    err = refused(capsys, team(tmp_path, "alice", 0.1), twice, "--out", tmp_path / "out")
    assert "bob/details.json" in err and "'i1' given twice" in err
    moved = team(tmp_path, "carol", 0.0, units=[("i1", "f2"), *UNITS[1:]])
    err = refused(capsys, team(tmp_path, "alice", 0.1), moved, "--out", tmp_path / "out")
    assert "unit 'i1'" in err and "alice" in err and "carol" in err and "family" in err


def judgement(tmp_path, teams: dict[str, tuple[float, str, str]], groups: dict | None = None):
    """A judgement's output folder: results.csv, judge.sqlite and each scored row's run folder, whose
    details.json names its group as the scorer writes it; a team has one row per group (groups: group -> its
    units; default one pipeline row with every unit)."""
    from codascore.formats.judgement import SCHEMA

    out = tmp_path / "judgement"
    out.mkdir()
    db = sqlite3.connect(out / "judge.sqlite")
    db.executescript(SCHEMA)
    with open(out / "results.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, ["team", "task", "group", "state", "outcome", "exit_code", "score",
                                         "wall_seconds", "run_folder", "messages"])
        writer.writeheader()
        for key, (offset, state, digest) in teams.items():
            name, group = key.split("/") if "/" in key else (key, "")
            run_dir = f"runs/{name}/{TASK}/{group or 'pipeline'}"
            if state == "done":
                path = out / run_dir / "scoring" / "output" / "details.json"
                path.parent.mkdir(parents=True)
                path.write_text(json.dumps({**details(rows(offset, (groups or {}).get(group, UNITS))),
                                            "group": group}))
            writer.writerow({"team": name, "task": TASK, "group": group, "state": state, "run_folder": run_dir,
                             "outcome": "scored" if state == "done" else "timed out"})
            db.execute("INSERT INTO units (team, task, unit, kind, state, submission_sha256, reference_sha256, "
                       "run_dir, part_group) VALUES (?, ?, ?, 'score', ?, 'x', ?, ?, ?)",
                       (name, TASK, group or "pipeline", state, digest, run_dir, group))
    db.commit()
    db.close()
    return out


def test_a_team_scored_in_groups_has_the_units_of_every_group_and_lacks_those_of_a_failed_one(tmp_path, board,
                                                                                              capsys):
    groups = {"20": UNITS[:2], "60": UNITS[2:]}
    out = judgement(tmp_path, {"alice/20": (0.2, "done", "d"), "alice/60": (0.2, "done", "d"),
                               "bob/20": (0.0, "done", "d"), "bob/60": (0.0, "failed", "d")}, groups)
    err = refused(capsys, out, "--out", tmp_path / "board")
    assert "team bob lacks 3" in err and "i3" in err
    board.missing_policy = "skip"
    assert run(out, "--replicates", 20, "--out", tmp_path / "board") == 0
    assert {row["team"]: row["missing_units"] for row in read_csv(tmp_path / "board" / "ranking.csv")} == \
        {"alice": "0", "bob": "3"}


def test_each_details_of_a_judgement_is_its_rows_group_or_refused(tmp_path, capsys):
    """A group's scoring (one UAI time limit) names its group in details.json; a file whose group is not its
    row's would not line up with the other teams' units: refused, naming both."""
    from codascore.leaderboard.inputs import read_inputs

    groups = {"20s": UNITS, "1200s": UNITS}
    out = judgement(tmp_path, {"alice/20s": (0.2, "done", "d"), "alice/1200s": (0.1, "done", "d"),
                               "bob/20s": (0.0, "done", "d")}, groups)
    seen = {team.name: sorted(details.group for details in team.files) for team in read_inputs([out]).teams}
    assert seen == {"alice": ["1200s", "20s"], "bob": ["20s"]}
    path = out / "runs" / "bob" / TASK / "20s" / "scoring" / "output" / "details.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "group": ""}))
    err = refused(capsys, out, "--out", tmp_path / "board")
    assert "bob/uai.pr/20s/scoring/output/details.json: field 'group' is ''" in err and "'20s'" in err


def test_a_judgements_output_folder_ranks_its_scored_teams_and_shows_the_others(tmp_path, board):
    out = judgement(tmp_path, {"alice": (0.2, "done", "d1"), "bob": (0.0, "done", "d1"),
                               "carol": (0.0, "failed", "d1")})
    assert run(out, "--replicates", 20, "--out", tmp_path / "board") == 0
    assert [row["team"] for row in read_csv(tmp_path / "board" / "ranking.csv")] == ["alice", "bob"]
    assert "team carol is not ranked: failed: timed out" in (tmp_path / "board" / "leaderboard.html").read_text()


def test_a_judgement_on_two_reference_data_is_refused(tmp_path, board, capsys):
    out = judgement(tmp_path, {"alice": (0.2, "done", "d1"), "bob": (0.0, "done", "d2")})
    err = refused(capsys, out, "--out", tmp_path / "board")
    assert "reference_sha256" in err and "alice" in err and "bob" in err


def test_the_scorer_records_the_reference_datas_digest(tmp_path, project_data):
    from codascore.codabench import score_main

    reference = project_data / "reference_data" / TASK
    shutil.copytree(reference, tmp_path / "input" / "ref")
    shutil.copytree(project_data / "sample_submissions" / TASK / "exact", tmp_path / "input" / "res")
    assert score_main([str(tmp_path / "input"), str(tmp_path / "output")]) == 0
    written = json.loads((tmp_path / "output" / "details.json").read_text())["reference_sha256"]
    assert written == folder_sha256(reference) == folder_sha256(tmp_path / "input" / "ref")
    (tmp_path / "input" / "ref" / "task.yaml").write_text((reference / "task.yaml").read_text() + "\n")
    assert folder_sha256(tmp_path / "input" / "ref") != written


def test_set_values_reach_the_board_over_the_tasks_parameters(tmp_path, monkeypatch):
    seen = {}

    def final_board(config):
        seen.update(config)
        return MeanBoard()

    monkeypatch.setattr(get_task(TASK), "final_board", final_board)
    inputs = [team(tmp_path, "alice", 0.1), team(tmp_path, "bob", 0.0)]
    assert run(*inputs, "--set", "trust_ratings=ratings.csv", "--set", "tolerance=0.5", "--replicates", 5,
               "--out", tmp_path / "out") == 0
    assert seen["trust_ratings"] == "ratings.csv" and seen["tolerance"] == 0.5
    assert set(get_task(TASK).defaults) <= set(seen)


def test_a_board_that_reads_the_reference_data_is_given_it_or_refused(tmp_path, monkeypatch, capsys, project_data):
    read = []

    class ReadsTruth(MeanBoard):
        needs_reference = True

        def use_reference(self, reference_dir):
            read.append(reference_dir)

    monkeypatch.setattr(get_task(TASK), "final_board", lambda config: ReadsTruth())
    inputs = [team(tmp_path, "alice", 0.1), team(tmp_path, "bob", 0.0)]
    err = refused(capsys, *inputs, "--out", tmp_path / "out")
    assert "--reference" in err and read == []
    reference = project_data / "reference_data" / TASK
    assert run(*inputs, "--reference", reference, "--replicates", 5, "--out", tmp_path / "out") == 0
    assert read == [reference]


def test_a_fetch_folder_ranks_each_teams_chosen_submission_and_names_the_others(tmp_path, board):
    """codascore fetch's folder (docs/end_of_competition.md): the submission the manifest chose per team,
    not the team's other submissions; a team whose chosen one was not scored is named on the page."""
    out = tmp_path / "fetched"
    submissions, teams = {}, {}
    for number, (name, offset, status, chosen) in enumerate((("alice", 0.5, "scored", True),
                                                              ("alice", 0.0, "scored", False),
                                                              ("bob", 0.2, "scored", True),
                                                              ("carol", 0.9, "invalid", True)), start=1):
        folder = f"submissions/{name}/{number}"
        path = out / folder / "details.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(details(rows(offset), status=status)))
        submissions[str(number)] = {"id": number, "team": name, "folder": folder, "status": "Finished"}
        if chosen:
            teams[name] = {"submission": number, "why": "on the leaderboard"}
    (out / "manifest.json").write_text(json.dumps({"format": "codascore-fetch", "submissions": submissions,
                                                   "teams": teams}))
    assert run(out, "--replicates", 20, "--out", tmp_path / "board") == 0
    ranking = read_csv(tmp_path / "board" / "ranking.csv")
    mean = {offset: sum(row["value"] for row in rows(offset)) / len(UNITS) for offset in (0.5, 0.0, 0.2)}
    assert [row["team"] for row in ranking] == ["alice", "bob"]
    assert float(ranking[0]["score"]) == pytest.approx(mean[0.5])  # the chosen one, not alice's other
    assert float(ranking[1]["score"]) == pytest.approx(mean[0.2])
    assert "carol" in (tmp_path / "board" / "leaderboard.html").read_text()
