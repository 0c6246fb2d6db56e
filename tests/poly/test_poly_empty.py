"""Loops and statement instances that cannot run are removed from the lowered code (issue 13,
item 4): isl decides, under the sizes' context and the user's assumptions, what the
arithmetic alone cannot."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check, rand

import tessel
from tessel import te
from tessel.ir import stmt as S
from tessel.ir.functor import collect
from tessel.poly import empty


def _pairs(assume: str | None):
    """``B[i] = A[i] + C[i//2]`` split by 2; under ``n == 2*m`` the split divides."""
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n,), name="A")
    C = te.placeholder((m,), name="C")
    B = te.compute((n,), lambda i: A[i] + C[i // 2], name="B")
    s = te.create_schedule(B.op)
    if assume:
        s.assume(assume)
    s[B].split(B.op.axis[0], factor=2)
    return s, [A, C, B]


def _loops(body):
    return collect(body, lambda x: isinstance(x, S.For))


def test_a_tail_that_no_allowed_size_runs_is_removed():
    s, args = _pairs("n <= 2 * m")
    assert len(_loops(tessel.lower(s, args, simple_mode=True))) == 4  # the main nest and the tail
    s, args = _pairs("n == 2 * m")
    body = tessel.lower(s, args, simple_mode=True)
    assert len(_loops(body)) == 2 and not collect(body, lambda x: isinstance(x, S.IfThenElse)), body
    func, steps = tessel.driver.lower_steps(s, args)
    assert "remove_empty_loops" in [st.name for st in steps]


@pytest.mark.parametrize("m", [1, 5, 8])
def test_values_match_numpy_without_the_tail(m):
    s, args = _pairs("n == 2 * m")
    a, c = rand(2 * m), rand(m, seed=3)
    check(s, args, [a, c], [a + np.repeat(c, 2)])  # both targets


def test_a_size_that_needs_the_tail_is_refused_at_the_call():
    s, args = _pairs("n == 2 * m")
    f = tessel.build(s, args, target="python")
    a, c = rand(7), rand(3)
    with pytest.raises(tessel.errors.ArgumentError, match="n == 2 \\* m"):
        f(a, c, np.empty_like(a))


def test_a_reduction_over_an_empty_range_keeps_its_init_only():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n,), name="A")
    C = te.placeholder((m,), name="C")
    k = te.reduce_axis((0, n - 2 * m), name="k")
    B = te.compute((m,), lambda i: te.sum(A[k] * C[i], axis=k), name="B")
    s = te.create_schedule(B.op)
    s.assume("n == 2 * m")
    body = tessel.lower(s, [A, C, B], simple_mode=True)
    assert [lp.loop_var.name for lp in _loops(body)] == ["i"]  # the update's k loop is gone
    a, c = rand(8), rand(4)
    check(s, [A, C, B], [a, c], [np.zeros(4, "float32")])  # a sum over nothing


def test_constant_sizes_ask_isl_nothing(monkeypatch):
    def refuse(*_args):
        raise AssertionError("isl was asked about a loop of constant extent")

    monkeypatch.setattr(empty, "_never", refuse)
    A = te.placeholder((10,), name="A")
    B = te.compute((10,), lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=4)
    a = rand(10)
    check(s, [A, B], [a], [a * 2])


def test_a_loop_that_may_run_is_kept():
    s, args = _pairs("n <= 2 * m")  # n may be odd: the tail stays, and computes right
    a, c = rand(7), rand(4, seed=3)
    check(s, args, [a, c], [a + np.repeat(c, 2)[:7]])
