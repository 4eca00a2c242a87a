"""The paired bootstrap of a :class:`~codascore.board.Design`: one draw of unit indices per replicate, the
same for every team (the values array is indexed on its unit axis), drawn with numpy's Generator.

- Strata: within each stratum (a combination of the design's ``strata`` columns, in sorted order) its
  ``n_s`` units are drawn with replacement, ``n_s`` times: every replicate keeps every stratum's size.
- Two levels (``cluster``): within each stratum its ``c_s`` clusters are drawn with replacement, then the
  units of each drawn cluster, with replacement, as many as it has (Davison & Hinkley 1997, section 3.8,
  the two-stage bootstrap). A cluster drawn k > 1 times gets the labels ``X``, ``X#2``, ... ``X#k`` in the
  ``cluster`` column, so that a per-cluster aggregate counts it k times; ``<cluster>_origin`` keeps X.

Vectorised: each draw is a handful of numpy calls on index arrays (no per-unit Python loop), and the
Evidence of a replicate is ``evidence.take(index, units)``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ..board import Design


@dataclasses.dataclass
class Stratum:
    """One stratum's units: without clusters, ``order`` is its unit indices; with them, its unit indices
    sorted by cluster, each cluster's run starting at ``starts`` with ``sizes`` units, named ``labels``."""

    order: np.ndarray
    starts: np.ndarray | None = None
    sizes: np.ndarray | None = None
    labels: np.ndarray | None = None


class Resampler:
    """Draws the replicates of a units table under a design."""

    def __init__(self, units: pd.DataFrame, design: Design):
        self.units, self.design = units, design
        # the table's columns as arrays: a replicate's table is built in one go from their fancy-indexed rows
        self.columns = {column: units[column].to_numpy() for column in units.columns}
        if design.strata:
            groups = units.groupby(list(design.strata), sort=True, dropna=False).indices
            indices = [np.asarray(groups[key]) for key in sorted(groups, key=_sort_key)]
        else:
            indices = [np.arange(len(units))]
        self.strata = [self._stratum(index) for index in indices]

    def _stratum(self, index: np.ndarray) -> Stratum:
        if self.design.cluster is None:
            return Stratum(index)
        codes, labels = pd.factorize(self.units[self.design.cluster].iloc[index], sort=True)
        order = index[np.argsort(codes, kind="stable")]
        sizes = np.bincount(codes, minlength=len(labels))
        return Stratum(order, np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes, np.asarray(labels, dtype=object))

    def draw(self, rng: np.random.Generator) -> tuple[np.ndarray, pd.DataFrame | None]:
        """One replicate: the unit indices (into the units table, repeats allowed) and, with clusters, the
        replicate's units table with its clusters relabelled (None without: take() indexes the table)."""
        if self.design.cluster is None:
            return np.concatenate([s.order[rng.integers(0, len(s.order), len(s.order))] for s in self.strata]), None
        parts, labels, origins = [], [], []
        for s in self.strata:
            chosen = rng.integers(0, len(s.sizes), len(s.sizes))
            sizes = s.sizes[chosen]
            base = np.repeat(s.starts[chosen], sizes)
            offsets = (rng.random(int(sizes.sum())) * np.repeat(sizes, sizes)).astype(np.int64)
            parts.append(s.order[base + offsets])
            names = s.labels[chosen]
            labels.append(np.repeat(copy_labels(names), sizes))
            origins.append(np.repeat(names, sizes))
        index = np.concatenate(parts)
        table = pd.DataFrame({**{column: values[index] for column, values in self.columns.items()},
                              self.design.cluster: np.concatenate(labels),
                              f"{self.design.cluster}_origin": np.concatenate(origins)}, copy=False)
        return index, table


def copy_labels(names: np.ndarray) -> list[str]:
    """The labels of drawn clusters: the first copy of X keeps X, the k-th is ``X#k``."""
    seen: dict[object, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(str(name) if seen[name] == 1 else f"{name}#{seen[name]}")
    return out


def _sort_key(key) -> tuple:
    """Strata keys sorted whatever their types (a time limit next to a family name): by their text."""
    return tuple(str(k) for k in key) if isinstance(key, tuple) else (str(key),)
