"""Issue 15, difference 2: ``fuse`` as TVM v0.14 has it.

TVM fuses two adjacent loops given in either order (the name follows the arguments as written,
the fused loop counts the outer one outermost) and fuses a data-parallel with a reduction
axis into a reduction loop. Loops that are not adjacent are refused, and so is rfactor of a
loop that carries an output axis ("Factor axis touches normal axis").
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check, ir_text, rand

import tessel
from tessel import ScheduleError, te
from tessel.ir import expr as E


def _copy(m=6, n=5):
    A = te.placeholder((m, n), name="A")
    B = te.compute((m, n), lambda i, j: A[i, j] + 1, name="B")
    return A, B


def test_swapped_adjacent_arguments_are_fused():
    A, B = _copy()
    s = te.create_schedule(B.op)
    i, j = B.op.axis
    f = s[B].fuse(j, i)
    assert f.name == "j.i.fused"  # named as written, as TVM does
    assert s[B].leaf_iter_vars == [f]
    assert E.is_const_int(tessel.infer_bound(s)[f].extent, 30)
    a = rand(6, 5)
    check(s, [A, B], [a], [a + 1])


def test_swapped_fuse_keeps_the_outer_loop_outermost():
    A = te.placeholder((4, 3, 5), name="A")
    B = te.compute((4, 3, 5), lambda i, j, k: A[i, j, k] * 2, name="B")
    s = te.create_schedule(B.op)
    i, j, k = B.op.axis
    f = s[B].fuse(k, j)
    assert s[B].leaf_iter_vars == [i, f]
    text = ir_text(s, [A, B])
    assert "B[i, k.j.fused//5, k.j.fused%5]" in text  # j = fused // 5, k = fused % 5
    a = rand(4, 3, 5)
    check(s, [A, B], [a], [a * 2])


def test_fuse_of_non_adjacent_loops_is_still_refused():
    A = te.placeholder((4, 4, 4), name="A")
    B = te.compute((4, 4, 4), lambda i, j, k: A[i, j, k], name="B")
    s = te.create_schedule(B.op)
    i, _, k = B.op.axis
    with pytest.raises(ScheduleError, match="cannot fuse k and i: they are not adjacent"):
        s[B].fuse(k, i)


def _rowsum(m=5, n=7):
    A = te.placeholder((m, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((m,), lambda i: te.sum(A[i, k], axis=k), name="B")
    return A, B, k


def test_data_parallel_fused_with_reduction_is_a_reduction_axis():
    A, B, k = _rowsum()
    s = te.create_schedule(B.op)
    f = s[B].fuse(B.op.axis[0], k)
    assert f.iter_type == te.IterVar.CommReduce and f.is_reduce
    assert E.is_const_int(tessel.infer_bound(s)[f].extent, 35)
    a = rand(5, 7)
    check(s, [A, B], [a], [a.sum(axis=1)], rtol=1e-4)


@pytest.mark.parametrize("m,n", [(1, 1), (5, 7), (9, 4)])
def test_mixed_fuse_inside_a_split_reduction(m, n):
    A, B, k = _rowsum(m, n)
    s = te.create_schedule(B.op)
    io, ii = s[B].split(B.op.axis[0], factor=2)
    ko, ki = s[B].split(k, factor=3)
    s[B].reorder(io, ko, ii, ki)
    f = s[B].fuse(ki, ii)  # swapped and mixed at once
    assert f.is_reduce
    a = rand(m, n)
    check(s, [A, B], [a], [a.sum(axis=1)], rtol=1e-4)


def test_mixed_fused_loop_may_not_run_in_parallel():
    A, B, k = _rowsum()
    s = te.create_schedule(B.op)
    f = s[B].fuse(B.op.axis[0], k)
    with pytest.raises(ScheduleError, match="reduction loop"):
        s[B].parallel(f)


def test_rfactor_of_a_loop_carrying_an_output_axis_is_refused():
    A, B, k = _rowsum()
    s = te.create_schedule(B.op)
    f = s[B].fuse(k, B.op.axis[0])
    with pytest.raises(ScheduleError, match=r"rfactor of B: k.i.fused is fused with data-parallel axis i"):
        s.rfactor(B, f)
    a = rand(5, 7)  # the refused call left the schedule as it was
    check(s, [A, B], [a], [a.sum(axis=1)], rtol=1e-4)


def test_fused_reduction_values_with_a_max_reducer():
    A, B, _ = _rowsum()
    A = te.placeholder((5, 7), name="A")
    k = te.reduce_axis((0, 7), name="k")
    B = te.compute((5,), lambda i: te.max(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    s[B].fuse(k, B.op.axis[0])
    a = rand(5, 7)
    check(s, [A, B], [a], [np.max(a, axis=1)])


def test_rfactor_of_another_axis_keeps_a_mixed_fused_loop():
    A = te.placeholder((5, 6, 7), name="A")
    k1 = te.reduce_axis((0, 6), name="k1")
    k2 = te.reduce_axis((0, 7), name="k2")
    B = te.compute((5,), lambda i: te.sum(A[i, k1, k2], axis=[k1, k2]), name="B")
    s = te.create_schedule(B.op)
    i = B.op.axis[0]
    s[B].reorder(k1, i, k2)
    f = s[B].fuse(i, k2)
    BF = s.rfactor(B, k1)
    assert f in s[BF].leaf_iter_vars and f.is_reduce  # B.rf takes the fused loop over
    a = rand(5, 6, 7)
    check(s, [A, B], [a], [a.sum(axis=(1, 2))], rtol=1e-4)
