"""Cross-thread reductions whose result is ``local``: the reduction computed at a loop bound to
``threadIdx.y`` (one copy of the row's sum per thread), its reduce axis bound to
``threadIdx.x``, read afterwards by every thread (TVM's test_rfactor_elemwise_threads). Each
thread reads its own partial, and every thread ends with the whole sum."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from helpers import rand

import tessel
from tessel import te


def _row_sum_plus_two(n: int, m: int, threads: int, predicate: bool):
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    BB = te.compute((n,), lambda i: B[i] + 1, name="BB")
    C = te.compute((n,), lambda i: BB[i] * 2, name="C")
    s = te.create_schedule(C.op)
    s[BB].compute_inline()
    bx, ty = s[C].split(C.op.axis[0], factor=4)
    _, kf = s[B].split(k, factor=threads)
    BF = s.rfactor(B, kf)
    s[B].compute_at(s[C], ty)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(ty, te.thread_axis("threadIdx.y"))
    tx = te.thread_axis("threadIdx.x")
    s[B].bind(s[B].op.reduce_axis[0], tx)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    if predicate:
        s[B].set_store_predicate(tx.var.equal(0))
        s[C].set_store_predicate(tx.var.equal(0))
    return s, A, C


@pytest.mark.parametrize("predicate", [True, False])
@pytest.mark.parametrize("threads", [8, 32])
def test_a_local_reduction_result_reaches_every_thread(threads, predicate):
    s, A, C = _row_sum_plus_two(11, 103, threads, predicate)
    text = str(tessel.lower(s, [A, C]))
    assert "- threadIdx.x" not in text  # each thread reads its own partial at its own index
    a, out = rand(11, 103), np.zeros(11, "float32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no CUDA driver here: the simulator runs it
        tessel.build(s, [A, C], target="cuda-sim")(a, out)
    np.testing.assert_allclose(out, (a.sum(axis=1) + 1) * 2, rtol=1e-5)


def _argmax_rows(rows: int, width: int, threads: int, naive: bool):
    """Argmax of each row: rfactor by ``threads``, the factored axis bound to threadIdx.x."""
    if naive:  # TVM's tutorial combiner, ties to the left
        def combine(x, y):
            return te.select(x[1] >= y[1], x[0], y[0]), te.select(x[1] >= y[1], x[1], y[1])

        reducer = te.comm_reducer(combine, lambda t0, t1: (te.const(-1, t0), te.min_value(t1)), name="argmax")
    A0, A1 = te.placeholder((rows, width), name="A0", dtype="int32"), te.placeholder((rows, width), name="A1")
    k = te.reduce_axis((0, width), name="k")
    if naive:
        B0, B1 = te.compute((rows,), lambda i: reducer((A0[i, k], A1[i, k]), axis=k), name="B")
    else:
        B0, B1 = te.compute((rows,), lambda i: te.argmax((A0[i, k], A1[i, k]), axis=k), name="B")
    s = te.create_schedule(B0.op)
    _, kf = s[B0].split(k, factor=threads)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the naive combiner is not commutative (a warning says so)
        BF0, _ = s.rfactor(B0, kf)
    s[B0].bind(s[B0].op.axis[0], te.thread_axis("blockIdx.x"))
    tx = te.thread_axis("threadIdx.x")
    s[B0].bind(s[B0].op.reduce_axis[0], tx)
    s[BF0.op].compute_at(s[B0], s[B0].op.reduce_axis[0])
    s[B0].set_store_predicate(tx.var.equal(0))
    return s, [A0, A1, B0, B1]


@pytest.mark.parametrize(("rows", "width", "threads"), [(10, 67, 16), (3, 200, 64), (5, 40, 32)])
def test_a_cross_thread_argmax_moves_the_index_with_its_value(rows, width, threads):
    """Every element of the tuple goes through the shuffle tree (and the shared partials past one
    warp): the index stays with the value it was found with."""
    s, args = _argmax_rows(rows, width, threads, naive=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no GPU here: the cuda target's kernel runs on its simulator
        f = tessel.build(s, args, target="cuda")
    idx = np.repeat(np.arange(width, dtype="int32")[None], rows, axis=0)
    val = rand(rows, width, seed=width)
    out0, out1 = np.full(rows, -7, "int32"), np.full(rows, np.nan, "float32")
    f(idx, val, out0, out1)
    np.testing.assert_array_equal(out0, np.argmax(val, axis=1))
    np.testing.assert_array_equal(out1, val.max(axis=1))
    assert f.source.count("__shfl_down_sync") >= 2 * 4  # both elements, every step of the tree


def test_a_cross_thread_te_argmax_gives_numpys_first_index_of_ties():
    s, args = _argmax_rows(6, 50, 16, naive=False)
    f = tessel.build(s, args, target="cuda-sim")
    val = np.random.default_rng(3).integers(0, 4, size=(6, 50)).astype("float32")  # many ties
    idx = np.repeat(np.arange(50, dtype="int32")[None], 6, axis=0)
    out0, out1 = np.zeros(6, "int32"), np.zeros(6, "float32")
    f(idx, val, out0, out1)
    np.testing.assert_array_equal(out0, np.argmax(val, axis=1))


def test_a_tuple_reduced_by_each_thread_in_its_own_loops_is_refused_not_computed_wrong():
    """Without rfactor each thread would first reduce its share of the tuple, from the
    combiner's identity, which the pass cannot read off the IR: refused, saying what to do."""
    A0, A1 = te.placeholder((4, 64), name="A0"), te.placeholder((4, 64), name="A1")
    k = te.reduce_axis((0, 64), name="k")
    pair = te.comm_reducer(lambda x, y: (x[0] + y[0], x[1] * y[1]),
                           lambda t0, t1: (te.const(0, t0), te.const(1, t1)), name="add_mul")
    T0, T1 = te.compute((4,), lambda i: pair((A0[i, k], A1[i, k]), axis=k), name="T")
    s = te.create_schedule(T0.op)
    ko, _ = s[T0].split(k, nparts=32)
    s[T0].bind(ko, te.thread_axis("threadIdx.x"))
    s[T0].bind(s[T0].op.axis[0], te.thread_axis("blockIdx.x"))
    with pytest.raises(tessel.errors.GpuError, match="rfactor"):
        tessel.build(s, [A0, A1, T0, T1], target="cuda-sim")


@pytest.mark.parametrize(("m", "n"), [(12, 256), (10, 20), (9, 45)])
@pytest.mark.parametrize("reducer", ["max", "sum", "min"])
def test_each_thread_reduces_its_share_in_its_own_loops_first(m, n, reducer):
    """The reduce axis split (no rfactor), its outer part bound to threadIdx.x: each thread runs
    the inner loop (guarded past the end) into a register, then the threads combine."""
    A = te.placeholder((m, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((m,), lambda i: getattr(te, reducer)(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, _ = s[B].split(k, nparts=32)
    s[B].bind(ko, te.thread_axis((0, 32), "threadIdx.x"))
    xo, xi = s[B].split(B.op.axis[0], factor=4)
    s[B].bind(xi, te.thread_axis((0, 4), "threadIdx.y"))
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    a, out = rand(m, n), np.zeros(m, "float32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tessel.build(s, [A, B], target="cuda-sim")(a, out)
    np.testing.assert_allclose(out, getattr(np, reducer)(a, axis=1), rtol=1e-5)


def test_a_single_thread_reducing_serially_is_no_cross_thread_reduction():
    """threadIdx.x of extent 1 around a serial reduction (TVM's test_reduce_prims): nothing runs
    beside that thread, so nothing is refused or rewritten."""
    n, m = 9, 14
    A = te.placeholder((n, m), name="A")
    R = te.compute((n,), lambda i: te.select(i > 1, 1, 0), name="R")
    k = te.reduce_axis((0, m), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k, where=R[i] == 1), name="B")
    s = te.create_schedule(B.op)
    x0, x1 = s[B].split(B.op.axis[0], factor=1)
    s[B].bind(x0, te.thread_axis("blockIdx.x"))
    s[B].bind(x1, te.thread_axis("threadIdx.x"))
    s[R].compute_inline()
    a, out = rand(n, m), np.zeros(n, "float32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tessel.build(s, [A, B], target="cuda-sim")(a, out)
    np.testing.assert_allclose(out, np.where(np.arange(n) > 1, a.sum(axis=1), 0), rtol=1e-5)


def test_a_local_result_over_more_than_a_warp_reaches_every_thread():
    """64 threads: the warps' sums meet in shared memory, and thread 0's total is handed to every
    thread through one shared cell (the reduction's stage is declared local)."""
    n, m = 5, 203
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    C = te.compute((n,), lambda i: B[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    s[C].bind(C.op.axis[0], te.thread_axis("blockIdx.x"))
    s[B].compute_at(s[C], C.op.axis[0])
    s[B].set_scope("local")
    _, ki = s[B].split(k, factor=64)
    BF = s.rfactor(B, ki)
    s[B].bind(s[B].op.reduce_axis[0], te.thread_axis("threadIdx.x"))
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    a, out = rand(n, m), np.zeros(n, "float32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tessel.build(s, [A, C], target="cuda-sim")(a, out)
    np.testing.assert_allclose(out, a.sum(axis=1) * 2, rtol=1e-5)
