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


def test_a_cross_thread_tuple_reduction_is_refused_not_computed_wrong():
    """An argmax's combiner binds its new values with ``let`` before storing them; the pass
    cannot make shuffles of it, and every thread updating the row is a race: refused."""

    def combine(x, y):
        return te.select(x[1] >= y[1], x[0], y[0]), te.select(x[1] >= y[1], x[1], y[1])

    argmax = te.comm_reducer(combine, lambda t0, t1: (te.const(-1, t0), te.min_value(t1)), name="argmax")
    A0, A1 = te.placeholder((10, 67), name="A0", dtype="int32"), te.placeholder((10, 67), name="A1")
    k = te.reduce_axis((0, 67), name="k")
    B0, B1 = te.compute((10,), lambda i: argmax((A0[i, k], A1[i, k]), axis=k), name="B")
    s = te.create_schedule(B0.op)
    _, kf = s[B0].split(k, factor=16)
    BF0, _ = s.rfactor(B0, kf)
    s[B0].bind(s[B0].op.axis[0], te.thread_axis("blockIdx.x"))
    tx = te.thread_axis("threadIdx.x")
    s[B0].bind(s[B0].op.reduce_axis[0], tx)
    s[BF0.op].compute_at(s[B0], s[B0].op.reduce_axis[0])
    s[B0].set_store_predicate(tx.var.equal(0))
    with pytest.raises(tessel.errors.GpuError, match=r"every thread of threadIdx.x .* updates B.v0"):
        tessel.build(s, [A0, A1, B1], target="cuda-sim")


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
