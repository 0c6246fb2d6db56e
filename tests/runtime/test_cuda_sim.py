"""target="cuda-sim -features=check": the checking simulator, the device IR run with GPU
semantics on the CPU thread by thread, and its race detector (plain ``cuda-sim`` compiles the
kernels as CPU loops instead: tests/passes/test_serial_kernels.py).

Two kinds of kernels: schedules lowered as usual (``bind`` makes thread-bound loops), and
device IR written by hand (a PrimFunc of thread-bound loops, barriers and shuffles), which is
how a missing barrier, an unsafe shared write and a divergent barrier are shown to be caught
whatever the CUDA target's barrier insertion does.
"""

from __future__ import annotations

import numpy as np
import pytest
from gpu_cases import CASES, shared_gemm, softmax_launches, tiled_matmul
from helpers import check, garbage_like, rand

import tessel
from tessel import te
from tessel.driver import build_func
from tessel.errors import BuildError, DivergentBarrierError, KernelRuntimeError, RaceError
from tessel.ir import expr as E
from tessel.ir import stmt as S

CHECK = "cuda-sim -features=check"
CHECK_NO_BARRIERS = "cuda-sim -features=check,no_barriers"

# ---- hand-written device IR ----------------------------------------------------------------


def bound(tag: str, extent: int, body, name: str | None = None) -> S.For:
    """``body(v)`` inside a loop bound to ``tag``."""
    v = E.Var(name or tag.replace(".", "_"), "int32")
    return S.For(v, E.const(0), E.const(extent), "thread_binding", body(v), tag)


def barrier() -> S.Stmt:
    return S.Evaluate(E.Call("int32", "tvm_storage_sync", [E.StringImm("shared")]))


def shuffle(op: str, value, lane, width: int = 32) -> E.PrimExpr:
    return E.Call(value.dtype, op, [E.const(-1), value, E.convert(lane), E.const(width), E.const(32)])


def reverse_in_blocks(blocks: int, threads: int, with_barrier: bool) -> S.PrimFunc:
    """B[b*T + t] = A[b*T + T-1-t] through a shared tile: each thread stores one element, then
    reads another thread's (a barrier is needed in between)."""
    n = blocks * threads
    A, B = S.Buffer("A", "float32", (n,)), S.Buffer("B", "float32", (n,))
    sh = S.Buffer("A.tile", "float32", (threads,), "shared")

    def block(b):
        def thread(t):
            fill = S.BufferStore(sh, E.BufferLoad(A, (b * threads + t,)), (t,))
            use = S.BufferStore(B, E.BufferLoad(sh, (E.const(threads - 1) - t,)), (b * threads + t,))
            return S.seq(fill, barrier() if with_barrier else None, use)
        return S.Allocate(sh, bound("threadIdx.x", threads, thread))

    return S.PrimFunc("reverse", [A, B], [], bound("blockIdx.x", blocks, block))


def run(func: S.PrimFunc, *arrays: np.ndarray) -> None:
    """Run hand-written device IR as written: the CUDA target's barrier insertion switched off."""
    build_func(func, CHECK_NO_BARRIERS)(*arrays)


# ---- schedules -----------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(CASES))
def test_schedules_equal_numpy(case):
    s, args, inputs, expected = CASES[case]()
    f = check(s, args, inputs, expected, targets=(CHECK,))[CHECK]
    assert f.target == "cuda-sim" and "_launch(" in f.source


def test_block_order_does_not_change_a_correct_kernel():
    M, N, K = 33, 18, 5
    s, args, (a, b), _ = tiled_matmul(M, N, K)
    f = tessel.build(s, args, target=CHECK)
    outs = []
    for seed in (0, 1, 7):
        f.block_order_seed = seed
        c = garbage_like(np.empty((M, N), "float32"))
        f(a, b, c)
        outs.append(c)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], outs[2])


def test_redundant_shared_fill_with_one_value_is_not_a_race():
    """A shared stage under no thread loop is computed by every thread (TVM's meaning): they
    all write the same values, and each reads back what it wrote itself."""
    n = te.var("n")
    A = te.placeholder((n, 48), name="A")
    B = te.compute((n, 48), lambda i, j: A[i, j] * 3.0, name="B")
    s = te.create_schedule(B.op)
    AS = s.cache_read(A, "shared", [B])
    s[B].bind(B.op.axis[0], te.thread_axis("blockIdx.x"))
    jo, ji = s[B].split(B.op.axis[1], factor=16)
    s[B].bind(ji, te.thread_axis("threadIdx.x"))
    s[AS].compute_at(s[B], B.op.axis[0])
    f = tessel.build(s, [A, B], target=CHECK)
    a = rand(5, 48)
    b = garbage_like(a)
    f(a, b)
    np.testing.assert_allclose(b, a * 3, rtol=1e-6)


def test_cooperative_fetch_without_barriers_is_a_race():
    """The shared tiles of a GEMM are filled by all the block's threads and read by others:
    with barrier insertion switched off, the first read of another thread's element is caught."""
    s, args, inputs, _ = shared_gemm()
    f = tessel.build(s, args, target=CHECK_NO_BARRIERS)
    with pytest.raises(RaceError) as info:
        f(*inputs, np.zeros((40, 36), "float32"))
    err = info.value
    assert err.buffer in ("A.shared", "B.shared")
    (b1, t1), (b2, t2) = err.threads
    assert b1 == b2 and t1 != t2
    assert any(st.startswith(err.buffer + "[") for st in err.statements)  # the cooperative store
    assert any("C.local[" in st for st in err.statements)  # the read in the multiply-add


def test_reduction_axis_bound_to_threads_without_rfactor_is_a_race():
    n = te.var("n")
    A = te.placeholder((n, 40), name="A")
    k = te.reduce_axis((0, 40), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    s[B].bind(B.op.axis[0], te.thread_axis("blockIdx.x"))
    _, ki = s[B].split(k, factor=8)
    s[B].bind(ki, te.thread_axis("threadIdx.x"))
    f = tessel.build(s, [A, B], target=CHECK)
    with pytest.raises(RaceError) as info:
        f(rand(5, 40), np.zeros(5, "float32"))
    assert info.value.buffer == "B"
    assert "between the same two barriers" in str(info.value)


def test_vectorized_loads_in_a_thread():
    n = te.var("n")
    A = te.placeholder((n, 8), name="A")
    B = te.compute((n, 8), lambda i, j: A[i, j] - 0.5, name="B")
    s = te.create_schedule(B.op)
    io, ii = s[B].split(B.op.axis[0], factor=4)
    s[B].bind(io, te.thread_axis("blockIdx.x"))
    s[B].bind(ii, te.thread_axis("threadIdx.x"))
    _, ji = s[B].split(B.op.axis[1], factor=4)
    s[B].vectorize(ji)
    f = tessel.build(s, [A, B], target=CHECK)
    a = rand(11, 8)
    b = garbage_like(a)
    f(a, b)
    np.testing.assert_allclose(b, a - 0.5, rtol=1e-6)


# ---- hand-written device IR: barriers and races ---------------------------------------------


def test_shared_exchange_with_a_barrier_is_correct():
    a = rand(3 * 40)
    b = garbage_like(a)
    run(reverse_in_blocks(3, 40, with_barrier=True), a, b)
    np.testing.assert_array_equal(b, a.reshape(3, 40)[:, ::-1].reshape(-1))


def test_barrier_insertion_makes_the_exchange_correct():
    a = rand(2 * 48)
    b = garbage_like(a)
    f = build_func(reverse_in_blocks(2, 48, with_barrier=False), CHECK)
    assert "yield (0," in f.source  # the barrier the CUDA target inserted
    f(a, b)
    np.testing.assert_array_equal(b, a.reshape(2, 48)[:, ::-1].reshape(-1))


def test_missing_barrier_is_a_race_naming_buffer_threads_and_statements():
    a = rand(3 * 40)
    with pytest.raises(RaceError) as info:
        run(reverse_in_blocks(3, 40, with_barrier=False), a, garbage_like(a))
    err = info.value
    assert err.buffer == "A.tile"
    (b1, t1), (b2, t2) = err.threads
    assert b1 == b2 and t1 != t2 and t1[0] + t2[0] == 39  # the writer and the reader of one element
    assert sorted(err.statements) == sorted(["A.tile[threadIdx_x] = A[blockIdx_x*40 + threadIdx_x]",
                                             "B[blockIdx_x*40 + threadIdx_x] = A.tile[39 - threadIdx_x]"])
    text = str(err)
    assert "A.tile[" in text and "thread (" in text and "block (" in text and "barrier" in text


def test_unsafe_shared_write_of_different_values_is_a_race():
    A, B = S.Buffer("A", "float32", (32,)), S.Buffer("B", "float32", (32,))
    sh = S.Buffer("one", "float32", (1,), "shared")

    def thread(t):
        return S.seq(S.BufferStore(sh, E.BufferLoad(A, (t,)), (E.const(0),)), barrier(),
                     S.BufferStore(B, E.BufferLoad(sh, (E.const(0),)), (t,)))

    func = S.PrimFunc("last_writer", [A, B], [], bound("blockIdx.x", 1, lambda b: S.Allocate(
        sh, bound("threadIdx.x", 32, thread))))
    with pytest.raises(RaceError) as info:
        run(func, rand(32), np.zeros(32, "float32"))
    assert info.value.buffer == "one"
    assert str(info.value).count("writes") + str(info.value).count("wrote") == 2


def test_two_blocks_writing_one_global_element_is_a_race():
    A, B = S.Buffer("A", "float32", (4,)), S.Buffer("B", "float32", (1,))

    def block(b):
        return bound("threadIdx.x", 1, lambda t: S.BufferStore(B, E.BufferLoad(A, (b,)), (E.const(0),)))

    with pytest.raises(RaceError, match="in different blocks"):
        run(S.PrimFunc("blocks", [A, B], [], bound("blockIdx.x", 4, block)), rand(4), np.zeros(1, "float32"))


def test_barrier_reached_by_some_threads_only_is_divergent():
    A, B = S.Buffer("A", "float32", (16,)), S.Buffer("B", "float32", (16,))

    def thread(t):
        return S.seq(S.IfThenElse(E.lt(t, E.const(4)), barrier()),
                     S.BufferStore(B, E.BufferLoad(A, (t,)), (t,)))

    func = S.PrimFunc("diverge", [A, B], [], bound("blockIdx.x", 2, lambda b: bound("threadIdx.x", 16, thread)))
    with pytest.raises(DivergentBarrierError, match="divergent barrier"):
        run(func, rand(16), np.zeros(16, "float32"))


def test_threads_waiting_at_different_barriers_are_divergent():
    A = S.Buffer("A", "float32", (8,))

    def thread(t):
        return S.IfThenElse(E.lt(t, E.const(4)), S.seq(barrier(), S.BufferStore(A, E.const(1.0, "float32"), (t,))),
                            S.seq(barrier(), S.BufferStore(A, E.const(2.0, "float32"), (t,))))

    func = S.PrimFunc("two_barriers", [A], [], bound("blockIdx.x", 1, lambda b: bound("threadIdx.x", 8, thread)))
    with pytest.raises(DivergentBarrierError, match="another one"):
        run(func, rand(8))


# ---- warp shuffles ----------------------------------------------------------------------------


def warp_sums(blocks: int, threads: int, width: int) -> S.PrimFunc:
    """B[segment] = sum of A over each ``width``-lane segment, by shuffling down (a tree)."""
    n = blocks * threads
    A, B = S.Buffer("A", "float32", (n,)), S.Buffer("B", "float32", (n // width,))
    red = S.Buffer("red", "float32", (1,), "local")

    def thread(b, t):
        g = b * threads + t
        steps = [S.BufferStore(red, E.BufferLoad(A, (g,)), (E.const(0),))]
        off = width // 2
        while off:
            v = E.BufferLoad(red, (E.const(0),))
            steps.append(S.BufferStore(red, v + shuffle("tvm_warp_shuffle_down", v, off, width), (E.const(0),)))
            off //= 2
        steps.append(S.IfThenElse(E.eq(E.floormod(t, E.const(width)), E.const(0)),
                                  S.BufferStore(B, E.BufferLoad(red, (E.const(0),)), (E.floordiv(g, E.const(width)),))))
        return S.Allocate(red, S.seq(*steps))

    body = bound("blockIdx.x", blocks, lambda b: bound("threadIdx.x", threads, lambda t: thread(b, t)))
    return S.PrimFunc("warp_sums", [A, B], [], body)


@pytest.mark.parametrize("threads,width", [(64, 32), (96, 16), (32, 8)])
def test_shuffle_down_tree_reduction_equals_numpy(threads, width):
    a = rand(3 * threads)
    b = garbage_like(np.empty(3 * threads // width, "float32"))
    run(warp_sums(3, threads, width), a, b)
    np.testing.assert_allclose(b, a.reshape(-1, width).sum(axis=1), rtol=1e-5, atol=1e-6)


def test_shuffle_broadcasts_one_lane():
    A, B = S.Buffer("A", "float32", (64,)), S.Buffer("B", "float32", (64,))

    def thread(t):
        return S.BufferStore(B, shuffle("tvm_warp_shuffle", E.BufferLoad(A, (t,)), 5), (t,))

    run_f = S.PrimFunc("bcast", [A, B], [], bound("blockIdx.x", 1, lambda b: bound("threadIdx.x", 64, thread)))
    a = rand(64)
    b = garbage_like(a)
    run(run_f, a, b)
    np.testing.assert_array_equal(b, np.repeat(a[[5, 37]], 32))


def test_shuffle_from_a_lane_that_does_not_exist_is_refused():
    A, B = S.Buffer("A", "float32", (20,)), S.Buffer("B", "float32", (20,))

    def thread(t):
        return S.BufferStore(B, shuffle("tvm_warp_shuffle_down", E.BufferLoad(A, (t,)), 16), (t,))

    func = S.PrimFunc("partial", [A, B], [], bound("blockIdx.x", 1, lambda b: bound("threadIdx.x", 20, thread)))
    with pytest.raises(KernelRuntimeError, match=r"thread \(15, 0, 0\) shuffles from lane 31, which is not taking part"):
        run(func, rand(20), np.zeros(20, "float32"))


# ---- what cannot be simulated is refused -----------------------------------------------------


def test_out_of_bounds_in_a_kernel_names_the_thread():
    A = S.Buffer("A", "float32", (8,))
    func = S.PrimFunc("oob", [A], [], bound("blockIdx.x", 1, lambda b: bound(
        "threadIdx.x", 9, lambda t: S.BufferStore(A, E.const(1.0, "float32"), (t,)))))
    with pytest.raises(KernelRuntimeError, match=r"thread \(8, 0, 0\) writes A\[8\]"):
        run(func, np.zeros(8, "float32"))


def test_global_allocation_inside_a_kernel_is_each_threads_own():
    """As the CUDA target compiles it: every thread stores its value in its own copy of T."""
    A, B = S.Buffer("A", "float32", (8,)), S.Buffer("B", "float32", (8,))
    tmp = S.Buffer("T", "float32", (1,))

    def thread(t):
        return S.Allocate(tmp, S.seq(S.BufferStore(tmp, E.BufferLoad(A, (t,)), (E.const(0),)),
                                     S.BufferStore(B, E.BufferLoad(tmp, (E.const(0),)) * E.const(2.0, "float32"), (t,))))

    a = rand(8)
    b = garbage_like(a)
    run(S.PrimFunc("g", [A, B], [], bound("blockIdx.x", 1, lambda _: bound("threadIdx.x", 8, thread))), a, b)
    np.testing.assert_array_equal(b, a * 2)


def test_thread_extent_known_only_inside_the_kernel_is_refused():
    A = S.Buffer("A", "float32", (64,))

    def block(b):
        v = E.Var("t", "int32")
        store = S.BufferStore(A, E.const(1.0, "float32"), (b * 8 + v,))
        return S.For(v, E.const(0), b + 1, "thread_binding", store, "threadIdx.x")

    with pytest.raises(BuildError, match="known only inside the kernel"):
        build_func(S.PrimFunc("late", [A], [], bound("blockIdx.x", 8, block)), CHECK)


def test_softmax_is_four_launches():
    s, args, _, _ = softmax_launches()
    assert tessel.build(s, args, target=CHECK).source.count("_launch(") == 4  # one per stage


def test_user_names_stay_data():
    odd = "x'); import os; ('\n\"\\"
    A = S.Buffer(odd, "float32", (16,))
    sh = S.Buffer(odd + ".shared", "float32", (16,), "shared")

    def thread(t):
        return S.seq(S.BufferStore(sh, E.BufferLoad(A, (t,)), (t,)), barrier(),
                     S.BufferStore(A, E.BufferLoad(sh, (E.const(15) - t,)), (t,)))

    v = E.Var(odd, "int32")
    body = S.For(v, E.const(0), E.const(1), "thread_binding", S.Allocate(sh, bound("threadIdx.x", 16, thread)),
                 "blockIdx.x")
    a = rand(16)
    want = a[::-1].copy()
    run(S.PrimFunc(odd, [A], [], body), a)
    np.testing.assert_array_equal(a, want)


def neighbour_exchange(threads: int, sync: str | None) -> S.PrimFunc:
    """Each thread stores A[t] in shared memory, then reads its neighbour's (t ^ 1) after a
    barrier of the block, a barrier of the warp, or none."""
    A, B = S.Buffer("A", "float32", (threads,)), S.Buffer("B", "float32", (threads,))
    sh = S.Buffer("xchg", "float32", (threads,), "shared")

    def thread(t):
        other = E.add(E.sub(t, E.floormod(t, E.const(2))), E.sub(E.const(1), E.floormod(t, E.const(2))))
        wait = None if sync is None else S.Evaluate(E.Call("int32", "tvm_storage_sync", [E.StringImm(sync)]))
        return S.seq(S.BufferStore(sh, E.BufferLoad(A, (t,)), (t,)), wait,
                     S.BufferStore(B, E.BufferLoad(sh, (other,)), (t,)))

    body = bound("blockIdx.x", 2, lambda b: S.Allocate(sh, bound("threadIdx.x", threads, thread)))
    return S.PrimFunc("xchg", [A, B], [], body)


@pytest.mark.parametrize("sync", ["shared", "warp"])
def test_exchange_within_a_warp_needs_a_barrier_of_the_warp_or_block(sync):
    a = rand(64)
    b = garbage_like(a)
    run(neighbour_exchange(64, sync), a, b)
    np.testing.assert_array_equal(b, a.reshape(-1, 2)[:, ::-1].reshape(-1))
    with pytest.raises(RaceError, match="xchg"):
        run(neighbour_exchange(64, None), a, garbage_like(a))


def test_a_barrier_of_the_warp_does_not_order_two_warps():
    """Thread t reads element 63 - t: threads 0..31 read the other warp's writes."""
    A, B = S.Buffer("A", "float32", (64,)), S.Buffer("B", "float32", (64,))
    sh = S.Buffer("xchg", "float32", (64,), "shared")

    def thread(t):
        wait = S.Evaluate(E.Call("int32", "tvm_storage_sync", [E.StringImm("warp")]))
        return S.seq(S.BufferStore(sh, E.BufferLoad(A, (t,)), (t,)), wait,
                     S.BufferStore(B, E.BufferLoad(sh, (E.const(63) - t,)), (t,)))

    func = S.PrimFunc("mirror", [A, B], [], bound("blockIdx.x", 1, lambda b: S.Allocate(sh, bound(
        "threadIdx.x", 64, thread))))
    with pytest.raises(RaceError, match="between the same two barriers"):
        run(func, rand(64), np.zeros(64, "float32"))


def test_a_block_reading_what_another_block_writes_is_a_race():
    """Block b writes B[b] and reads B[b - 1] (written by another block, in no order)."""
    B = S.Buffer("B", "float32", (4,))

    def block(b):
        prev = E.max_(E.sub(b, E.const(1)), E.const(0))
        return bound("threadIdx.x", 1, lambda t: S.seq(
            S.BufferStore(B, E.const(1.0, "float32"), (b,)),
            S.BufferStore(B, E.BufferLoad(B, (prev,)) + E.const(1.0, "float32"), (b,))))

    with pytest.raises(RaceError, match="in different blocks") as info:
        run(S.PrimFunc("chain", [B], [], bound("blockIdx.x", 4, block)), np.zeros(4, "float32"))
    (b1, _), (b2, _) = info.value.threads
    assert abs(b1[0] - b2[0]) == 1


def test_lanes_of_one_warp_at_different_shuffles_are_divergent():
    A, B = S.Buffer("A", "float32", (32,)), S.Buffer("B", "float32", (32,))

    def thread(t):
        v = E.BufferLoad(A, (t,))
        return S.IfThenElse(E.lt(t, E.const(16)),
                            S.BufferStore(B, shuffle("tvm_warp_shuffle_down", v, 1), (t,)),
                            S.BufferStore(B, shuffle("tvm_warp_shuffle_up", v, 1), (t,)))

    func = S.PrimFunc("split_warp", [A, B], [], bound("blockIdx.x", 1, lambda b: bound("threadIdx.x", 32, thread)))
    with pytest.raises(DivergentBarrierError, match="divergent warp shuffle"):
        run(func, rand(32), np.zeros(32, "float32"))


def test_active_mask_is_every_lane():
    M = S.Buffer("M", "uint32", (4,))
    store = S.BufferStore(M, E.Call("uint32", "tvm_warp_activemask", []), (E.Var("t", "int32"),))
    t = store.indices[0]
    func = S.PrimFunc("mask", [M], [], bound("blockIdx.x", 1, lambda _: S.For(
        t, E.const(0), E.const(4), "thread_binding", store, "threadIdx.x")))
    m = np.zeros(4, "uint32")
    run(func, m)
    assert (m == 0xFFFFFFFF).all()
