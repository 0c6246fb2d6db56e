"""IntSet, eval_set, union/intersect and cover_range, in the shapes InferBound uses them."""

from __future__ import annotations

import pytest

from tessel.arith import Analyzer, IntSet, eval_set, intersect, union
from tessel.errors import BoundError
from tessel.ir import Range, Var
from tessel.ir import expr as E

i, j, k, n, o = (Var(s) for s in "i j k n o".split())
fd, fm = E.floordiv, E.floormod


def ends(s: IntSet) -> tuple[str, str]:
    return str(s.min_value), str(s.max_value)


@pytest.mark.parametrize("e,dom,expected", [
    (i * 8 + j, {i: IntSet.interval(0, 15)}, ("j", "j + 120")),
    (i * 8 + j, {i: Range(0, 16), j: Range(0, 8)}, ("0", "127")),
    (i - j, {i: Range(0, 4), j: Range(0, 8)}, ("-7", "3")),
    (i * -2, {i: Range(0, 4)}, ("-6", "0")),
    (fd(i, 4), {i: Range(0, 16)}, ("0", "3")),
    (fd(i, 4), {i: Range(k, 16)}, ("k//4", "(k + 15)//4")),
    (fm(i, 8), {i: Range(0, 32)}, ("0", "7")),
    (fm(i, 8), {i: Range(o * 8, 8)}, ("0", "7")),
    (fm(i, 8), {i: Range(o * 8 + 2, 4)}, ("2", "5")),
    (fm(i + k, 8), {i: Range(0, 4)}, ("0", "7")),
    (E.truncdiv(i, 4), {i: Range(0, 16)}, ("0", "3")),
    (E.truncmod(i, 4), {i: Range(-8, 16)}, ("-3", "3")),
    (E.min_(i, 10), {i: Range(0, 16)}, ("0", "10")),
    (E.max_(i, j), {i: Range(0, 16)}, ("max(j, 0)", "max(j, 15)")),
    (E.select(k < 3, i, i + 100), {i: Range(0, 16)}, ("0", "115")),
    (E.cast(i, "int64"), {i: Range(0, 16)}, ("int64(0)", "int64(15)")),
    (j + 1, {i: Range(0, 4)}, ("j + 1", "j + 1")),
    ((i * 8 + j) - i * 8, {i: Range(0, 4)}, ("j", "j")),
])
def test_eval_set(e, dom, expected):
    assert ends(eval_set(e, dom)) == expected


def test_mul_by_symbolic_needs_sign():
    s = eval_set(i * n, {i: Range(0, 4)})  # the sign of n is unknown: both ends are candidates
    assert ends(s) == ("min(n*3, 0)", "max(n*3, 0)")
    assert eval_set(i * n, {i: IntSet.interval(0, None)}).is_everything()
    ana = Analyzer()
    ana.bind(n, Range(1, 64))
    s = eval_set(i * n, {i: Range(0, 4)}, ana)
    assert ends(s) == ("0", "n*3")


def test_seed_split_pass_up():
    # Phase 2, case 2: parent = outer*f + inner + min, with inner relaxed and outer a point
    xo, xi = Var("x.outer"), Var("x.inner")
    s = eval_set(xo * 16 + xi + 0, {xo: IntSet.single_point(xo), xi: Range(0, 16)})
    assert ends(s) == ("x.outer*16", "x.outer*16 + 15")
    r = s.cover_range(Range(0, 64))
    assert str(r.min) == "x.outer*16" and str(r.extent) == "16"


def test_cover_range():
    assert str(IntSet.single_point(j).cover_range(Range(0, 16))) == "range(min=j, ext=1)"
    r = IntSet.interval(None, 10).cover_range(Range(2, 30))
    assert (str(r.min), str(r.extent)) == ("2", "9")
    r = IntSet.everything().cover_range(Range(0, n))
    assert (str(r.min), str(r.extent)) == ("0", "n")
    r = IntSet.interval(k, k + 7).cover_range(Range(0, n))
    assert (str(r.min), str(r.extent)) == ("k", "8")
    assert str(IntSet.interval(0, 9).to_range()) == "range(min=0, ext=10)"
    with pytest.raises(BoundError):
        IntSet.everything().to_range()


def test_union_and_intersect():
    assert ends(union([IntSet.interval(0, 1), IntSet.interval(2, 3)])) == ("0", "3")
    assert ends(union([IntSet.interval(n, n + 4), IntSet.interval(n + 2, n + 9)])) == ("n", "n + 9")
    assert ends(union([IntSet.interval(n, n), IntSet.interval(k, k)])) == ("min(n, k)", "max(n, k)")
    assert union([IntSet.interval(0, 4), IntSet.everything()]).is_everything()
    assert ends(union([IntSet.nothing(), IntSet.interval(1, 2)])) == ("1", "2")
    assert union([]).is_nothing()
    assert ends(intersect([IntSet.interval(0, 10), IntSet.interval(5, 20)])) == ("5", "10")
    assert intersect([IntSet.interval(0, 3), IntSet.interval(5, 20)]).is_nothing()
    assert ends(intersect([IntSet.everything(), IntSet.interval(n, n + 1)])) == ("n", "n + 1")


def test_predicates():
    assert IntSet.single_point(i).is_single_point()
    assert IntSet.single_point(i).point_value() is i
    assert IntSet.everything().is_everything() and not IntSet.everything().is_nothing()
    assert IntSet.nothing().is_nothing() and not IntSet.nothing().is_everything()
    assert IntSet.interval(3, 2).is_nothing()
    assert IntSet.from_range(Range(k, 1)).is_single_point()
    assert ends(IntSet.from_range(Range(k, 4))) == ("k", "k + 3")
    assert repr(IntSet.interval(None, 3)) == "[-inf, 3]"
    with pytest.raises(BoundError):
        IntSet.interval(0, 3).point_value()


def test_eval_set_uses_an_analyzers_bindings():
    ana = Analyzer()
    ana.bind(k, Range(0, 4))
    s = eval_set(fm(i + k * 8, 8), {i: Range(0, 8)}, ana)
    assert ends(s) == ("0", "7")


def test_bind_takes_an_interval_set_and_a_point():
    ana = Analyzer()
    ana.bind(k, IntSet.interval(2, 5))
    assert ana.can_prove(k >= 2) and ana.can_prove(k <= 5) and not ana.can_prove(k <= 4)
    ana.bind(i, IntSet.single_point(k + 1))
    assert str(ana.simplify(i - k)) == "1"
