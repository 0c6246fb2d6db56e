"""Property tests: the simplifier, interval sets and constant bounds against the interpreter.

Random index expressions over a few bounded variables; at points drawn inside the bounds,
``simplify`` must not change the value, the value must lie in ``eval_set``'s interval (its
symbolic ends evaluated at the same point), and in ``const_int_bound``.
"""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from tessel.arith import Analyzer, IntSet, eval_set, simplify
from tessel.ir import Range, Var
from tessel.ir import expr as E
from tessel.ir.evaluate import evaluate

I, J, K = Var("i"), Var("j"), Var("k")
BOUNDS = {I: (0, 7), J: (-4, 4), K: (0, 19)}
RANGES = {v: Range(lo, hi - lo + 1) for v, (lo, hi) in BOUNDS.items()}

leaf = st.one_of(st.sampled_from([I, J, K]), st.integers(-9, 9).map(E.const))
div_c = st.integers(1, 9)


def _extend(sub):
    return st.one_of(
        st.tuples(sub, sub).map(lambda t: E.add(*t)),
        st.tuples(sub, sub).map(lambda t: E.sub(*t)),
        st.tuples(sub, st.integers(-4, 8)).map(lambda t: E.mul(*t)),
        st.tuples(sub, sub).map(lambda t: E.mul(*t)),
        st.tuples(sub, div_c).map(lambda t: E.floordiv(*t)),
        st.tuples(sub, div_c).map(lambda t: E.floormod(*t)),
        st.tuples(sub, div_c).map(lambda t: E.truncdiv(*t)),
        st.tuples(sub, div_c).map(lambda t: E.truncmod(*t)),
        st.tuples(sub, st.integers(-9, -1)).map(lambda t: E.floordiv(*t)),
        st.tuples(sub, sub).map(lambda t: E.min_(*t)),
        st.tuples(sub, sub).map(lambda t: E.max_(*t)),
        st.tuples(sub, sub, sub, sub).map(lambda t: E.select(E.lt(t[0], t[1]), t[2], t[3])),
    )


exprs = st.recursive(leaf, _extend, max_leaves=10)
points = st.fixed_dictionaries({v: st.integers(lo, hi) for v, (lo, hi) in BOUNDS.items()})
# TESSEL_ARITH_EXAMPLES=5000 runs a deeper search than the default quick one
SETTINGS = settings(max_examples=int(os.environ.get("TESSEL_ARITH_EXAMPLES", "200")), deadline=None)


@SETTINGS
@given(exprs, st.lists(points, min_size=1, max_size=6))
def test_simplify_keeps_value(e, pts):
    s = simplify(e, RANGES)
    for pt in pts:
        assert evaluate(s, pt) == evaluate(e, pt), f"{e}  ->  {s}  at {pt}"


@SETTINGS
@given(exprs, exprs, st.sampled_from([E.lt, E.le, E.eq, E.ne, E.gt, E.ge]), st.lists(points, min_size=1, max_size=4))
def test_simplify_keeps_comparisons(a, b, cmp, pts):
    e = cmp(a, b)
    s = simplify(e, RANGES)
    for pt in pts:
        assert evaluate(s, pt) == evaluate(e, pt), f"{e}  ->  {s}  at {pt}"


@SETTINGS
@given(exprs, st.lists(points, min_size=1, max_size=4))
def test_simplify_without_bounds_keeps_value(e, pts):
    s = simplify(e)
    for pt in pts:
        assert evaluate(s, pt) == evaluate(e, pt), f"{e}  ->  {s}  at {pt}"


@SETTINGS
@given(exprs, st.sets(st.sampled_from([I, J, K]), min_size=1), st.lists(points, min_size=1, max_size=6))
def test_value_lies_in_eval_set(e, relaxed, pts):
    dom = {v: RANGES[v] for v in relaxed}
    s = eval_set(e, dom)
    assert not s.is_nothing()
    for pt in pts:
        v = evaluate(e, pt)
        if s.min_value is not None:
            assert evaluate(s.min_value, pt) <= v, f"{e}: {v} below {s} at {pt}"
        if s.max_value is not None:
            assert v <= evaluate(s.max_value, pt), f"{e}: {v} above {s} at {pt}"


@SETTINGS
@given(exprs, st.lists(points, min_size=1, max_size=6))
def test_eval_set_with_known_symbolic_vars(e, pts):
    ana = Analyzer()
    ana.bind(K, RANGES[K])  # k stays symbolic in the set, but its range is known
    s = eval_set(e, {I: RANGES[I], J: IntSet.interval(-4, 4)}, ana)
    for pt in pts:
        v = evaluate(e, pt)
        assert s.min_value is None or evaluate(s.min_value, pt) <= v
        assert s.max_value is None or v <= evaluate(s.max_value, pt)


@SETTINGS
@given(exprs, st.lists(points, min_size=1, max_size=6))
def test_const_int_bound_contains_values(e, pts):
    ana = Analyzer()
    ana.bind(RANGES)
    lo, hi = ana.const_int_bound(e)
    for pt in pts:
        v = evaluate(e, pt)
        assert (lo is None or lo <= v) and (hi is None or v <= hi), f"{e}: {v} not in [{lo}, {hi}]"


@SETTINGS
@given(exprs, exprs, st.lists(points, min_size=1, max_size=6))
def test_can_prove_is_sound(a, b, pts):
    ana = Analyzer()
    ana.bind(RANGES)
    if ana.can_prove(E.le(a, b)):
        for pt in pts:
            assert evaluate(a, pt) <= evaluate(b, pt), f"claimed {a} <= {b}; fails at {pt}"


N = Var("n")
SYM_POINTS = st.integers(1, 12).flatmap(
    lambda n: st.fixed_dictionaries({N: st.just(n), I: st.integers(0, n - 1), J: st.integers(-4, 4), K: st.integers(0, 19)})
)


@SETTINGS
@given(exprs, st.lists(SYM_POINTS, min_size=1, max_size=6))
def test_symbolic_range_facts_are_sound(e, pts):
    ana = Analyzer()
    ana.bind(N, Range(1, 12))
    ana.bind(I, Range(0, N))  # i < n is a fact, not a constant bound
    for cand in (e, E.lt(e, N), E.floormod(e + I, N), E.min_(e, N - I)):
        s = ana.simplify(cand)
        for pt in pts:
            assert evaluate(s, pt) == evaluate(cand, pt), f"{cand}  ->  {s}  at {pt}"
    s = eval_set(e, {I: Range(0, N)}, ana)
    for pt in pts:
        v = evaluate(e, pt)
        assert s.min_value is None or evaluate(s.min_value, pt) <= v
        assert s.max_value is None or v <= evaluate(s.max_value, pt)
