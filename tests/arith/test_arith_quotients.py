"""Quotients of one numerator by constant divisors, compared (issue 31).

The tails of a split nested in a split compare quotients such as ``n//27`` and ``(n + 8)//27``,
or ``n//9`` and ``(n//27)*3``: each unbounded alone, their difference is bounded whatever ``n``
is, and the simplifier uses that to drop the clamps (``min``/``max``) the partition puts
around its cut points. The property test checks the values at many ``n`` of both signs.
"""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from tessel.arith import Analyzer, simplify
from tessel.ir import Var
from tessel.ir import expr as E
from tessel.ir.evaluate import evaluate

N = Var("n")

quotient = st.tuples(st.integers(-30, 30), st.sampled_from([1, 2, 3, 4, 6, 8, 9, 12, 16, 27])).map(
    lambda t: E.floordiv(E.add(N, E.const(t[0])), E.const(t[1])))
term = st.tuples(quotient, st.integers(-4, 4)).map(lambda t: E.mul(t[0], E.const(t[1])))
sums = st.lists(term, min_size=1, max_size=4).map(lambda ts: _sum(ts))
exprs = st.tuples(sums, sums, st.integers(-5, 5), st.sampled_from([E.min_, E.max_])).map(
    lambda t: t[3](E.add(t[0], E.const(t[2])), t[1]))
SETTINGS = settings(max_examples=int(os.environ.get("TESSEL_ARITH_EXAMPLES", "200")), deadline=None)


def _sum(ts):
    out = ts[0]
    for t in ts[1:]:
        out = E.add(out, t)
    return out


@SETTINGS
@given(exprs)
def test_simplify_keeps_the_value_at_every_n(e):
    s = simplify(e)
    for n in range(-120, 121, 7):
        assert evaluate(s, {N: n}) == evaluate(e, {N: n}), f"{e}  ->  {s}  at n = {n}"


def test_quotients_of_one_divisor_are_ordered():
    a = Analyzer()
    q8, q2 = E.floordiv(E.add(N, E.const(8)), E.const(27)), E.floordiv(E.add(N, E.const(2)), E.const(27))
    assert a.can_prove(E.le(q2, q8))
    assert a.can_prove(E.le(E.sub(q8, q2), E.const(1)))
    assert not a.can_prove(E.le(E.sub(q8, q2), E.const(0)))  # n = 19: 1 - 0


def test_quotients_of_multiple_divisors_differ_by_the_residue():
    """``n//9 - (n//27)*3`` is the middle digit of ``n`` in base 3^2...: in [0, 2] for any n."""
    a = Analyzer()
    digit = E.sub(E.floordiv(N, E.const(9)), E.mul(E.floordiv(N, E.const(27)), E.const(3)))
    assert str(a.simplify(E.min_(digit, E.const(3)))) == str(a.simplify(digit))
    assert str(a.simplify(E.max_(digit, E.const(0)))) == str(a.simplify(digit))
    assert not a.can_prove(E.le(digit, E.const(1)))  # n = 18 gives 2
