"""Kernels on random data against NumPy, on the python and C targets."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check, ir_text, rand

import tessel
from tessel import te


def test_elementwise_and_broadcast():
    A = te.placeholder((7, 5), name="A")
    Bv = te.placeholder((5,), name="B")
    C = te.compute((7, 5), lambda i, j: A[i, j] * Bv[j] + te.exp(A[i, j]) - 1.5, name="C")
    s = te.create_schedule(C.op)
    a, b = rand(7, 5), rand(5, seed=1)
    check(s, [A, Bv, C], [a, b], [a * b + np.exp(a) - 1.5])


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint16", "float64"])
def test_dtypes(dtype):
    A = te.placeholder((9,), name="A", dtype=dtype)
    B = te.compute((9,), lambda i: A[i] * 3 + A[i], name="B")
    s = te.create_schedule(B.op)
    a = rand(9, dtype=dtype)
    want = (a * np.array(3, dtype) + a).astype(dtype)
    check(s, [A, B], [a], [want])


def test_int_division_semantics():
    A = te.placeholder((10,), name="A", dtype="int32")
    B = te.compute((10,), lambda i: A[i] // 3 + A[i] % 4 * 100 + te.truncdiv(A[i], 3) * 10000 + te.truncmod(A[i], 3) * 1000000, name="B")
    s = te.create_schedule(B.op)
    a = np.array([-7, -6, -5, -1, 1, 2, 5, 6, 7, 11], "int32")
    trunc_div = np.trunc(a / 3).astype("int32")
    want = a // 3 + (a % 4) * 100 + trunc_div * 10000 + (a - trunc_div * 3) * 1000000
    check(s, [A, B], [a], [want.astype("int32")])


def _matmul(n, m, k_):
    A = te.placeholder((n, k_), name="A")
    B = te.placeholder((k_, m), name="B")
    k = te.reduce_axis((0, k_), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def test_matmul_default_and_tiled():
    A, B, C = _matmul(12, 10, 9)
    a, b = rand(12, 9), rand(9, 10, seed=2)
    s = te.create_schedule(C.op)
    check(s, [A, B, C], [a, b], [a @ b], rtol=1e-4)
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 3)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=4)
    s[C].reorder(xo, yo, ko, xi, ki, yi)
    check(s, [A, B, C], [a, b], [a @ b], rtol=1e-4)


def test_reduction_over_several_axes():
    A = te.placeholder((4, 5, 6), name="A")
    r1 = te.reduce_axis((0, 5), name="r1")
    r2 = te.reduce_axis((0, 6), name="r2")
    B = te.compute((4,), lambda i: te.sum(A[i, r1, r2], axis=[r1, r2]), name="B")
    s = te.create_schedule(B.op)
    a = rand(4, 5, 6)
    check(s, [A, B], [a], [a.sum(axis=(1, 2))], rtol=1e-5)


def test_min_max_and_where():
    A = te.placeholder((6, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    Mx = te.compute((6,), lambda i: te.max(A[i, k], axis=k), name="Mx")
    k2 = te.reduce_axis((0, 8), name="k2")
    Mn = te.compute((6,), lambda i: te.min(A[i, k2], axis=k2, where=k2 > 2), name="Mn")
    s = te.create_schedule([Mx.op, Mn.op])
    a = rand(6, 8)
    check(s, [A, Mx, Mn], [a], [a.max(axis=1), a[:, 3:].min(axis=1)])


def test_user_reducer_and_argmax_tuple():
    A = te.placeholder((5, 7), name="A")
    prod = te.comm_reducer(lambda x, y: x * y, lambda t: te.const(1, t), name="prod")
    k = te.reduce_axis((0, 7), name="k")
    P = te.compute((5,), lambda i: prod(A[i, k], axis=k), name="P")
    s = te.create_schedule(P.op)
    a = rand(5, 7, low=0.5, high=1.5)
    check(s, [A, P], [a], [a.prod(axis=1)], rtol=1e-5)

    def fcombine(x, y):
        take = x[1] >= y[1]
        return te.select(take, x[0], y[0]), te.select(take, x[1], y[1])

    def fidentity(t0, t1):
        return te.const(-1, t0), te.min_value(t1)

    argmax = te.comm_reducer(fcombine, fidentity, name="argmax")
    k = te.reduce_axis((0, 7), name="k")
    idx, val = te.compute((5,), lambda i: argmax((k.var, A[i, k]), axis=k), name="T")
    s = te.create_schedule(idx.op)
    check(s, [A, idx, val], [a], [a.argmax(axis=1).astype("int32"), a.max(axis=1)])


def test_symbolic_shapes():
    n = te.var("n")
    m = te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2 + 1, name="B")
    k = te.reduce_axis((0, m), name="k")
    R = te.compute((n,), lambda i: te.sum(B[i, k], axis=k), name="R")
    s = te.create_schedule(R.op)
    xo, xi = s[R].split(R.op.axis[0], factor=4)
    s[B].compute_at(s[R], xi)
    for shape in [(1, 1), (7, 3), (13, 10)]:
        a = rand(*shape)
        check(s, [A, R], [a], [(a * 2 + 1).sum(axis=1)], rtol=1e-5)


@pytest.mark.parametrize(("extent", "factor"), [(20, 16), (7, 3), (16, 4), (5, 8)])
def test_non_divisible_split_by_factor(extent, factor):
    A = te.placeholder((extent,), name="A")
    B = te.compute((extent,), lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=factor)
    a = rand(extent)
    check(s, [A, B], [a], [a * 2])


@pytest.mark.parametrize(("extent", "nparts"), [(20, 16), (7, 3), (12, 4)])
def test_split_by_nparts(extent, nparts):
    A = te.placeholder((extent, 3), name="A")
    k = te.reduce_axis((0, 3), name="k")
    B = te.compute((extent,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    o, i = s[B].split(B.op.axis[0], nparts=nparts)
    assert str(tessel.infer_bound(s)[o].extent) == str(min(extent, nparts))
    a = rand(extent, 3)
    check(s, [A, B], [a], [a.sum(axis=1)], rtol=1e-5)


def test_non_divisible_split_of_reduction_does_not_double_count():
    A = te.placeholder((3, 20), name="A")
    k = te.reduce_axis((0, 20), name="k")
    B = te.compute((3,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    kio, kii = s[B].split(ki, factor=3)  # 16 is not a multiple of 3 either
    a = rand(3, 20)
    check(s, [A, B], [a], [a.sum(axis=1)], rtol=1e-5)


def test_non_divisible_split_never_touches_out_of_range():
    """With a producer attached inside a non-divisible split, nothing past the end is computed."""
    A = te.placeholder((20,), name="A")
    B = te.compute((20,), lambda i: A[i] + 1, name="B")
    C = te.compute((20,), lambda i: B[i] * 2, name="C")
    s = te.create_schedule(C.op)
    o, i = s[C].split(C.op.axis[0], factor=16)
    s[B].compute_at(s[C], i)
    text = ir_text(s, [A, C], step="simplify")
    assert text.count("if (") >= 2  # both B's compute and C's store are guarded
    a = rand(20)
    check(s, [A, C], [a], [(a + 1) * 2])


def test_fuse_of_split_axes_and_reorder():
    A = te.placeholder((6, 10), name="A")
    B = te.compute((6, 10), lambda i, j: A[i, j] * A[i, j], name="B")
    s = te.create_schedule(B.op)
    io, ii = s[B].split(B.op.axis[0], factor=4)
    jo, ji = s[B].split(B.op.axis[1], factor=3)
    s[B].reorder(io, jo, ii, ji)
    f = s[B].fuse(ii, ji)
    assert f.name == "i.inner.j.inner.fused"
    s[B].fuse(io, jo)
    a = rand(6, 10)
    check(s, [A, B], [a], [a * a])


def test_compute_inline():
    A = te.placeholder((8, 8), name="A")
    B = te.compute((8, 8), lambda i, j: A[i, j] + 1, name="B")
    C = te.compute((8, 8), lambda i, j: B[j, i] * 2, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_inline()
    text = ir_text(s, [A, C])
    assert "realize B" not in text and "C[i, j] = (A[j, i] + 1.0f)*2.0f" in text
    a = rand(8, 8)
    check(s, [A, C], [a], [(a.T + 1) * 2])


def test_two_outputs_in_one_schedule():
    A = te.placeholder((9,), name="A")
    B = te.compute((9,), lambda i: A[i] + 1, name="B")
    C = te.compute((9,), lambda i: B[i] * 2, name="C")
    D = te.compute((9,), lambda i: B[i] - 3, name="D")
    s = te.create_schedule([C.op, D.op])
    a = rand(9)
    check(s, [A, C, D], [a], [(a + 1) * 2, a + 1 - 3])


def test_multi_output_compute():
    A = te.placeholder((6,), name="A")
    P, Q = te.compute((6,), lambda i: (A[i] + 1, A[i] * 2), name="PQ")
    R = te.compute((6,), lambda i: P[i] * Q[i], name="R")
    s = te.create_schedule(R.op)
    a = rand(6)
    check(s, [A, R], [a], [(a + 1) * (a * 2)])


def test_if_then_else_guards_a_read():
    A = te.placeholder((10,), name="A")
    B = te.compute((10,), lambda i: te.if_then_else(i > 0, A[i - 1], te.const(0, "float32")) + A[i], name="B")
    s = te.create_schedule(B.op)
    a = rand(10)
    want = a.copy()
    want[1:] += a[:-1]
    check(s, [A, B], [a], [want])


def test_producer_region_with_halo():
    """A consumer reading a shifted window: the attached producer realizes exactly the window."""
    A = te.placeholder((12,), name="A")
    B = te.compute((12,), lambda i: A[i] * 3, name="B")
    C = te.compute((10,), lambda i: B[i] + B[i + 1] + B[i + 2], name="C")
    s = te.create_schedule(C.op)
    o, i = s[C].split(C.op.axis[0], factor=5)
    s[B].compute_at(s[C], o)
    bounds = tessel.infer_bound(s)
    assert str(bounds[B.op.axis[0]].extent) == "7"
    a = rand(12)
    b = a * 3
    check(s, [A, C], [a], [b[:-2] + b[1:-1] + b[2:]])


def test_int64_shapes_give_int64_loops():
    n = te.var("n", "int64")
    A = te.placeholder((n, 6), name="A")
    B = te.compute((n, 6), lambda i, j: A[i, j] + 1, name="B")
    assert B.op.axis[0].dtype == "int64"
    s = te.create_schedule(B.op)
    o, i = s[B].split(B.op.axis[0], factor=4)
    assert o.dtype == "int64" and i.dtype == "int64"
    a = rand(9, 6)
    check(s, [A, B], [a], [a + 1])


def test_same_named_stages_print_apart():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1)
    C = te.compute((4,), lambda i: B[i] * 2)
    s = te.create_schedule(C.op)
    text = str(tessel.lower(s, [A, C], simple_mode=True))
    assert "compute_1[i] = compute[i]*2.0f" in text
    a = rand(4)
    check(s, [A, C], [a], [(a + 1) * 2])
