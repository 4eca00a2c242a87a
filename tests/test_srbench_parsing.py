"""Safe parsing of model strings: the whitelist, the injection corpus (nothing runs), bounded time."""

from __future__ import annotations

import math
import signal
import time

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st
from sympy.parsing.sympy_parser import parse_expr

from codascore.errors import ModelSyntaxError, SimplifyTimeout
from codascore.srbench import check_model, parse_model
from codascore.srbench.baselines import INJECTION_CORPUS
from codascore.srbench.evaluation import DatasetSpec, RunData, score_runs
from codascore.srbench.expressions import MAX_LENGTH

NAMES = ["x1", "x2", "x3"]


def _reference_parse(text):
    # parse_expr is 2022's reader; called here only on the test's own trusted strings
    return parse_expr(text, local_dict={n: sympy.Symbol(n) for n in NAMES})


@pytest.mark.parametrize("text", [
    "0.4*x1*x2 - 1.5*x1 + 2.5*x2 + 1", "x1/2", "-x1", "+x1", "2/4", "x1**-1", "1e-4*x1", "1.*x2", ".5*x3",
    "sqrt(x1**2)", "log(x1, 2)", "Abs(x1) + abs(x2)", "max(x1, x2) + Min(x1, 0)", "exp(-x1**2)/sqrt(2*pi)",
    "E**x1", "sign(x1)*erf(x2)", "tanh(x1)**2 + 1/cosh(x1)**2", "x1**1.5*x1**0.5", "3/7 + 0.40000001*x1",
    "asin(x1) + acos(x2) + atan(x3) + sinh(x1) + tan(x2)", "1.23456789012345678901*x1",
])
def test_accepted_strings_build_exactly_what_parse_expr_builds(text):
    built = parse_model(text, NAMES)
    assert sympy.srepr(built) == sympy.srepr(_reference_parse(text))
    check_model(text, NAMES)


_atoms = st.sampled_from(["x1", "x2", "x3", "2", "0.5", "3.25", "1e-3", "pi", "7"])


def _combine(children):
    binary = st.tuples(children, st.sampled_from(["+", "-", "*", "/", "**"]), children).map(
        lambda t: f"({t[0]} {t[1]} {t[2]})")
    unary = st.tuples(st.sampled_from(["-", "sin", "exp", "log", "Abs", "sqrt"]), children).map(
        lambda t: f"-{t[1]}" if t[0] == "-" else f"{t[0]}({t[1]})")
    return binary | unary


@settings(max_examples=60, deadline=None)
@given(st.recursive(_atoms, _combine, max_leaves=8))
def test_random_expressions_match_parse_expr(text):
    try:
        expected = sympy.srepr(_reference_parse(text))
    except Exception:  # parse_expr itself failing (e.g. 0**-1 evaluates to zoo fine; ignore odd cases)
        return
    assert sympy.srepr(parse_model(text, NAMES)) == expected


def test_injection_corpus_is_large_and_varied():
    assert len(INJECTION_CORPUS) >= 50
    assert any("__import__" in s for s in INJECTION_CORPUS)
    assert any(len(s) > MAX_LENGTH for s in INJECTION_CORPUS)
    assert any(s.startswith("(" * 100) for s in INJECTION_CORPUS)


@pytest.mark.parametrize("strict", [True, False])
def test_injection_corpus_never_runs_code(tmp_path, monkeypatch, strict):
    monkeypatch.chdir(tmp_path)
    accepted = []
    for text in INJECTION_CORPUS:
        try:
            parse_model(text, NAMES, strict=strict)
            accepted.append(text)
        except ModelSyntaxError as exc:
            assert str(exc)  # a message quoting the offending token
    # Only plain expressions survive (a long-but-harmless nesting, an unknown plain name in 2022 mode)
    assert all("import" not in t and "(" * 100 not in t[:1] for t in accepted if strict)
    assert not (tmp_path / "SENTINEL").exists()


def test_injection_corpus_through_scoring_is_refused_or_bounded(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = DatasetSpec("d", NAMES, "r2")
    X = np.random.default_rng(0).uniform(1, 2, (20, 3))
    seeds = list(range(len(INJECTION_CORPUS)))
    data = {("d", s): RunData(s, X, X[:, 0]) for s in seeds}
    models = {("d", s): text for s, text in zip(seeds, INJECTION_CORPUS)}
    records = score_runs(models, {"d": spec}, data, simplify_time_limit=2, model_time_limit=20,
                         progress_label=None)
    assert len(records) == len(INJECTION_CORPUS)
    failed = [r for r in records if "failed" in r]
    assert len(failed) >= len(INJECTION_CORPUS) - 3
    assert all("invalid model" in r["failed"] or "time limit" in r["failed"] for r in failed)
    assert not (tmp_path / "SENTINEL").exists()


@pytest.mark.parametrize("text, fragment", [
    ("x1.__class__", "attribute access is not allowed: 'x1.__class__'"),
    ("__import__", "underscore"),
    ("foo(x1)", "function not allowed"),
    ("x9", "unknown name"),
    ("x1 ^ 2", "use ** for powers"),
    ("lambda: 1", "':'"),
    ("'x1'", "character"),
    ("10**10**10", "numeric power too large"),
    ("x1" + " + x1" * 3000, "characters long"),
    ("sin(x=1)", "character '='"),
    ("sin(*x1)", "keyword or starred"),
    ("", "empty"),
])
def test_rejections_quote_the_offending_token(text, fragment):
    with pytest.raises(ModelSyntaxError) as info:
        parse_model(text, NAMES)
    assert fragment in str(info.value)


def test_unknown_names_become_symbols_only_in_2022_mode():
    assert parse_model("x9 + 1", NAMES, strict=False) == sympy.Symbol("x9") + 1
    with pytest.raises(ModelSyntaxError):
        parse_model("x9 + 1", NAMES, strict=True)


@pytest.mark.parametrize("names", [["x 1"], ["_x"], ["lambda"], [3]])
def test_bad_feature_names_are_refused(names):
    with pytest.raises(ValueError, match=r"feature_names\[0\]"):
        parse_model("1", names)


def test_huge_symbolic_power_is_bounded_and_non_finite_predictions_are_reported():
    spec = DatasetSpec("d", NAMES, "r2")
    X = np.random.default_rng(0).uniform(1.5, 2, (20, 3))
    data = {("d", 0): RunData(0, X, X[:, 0])}
    [record] = score_runs({("d", 0): "x1**10**10"}, {"d": spec}, data, simplify_time_limit=5,
                          model_time_limit=30, progress_label=None)
    assert record["r2_test"] is None and "not finite" in record["reason"]


def test_model_that_hangs_sympy_is_cut_and_the_run_finishes():
    # srb458 of the 2022 vectors: sympy.simplify needs well over 30 s. The in-process alarm is set far
    # beyond the per-model limit, as if sympy were stuck where the alarm cannot interrupt it: the worker is
    # killed at 10 s, the run is failed with that reason, and the other model is still scored.
    hang = "exp(sin(x1)**2)*exp(cos(x1)**2) + sin(x1+x2+x3+x1)**4 - cos(2*x1+x2)**3*tan(x3-x1)**2"
    spec = DatasetSpec("d", NAMES, "r2")
    X = np.random.default_rng(0).uniform(1, 2, (30, 3))
    data = {("d", s): RunData(s, X, X[:, 0] * 2) for s in (0, 1)}
    records = score_runs({("d", 0): hang, ("d", 1): "2*x1"}, {"d": spec}, data, simplify_time_limit=1000,
                         model_time_limit=10, progress_label=None)
    assert records[0]["failed"] == "scoring stopped at the per-model time limit"
    assert math.isclose(records[1]["r2_test"], 1.0)


def test_simplify_alarm_keeps_the_unsimplified_model():
    from codascore.srbench import canonicalize

    hang = "exp(sin(x1)**2)*exp(cos(x1)**2) + sin(x1+x2+x3+x1)**4 - cos(2*x1+x2)**3*tan(x3-x1)**2"
    # In this process hypothesis has a gc callback: an alarm landing while it runs is swallowed by Python
    # ("Exception ignored in gc_callback"); the repeated alarm still ends the call.
    model = canonicalize(hang, NAMES, simplify_time_limit=0.5)
    assert model.timed_out and model.expr == parse_model(hang, NAMES)


def _busy(seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pass


def test_time_limit_fires_again_after_a_swallowed_alarm():
    from codascore.srbench.canonical_form import time_limit

    before = signal.getsignal(signal.SIGALRM)
    swallowed = []
    with pytest.raises(SimplifyTimeout):
        with time_limit(0.1):
            try:  # sympy code of this shape catches the first alarm and carries on
                _busy(20)
            except Exception as exc:
                swallowed.append(exc)
            _busy(20)
    assert len(swallowed) == 1 and isinstance(swallowed[0], SimplifyTimeout)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) is before
