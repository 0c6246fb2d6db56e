"""Thread semantics in InferBound and lowering, as TVM v0.14 defines them (schedule/threads.py).

The bounds asserted here are TVM v0.14's own answers for the same schedules (its
test_te_schedule_bound_inference.py and test_te_schedule_ops.py): storage of a scope is sized
for every value of the thread axes that share it -- global all, shared threadIdx (not blockIdx),
warp its lanes, local none. Where threads do not communicate, the CPU targets run the bound
loops serially and must compute NumPy's values; where they do, the CPU build is refused.
"""

from __future__ import annotations

import pytest
from helpers import TARGETS, check, cross_thread_row_sum, rand

import tessel
from tessel import te
from tessel.errors import BuildError
from tessel.ir import stmt as S
from tessel.ir.functor import collect


def _a1_a2(shape=None):
    m, n = shape if shape is not None else (te.var("m"), te.var("l"))
    A = te.placeholder((m, n), name="A")
    A1 = te.compute((m, n), lambda i, j: A[i, j], name="A1")
    A2 = te.compute((m, n), lambda i, j: A1[i, j] + 3, name="A2")
    return A, A1, A2


def _allocs(sch, args):
    body = tessel.lower(sch, args, simple_mode=True)
    return {a.buffer.name: [int(e.value) for e in a.extents]
            for a in collect(body, lambda n: isinstance(n, S.Allocate))}


def _ext(bounds, iv):
    return int(bounds[iv].extent.value)


def _bound3(shape=None):
    A, A1, A2 = _a1_a2(shape)
    s = te.create_schedule(A2.op)
    s[A1].set_scope("shared")
    xo, xi = s[A2].split(A2.op.axis[0], 32)
    xi0, xi1 = s[A2].split(xi, nparts=16)
    s[A2].bind(xi0, te.thread_axis("threadIdx.x"))
    yo, yi = s[A2].split(A2.op.axis[1], 16)
    s[A2].reorder(xo, xi0, yo, xi1, yi)
    s[A1].compute_at(s[A2], yo)
    return s, A, A1, A2


def test_shared_stage_inside_a_thread_loop_covers_every_thread():
    s, _, A1, _ = _bound3()
    b = tessel.infer_bound(s)
    assert (_ext(b, A1.op.axis[0]), _ext(b, A1.op.axis[1])) == (32, 16)  # TVM: 32, 16


@pytest.mark.parametrize("target", TARGETS)
def test_shared_stage_inside_a_thread_loop_computes_numpy_values(target):
    s, A, A1, A2 = _bound3((45, 37))  # neither divides the tiles
    assert _allocs(s, [A, A2])["A1"] == [32, 16]
    a = rand(45, 37)
    check(s, [A, A2], [a], [a + 3], targets=(target,))


def _nest_thread():
    m = te.var("m")
    A = te.placeholder((m,), name="A")
    A1 = te.compute((m,), lambda i: A[i], name="A1")
    A2 = te.compute((m,), lambda i: A1[i] + 2, name="A2")
    A3 = te.compute((m,), lambda i: A2[i] + 3, name="A3")
    s = te.create_schedule(A3.op)
    s[A2].set_scope("shared")
    s[A1].set_scope("local")
    block_x, thread_x = te.thread_axis("blockIdx.x"), te.thread_axis("threadIdx.x")
    bx, tx = s[A3].split(A3.op.axis[0], factor=32)
    s[A3].bind(bx, block_x)
    s[A3].bind(tx, thread_x)
    s[A2].compute_at(s[A3], tx)
    _, xi = s[A2].split(A2.op.axis[0], nparts=1)
    s[A2].bind(xi, thread_x)
    s[A1].compute_at(s[A3], tx)
    return s, (A, A1, A2, A3), m


def test_shared_stage_attached_at_a_thread_loop_is_sized_for_the_block():
    s, (A, A1, A2, A3), m = _nest_thread()
    b = tessel.infer_bound(s)
    assert _ext(b, A1.op.axis[0]) == 1  # local: one per thread (TVM: 1)
    assert _ext(b, A2.op.axis[0]) == 32  # shared: the block's 32 threads (TVM: 32)
    assert b[A3.op.axis[0]].extent is m
    # A2 is filled cooperatively (its loop is A3's thread): not what serial loops compute
    with pytest.raises(BuildError, match=r"A2 \(shared\) is filled cooperatively.*cuda-sim"):
        tessel.build(s, [A, A3], target="python")


def _gemm(n=1024, cooperative=True):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda ii, jj: te.sum(A[ii, k] * B[jj, k], axis=k), name="CC")
    s = te.create_schedule(C.op)
    num_thread, block_factor = 8, 64
    block_x, thread_x = te.thread_axis("blockIdx.x"), te.thread_axis("threadIdx.x")
    block_y, thread_y = te.thread_axis("blockIdx.y"), te.thread_axis("threadIdx.y")
    CC = s.cache_write(C, "local")
    AA = s.cache_read(A, "shared", [CC])
    BB = s.cache_read(B, "shared", [CC])
    by, yi = s[C].split(C.op.axis[0], factor=block_factor)
    bx, xi = s[C].split(C.op.axis[1], factor=block_factor)
    s[C].reorder(by, bx, yi, xi)
    s[C].bind(by, block_y)
    s[C].bind(bx, block_x)
    ty, yi = s[C].split(yi, nparts=num_thread)
    tx, xi = s[C].split(xi, nparts=num_thread)
    s[C].reorder(ty, tx, yi, xi)
    s[C].bind(ty, thread_y)
    s[C].bind(tx, thread_x)
    yo, xo = CC.op.axis
    s[CC].reorder(k, yo, xo)
    s[CC].compute_at(s[C], tx)
    s[AA].compute_at(s[CC], k)
    s[BB].compute_at(s[CC], k)
    for cache in (AA, BB) if cooperative else ():  # each thread copies its share of the tiles
        ty, xi = s[cache].split(s[cache].op.axis[0], nparts=num_thread)
        tx, xi = s[cache].split(xi, nparts=num_thread)
        s[cache].bind(ty, thread_y)
        s[cache].bind(tx, thread_x)
    return s, (A, B, C), (AA, BB, CC)


def test_gemm_shared_tiles_are_the_block_tiles():
    s, (A, B, C), (AA, BB, CC) = _gemm()
    assert s.verify() is s  # cooperative fetching is legal
    b = tessel.infer_bound(s)
    assert _ext(b, BB.op.axis[0]) == 64 and _ext(b, AA.op.axis[0]) == 64  # TVM: 64, 64
    assert _ext(b, CC.op.axis[0]) == 8 and _ext(b, CC.op.axis[1]) == 8  # TVM: 8, 8
    sizes = _allocs(s, [A, B, C])
    assert sizes["A.shared"] == [64, 1] and sizes["B.shared"] == [64, 1] and sizes["CC.local"] == [8, 8]


def test_gemm_cooperative_fetch_is_distributed_over_the_threads():
    s, (A, B, C), _ = _gemm(128)
    text = str(tessel.lower(s, [A, B, C], simple_mode=True))
    # one loop per thread: the copy's loops are the consumer's threads, each copying one element
    assert text.count("launch[threadIdx.y]") == 1 and text.count("launch[threadIdx.x]") == 1
    assert "A.shared[threadIdx.y*8 + threadIdx.x] = A[" in text
    assert "B.shared[threadIdx.y*8 + threadIdx.x] = B[" in text
    for target in TARGETS:
        with pytest.raises(BuildError, match=r"A.shared \(shared\) is filled cooperatively.*target=\"cuda-sim\""):
            tessel.build(s, [A, B, C], target=target)


def test_gemm_without_cooperation_runs_serially_on_the_cpu():
    s, (A, B, C), _ = _gemm(72, cooperative=False)  # 72: the 64-tiles do not divide it
    a, bm = rand(72, 72), rand(72, 72, seed=1)
    check(s, [A, B, C], [a, bm], [a @ bm.T], rtol=1e-4, atol=1e-4)


def test_warp_scope_relaxes_its_lanes():
    A, A1, A2 = _a1_a2()
    s = te.create_schedule(A2.op)
    s[A1].set_scope("warp")
    xo, xi = s[A2].split(A2.op.axis[0], 32)
    xi0, xi1 = s[A2].split(xi, factor=16)
    tx = te.thread_axis("threadIdx.x")
    s[A2].bind(xi1, tx)
    s[A2].bind(xi0, te.thread_axis("threadIdx.y"))
    s[A1].compute_at(s[A2], s[A2].op.axis[1])
    xo, xi = s[A1].split(s[A1].op.axis[0], factor=16)
    s[A1].bind(xi, tx)
    b = tessel.infer_bound(s)
    assert _ext(b, A1.op.axis[0]) == 16  # TVM: 16 (threadIdx.x relaxed, threadIdx.y not)


def _local_97():
    A = te.placeholder((128,), name="A")
    B = te.compute((128,), lambda bi: A[bi] + 1, name="B")
    C = te.compute((128,), lambda ci: B[ci] + 2, name="C")
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "local", [B])
    s[B].set_scope("shared")
    block_x = te.thread_axis("blockIdx.x")
    thread_x = te.thread_axis((0, 32), "threadIdx.x")
    oc, ic = s[C].split(s[C].op.axis[0], factor=64)
    ooc, ioc = s[C].split(oc, factor=2)
    oic, iic = s[C].split(ic, factor=32)
    s[C].bind(ooc, block_x)
    s[C].bind(iic, thread_x)
    s[B].compute_at(s[C], ioc)
    ob, ib = s[B].split(s[B].op.axis[0], factor=32)
    s[B].bind(ib, thread_x)
    s[AA].compute_root()
    s[AA].compute_at(s[C], ooc)
    oaa, iaa = s[AA].split(s[AA].op.axis[0], factor=32)
    s[AA].bind(iaa, thread_x)
    return s, A, C, AA


def test_local_stage_is_sized_for_its_own_thread():
    s, A, C, AA = _local_97()
    # the local copy is one per thread: its region is a point in threadIdx.x, not its 32 values
    b = tessel.infer_bound(s)
    assert _ext(b, s[AA].op.axis[0]) == 97
    assert _allocs(s, [A, C])["A.local"] == [97]  # TVM: 97
    body = tessel.lower(s, [A, C], simple_mode=True)
    assert not collect(body, lambda n: isinstance(n, S.IfThenElse))  # TVM: no predicate either
    with pytest.raises(BuildError, match=r"A.local \(local\) is private to each threadIdx.x thread"):
        tessel.build(s, [A, C], target="c")


def test_an_unscoped_stage_inside_thread_loops_is_local():
    A = te.placeholder((37, 9), name="A")
    B = te.compute((37, 9), lambda i, j: A[i, j] * 2, name="B")
    C = te.compute((37, 9), lambda i, j: B[i, j] + 1, name="C")
    s = te.create_schedule(C.op)
    s[C].bind(C.op.axis[0], te.thread_axis("blockIdx.x"))
    s[C].bind(C.op.axis[1], te.thread_axis("threadIdx.x"))
    s[B].compute_at(s[C], C.op.axis[1])
    body = tessel.lower(s, [A, C], simple_mode=True)
    (alloc,) = collect(body, lambda n: isinstance(n, S.Allocate))
    assert alloc.buffer.scope == "local" and [int(e.value) for e in alloc.extents] == [1, 1]
    a = rand(37, 9)
    check(s, [A, C], [a], [a * 2 + 1])


@pytest.mark.parametrize("n", [1, 29, 64])
def test_bound_elementwise_and_reduction_compute_numpy_values(n):
    A = te.placeholder((n, 13), name="A")
    k = te.reduce_axis((0, 13), name="k")
    R = te.compute((n,), lambda i: te.sum(A[i, k] * A[i, k], axis=k), name="R")
    E = te.compute((n,), lambda i: R[i] * 0.5 + 1, name="E")
    s = te.create_schedule(E.op)
    bx, tx = s[E].split(E.op.axis[0], factor=8)
    s[E].bind(bx, te.thread_axis("blockIdx.x"))
    s[E].bind(tx, te.thread_axis("threadIdx.x"))
    s[R].compute_at(s[E], tx)
    a = rand(n, 13)
    check(s, [A, E], [a], [(a * a).sum(axis=1) * 0.5 + 1], rtol=1e-5)


def test_two_virtual_threads_nest_and_keep_values():
    A = te.placeholder((19, 22), name="A")
    B = te.compute((19, 22), lambda i, j: A[i, j] * 3, name="B")
    s = te.create_schedule(B.op)
    vy, vx = te.thread_axis((0, 2), "vthread", name="vy"), te.thread_axis((0, 2), "vthread", name="vx")
    yo, yi = s[B].split(B.op.axis[0], nparts=2)
    xo, xi = s[B].split(B.op.axis[1], nparts=2)
    s[B].reorder(yo, xo, yi, xi)
    s[B].bind(yo, vy)
    s[B].bind(xo, vx)  # two virtual threads, both tagged "vthread": two axes, not one
    assert s.verify() is s
    text = str(tessel.lower(s, [A, B], simple_mode=True))
    assert text.count("launch[vthread]") == 2
    a = rand(19, 22)
    check(s, [A, B], [a], [a * 3])


def test_double_buffer_marks_the_storage_and_changes_no_value():
    s, (A, B, C), (AA, BB, CC) = _gemm(40, cooperative=False)
    s[AA].double_buffer()
    text = str(tessel.lower(s, [A, B, C], simple_mode=True))
    assert text.count("double_buffer_scope") == 1
    (attr,) = collect(tessel.lower(s, [A, B, C], simple_mode=True),
                      lambda n: isinstance(n, S.AttrStmt) and n.key == "double_buffer_scope")
    assert attr.node.name == "A.shared" and attr.node.scope == "shared"
    a, bm = rand(40, 40), rand(40, 40, seed=2)
    check(s, [A, B, C], [a, bm], [a @ bm.T], rtol=1e-4, atol=1e-4)
    with pytest.raises(tessel.ScheduleError, match="stage CC is an output"):
        s[C].double_buffer()


def _scan(m=9, n=37):
    X = te.placeholder((m, n), name="X")
    state = te.placeholder((m, n), name="state")
    init = te.compute((1, n), lambda _, i: X[0, i], name="init")
    update = te.compute((m, n), lambda t, i: state[t - 1, i] * 0.5 + X[t, i], name="update")
    scan = te.scan(init, update, state, name="scan")
    return X, init, update, scan


def test_env_threads_run_the_scan_in_its_threads():
    X, init, update, scan = _scan()
    s = te.create_schedule(scan.op)
    bx, tx = te.thread_axis((0, 5), "blockIdx.x"), te.thread_axis((0, 8), "threadIdx.x")
    s[scan].env_threads([bx, tx])
    xo, xi = s[update].split(update.op.axis[1], factor=8)
    s[update].bind(xo, bx)
    s[update].bind(xi, tx)  # the scan's own threads: each thread runs its column through the steps
    b = tessel.infer_bound(s)
    assert (_ext(b, bx), _ext(b, tx)) == (5, 8)
    body = tessel.lower(s, [X, scan], simple_mode=True)
    text = str(body)
    produce = text[text.index("produce scan"):]
    assert produce.count("launch[blockIdx.x]") == 1 and produce.count("launch[threadIdx.x]") == 1
    assert "scan[scan.idx*37 + blockIdx.x*8 + threadIdx.x + 37] = scan[scan.idx*37 + blockIdx.x*8 + threadIdx.x]" in text
    with pytest.raises(BuildError, match="filled cooperatively"):
        tessel.build(s, [X, scan], target="c")


@pytest.mark.parametrize("target", TARGETS)
def test_env_threads_without_bound_loops_repeat_the_scan_in_every_thread(target):
    X, init, update, scan = _scan(7, 11)
    s = te.create_schedule(scan.op)
    s[scan].env_threads(te.thread_axis((0, 3), "threadIdx.x"))
    x = rand(7, 11)
    want = x.copy()
    for t in range(1, 7):
        want[t] = want[t - 1] * 0.5 + x[t]
    check(s, [X, scan], [x], [want], targets=(target,))


def test_env_threads_checks_its_arguments():
    X, init, update, scan = _scan()
    s = te.create_schedule(scan.op)
    with pytest.raises(tessel.ScheduleError, match="stage update: env_threads is for a scan"):
        s[update].env_threads([te.thread_axis((0, 4), "threadIdx.x")])
    with pytest.raises(tessel.ScheduleError, match="thread axis threadIdx.x has no declared range"):
        s[scan].env_threads([te.thread_axis("threadIdx.x")])


def test_cross_thread_reduction_lowers_and_is_refused_on_the_cpu():
    # TVM's reduction tutorial: rfactor, then the reduction bound to threadIdx.x
    s, A, B, BF = cross_thread_row_sum(37, 50)
    assert s.verify() is s
    b = tessel.infer_bound(s)
    assert _ext(b, BF.op.axis[0]) == 1  # B.rf is local: one partial sum per thread
    text = str(tessel.lower(s, [A, B], simple_mode=True))
    assert "allocate B.rf[float32 * 1 * 1] scope=local" in text
    for target in TARGETS:
        with pytest.raises(BuildError, match="reduction loop k.inner.v is bound to threadIdx.x: a cross-thread"):
            tessel.build(s, [A, B], target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_shared_copy_inside_thread_loops_is_sized_for_the_block(target):
    # the example: tessel used to allocate A.shared[1 * 8], one thread's row
    A = te.placeholder((45, 8), name="A")
    B = te.compute((45, 8), lambda i, j: A[i, j] * 2, name="B")
    s = te.create_schedule(B.op)
    AA = s.cache_read(A, "shared", [B])
    xo, xi = s[B].split(B.op.axis[0], factor=16)
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    s[B].bind(xi, te.thread_axis("threadIdx.x"))
    s[AA].compute_at(s[B], xi)
    assert _allocs(s, [A, B])["A.shared"] == [16, 8]  # TVM: the block's 16 rows
    s2 = te.create_schedule(B.op)
    AL = s2.cache_read(A, "local", [B])
    xo, xi = s2[B].split(B.op.axis[0], factor=16)
    s2[B].bind(xo, te.thread_axis("blockIdx.x"))
    s2[B].bind(xi, te.thread_axis("threadIdx.x"))
    s2[AL].compute_at(s2[B], xi)
    assert _allocs(s2, [A, B])["A.local"] == [1, 8]  # local: the thread's own row
    a = rand(45, 8)
    for sch in (s, s2):
        check(sch, [A, B], [a], [a * 2], targets=(target,))


@pytest.mark.parametrize("tag, scope", [("threadIdx.x", "local"), ("vthread", "local"), ("blockIdx.y", "shared")])
def test_storage_private_to_a_thread_needs_no_predicate(tag, scope):
    # TVM's test_local_stage_predicate: B's loop bound to a thread its storage does not span
    # counts from the thread's own element, so no guard is generated
    A = te.placeholder((1, 3, 2), name="A")
    B = te.compute((1, 3, 2), lambda bi, bj, bk: A[bi, bj, bk], name="B")
    C = te.compute((1, 3, 2), lambda ci, cj, ck: B[ci, cj, ck], name="C")
    thread = te.thread_axis(tag)
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], s[C].op.axis[0])
    s[B].set_scope(scope)
    bno, bni = s[B].split(s[B].op.axis[1], 3)
    s[C].bind(s[C].op.axis[0], te.thread_axis("blockIdx.x"))
    s[C].bind(s[C].op.axis[1], thread)
    s[B].bind(bni, thread)
    body = tessel.lower(s, [A, C], simple_mode=True)
    assert not collect(body, lambda x: isinstance(x, S.IfThenElse))
    (alloc,) = collect(body, lambda x: isinstance(x, S.Allocate))
    assert [int(e.value) for e in alloc.extents] == [1, 1, 2] and alloc.buffer.scope == scope


@pytest.mark.parametrize("bind", [False, True])
def test_a_split_leading_to_a_thread_keeps_its_factor(bind):
    # TVM: a split's inner loop is cut to a shorter parent (8 < 32) unless a loop made from it
    # is bound to a thread: its extent is then the launch's thread count
    I = te.placeholder((8,), name="I")
    E_ = te.compute((8,), lambda i: I[i] * 2, name="E")
    s = te.create_schedule(E_.op)
    xo, xi = s[E_].split(E_.op.axis[0], factor=32)
    xio, xii = s[E_].split(xi, factor=4)
    if bind:
        s[E_].bind(xii, te.thread_axis("threadIdx.x"))
    b = tessel.infer_bound(s)
    assert _ext(b, xi) == (32 if bind else 8)
    x = rand(8)
    check(s, [I, E_], [x], [x * 2])
