"""Budgets: an exact analysis that would cost more than it may is given up, soundly and aloud.

tessel's exact answers (isl's emptiness and regions, the simplifier's proofs over symbolic
bounds) are worth having only while they are cheap; on a loop nest whose bounds are min/max of
several symbolic terms they can grow without limit (issue 31: a 12-line strip stencil took
minutes). Each such analysis therefore counts its work in units it can count the same way on
every machine (isl's operations, proof attempts), never in seconds, so that a test can say
"it gave up" and a build's code does not depend on the load of the machine. Past its budget
the analysis answers what is sound without the proof ("not known to be empty", "not known to
hold", the interval box), and :func:`gave_up` says so: a :class:`~tessel.errors.
AnalysisBudgetWarning` once per analysis per process, and with ``TESSEL_DEBUG`` set a line per
occurrence naming the analysis, what it was about and how long it had run.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import warnings
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ..errors import AnalysisBudgetWarning
from ..ir import expr as E
from ..ir.functor import collect
from ..tunables import current

# the budgets themselves are limits of tessel.tunables (emptiness_operations, region_operations,
# region_constraints, proof_steps, pass_proof_steps, minmax_terms): part of a build's cache key


def minmax_terms(*exprs: E.PrimExpr) -> int:
    """How many ``min``/``max`` nodes ``exprs`` hold between them (shared ones counted once)."""
    return sum(len(collect(e, lambda n: isinstance(n, E.Min | E.Max))) for e in exprs)


@dataclass(frozen=True)
class GaveUp:
    analysis: str  # which analysis ("emptiness", "exact region", "simplifier")
    subject: str  # what it was about: a stage, a loop, an expression (shown, never run)
    seconds: float  # how long it had run when it stopped
    fallback: str  # the sound answer given instead


_LOCK = threading.Lock()
_warned: set[str] = set()
#: the most recent occurrences, newest last (for ``TESSEL_DEBUG`` and for tests)
recent: deque[GaveUp] = deque(maxlen=256)


class _Account(threading.local):
    """The proof attempts left to the pass running on this thread (None: no pass budget)."""

    left: int | None = None
    what: str = ""
    started: float = 0.0
    spent: bool = False


_account = _Account()


@contextmanager
def proof_budget(what: str, steps: int | None = None) -> Iterator[None]:
    """Run a pass with ``steps`` proof attempts in all (``tunables.pass_proof_steps``): many
    simplifications of one kernel, each under its own ``proof_steps``, add up past what one
    build should spend. Past it every proof fails at once ("not known"), which keeps what it
    would have removed: the code is correct, with more bounds and guards. Nested, the outer
    account counts."""
    if _account.left is not None:
        yield
        return
    _account.left, _account.what = current().pass_proof_steps if steps is None else steps, what
    _account.started, _account.spent = time.perf_counter(), False
    try:
        yield
    finally:
        _account.left = None


def charge(steps: int) -> bool:
    """Spend ``steps`` proof attempts of the running pass's account; False once it is spent."""
    if _account.left is None:
        return True
    _account.left -= steps
    if _account.left >= 0:
        return True
    if not _account.spent:
        _account.spent = True
        gave_up("simplifier", f"the {_account.what} pass", time.perf_counter() - _account.started,
                "the bounds and conditions it could not prove any more are kept as written")
    return False


def gave_up(analysis: str, subject: str, seconds: float, fallback: str) -> None:
    """Record that ``analysis`` stopped at its budget and gave ``fallback`` instead."""
    event = GaveUp(analysis, subject, seconds, fallback)
    with _LOCK:
        recent.append(event)
        first = analysis not in _warned
        _warned.add(analysis)
    if os.environ.get("TESSEL_DEBUG"):
        print(f"tessel: {analysis} gave up on {subject} after {seconds:.3f} s (its budget); {fallback}",
              file=sys.stderr)
    if first:
        warnings.warn(AnalysisBudgetWarning(
            f"the {analysis} analysis reached its budget (on {subject}) and gave a sound but less precise answer: "
            f"{fallback}. The code is correct; it may be slower than with the exact answer. TESSEL_DEBUG=1 "
            "lists every occurrence"), stacklevel=2)


__all__ = ["charge", "minmax_terms", "proof_budget", "GaveUp", "gave_up", "recent"]
