"""Rules 15-21: the leaderboard, its columns and computations, and the score keys each task writes."""

from __future__ import annotations

from typing import Any

from ..errors import ReferenceDataError
from ..registry import get_task
from .base import CheckerBase
from .schema import PRODUCT_SUBMISSION_RULES, SUBMISSION_RULES, hashable


class LeaderboardRules(CheckerBase):
    def indexed_columns(self) -> list[tuple[int, dict]]:
        """(position, column) for the columns of leaderboards[0] that are mappings with a usable key and index."""
        boards = self.yaml.get("leaderboards")
        if not isinstance(boards, list) or not boards or not isinstance(boards[0], dict):
            return []
        columns = boards[0].get("columns")
        return [(n, c) for n, c in enumerate(columns) if isinstance(c, dict) and hashable(c.get("key"))
                and hashable(c.get("index"))] if isinstance(columns, list) else []

    def columns(self) -> list[dict]:
        return [column for _, column in self.indexed_columns()]

    def rule_leaderboards(self) -> None:
        boards = self.yaml.get("leaderboards")
        if "leaderboards" in self.yaml and not boards:
            self.error(15, "leaderboards", "Could not find leaderboards in the competition yaml")
        if isinstance(boards, list) and len(boards) > 1:
            self.warn(15, "leaderboards[1]", f"{len(boards) - 1} further leaderboard(s) are created but never "
                                             "shown: only leaderboards[0] is used")
        for b, board in self.items("leaderboards"):
            at = f"leaderboards[{b}]"
            if not self.check_fields("leaderboard", board, at):
                continue
            rule = board.get("submission_rule")
            if rule in SUBMISSION_RULES and rule not in PRODUCT_SUBMISSION_RULES:
                self.error(16, f"{at}.submission_rule", f"{rule}: entries do not reach the leaderboard by "
                           "themselves (or pile up); this product uses Force_Last or Force_Best")
            columns = board.get("columns")
            if isinstance(columns, list) and not columns:
                self.error(15, f"{at}.columns", "Leaderboards require at least 1 column")
            self.check_columns(board, at)

    def check_columns(self, board: dict, at: str) -> None:
        indexes: dict[Any, int] = {}
        keys: dict[Any, int] = {}
        columns = board.get("columns") if isinstance(board.get("columns"), list) else []
        for c, column in enumerate(columns):
            cat = f"{at}.columns[{c}]"
            if not self.check_fields("column", column, cat):
                continue
            index, key = column.get("index"), column.get("key")
            if not hashable(key):
                continue
            if isinstance(index, int) and not isinstance(index, bool):
                if index < 0:
                    self.error(17, f"{cat}.index", f"{index} is negative")
                if index in indexes:
                    self.error(17, f"{cat}.index", f"Columns must have unique indexes! ({index} is also "
                                                   f"columns[{indexes[index]}])")
                indexes.setdefault(index, c)
            if key in keys:
                self.error(17, f"{cat}.key", f"Columns must have unique keys! ({key!r} is also "
                                             f"columns[{keys[key]}])")
            keys.setdefault(key, c)
        primary = board.get("primary_index", 0)
        if not hashable(primary):
            primary = None  # its type is already reported
        elif isinstance(primary, int) and columns and primary not in indexes:
            self.error(19, f"{at}.primary_index", f"{primary} is not the index of any column (indexes: "
                                                  f"{sorted(i for i in indexes if isinstance(i, int))}); the "
                                                  "leaderboard page would fail")
        elif primary in indexes and columns[indexes[primary]].get("hidden"):
            self.warn(19, f"{at}.primary_index", "the primary column is hidden")
        for c, column in enumerate(columns):
            if isinstance(column, dict):
                self.check_computation(column, f"{at}.columns[{c}]", indexes)

    def check_computation(self, column: dict, at: str, indexes: dict) -> None:
        has_function, has_indexes = "computation" in column, "computation_indexes" in column
        function, listed = column.get("computation"), column.get("computation_indexes")
        if has_function and function is None and not has_indexes:
            self.error(20, f"{at}.computation", "Column with computation must have at least 1 column selected: "
                       "`computation: null` without `computation_indexes` (omit both, or write both as null)")
            return
        if function is None and listed:
            self.error(20, f"{at}.computation_indexes", "Cannot add computation columns without a computation "
                                                        "function set")
            return
        if function is None:
            return
        if not listed:
            self.error(20, f"{at}.computation_indexes", "Column with computation must have at least 1 column "
                                                        f"selected: `computation: {function}` needs "
                                                        "`computation_indexes`")
            return
        if not isinstance(listed, list):
            return
        for k, index in enumerate(listed):
            if index == column.get("index"):
                self.error(20, f"{at}.computation_indexes[{k}]", f"Cannot self-reference: {index} is this "
                                                                 "column's own index")
            elif index not in indexes:
                self.error(20, f"{at}.computation_indexes[{k}]", f"{index!r} is not the index of any column")

    # ----- rule 21: the tasks' declared keys against the leaderboard, phase by phase
    def resolve_tasks(self) -> None:

        for i, task in self.items("tasks"):
            if not isinstance(task, dict) or "key" in task or not hashable(task.get("index")):
                continue
            index, name = task.get("index"), self.task_name(task)
            self.task_names[index] = name
            if name is None:
                self.warn(21, f"tasks[{i}].reference_data", "cannot tell which codascore task this is (no "
                                                            "task.yaml): its score keys are not cross-checked")
                continue
            try:
                self.task_keys[index] = tuple(get_task(name).score_keys)
            except ReferenceDataError:
                if name not in self.unavailable:
                    absent = self.absent.get(name)
                    self.warn(21, f"tasks[{i}]", f"task {name} not available in this build: its score keys "
                                                 "are not cross-checked" + (
                                                     f"; missing here: {', '.join(absent)}" if absent else ""))
                self.unavailable.add(name)

    def rule_keys(self) -> None:
        self.resolve_tasks()
        columns = self.columns()
        if not columns:
            return
        board = self.yaml["leaderboards"][0]
        primary_index = board.get("primary_index", 0)
        computed = {c.get("key") for c in columns if c.get("computation")}
        plain = [(n, c) for n, c in self.indexed_columns() if not c.get("computation")]
        primary = next((c.get("key") for c in columns if c.get("index") == primary_index), None)
        task_at = self.task_positions()
        for index, keys in self.task_keys.items():
            for key in sorted(set(keys) & computed):
                self.error(21, f"tasks[{task_at[index]}]", f"{self.task_names[index]} writes {key!r}, a "
                           "computed column: the scoring program must not write computed keys")
        written_anywhere: set[str] = set()
        all_known = True
        for p, phase in self.items("phases"):
            if not isinstance(phase, dict) or not isinstance(phase.get("tasks"), list):
                continue
            phase_tasks = [t for t in phase["tasks"] if hashable(t) and t in task_at]
            known = [t for t in phase_tasks if t in self.task_keys]
            all_known &= len(known) == len(phase_tasks)
            declared = set().union(*(self.task_keys[t] for t in known)) if known else set()
            written_anywhere |= declared
            relevant = {c.get("key") for _, c in plain if c.get("key") in declared}
            if primary is not None and primary not in computed:
                relevant.add(primary)
            for t in known:
                for n, column in plain:
                    key = column.get("key")
                    if key in relevant and key not in self.task_keys[t]:
                        self.error(21, f"leaderboards[0].columns[{n}].key",
                                   f"phase {phase.get('name')!r}: task {self.task_names[t]} never writes "
                                   f"{key!r} (it writes {', '.join(self.task_keys[t])}): its cells would show "
                                   "n/a" + (" and rank first (NULL primary)" if key == primary else ""))
        if all_known:
            for n, column in plain:
                if column.get("key") not in written_anywhere:
                    self.error(21, f"leaderboards[0].columns[{n}].key",
                               f"no task of any phase writes {column.get('key')!r}: the column would always "
                               "be n/a")
