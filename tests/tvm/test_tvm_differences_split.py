"""Issue 15, difference 1: a split of a symbolic extent gives the inner loop the factor.

TVM v0.14's PassDownDomain (and seed 000's) gives ``split(m, factor=8)`` the inner range
``[0, 8)`` and guards the tail, cutting the factor to the parent only when it can prove the
parent shorter. A ``min(m, 8)`` extent made every symbolic nest lower twice (a "small sizes"
copy) and put ``min`` into every index.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check, ir_text, rand

import tessel
from tessel import te
from tessel.arith import Analyzer
from tessel.ir import expr as E
from tessel.ir.functor import substitute


def _value(e, **sizes) -> int:
    """``e`` with the named size variables replaced by numbers."""
    vals = {v: E.IntImm(sizes[v.name], v.dtype) for v in _vars(e) if v.name in sizes}
    out = Analyzer().simplify(substitute(e, vals))
    assert isinstance(out, E.IntImm), f"{e} is not a number for {sizes}"
    return out.value


def _vars(e):
    from tessel.ir.functor import free_vars

    return free_vars(e)


def _scaled(m, n):
    A = te.placeholder((m, n), name="A")
    B = te.compute((m, n), lambda i, j: A[i, j] * 2, name="B")
    return A, B


def test_inner_loop_of_a_symbolic_split_is_the_factor():
    m, n = te.var("m"), te.var("n")
    A, B = _scaled(m, n)
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=8)
    b = tessel.infer_bound(s)
    assert E.is_const_int(b[xi].extent, 8)  # TVM: 8, not min(m, 8)
    for mv in (1, 7, 8, 9, 64, 65):
        assert _value(b[xo].extent, m=mv) == -(-mv // 8)


def test_nparts_split_of_a_symbolic_extent_keeps_nparts():
    m = te.var("m")
    A, B = _scaled(m, 4)
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], nparts=6)
    b = tessel.infer_bound(s)
    assert E.is_const_int(b[xo].extent, 6)
    assert _value(b[xi].extent, m=13) == 3


def test_split_after_a_fuse_gives_the_factor():
    m = te.var("m")
    A, B = _scaled(m, 8)
    s = te.create_schedule(B.op)
    f = s[B].fuse(*B.op.axis)
    o, i = s[B].split(f, factor=8)
    b = tessel.infer_bound(s)
    assert E.is_const_int(b[i].extent, 8)  # TVM: 8, not min(m*8, 8)
    assert _value(b[o].extent, m=5) == 5


def test_a_constant_parent_shorter_than_the_factor_is_cut_as_tvm_does():
    A, B = _scaled(5, 3)
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=8)
    b = tessel.infer_bound(s)
    assert E.is_const_int(b[xi].extent, 5) and E.is_const_int(b[xo].extent, 1)


def test_tiled_kernel_is_one_guarded_nest_as_in_tvm():
    m, n = te.var("m"), te.var("n")
    A, B = _scaled(m, n)
    s = te.create_schedule(B.op)
    xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], 10, 5)
    s[B].reorder(yo, xo, xi, yi)
    text = ir_text(s, [A, B])  # ScheduleOps' output, TVM's loop structure
    heads = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("for ")]
    assert heads == ["for (j.outer, 0, (n + 4)//5) {", "for (i.outer, 0, (m + 9)//10) {",
                     "for (i.inner, 0, 10) {", "for (j.inner, 0, 5) {"]
    assert text.count("if (") == 1 and "< m" in text and "< n" in text
    final = str(tessel.lower(s, [A, B], simple_mode=True))
    assert "small_sizes" not in final and "min(m, 10)" not in final and "min(n, 5)" not in final
    # the guards became tail loops (one nest per combination of full/tail tiles), no more
    assert final.count("B[") == 4 and len(final.splitlines()) <= 45


def test_split_kernel_prints_the_main_nest_and_its_tail_only():
    m, n = te.var("m"), te.var("n")
    A, B = _scaled(m, n)
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=8)
    final = str(tessel.lower(s, [A, B], simple_mode=True))
    assert "small_sizes" not in final and "min(m, 8)" not in final
    assert final.count("B[") == 2 and len(final.splitlines()) <= 18


@pytest.mark.parametrize("mv,nv", [(1, 1), (3, 2), (7, 4), (8, 5), (13, 9), (25, 11)])
def test_values_for_sizes_below_and_above_the_factor(mv, nv):
    m, n = te.var("m"), te.var("n")
    A, B = _scaled(m, n)
    s = te.create_schedule(B.op)
    xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], 10, 5)
    s[B].reorder(yo, xo, xi, yi)
    s[B].vectorize(yi)
    a = rand(mv, nv)
    check(s, [A, B], [a], [a * np.float32(2)])


@pytest.mark.parametrize("mv", [1, 5, 8, 17])
def test_reduction_split_of_a_symbolic_extent(mv):
    m = te.var("m")
    A = te.placeholder((m, 6), name="A")
    k = te.reduce_axis((0, m), name="k")
    C = te.compute((6,), lambda j: te.sum(A[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    ko, ki = s[C].split(k, factor=8)
    assert E.is_const_int(tessel.infer_bound(s)[ki].extent, 8)
    a = rand(mv, 6)
    check(s, [A, C], [a], [a.sum(axis=0)], rtol=1e-4)


@pytest.mark.parametrize("mv", [1, 6, 19])
def test_compute_at_inside_a_symbolic_split(mv):
    m = te.var("m")
    A = te.placeholder((m,), name="A")
    B = te.compute((m,), lambda i: A[i] + 1, name="B")
    C = te.compute((m,), lambda i: B[i] * 3, name="C")
    s = te.create_schedule(C.op)
    o, i = s[C].split(C.op.axis[0], factor=8)
    s[B].compute_at(s[C], o)
    b = tessel.infer_bound(s)
    assert E.is_const_int(b[B.op.axis[0]].extent, 8)  # one tile of B per tile of C
    a = rand(mv)
    check(s, [A, C], [a], [(a + 1) * np.float32(3)])
