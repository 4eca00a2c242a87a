"""Tiny synthetic boards for the leaderboard's tests, independent of the families' boards: the official
rule is a mean of the first metric over units (or over clusters of per-cluster means), the alternative a
median; a details.json holds its rows under ``rows``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from codascore.board import Board, Design, Evidence

TASK = "uai.pr"  # a real task name, so that the registry finds it; its final_board is patched in the tests


class MeanBoard(Board):
    rules = {"mean": "the mean of the value over units", "median": "the median of the value over units"}

    def __init__(self, design: Design = Design(), higher_is_better: bool = True, missing_policy: str = "refuse"):
        self.design, self.higher_is_better, self.missing_policy = design, higher_is_better, missing_policy

    def unit_rows(self, details):
        return details.data["rows"]

    def scores(self, evidence: Evidence, rule: str) -> np.ndarray:
        values = evidence.values[:, :, 0]
        worst = -np.inf if self.higher_is_better else np.inf
        if self.design.cluster:  # the mean of per-cluster means: a drawn-twice cluster counts twice
            codes, labels = pd.factorize(evidence.units[self.design.cluster])
            sums = np.stack([np.bincount(codes, weights=np.nan_to_num(v), minlength=len(labels)) for v in values])
            values = sums / np.bincount(codes, minlength=len(labels))
        if not np.isnan(values).any():  # numpy's nan-functions are many times slower on small arrays
            return values.mean(axis=1) if rule == "mean" else np.median(values, axis=1)
        out = np.nanmean(values, axis=1) if rule == "mean" else np.nanmedian(values, axis=1)
        return np.where(np.isfinite(out), out, worst)


class MeanOnlyBoard(MeanBoard):
    rules = {"mean": "the mean of the value over units"}


def evidence_of(values: np.ndarray, units: pd.DataFrame | None = None, teams: list[str] | None = None) -> Evidence:
    """Evidence of values (teams x units) on one metric."""
    k, n = values.shape
    units = pd.DataFrame({"unit": [f"u{j}" for j in range(n)]}) if units is None else units
    return Evidence(TASK, teams or [f"team{t}" for t in range(k)], units, ["value"], values[:, :, None].astype(float))


def details(rows: list[dict], task: str = TASK, reference: str = "", status: str = "scored") -> dict:
    return {"task": task, "status": status, "reference_sha256": reference, "scores": {"score": 0.0}, "rows": rows}
