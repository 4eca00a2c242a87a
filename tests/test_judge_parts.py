"""The judge's parts (docs/judge.md#units, #plans): a UAI code submission judged as one solver run per
instance and time limit gives, per time limit, the scores ``codascore run`` gives with that limit; the parts'
outputs merged are the whole ingestion's result files; a results submission is scored once per time limit,
so that the leaderboard of a judgement mixing both ranks every team on the same units; a judge killed
halfway runs only the unfinished parts again."""

from __future__ import annotations

import csv
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
import yaml

pytest.importorskip("distributed")

from codascore import runner  # noqa: E402
from codascore.cli import main as cli_main  # noqa: E402
from codascore.errors import JudgeError, SubmissionError  # noqa: E402
from codascore.judge import judge  # noqa: E402
from codascore.judge.parts import plan_units  # noqa: E402
from codascore.judge.units import list_units  # noqa: E402
from codascore.plan import Part, PartOutcome  # noqa: E402
from codascore.registry import get_task  # noqa: E402

from test_judge import client, cluster, sample  # noqa: E402,F401  (the module's LocalCluster of 2 workers)

TASK = "uai.pr"
#: The official profile cut to fit this machine and a test: two short time limits, little memory.
# Limits far above what the sample solver needs (it converges in about a second): an anytime solver
# stopped by a short limit on a loaded machine would give another answer than a direct run.
CUT = {"time_limits": [30, 60], "memory": 500_000_000}


def project_with_limit(project_data: Path, dest: Path, limit: float) -> Path:
    """A project folder like project_data whose uai.pr input data's task.yaml says time_limit: limit (and
    the MEMKB the cut profile passes), so that ``codascore run`` runs as a part of that limit does."""
    dest.mkdir()
    for name in ("scoring_program", "ingestion_program", "reference_data"):
        (dest / name).symlink_to(project_data / name)
    shutil.copytree(project_data / "input_data" / TASK, dest / "input_data" / TASK)
    config = yaml.safe_load((dest / "input_data" / TASK / "task.yaml").read_text())
    config.update(time_limit=float(limit), memory_kb=CUT["memory"] // 1000)
    (dest / "input_data" / TASK / "task.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return dest


def rows_of(out: Path) -> dict[str, tuple]:
    with sqlite3.connect(out / "judge.sqlite") as db:
        rows = db.execute("SELECT unit, kind, part_group, state, outcome, scores, ended FROM units").fetchall()
    return {unit: (kind, group, state, outcome, json.loads(scores), ended)
            for unit, kind, group, state, outcome, scores, ended in rows}


@pytest.fixture(scope="module")
def judged(cluster, project_data, tmp_path_factory):  # noqa: F811
    """alice's loopy BP solver and bob's exact results judged with the cut profile: (folder, out, rows)."""
    folder = tmp_path_factory.mktemp("parts")
    shutil.copytree(sample(project_data, "code_loopy_bp"), folder / "submissions" / "alice")
    shutil.copytree(sample(project_data, "exact"), folder / "submissions" / "bob")
    summary = judge(folder / "submissions", TASK, folder / "out", root=project_data,
                    scheduler=cluster.scheduler_address, profile="official2022", overrides=CUT)
    assert summary.finished
    return folder, folder / "out", summary


def test_a_code_submission_is_one_part_per_instance_and_time_limit_and_a_score_per_limit(judged):
    folder, out, summary = judged
    with sqlite3.connect(out / "judge.sqlite") as db:
        kinds = db.execute("SELECT team, kind, part_group, COUNT(*) FROM units GROUP BY team, kind, part_group")
        counts = {row[:3]: row[3] for row in kinds}
    assert counts == {("alice", "part", "30s"): 7, ("alice", "part", "60s"): 7, ("alice", "score", "30s"): 1,
                      ("alice", "score", "60s"): 1, ("bob", "pipeline", "30s"): 1, ("bob", "pipeline", "60s"): 1}
    lines = (out / "results.csv").read_text().splitlines()
    assert len(lines) == 5 and {line.split(",")[:3][2] for line in lines[1:]} == {"30s", "60s"}
    part = out / "runs" / "alice" / TASK / "time_limit=30,instance=bn_1"
    assert yaml.safe_load((part / "part_input" / "task.yaml").read_text())["time_limit"] == 30
    assert sorted(p.name for p in (part / "part_input" / "models").iterdir()) == ["bn_1.uai", "bn_1.uai.evid"]


@pytest.mark.parametrize("limit", [30, 60])
def test_each_time_limit_scores_as_codascore_run_with_that_limit(judged, project_data, tmp_path, limit):
    folder, out, _ = judged
    root = project_with_limit(project_data, tmp_path / "root", limit)
    direct = runner.run(TASK, sample(project_data, "code_loopy_bp"), tmp_path / "direct", root=root)
    kind, group, state, outcome, scores, _ = rows_of(out)[f"score,group={limit}s"]
    assert (state, outcome) == ("done", direct.outcome.name) and scores == direct.scores and scores["score"] > 0
    merged = out / "runs" / "alice" / TASK / f"score,group={limit}s" / "merged_submission"
    whole = tmp_path / "direct" / "prediction" / "output"
    assert sorted(p.name for p in merged.iterdir()) == sorted(p.name for p in whole.glob("*.uai.PR"))
    assert all((merged / p.name).read_bytes() == p.read_bytes() for p in whole.glob("*.uai.PR"))


def test_a_judge_stopped_halfway_runs_only_the_unfinished_parts_again(cluster, project_data, judged,  # noqa: F811
                                                                      tmp_path):
    folder, out, _ = judged
    shutil.copytree(out, tmp_path / "out")
    before = rows_of(tmp_path / "out")
    lost = ["time_limit=60,instance=bn_1", "time_limit=60,instance=grid5x5_1"]
    with sqlite3.connect(tmp_path / "out" / "judge.sqlite") as db:  # as a judge killed while they ran leaves it
        db.executemany("UPDATE units SET state='running' WHERE team='alice' AND unit=?", [(key,) for key in lost])
    again = judge(folder / "submissions", TASK, tmp_path / "out", root=project_data,
                  scheduler=cluster.scheduler_address, profile="official2022", overrides=CUT)
    after = rows_of(tmp_path / "out")
    assert again.ran == 3 and again.finished
    assert {unit for unit in after if after[unit][5] != before[unit][5]} == {*lost, "score,group=60s"}
    assert after["score,group=60s"][4] == before["score,group=60s"][4]


def test_the_leaderboard_of_a_judgement_mixing_results_and_code_ranks_on_the_same_units(judged, tmp_path, capsys):
    """bob's results submission was scored under each time limit, as alice's parts were: the leaderboard's
    scores are results.csv's (the mean of the two limits, each weighing 1), bob's exact answers 100."""
    folder, out, _ = judged
    assert cli_main(["leaderboard", str(out), "--replicates", "20", "--out", str(tmp_path / "board")]) == 0
    by_group = {}
    for row in csv.DictReader(open(out / "results.csv")):
        by_group.setdefault(row["team"], {})[row["group"]] = float(row["score"])
    board = {row["team"]: float(row["score"]) for row in csv.DictReader(open(tmp_path / "board" / "ranking.csv"))}
    assert board == pytest.approx({team: sum(scores.values()) / 2 for team, scores in by_group.items()}, abs=1e-9)
    assert board["bob"] == pytest.approx(100.0) and set(by_group["bob"]) == {"30s", "60s"}
    assert {row["team"]: row["missing_units"] for row in csv.DictReader(open(tmp_path / "board" / "ranking.csv"))} \
        == {"alice": "0", "bob": "0"}


def test_a_leaderboard_whose_units_do_not_line_up_is_refused(judged, tmp_path, capsys):
    """bob's results submission scored as a whole (no group, as a judgement without the plan scores it)
    beside alice's per-limit scorings: refused with the reason, never ranked on half the units."""
    folder, out, _ = judged
    shutil.copytree(out, tmp_path / "out")
    for group in ("30s", "60s"):
        path = tmp_path / "out" / "runs" / "bob" / TASK / f"pipeline,group={group}" / "scoring" / "output" / "details.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "group": ""}))
    assert cli_main(["leaderboard", str(tmp_path / "out"), "--out", str(tmp_path / "board")]) == 2
    assert "the units would not line up" in capsys.readouterr().err
    assert not (tmp_path / "board" / "ranking.csv").exists()


def test_a_group_without_any_answer_fails_with_the_parts_reasons(tmp_path):
    outcomes = []
    for name in ("bn_1", "bn_2"):
        (tmp_path / name).mkdir()
        reason = f"solver.py wrote no result file for any of the 1 instances\n{name}: solver.py exited with code 1:\n"
        outcomes.append(PartOutcome(Part(f"time_limit=20,instance={name}", "20s", {"instance": name}),
                                    tmp_path / name, "failed", reason))
    with pytest.raises(SubmissionError) as refused:
        get_task(TASK).judge_plan().merge(outcomes, tmp_path / "merged", {})
    assert refused.value.problems[0] == "the solver wrote no result file for any of the 2 instances"
    assert refused.value.problems[1].startswith("bn_1: solver.py wrote no result file for any of the 1 instances")
    assert "bn_1: solver.py exited with code 1" in refused.value.problems[1]


def test_profiles_unknown_names_and_tasks_are_refused_by_name(tmp_path, project_data):
    assert get_task("uai.mlc").judge_plan().profiles["official2022"] == {
        "time_limits": [20, 1200, 3600], "memory": 8_000_000_000, "cores": 1}
    (tmp_path / "submissions").mkdir()
    with pytest.raises(JudgeError, match="budget profile 'nope' has no entry for uai.pr; its profiles: official2022"):
        judge(tmp_path / "submissions", TASK, tmp_path / "out", root=project_data, profile="nope")
    with pytest.raises(JudgeError, match="has no entry for weak_lensing.phase1"):
        judge(tmp_path / "submissions", "weak_lensing.phase1", tmp_path / "out", root=project_data,
              profile="official2022")


def test_a_part_unit_asks_for_its_parts_resources(tmp_path, project_data):
    input_data = project_data / "input_data" / TASK
    plan = get_task(TASK).judge_plan()
    groups, scoring, parts = plan_units(get_task(TASK), input_data, plan.budget("official2022", {}))
    units = list_units(TASK, "alice", tmp_path, groups=groups, scoring=scoring, parts=parts)
    assert len(units) == 3 * 7 + 3 and units[0].resources == {"cores": 1.0, "memory": 8e9}
    assert units[0].time_limit == 20 + 60 and units[0].part["config"] == {"time_limit": 20.0, "memory_kb": 8_000_000}
    assert [unit.key for unit in units if unit.kind == "score"] == ["score,group=20s", "score,group=1200s",
                                                                    "score,group=3600s"]
    assert units[-1].needs == tuple(part.key for part in parts if part.group == "3600s")


def test_the_judge_verb_takes_a_profile_and_its_overrides_and_refuses_wrong_ones(project_data, tmp_path, capsys):
    from codascore.cli import main as cli_main
    from codascore.outcomes import ExitCode

    (tmp_path / "teams").mkdir()
    base = ["judge", TASK, str(tmp_path / "teams"), "--out", str(tmp_path / "out"), "--root", str(project_data)]
    for wrong, says in ((["--profile", "nope"], "its profiles: official2022"), (["--set", "time_limits"], "KEY=VALUE"),
                        (["--profile", "official2022", "--set", "time_limit5=[5]"], "unknown budget key")):
        assert cli_main(base + wrong) == ExitCode.ORGANISER_ERROR, wrong
        assert says in capsys.readouterr().err


def test_a_part_lost_for_good_makes_its_score_an_infrastructure_error_run_again_next_time(
        cluster, project_data, tmp_path):  # noqa: F811
    root = project_with_limit(project_data, tmp_path / "root", 30)
    model = root / "input_data" / TASK / "models" / "bn_1.uai"
    model.unlink()
    model.symlink_to(tmp_path / "nowhere.uai")  # listed as an instance, its part's input cannot be written
    shutil.copytree(sample(project_data, "code_loopy_bp"), tmp_path / "submissions" / "alice")
    options = dict(root=root, scheduler=cluster.scheduler_address, overrides={**CUT, "time_limits": [30]})
    lost = judge(tmp_path / "submissions", TASK, tmp_path / "out", retries=0, **options)
    rows = rows_of(tmp_path / "out")
    assert not lost.finished and lost.counts["infrastructure error"] == 2 and lost.counts["done"] == 6
    with sqlite3.connect(tmp_path / "out" / "judge.sqlite") as db:
        (messages,) = db.execute("SELECT messages FROM units WHERE unit='score,group=30s'").fetchone()
    assert "a part was lost: alice/uai.pr/time_limit=30,instance=bn_1" in messages
    model.unlink()
    shutil.copy(project_data / "input_data" / TASK / "models" / "bn_1.uai", model)
    again = judge(tmp_path / "submissions", TASK, tmp_path / "out", **options)
    assert again.ran == 2 and again.finished
    assert {unit for unit, row in rows_of(tmp_path / "out").items() if row[5] != rows[unit][5]} == \
        {"time_limit=30,instance=bn_1", "score,group=30s"}
