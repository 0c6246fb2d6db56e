"""Unrolling is bounded: a loop nest whose straight-line code would pass the documented limit
is refused with a ScheduleError that names the stage and loop and proposes a split that fits;
``#pragma GCC unroll`` never asks the C compiler for more than a bounded number of copies."""

from __future__ import annotations

import re

import numpy as np
import pytest
from helpers import TARGETS, check, rand

import tessel
from tessel import te

MAX_UNROLL_STATEMENTS = tessel.tunables.current().max_unroll_statements


def _apply(err: tessel.ScheduleError, s) -> None:
    assert err.fix, str(err)
    exec(err.fix, {"s": s, **err.fix_names})


def test_unroll_of_a_loop_longer_than_the_limit_is_refused_when_lowered():
    n = 4 * MAX_UNROLL_STATEMENTS + 3
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    s[B].unroll(B.op.axis[0])  # the extent a loop will have is known only once bounds are inferred
    with pytest.raises(tessel.ScheduleError) as info:
        tessel.lower(s, [A, B])
    err = info.value
    assert "stage B" in str(err) and "loop i" in str(err) and str(MAX_UNROLL_STATEMENTS) in str(err)
    assert err.fix.startswith("s[B].split(B.op.axis[0], factor=")
    _apply(err, s)  # the split hands the unroll to its inner loop
    assert "B[i.outer*64 + 63] =" in str(tessel.lower(s, [A, B], simple_mode=True))  # copied out
    a = rand(n)
    check(s, [A, B], [a], [a * 2])


@pytest.mark.parametrize("target", TARGETS)
def test_an_axis_with_a_long_domain_is_unrolled_where_it_is_attached_inside_a_tile(target):
    """C.local's axis i.c spans all 2048 rows of C, but attached inside C's tile of 4 rows it
    loops 4 times: what counts is the extent InferBound gives the loop (fast_matmul's pattern)."""
    n = 2 * MAX_UNROLL_STATEMENTS
    A = te.placeholder((n, 8), name="A")
    C = te.compute((n, 8), lambda i, j: A[i, j] * 3.0, name="C")
    s = te.create_schedule(C.op)
    CL = s.cache_write(C, "local")
    io, ii = s[C].split(C.op.axis[0], factor=4)
    s[CL].compute_at(s[C], io)
    s[CL].unroll(CL.op.axis[0])
    a = rand(n, 8)
    check(s, [A, C], [a], [a * 3], targets=(target,))


def test_nested_unrolls_past_the_limit_are_refused_when_lowered_and_the_fix_builds():
    A = te.placeholder((64, 64), name="A")
    B = te.compute((64, 64), lambda i, j: A[i, j] + 1.0, name="B")
    s = te.create_schedule(B.op)
    s[B].unroll(B.op.axis[0])
    s[B].unroll(B.op.axis[1])  # 64 x 64 copies: each loop alone is fine, the nest is not
    with pytest.raises(tessel.ScheduleError) as info:
        tessel.lower(s, [A, B])
    err = info.value
    assert "stage B" in str(err) and "loop i " in str(err) and "4096" in str(err)
    assert err.fix.startswith("s[B].split(B.op.axis[0], factor=")
    _apply(err, s)
    a = rand(64, 64)
    check(s, [A, B], [a], [a + 1])


def test_three_nested_40_way_unrolls_are_refused_not_compiled():
    A = te.placeholder((40, 40, 40), name="A")
    B = te.compute((40, 40, 40), lambda i, j, k: A[i, j, k] * 3.0, name="B")
    s = te.create_schedule(B.op)
    for ax in B.op.axis:
        s[B].unroll(ax)
    with pytest.raises(tessel.ScheduleError, match=r"stage B: unrolling loop j .*1600 statements"):
        tessel.build(s, [A, B])


def test_an_unrolled_split_inner_loop_is_checked_once_its_extent_is_known():
    A = te.placeholder((5000,), name="A")
    B = te.compute((5000,), lambda i: A[i] - 1.0, name="B")
    s = te.create_schedule(B.op)
    _, xi = s[B].split(B.op.axis[0], factor=2000)
    s[B].unroll(xi)  # the inner extent is the factor: known to InferBound
    with pytest.raises(tessel.ScheduleError, match="loop i.inner") as info:
        tessel.build(s, [A, B], target="python")
    _apply(info.value, s)
    a = rand(5000)
    check(s, [A, B], [a], [a - 1])


@pytest.mark.parametrize("target", TARGETS)
def test_a_long_unrolled_loop_under_the_limit_asks_gcc_for_a_bounded_unroll(target):
    n = MAX_UNROLL_STATEMENTS - 24  # over the IR unroller's extent: it stays a loop for the C compiler
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * A[i], name="B")
    s = te.create_schedule(B.op)
    s[B].unroll(B.op.axis[0])
    a = rand(n)
    f = check(s, [A, B], [a], [a * a], targets=(target,))[target]
    if target == "c":
        asked = [int(x) for x in re.findall(r"#pragma GCC unroll (\d+)", f.source)]
        assert asked and max(asked) <= 64


def test_auto_unroll_with_a_huge_step_keeps_a_big_nest_a_loop():
    A = te.placeholder((40, 40, 40), name="A")
    B = te.compute((40, 40, 40), lambda i, j, k: A[i, j, k] + 2.0, name="B")
    s = te.create_schedule(B.op)
    s[B].pragma(B.op.axis[0], "auto_unroll_max_step", 10**6)  # the user did not unroll a loop
    f = tessel.build(s, [A, B])
    assert "for (" in f.source
    a = rand(40, 40, 40)
    out = np.empty_like(a)
    f(a, out)
    np.testing.assert_allclose(out, a + 2)
