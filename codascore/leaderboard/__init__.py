"""``codascore leaderboard``: a task's final leaderboard with how sure each rank is (docs/leaderboard.md).

It reads every team's scored ``details.json`` (:mod:`.inputs`), stacks their per-unit rows into one
Evidence through the task's :class:`~codascore.board.Board` (:mod:`.evidence`), reruns the board's official
formula and its alternative rules on paired bootstrap replicates drawn by its Design (:mod:`.resample`),
derives the intervals, probabilities and tests (:mod:`.statistics`) and writes ``ranking.csv``,
``pairwise.csv`` and ``leaderboard.html`` (:mod:`.outputs`, :mod:`.page`). Organiser-only: no bundle holds it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable

import numpy as np

from ..board import Board, Evidence
from ..errors import ReferenceDataError
from .evidence import stack
from .inputs import Inputs, check_board_settings, read_inputs
from .statistics import Pairwise, Ranking, Replicates, bootstrap, kendall_taus, ranking, ranks, wilcoxon_pairs

__all__ = ["Analysis", "analyse", "leaderboard"]


@dataclasses.dataclass
class Analysis:
    """Everything the outputs show: the evidence, the replicates' scores, each rule's Ranking (the
    official one first), the pairwise tests, and the teams left out (team -> why)."""

    title: str
    board: Board
    evidence: Evidence
    replicates: Replicates
    rankings: dict[str, Ranking]
    pairwise: Pairwise
    kendall_tau: np.ndarray  # (replicates,): the official rule's full ranking against each replicate's
    left_out: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def official(self) -> str:
        return next(iter(self.rankings))


def analyse(board: Board, evidence: Evidence, replicates: int = 1000, seed: int = 0, title: str = "",
            progress: Callable[[str], None] | None = None) -> Analysis:
    """Board.prepare and Board.check on the evidence, then the bootstrap and every statistic."""
    if replicates < 1:
        raise ReferenceDataError("the number of replicates must be 1 or more")
    if not evidence.metrics:
        raise ReferenceDataError(f"{evidence.task}: the teams' rows hold no metric")
    evidence = board.prepare(evidence)
    board.check(evidence)
    drawn = bootstrap(board, evidence, replicates, seed, progress)
    rankings = {rule: ranking(drawn.full[rule], drawn.drawn[rule], board.higher_is_better)
                for rule in drawn.full}
    official = next(iter(drawn.full))
    taus = kendall_taus(rankings[official].rank, ranks(drawn.drawn[official], board.higher_is_better))
    return Analysis(title or evidence.task, board, evidence, drawn, rankings,
                    wilcoxon_pairs(evidence.values[:, :, 0]), taus)


def leaderboard(inputs: list[Path], out: Path, names: list[str] | None = None, task: str | None = None,
                replicates: int = 1000, seed: int = 0, reference: Path | None = None,
                settings: dict | None = None,
                progress: Callable[[str], None] | None = None) -> tuple[Analysis, list[Path]]:
    """Read the INPUTs, analyse them and write OUT/ranking.csv, OUT/pairwise.csv, OUT/leaderboard.html.
    reference: the task's reference data folder (its task.yaml's parameters, its digest must be the
    teams', and a board with ``needs_reference`` reads it); without it the task's default parameters are
    used. settings: values set over the task's parameters for its board (e.g. SRBench's trust_ratings)."""
    from .outputs import write_outputs

    found = read_inputs(inputs, names, task)
    task_obj, config = task_config(found, reference)
    config = {**config, **(settings or {})}
    check_board_settings(found, task_obj.board_settings, config)
    board = task_obj.final_board(config)
    if board is None:
        raise ReferenceDataError(f"task {task_obj.name} has no final leaderboard (Task.final_board gives none)")
    if board.needs_reference:  # a rule's truth that details.json does not hold
        if reference is None:
            raise ReferenceDataError(f"task {task_obj.name}'s official rule reads the task's reference data: "
                                     "give its folder with --reference DIR")
        board.use_reference(Path(reference))
    evidence = stack(board, found)
    analysis = analyse(board, evidence, replicates, seed, task_obj.title or task_obj.name, progress)
    analysis.left_out = found.left_out
    return analysis, write_outputs(analysis, Path(out))


def task_config(found: Inputs, reference: Path | None):
    """The task and its parameters: the reference folder's task.yaml (whose digest must match the teams'),
    else the task's defaults."""
    from ..competition import read_task_config
    from ..digests import folder_sha256
    from ..registry import get_task

    if reference is None:
        task = get_task(found.task)
        return task, task.load_config({})
    task, config = read_task_config(Path(reference), "reference data")
    if task.name != found.task:
        raise ReferenceDataError(f"{reference}/task.yaml: field 'task' is {task.name!r}, the teams' is {found.task!r}")
    digest = folder_sha256(Path(reference))
    differ = [t.name for t in found.teams if t.reference and t.reference != digest]
    if differ:
        raise ReferenceDataError(f"teams {', '.join(differ)} were scored on other reference data than {reference} "
                                 f"(field 'reference_sha256')")
    return task, config
