"""Constant bounds through every operator the bound inference meets."""

from __future__ import annotations

import pytest

from tessel.arith import Analyzer
from tessel.ir import IterVar, Range, Var
from tessel.ir import expr as E

i, j, n = Var("i"), Var("j"), Var("n")
u = Var("u", "uint32")
f = Var("f", "float32")


@pytest.fixture
def ana():
    a = Analyzer()
    a.bind(i, Range(0, 8))
    a.bind(j, Range(-4, 9))  # [-4, 4]
    return a


@pytest.mark.parametrize("e,expected", [
    (E.const(7), (7, 7)),
    (i, (0, 7)),
    (i + j, (-4, 11)),
    (i - j, (-4, 11)),
    (i * 3, (0, 21)),
    (i * j, (-28, 28)),
    (j * -2, (-8, 8)),
    (E.floordiv(j, 4), (-1, 1)),
    (E.floordiv(i, -2), (-4, 0)),
    (E.floormod(j, 4), (0, 3)),
    (E.floormod(i, 16), (0, 7)),
    (E.floormod(i + 16, 16), (0, 7)),
    (E.truncdiv(j, 3), (-1, 1)),
    (E.truncmod(j, 3), (-2, 2)),
    (E.truncmod(i, 3), (0, 2)),
    (E.min_(i, j), (-4, 4)),
    (E.max_(i, j), (0, 7)),
    (E.select(i < 3, i, j + 100), (0, 104)),
    (E.select(i < 100, i, j + 100), (0, 7)),
    (E.cast(i, "int64"), (0, 7)),
    (E.cast(i + 300, "int8"), (-128, 127)),
    (E.cast(i, "uint8"), (0, 7)),
    (i < 8, (1, 1)),
    (i < 4, (0, 1)),
    (n, (None, None)),
    (n + i, (None, None)),
    (E.floormod(n, 8), (0, 7)),
    (E.floordiv(E.floormod(n, 8), 2), (0, 3)),
    (E.min_(n, 5), (None, 5)),
    (E.max_(n, 5), (5, None)),
    (n * 0, (0, 0)),
    (n - n, (0, 0)),
    (u, (0, None)),
    (E.cast(f, "int32"), (None, None)),
])
def test_const_int_bound(ana, e, expected):
    assert ana.const_int_bound(e) == expected


def test_symbolic_range_gives_bound_through_its_ends():
    ana = Analyzer()
    ana.bind(n, Range(1, 64))
    ana.bind(i, Range(0, n))
    assert ana.const_int_bound(i) == (0, 63)
    ana.bind(j, Range(i, 4))
    assert ana.const_int_bound(j) == (0, 66)


def test_itervar_keys_and_constraints():
    iv = IterVar(Range(0, 10), Var("k"))
    ana = Analyzer()
    ana.bind(iv, iv.dom)
    assert ana.const_int_bound(iv.var * 2) == (0, 18)
    with ana.constraint_scope(iv.var * 2 >= 7):
        assert ana.const_int_bound(iv.var) == (4, 9)
    with ana.constraint_scope(iv.var == 3):
        assert ana.const_int_bound(iv.var) == (3, 3)
