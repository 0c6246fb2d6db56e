"""``s.assume("n % 8 == 0")``: a modular fact about a size removes the tail loop and the guard
of a split by a divisor of 8 (issue 13, item 4); the call-time check still refuses other sizes."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, check, rand

import tessel
from tessel import te
from tessel.arith import Analyzer
from tessel.errors import ArgumentError
from tessel.ir import expr as E
from tessel.ir import stmt as S
from tessel.ir.functor import collect


def _split(factor: int, assume: str | None, vector: bool = True):
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2 + 1, name="B")
    s = te.create_schedule(B.op)
    if assume:
        s.assume(assume)
    _, inner = s[B].split(B.op.axis[0], factor=factor)
    if vector:
        s[B].vectorize(inner)
    return A, B, s


def _loops_and_guards(s, args, **kw):
    body = tessel.lower(s, args, simple_mode=True, **kw)
    loops = collect(body, lambda x: isinstance(x, S.For))
    guards = collect(body, lambda x: isinstance(x, S.IfThenElse))
    return loops, guards


@pytest.mark.parametrize("factor", [8, 4, 2])
@pytest.mark.parametrize("exact", [True, False])
def test_a_multiple_of_the_factor_leaves_no_tail_and_no_guard(factor, exact):
    A, B, s = _split(factor, None)
    loops, guards = _loops_and_guards(s, [A, B], exact=exact)
    assert len(loops) > 1 or guards  # without the fact there is a tail to run
    A, B, s = _split(factor, "n % 8 == 0")
    loops, guards = _loops_and_guards(s, [A, B], exact=exact)
    assert len(loops) == 1 and not guards, tessel.lower(s, [A, B], simple_mode=True)
    assert "ramp" in str(tessel.lower(s, [A, B], simple_mode=True))  # one straight vector loop


@pytest.mark.parametrize("factor", [8, 4])
@pytest.mark.parametrize("size", [8, 24, 72])
def test_values_match_numpy_for_sizes_that_satisfy_it(factor, size):
    A, B, s = _split(factor, "n % 8 == 0")
    a = rand(size)
    check(s, [A, B], [a], [a * 2 + 1])  # both targets


@pytest.mark.parametrize("target", TARGETS)
def test_a_size_that_breaks_it_is_still_refused_at_the_call(target):
    A, B, s = _split(8, "n % 8 == 0")
    f = tessel.build(s, [A, B], target=target)
    a = rand(13)
    with pytest.raises(ArgumentError, match=r"n=13, which breaks the assumption 'n % 8 == 0'"):
        f(a, np.empty_like(a))


def test_a_2d_tile_under_two_assumptions():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] + 3, name="B")
    s = te.create_schedule(B.op)
    s.assume("n % 4 == 0 and m % 16 == 0")
    s[B].tile(B.op.axis[0], B.op.axis[1], 4, 16)
    body = tessel.lower(s, [A, B], simple_mode=True)
    assert not collect(body, lambda x: isinstance(x, S.IfThenElse))
    assert len(collect(body, lambda x: isinstance(x, S.For))) == 4
    a = rand(8, 32)
    check(s, [A, B], [a], [a + 3])


def test_the_analyzer_decides_division_and_remainder_from_a_residue():
    n, i = te.var("n"), te.var("i")
    ana = Analyzer()
    ana.assume(n % 8 == 3)
    assert str(ana.simplify(n % 8)) == "3"
    assert str(ana.simplify((n + 6) % 4)) == "1"  # n + 6 == 9 (mod 8), so 1 (mod 4)
    assert str(ana.simplify((n + 5) // 8)) == "n//8 + 1"  # n + 5 == 8*(n//8) + 8
    assert str(ana.simplify(n % 16)) != "3"  # 8 does not tell the residue mod 16
    ana.bind(i, E.Range(0, (n + 7) // 8 - 1))  # i < n//8: n == 8*(n//8) + 3
    assert ana.can_prove(i * 8 + 10 < n)
    assert not ana.can_prove(i * 8 + 11 < n)


def test_no_fact_no_change():
    n = te.var("n")
    ana = Analyzer()
    ana.assume(n >= 0)
    assert str(ana.simplify((n + 7) // 8)) == "(n + 7)//8"
    assert str(ana.simplify(n % 8)) == "n%8"
