"""A model string's canonical form, as SRBench 2022 judged it: parsed safely, simplified by sympy under a
wall-clock limit (a SIGALRM timer), floats rounded (docs/srbench.md#canonical-form,
docs/srbench.md#simplify-then-round). Every per-model metric of srbench/metrics.py reads this one form;
the timer is here so that the metrics stay functions of their arguments and the clock.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import threading
from typing import Iterable

from ..errors import SimplifyTimeout
from .expressions import parse_model

#: Time limit of one sympy.simplify call, in seconds (2022: MAXTIME = 10).
SIMPLIFY_TIME_LIMIT = 10.0
#: Floats are rounded to this many decimals after simplification; smaller magnitudes become 0.
ROUND_DECIMALS = 3


#: After the limit, the alarm fires again at this interval until the block has exited: some sympy code
#: catches Exception and carries on, and a single swallowed alarm would leave the call unbounded.
ALARM_REPEAT = 0.05


@contextlib.contextmanager
def time_limit(seconds: float | None):
    """Raise SimplifyTimeout in the block after ``seconds`` of wall time, and again every ALARM_REPEAT
    seconds until it leaves the block (SIGALRM, main thread only; elsewhere, or with None, the block runs
    unbounded and the caller's process limit applies)."""
    usable = (seconds is not None and seconds > 0 and hasattr(signal, "setitimer")
              and threading.current_thread() is threading.main_thread())
    if not usable:
        yield
        return
    armed = True

    def on_alarm(signum, frame):
        if armed:
            raise SimplifyTimeout(f"sympy did not finish within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds, ALARM_REPEAT)
    try:
        yield
    finally:
        while True:  # a repeat may land during the clean-up itself: retry until it is done
            try:
                armed = False
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)
                break
            except SimplifyTimeout:
                continue


@dataclasses.dataclass(frozen=True)
class CanonicalModel:
    """A model in canonical form (docs/srbench.md#canonical-form): parsed, simplified (or not, on
    timeout or failure), floats rounded.

    text:      the model string as submitted.
    parsed:    the expression as written (used for numeric evaluation).
    expr:      the canonical expression (used for complexity, equivalence and feature absence).
    timed_out: the simplify time limit fired (expr is then the rounded, unsimplified parse).
    """

    text: str
    parsed: object
    expr: object
    timed_out: bool = False
    simplify_error: str | None = None

    @property
    def nodes(self) -> int:
        return count_nodes(self.expr)


def round_floats(expr, decimals: int = ROUND_DECIMALS):
    """Round every sympy Float of ``expr`` to ``decimals`` decimals, replacing |a| < 10**-decimals by 0.

    As 2022: walk the *input* in preorder and substitute into the running result, one Float at a time
    (``subs`` replaces every equal Float and re-evaluates, so 0.0004*x2 + ... loses the term);
    docs/srbench.md#floats-rounded-one-substitution-at-a-time.
    """
    import sympy

    threshold = 10 ** (-decimals)
    result = expr
    for node in sympy.preorder_traversal(expr):
        if isinstance(node, sympy.Float):
            replacement = sympy.Integer(0) if abs(node) < threshold else round(node, decimals)
            result = result.subs(node, replacement)
    return result


def count_nodes(expr) -> int:
    """Number of nodes of sympy's preorder traversal (operators, functions and leaves count 1 each)."""
    import sympy

    return sum(1 for _ in sympy.preorder_traversal(expr))


def canonicalize(model, feature_names: Iterable[str], simplify_time_limit: float | None = SIMPLIFY_TIME_LIMIT,
                 strict: bool = False, simplify: bool = True) -> CanonicalModel:
    """Parse (safely), simplify under a time limit, then round floats, in 2022's order
    (docs/srbench.md#canonical-form, docs/srbench.md#simplify-then-round).

    A CanonicalModel passed in is returned unchanged. ``strict`` is passed to parse_model (True rejects
    names that are not columns); ``simplify=False`` skips simplification (the 2022 real-world track's
    simplicity). Raises ModelSyntaxError for strings that are not accepted expressions.
    """
    import sympy

    if isinstance(model, CanonicalModel):
        return model
    parsed = parse_model(model, feature_names, strict=strict)
    simplified, timed_out, error = parsed, False, None
    if not simplify:
        return CanonicalModel(text=model, parsed=parsed, expr=round_floats(parsed))
    try:
        with time_limit(simplify_time_limit):
            simplified = sympy.simplify(parsed)
    except SimplifyTimeout:
        timed_out = True
        simplified = parsed
    except Exception as exc:  # 2022 kept the parsed model on any failure of simplify
        error = f"{type(exc).__name__}: {exc}"
        simplified = parsed
    return CanonicalModel(text=model, parsed=parsed, expr=round_floats(simplified),
                          timed_out=timed_out, simplify_error=error)


__all__ = ["CanonicalModel", "canonicalize", "round_floats", "count_nodes", "time_limit", "SIMPLIFY_TIME_LIMIT",
           "ROUND_DECIMALS", "ALARM_REPEAT"]
