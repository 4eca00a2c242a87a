"""The exact engine against the official UAI-2014 exact solutions of the UAI 2014 corpus beside the clone
(the ``uai2014_corpus`` fixture: ``../shared/uai2014``, or ``$CODASCORE_SHARED/uai2014``; skipped when absent,
present in CI). Every test here is named ``..._shared_corpus``.

Every .uai/.evid there is read; on every instance whose min-fill width (evidence removed) is at most 20,
log10 Z must match the official .PR to max(1e-4, 2e-6 |value|, half a unit of the last printed digit) and the marginals the official .MAR to a
mean Hellinger distance below 1e-4 over the unobserved variables (the UAI 2022 MAR error).
"""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path

import pytest

from codascore import errors
from codascore.uai import bucket_elimination, files, metrics, result_files

#: Where the uai2014_corpus fixture looks, known here at collection so that every exact instance is a test.
CORPUS = Path(os.environ.get("CODASCORE_SHARED", Path(__file__).resolve().parents[2] / "shared")) / "uai2014"
MAX_WIDTH = 20


def _names(folder: str) -> set[str]:
    path = CORPUS / folder
    return {p.name[:-4] for p in path.glob("*.uai")} if path.is_dir() else set()


PR_NAMES, MAR_NAMES = _names("PR"), _names("MAR")


@functools.lru_cache(maxsize=None)
def load(folder: str, name: str):
    base = CORPUS / folder / (name + ".uai")
    model = files.read_model(base)
    return model, files.read_evidence(base.with_name(base.name + ".evid"), model)


def official_pr(name: str) -> tuple[float, float]:
    """The official log10 Z and half a unit of its last printed digit (the files print 6 significant
    digits, e.g. DBN_14 151.155, so a correctly rounded value can be 5e-4 away: more than 2e-6 relative)."""
    token = (CORPUS / "PR" / f"{name}.uai.PR").read_text().split()[-1]
    mantissa = token.lower().split("e")[0]
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    exponent = int(token.lower().split("e")[1]) if "e" in token.lower() else 0
    return result_files.parse_pr(f"PR\n{token}\n"), 0.5 * 10.0 ** (exponent - decimals)


def test_every_model_and_evidence_file_is_read_shared_corpus(uai2014_corpus):
    folders = {"PR": PR_NAMES, "MAR": MAR_NAMES, "MAP": _names("MAP")}
    assert len(folders["PR"]) == 103 and len(folders["MAR"]) == 86 and len(folders["MAP"]) == 10
    for folder, names in folders.items():
        for name in names:
            model, evidence = load(folder, name)
            assert model.n_vars == len(model.cards) and len(model.tables) == model.n_factors
            assert all(0 <= x < model.cards[v] for v, x in evidence.items())


def _folder(name: str) -> str:
    return "MAR" if name in MAR_NAMES else "PR"


def _within_width(name: str) -> bool:
    model, evidence = load(_folder(name), name)
    try:
        bucket_elimination.induced_width(model, evidence, max_width=MAX_WIDTH)
    except errors.WidthExceeded:
        return False
    return True


# Chosen at collection, so that instances of larger width are not tests at all (rather than skips).
EXACT_NAMES = [name for name in sorted(PR_NAMES | MAR_NAMES) if _within_width(name)] if CORPUS.is_dir() else []


def test_the_width_limit_leaves_a_substantial_corpus_shared_corpus(uai2014_corpus):
    assert len(EXACT_NAMES) >= 40
    assert any(name in PR_NAMES for name in EXACT_NAMES) and any(name in MAR_NAMES for name in EXACT_NAMES)


@pytest.mark.parametrize("name", EXACT_NAMES)
def test_exact_engine_reproduces_official_pr_and_mar_shared_corpus(uai2014_corpus, name):
    model, evidence = load(_folder(name), name)
    if name in MAR_NAMES:
        log10_z, marg = bucket_elimination.partition_and_marginals(model, evidence)
        official = result_files.parse_mar((CORPUS / "MAR" / f"{name}.uai.MAR").read_text(), model)
        assert metrics.mean_hellinger(official, marg, evidence) < 1e-4
    else:
        log10_z = bucket_elimination.log10_partition(model, evidence)
    if name in PR_NAMES:
        expected, half_digit = official_pr(name)
        assert math.isclose(log10_z, expected, abs_tol=max(1e-4, 2e-6 * abs(expected), half_digit * (1 + 1e-9)))


def test_memory_limit_stops_before_building_a_large_table_shared_corpus(uai2014_corpus):
    model, evidence = load("PR", "Grids_12")
    with pytest.raises(errors.TableTooLarge, match="max_table_size = 1000"):
        bucket_elimination.log10_partition(model, evidence, max_table_size=1000)


def test_map_reference_is_a_lower_bound_of_the_exact_mpe_shared_corpus(uai2014_corpus):
    """Segmentation_12's heuristic .MAP is 0.597 log10 below the optimum (corpus README)."""
    model, evidence = load("MAP", "Segmentation_12")
    reference = result_files.parse_mpe((CORPUS / "MAP" / "Segmentation_12.uai.MAP").read_text(), model, evidence)
    assert metrics.log10_likelihood(model, reference, evidence) == pytest.approx(-22.811477, abs=1e-6)
    best, x = bucket_elimination.mpe(model, evidence)
    assert best == pytest.approx(-22.214446, abs=1e-6)
    assert metrics.log10_likelihood(model, x, evidence) == pytest.approx(best, abs=1e-9)
