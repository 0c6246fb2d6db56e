"""The dataflow rewrites (cache_read, cache_write, rfactor) and the model's three structures.

Each schedule is run on both targets against NumPy; the schedule tree, the dataflow graph and
the IterVar-relation DAG are checked as text after the primitives that change them; the
user's old handles keep working (or fail naming the handle to use).
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check, ir_text, rand

import tessel
from tessel import te
from tessel.errors import ScheduleError


def _matmul(n=12, m=10, kk=9):
    A = te.placeholder((n, kk), name="A")
    B = te.placeholder((kk, m), name="B")
    k = te.reduce_axis((0, kk), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def _mm_data(n=12, m=10, kk=9):
    a, b = rand(n, kk), rand(kk, m, seed=3)
    return a, b, a @ b


# ---- cache_read --------------------------------------------------------------------------
@pytest.mark.parametrize("scope", ["local", "shared"])
def test_cache_read_inside_tiled_consumer(scope):
    A, B, C = _matmul()
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, scope, [C])
    BB = s.cache_read(B, scope, readers=C)
    assert AA.op.name == f"A.{scope}" and BB.op.name == f"B.{scope}"
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 5)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=4)
    s[C].reorder(xo, yo, ko, xi, ki, yi)
    s[AA].compute_at(s[C], ko)
    s[BB].compute_at(s[C], ko)
    assert str(s.schedule_tree()) == (
        "root\n  stage C [output]\n    for i.outer\n      for j.outer\n        for k.outer (reduce)\n"
        f"          stage A.{scope} [{scope}]\n            for ax0\n              for ax1\n"
        f"          stage B.{scope} [{scope}]\n            for ax0\n              for ax1\n"
        "          for i.inner\n            for k.inner (reduce)\n              for j.inner"
    )
    text = ir_text(s, [A, B, C])
    assert f"realize A.{scope}([i.outer*4, 4], [k.outer*4, 4])" in text
    a, b, want = _mm_data()
    check(s, [A, B, C], [a, b], [want], rtol=1e-4)
    low = str(tessel.lower(s, [A, B, C], simple_mode=True))
    assert f"allocate A.{scope}[float32 * 4 * 4] scope={scope}" in low


def test_cache_read_chain_shared_then_local():
    A, B, C = _matmul()
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "shared", [C])
    AL = s.cache_read(AA, "local", [C])
    assert AL.op.name == "A.shared.local"
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 5)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=4)
    s[C].reorder(xo, yo, ko, xi, ki, yi)
    s[AA].compute_at(s[C], ko)
    s[AL].compute_at(s[C], ki)
    assert [st.name for st in s.stages] == ["A", "A.shared", "A.shared.local", "B", "C"]
    a, b, want = _mm_data()
    check(s, [A, B, C], [a, b], [want], rtol=1e-4)


def test_cache_read_for_one_of_two_readers():
    A = te.placeholder((8, 6), name="A")
    B = te.compute((8, 6), lambda i, j: A[i, j] * 2, name="B")
    C = te.compute((8, 6), lambda i, j: A[i, j] + B[i, j], name="C")
    s = te.create_schedule(C.op)
    AL = s.cache_read(A, "local", [B])
    g = s.dataflow_graph()
    assert [x.name for x in g.consumers(s[A])] == ["A.local", "C"]
    assert [x.name for x in g.producers(s[B])] == ["A.local"]
    s[AL].compute_at(s[B], B.op.axis[0])
    s[B].compute_at(s[C], C.op.axis[0])
    a = rand(8, 6)
    check(s, [A, C], [a], [a + 2 * a])


def test_cache_read_twice_in_one_scope_gets_a_unique_name():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    C = te.compute((8,), lambda i: A[i] * B[i], name="C")
    s = te.create_schedule(C.op)
    first = s.cache_read(A, "local", [B])
    second = s.cache_read(A, "local", [C])
    assert (first.op.name, second.op.name) == ("A.local", "A.d.local")
    a = rand(8)
    check(s, [A, C], [a], [a * (a + 1)])


def test_cache_read_misuse():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    C = te.compute((8,), lambda i: B[i] * 2, name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="C does not read A.*the stages reading A are: B"):
        s.cache_read(A, "local", [C])
    with pytest.raises(ScheduleError, match="unknown storage scope 'texture'"):
        s.cache_read(A, "texture", [B])
    assert [st.name for st in s.stages] == ["A", "B", "C"]  # nothing changed


# ---- cache_write -------------------------------------------------------------------------
def test_cache_write_matmul_reduction_inside_cache_stage():
    A, B, C = _matmul()
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    assert CC.op.name == "C.local"
    assert [iv.name for iv in CC.op.axis] == ["i.c", "j.c"]
    assert CC.op.reduce_axis[0] is C.op.reduce_axis[0]  # the reduction moved, same IterVar
    assert not s[C].op.reduce_axis  # C is now a copy
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 5)
    s[CC].compute_at(s[C], yo)
    xc, yc = s[CC].op.axis
    (k,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(k, factor=4)
    s[CC].reorder(ko, xc, ki, yc)
    assert str(s.schedule_tree()) == (
        "root\n  stage C [output]\n    for i.outer\n      for j.outer\n"
        "        stage C.local [local]\n          for k.outer (reduce)\n            for i.c\n"
        "              for k.inner (reduce)\n                for j.c\n"
        "        for i.inner\n          for j.inner"
    )
    assert str(s[CC].itervar_dag()) == (
        "IterVar-relation DAG of C.local\n"
        "  root i.c: data [0, 12), cache_write copy of C's loop i\n"
        "  root j.c: data [0, 10), cache_write copy of C's loop j\n"
        "  root k: reduce [0, 9)\n"
        "  split k -> k.outer, k.inner (factor 4)\n"
        "  leaves: k.outer, i.c, k.inner, j.c"
    )
    assert "realize C.local([i.outer*4, 4], [j.outer*5, 5])" in ir_text(s, [A, B, C])
    a, b, want = _mm_data()
    check(s, [A, B, C], [a, b], [want], rtol=1e-4)


def test_cache_write_after_split_takes_the_split_layout():
    A, B, C = _matmul()
    s = te.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=5)  # 12 is not a multiple of 5
    CC = s.cache_write(C, "global")
    assert [iv.name for iv in CC.op.axis] == ["i.outer.c", "i.inner.c", "j.c"]
    assert [int(x) for x in CC.shape] == [3, 5, 10]
    assert [iv.name for iv in s[C].leaf_iter_vars] == ["i", "j"]
    with pytest.raises(ScheduleError, match=r"cannot split axis i\.outer: cache_write\(C\) moved this loop into C\.global \(as i\.outer\.c\)"):
        s[C].split(io, factor=2)
    a, b, want = _mm_data()
    check(s, [A, B, C], [a, b], [want], rtol=1e-4)


def test_cache_write_moves_attachments_and_annotations_with_their_loops():
    A = te.placeholder((8, 6), name="A")
    P = te.compute((8, 6), lambda i, j: A[i, j] + 1, name="P")
    C = te.compute((8, 6), lambda i, j: P[i, j] * 2, name="C")
    s = te.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=4)
    s[C].parallel(io)
    s[P].compute_at(s[C], ii)
    CC = s.cache_write(C, "local")
    assert s[P].attach_stage is s[CC] and s[P].attach_ivar is CC.op.axis[1]
    assert s[CC].leaf_kind(CC.op.axis[0]) == "parallel"
    a = rand(8, 6)
    check(s, [A, C], [a], [(a + 1) * 2])


def test_cache_write_multi_output_and_tuple_reduction():
    A = te.placeholder((6, 7), name="A")
    P, Q = te.compute((6, 7), lambda i, j: (A[i, j] + 1, A[i, j] * 2), name="PQ")
    R = te.compute((6, 7), lambda i, j: P[i, j] * Q[i, j], name="R")
    s = te.create_schedule(R.op)
    with pytest.raises(ScheduleError, match=r"all must be cached together: s.cache_write\(\[PQ_v0, PQ_v1\], 'local'\)"):
        s.cache_write(P, "local")
    PL, QL = s.cache_write([P, Q], "local")
    assert PL.op is QL.op and PL.op.name == "PQ.local"
    s[PL].compute_at(s[R], R.op.axis[0])
    s[P].compute_at(s[R], R.op.axis[0])
    a = rand(6, 7)
    check(s, [A, R], [a], [(a + 1) * (a * 2)])

    def fcombine(x, y):
        take = (x[1] > y[1]) | ((x[1] == y[1]) & (x[0] < y[0]))
        return te.select(take, x[0], y[0]), te.select(take, x[1], y[1])

    argmax = te.comm_reducer(fcombine, lambda t0, t1: (te.const(-1, t0), te.min_value(t1)), name="argmax")
    k = te.reduce_axis((0, 7), name="k")
    idx, val = te.compute((6,), lambda i: argmax((k.var, A[i, k]), axis=k), name="T")
    s = te.create_schedule(idx.op)
    IL, VL = s.cache_write([idx, val], "local")
    s[IL].compute_at(s[idx], idx.op.axis[0])
    check(s, [A, idx, val], [a], [a.argmax(axis=1).astype("int32"), a.max(axis=1)])


def test_cache_write_misuse():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    C = te.compute((8,), lambda i: B[i] * 2, name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="A is an input placeholder"):
        s.cache_write(A, "local")
    s[B].compute_inline()
    with pytest.raises(ScheduleError, match=r"stage B is inlined.*s\[B\]\.compute_root\(\)"):
        s.cache_write(B, "local")


# ---- rfactor -----------------------------------------------------------------------------
def _row_sum(n=6, m=37):
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k, where=k % 3 != 1), name="B")
    a = rand(n, m)
    return A, B, a, (a * (np.arange(m) % 3 != 1)).sum(axis=1)


@pytest.mark.parametrize("factor_axis", [0, 1, -1])
def test_rfactor_factor_axis(factor_axis):
    A, B, a, want = _row_sum()
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=8)
    BF = s.rfactor(B, ki, factor_axis=factor_axis)
    pos = factor_axis % 2
    assert [int(x) for x in BF.shape] == ([8, 6] if pos == 0 else [6, 8])
    assert BF.op.axis[pos].name == "k.inner" and not BF.op.axis[pos].is_reduce
    assert [iv.name for iv in s[BF].leaf_iter_vars] == (["k.inner", "i", "k.outer"] if pos == 0 else ["i", "k.inner", "k.outer"])
    assert [iv.name for iv in s[B].op.reduce_axis] == ["k.inner.v"]
    check(s, [A, B], [a], [want], rtol=1e-5)


def test_rfactor_of_a_nested_split_and_the_factored_axis_split_again():
    A, B, a, want = _row_sum()
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    kio, kii = s[B].split(ki, factor=3)  # 16 is not a multiple of 3, 37 not of 16
    BF = s.rfactor(B, kii)
    assert [iv.name for iv in BF.op.reduce_axis] == ["k.outer", "k.inner.outer"]
    assert s[BF].op.reduce_axis[0] is ko  # the user's handles stay loops of the factored stage
    check(s, [A, B], [a], [want], rtol=1e-5)

    A, B, a, want = _row_sum()
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    BF = s.rfactor(B, ki)
    fo, fi = s[BF].split(s[BF].op.axis[0], factor=4)
    s[BF].reorder(s[BF].op.axis[1], fo, ko, fi)
    s[BF].vectorize(fi)
    s[BF].parallel(s[BF].op.axis[1])
    assert str(s[BF].itervar_dag()) == (
        "IterVar-relation DAG of B.rf\n"
        "  root k.inner: data [0, 16), rfactor of B's reduction loop k.inner\n"
        "  root i: data [0, 6)\n  root k.outer: reduce [0, 3)\n"
        "  split k.inner -> k.inner.outer, k.inner.inner (factor 4)\n"
        "  leaves: i, k.inner.outer, k.outer, k.inner.inner"
    )
    assert str(s.schedule_tree()).startswith(
        "root\n  stage B.rf\n    parallel i\n      for k.inner.outer\n        for k.outer (reduce)\n"
        "          vectorized k.inner.inner"
    )
    check(s, [A, B], [a], [want], rtol=1e-5)


def test_rfactor_keeps_earlier_loop_transformations_in_the_factored_stage():
    A, B, a, want = _row_sum()
    s = te.create_schedule(B.op)
    io, ii = s[B].split(B.op.axis[0], factor=4)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    s[B].parallel(io)
    BF = s.rfactor(B, ki)
    assert [iv.name for iv in s[BF].leaf_iter_vars] == ["k.inner", "i.outer", "i.inner", "k.outer"]
    assert s[BF].leaf_kind(io) == "parallel"
    with pytest.raises(ScheduleError, match=r"cannot split axis i\.inner: it belongs to stage B\.rf \(rfactor\(B\) moved"):
        s[B].split(ii, factor=2)
    check(s, [A, B], [a], [want], rtol=1e-5)


def test_rfactor_of_a_root_reduction_axis_and_of_a_full_reduction():
    A, B, a, want = _row_sum()
    s = te.create_schedule(B.op)
    BF = s.rfactor(B, B.op.reduce_axis[0])
    assert not BF.op.reduce_axis  # nothing left to reduce in B.rf
    check(s, [A, B], [a], [want], rtol=1e-5)

    k = te.reduce_axis((0, 40), name="k")
    X = te.placeholder((40,), name="X")
    T = te.compute((1,), lambda _: te.max(X[k], axis=k), name="T")
    s = te.create_schedule(T.op)
    ko, ki = s[T].split(k, nparts=8)
    TF = s.rfactor(T, ko)
    s[TF].parallel(TF.op.axis[0])
    x = rand(40)
    check(s, [X, T], [x], [np.array([x.max()], "float32")])


def test_rfactor_misuse():
    A, B, a, want = _row_sum()
    s = te.create_schedule(B.op)
    with pytest.raises(ScheduleError, match="i is a data-parallel loop"):
        s.rfactor(B, B.op.axis[0])
    with pytest.raises(ScheduleError, match="factor_axis=3 is out of range"):
        s.rfactor(B, B.op.reduce_axis[0], factor_axis=3)
    C = te.compute((6,), lambda i: B[i] + 1, name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="stage C is not a reduction"):
        s.rfactor(C, C.op.axis[0])


# ---- the user's old handles --------------------------------------------------------------
def test_old_handles_after_cache_read_and_cache_write():
    A = te.placeholder((8, 6), name="A")
    B = te.compute((8, 6), lambda i, j: A[i, j] + 1, name="B")
    k = te.reduce_axis((0, 6), name="k")
    C = te.compute((8,), lambda i: te.sum(B[i, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    stage_c = s[C]
    BL = s.cache_read(B, "local", [C])
    assert s[C] is stage_c and s[C.op] is stage_c and s[s[C].op] is stage_c
    assert s[C].op is not C.op and s[C].op.axis[0] is C.op.axis[0]
    assert s.current_tensor(C) is s[C].op.output(0)
    CL = s.cache_write(C, "local")
    assert s[C] is stage_c and s[C].op.axis[0] is C.op.axis[0]
    assert s["C.local"] is s[CL]
    io, ii = s[C].split(C.op.axis[0], factor=4)  # the old handle still names C's loop
    s[CL].compute_at(s[C], io)
    s[BL].compute_at(s[CL], C.op.reduce_axis[0])  # the reduction moved with its IterVar
    with pytest.raises(ScheduleError, match=r"cannot split axis k: it belongs to stage C\.local .*use s\[C_local\]"):
        s[C].split(C.op.reduce_axis[0], factor=2)
    a = rand(8, 6)
    check(s, [A, C], [a], [(a + 1).sum(axis=1)], rtol=1e-5)


def test_compute_at_a_split_loop_is_refused_with_the_loops_to_use():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    C = te.compute((8,), lambda i: B[i] * 2, name="C")
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=4)
    with pytest.raises(ScheduleError, match=r"compute_at target i is no longer a loop of C .*i\.outer, i\.inner"):
        s[B].compute_at(s[C], C.op.axis[0])


# ---- attachments follow the loop they are at -----------------------------------------------
def test_split_and_fuse_move_the_attachment():
    A = te.placeholder((8, 6), name="A")
    B = te.compute((8, 6), lambda i, j: A[i, j] + 1, name="B")
    C = te.compute((8, 6), lambda i, j: B[i, j] * 2, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[1])
    jo, ji = s[C].split(C.op.axis[1], factor=2)
    assert s[B].attach_ivar is ji
    assert str(s.schedule_tree()) == (
        "root\n  stage C [output]\n    for i\n      for j.outer\n        for j.inner\n"
        "          stage B\n            for i\n              for j"
    )
    f = s[C].fuse(jo, ji)
    assert s[B].attach_ivar is f
    f2 = s[C].fuse(C.op.axis[0], f)
    assert s[B].attach_ivar is f2
    tree = s.schedule_tree()
    assert tree.placement(s[B]) is tree.loop_node(s[C], f2)
    assert s.violations() == []
    a = rand(8, 6)
    check(s, [A, C], [a], [(a + 1) * 2])


# ---- the structures as objects -----------------------------------------------------------
def test_schedule_tree_marks_inlined_and_scopes_and_bindings():
    A = te.placeholder((8, 6), name="A")
    B = te.compute((8, 6), lambda i, j: A[i, j] + 1, name="B")
    C = te.compute((8, 6), lambda i, j: B[i, j] * 2, name="C")
    D = te.compute((8, 6), lambda i, j: C[i, j] - 1, name="D")
    s = te.create_schedule(D.op)
    s[B].compute_inline()
    s[C].set_scope("shared")
    s[C].compute_at(s[D], D.op.axis[0])
    s[D].bind(D.op.axis[0], te.thread_axis("blockIdx.x"))
    s[D].unroll(D.op.axis[1])
    assert str(s.schedule_tree()) == (
        "root\n  stage B [inline]\n  stage D [output]\n    for i @ blockIdx.x\n"
        "      stage C [shared]\n        for i\n          for j\n      unrolled j"
    )
    tree = s.schedule_tree()
    assert [n.iter_var.name for n in tree.enclosing_loops(s[C])] == ["i"]
    assert tree.innermost(s[B]) is tree.stage_node(s[B])
    assert str(s.dataflow_graph()).splitlines()[2] == "  B [inline]"
    a = rand(8, 6)
    check(s, [A, D], [a], [(a + 1) * 2 - 1])


def test_dataflow_graph_edges_name_the_tensor_of_a_multi_output_op():
    A = te.placeholder((4,), name="A")
    P, Q = te.compute((4,), lambda i: (A[i] + 1, A[i] * 2), name="PQ")
    R = te.compute((4,), lambda i: P[i] * Q[i], name="R")
    s = te.create_schedule(R.op)
    g = s.dataflow_graph()
    assert [str(e) for e in g.edges] == ["A -> PQ", "PQ -> R", "PQ -> R"]
    assert str(g).endswith("  PQ -> R (PQ.v0)\n  PQ -> R (PQ.v1)")


def test_copy_is_independent():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    C = te.compute((8,), lambda i: B[i] * 2, name="C")
    s = te.create_schedule(C.op)
    t = s.copy()
    t[B].compute_at(t[C], C.op.axis[0])
    t[C].split(C.op.axis[0], factor=2)
    assert s[B].attach_type == "root" and [iv.name for iv in s[C].leaf_iter_vars] == ["i"]
    assert t[B].attach_stage is t[C]


def test_two_schedules_of_the_same_tensors_do_not_interfere():
    A, B, C = _matmul()
    s1 = te.create_schedule(C.op)
    s1.cache_write(C, "local")
    s1.cache_read(A, "shared", [s1["C.local"]])
    s2 = te.create_schedule(C.op)
    assert [st.name for st in s2.stages] == ["A", "B", "C"]
    a, b, want = _mm_data()
    check(s2, [A, B, C], [a, b], [want], rtol=1e-4)
    check(s1, [A, B, C], [a, b], [want], rtol=1e-4)


def test_rewrites_are_recorded_in_the_history():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    s.cache_read(A, "local", [B])
    assert s.history[-1].primitive == "cache_read"
    assert s.history[-1].snapshot is not None and len(s.history[-1].snapshot.stages) == 3


def test_tvm_era_spellings():
    import tessel as tvm

    n = tvm.var("n")
    A = tvm.placeholder((n,), name="A")
    k = tvm.reduce_axis((0, n), name="k")
    S = tvm.compute((1,), lambda _: tvm.sum(tvm.exp(A[k]), axis=k), name="S")
    M = tvm.compute((1,), lambda _: tvm.max(A[k], axis=k), name="M")
    s = tvm.create_schedule([S.op, M.op])
    assert tvm.const(3).dtype == te.const(3).dtype
    assert tvm.thread_axis("threadIdx.x").thread_tag == "threadIdx.x"
    assert "produce S" in str(tvm.lower(s, [A, S, M], simple_mode=True))
    a = rand(9)
    check(s, [A, S, M], [a], [np.array([np.exp(a).sum()], "float32"), np.array([a.max()], "float32")], rtol=1e-5)
