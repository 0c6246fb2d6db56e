"""Each legality rule: a schedule that breaks it, the explanation, the proposed fix applied, NumPy.

Rules are checked when a schedule is lowered (``Schedule.verify`` runs before InferBound), and
some already when the primitive is called (parallel/vectorize of a reduction loop, rfactor of a
reducer whose result depends on the order of combination).
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check, four_stage_chain, rand

import tessel
from tessel import te
from tessel.errors import ScheduleError
from tessel.schedule.kinds import INLINE, SCOPE, IterVarAttr


def refused(s, args) -> ScheduleError:
    with pytest.raises(ScheduleError) as info:
        tessel.lower(s, args)
    return info.value


def apply_fix(s, err: ScheduleError) -> None:
    assert err.fix, f"no fix proposed for: {err}"
    exec(err.fix, {"s": s, **err.fix_names})
    assert s.violations() == []


def _chain():
    return four_stage_chain()


def _want(a):
    b = a + 1
    c = b * 2
    return b, c, c - 3


# ---- rules on the schedule tree ----------------------------------------------------------
def test_lca_reader_outside_the_producers_loop():
    A, B, C, D = _chain()
    s = te.create_schedule(D.op)
    jo, ji = s[D].split(D.op.axis[1], factor=2)
    s[B].compute_at(s[D], ji)
    s[C].compute_at(s[D], D.op.axis[0])  # C reads B but runs outside D's loop over j.inner
    err = refused(s, [A, D])
    assert err.rule == "lca"
    assert err.explanation.startswith(
        "B is attached inside D's loop over j.inner (s[D].leaf_iter_vars[2]), but its reader C sits inside "
        "D's loop over i, above that loop, so C would read B before it exists"
    )
    # C was placed by the user, so it stays and B moves out to C's loop
    assert err.fix == "s[B].compute_at(s[D], D.op.axis[0])"
    apply_fix(s, err)
    assert s[C].attach_ivar is D.op.axis[0]
    a = rand(8, 6)
    check(s, [A, D], [a], [_want(a)[2]])


def test_lca_after_cache_write():
    A, B, C, D = _chain()
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    CL = s.cache_write(C, "local")
    err = refused(s, [A, C])
    assert err.explanation.startswith(
        "B is attached inside C's loop over i (C.op.axis[0]), but its new reader C.local sits at the root, "
        "above that loop, so C.local would read B before it exists"
    )
    assert err.fix == "s[C_local].compute_at(s[C], C.op.axis[0])"
    assert err.fix_names["C_local"] is CL
    apply_fix(s, err)
    a = rand(8, 6)
    check(s, [A, C], [a], [_want(a)[1]])


def test_lca_fix_falls_back_to_compute_root_when_the_reader_cannot_move():
    """The reader is an output: it must stay at the root, so the producer comes out instead."""
    A, B, C, D = _chain()
    s = te.create_schedule([C.op, D.op])
    s[B].compute_at(s[D], D.op.axis[0])  # D reads B only through C, which is an output at the root
    err = refused(s, [A, C, D])
    assert err.rule == "lca"
    assert "its reader C sits at the root" in err.explanation
    assert err.fix == "s[B].compute_root()"
    apply_fix(s, err)
    a = rand(8, 6)
    _, c, d = _want(a)
    check(s, [A, C, D], [a], [c, d])


def test_attached_to_a_stage_that_does_not_read_it():
    A, B, C, _ = _chain()
    E = te.compute((8, 6), lambda i, j: A[i, j] * 5, name="E")
    s = te.create_schedule([C.op, E.op])
    s[B].compute_at(s[E], E.op.axis[0])
    err = refused(s, [A, C, E])
    assert err.rule == "attached-to-non-consumer"
    assert err.explanation.startswith(
        "B is attached inside E's loop over i, but E does not read B, directly or through other stages "
        "(B's readers: C)"
    )
    assert err.fix == "s[B].compute_at(s[C], C.op.axis[0])"
    apply_fix(s, err)
    a = rand(8, 6)
    check(s, [A, C, E], [a], [_want(a)[1], a * 5])


def test_attached_through_an_intermediate_reader_is_legal():
    A, B, C, D = _chain()
    s = te.create_schedule(D.op)
    s[B].compute_at(s[D], D.op.axis[0])  # D reads B through C ...
    s[C].compute_at(s[D], D.op.axis[0])  # ... which is computed inside the same loop
    assert s.verify() is s
    a = rand(8, 6)
    check(s, [A, D], [a], [_want(a)[2]])


def test_attachment_cycle():
    A, B, C, D = _chain()
    s = te.create_schedule(D.op)
    s[B].compute_at(s[C], C.op.axis[0])
    s[C].compute_at(s[B], B.op.axis[1])
    err = refused(s, [A, D])
    assert err.rule == "attachment-cycle"
    assert "the attachments B -> C -> B form a cycle" in err.explanation
    assert err.fix == "s[C].compute_root()"  # B inside C is legal; C inside B is not
    apply_fix(s, err)
    a = rand(8, 6)
    check(s, [A, D], [a], [_want(a)[2]])


def test_stage_attached_to_itself():
    A, B, C, D = _chain()
    s = te.create_schedule(D.op)
    with pytest.raises(ScheduleError, match="cannot compute_at itself"):
        s[B].compute_at(s[B], B.op.axis[0])
    st = s[B]  # the primitive refuses it; a tool writing the fields directly is caught by verify
    st.attach_type, st.attach_stage, st.attach_ivar = SCOPE, st, B.op.axis[0]
    err = refused(s, [A, D])
    assert err.rule == "self-attachment"
    assert err.explanation.startswith("B is attached inside its own loop over i")
    apply_fix(s, err)
    a = rand(8, 6)
    check(s, [A, D], [a], [_want(a)[2]])


def test_compute_at_an_inlined_stage():
    A, B, C, D = _chain()
    s = te.create_schedule(D.op)
    s[B].compute_at(s[C], C.op.axis[0])
    s[C].compute_inline()
    err = refused(s, [A, D])
    assert err.rule == "inlined-target"
    assert err.explanation.startswith(
        "B is attached inside C's loop over i, but C is inlined: its expression is substituted into its "
        "readers and it has no loops"
    )
    assert err.fix == "s[B].compute_root()"
    apply_fix(s, err)
    a = rand(8, 6)
    check(s, [A, D], [a], [_want(a)[2]])


def test_inlined_output():
    A, B, C, D = _chain()
    s = te.create_schedule(D.op)
    with pytest.raises(ScheduleError, match="output"):
        s[D].compute_inline()
    s[D].attach_type = INLINE  # behind the primitive's back
    err = refused(s, [A, D])
    assert err.rule == "inlined-output"
    assert err.explanation.startswith("D is an output of the schedule but is marked inline")
    assert err.fix == "s[D].compute_root()"
    apply_fix(s, err)
    a = rand(8, 6)
    check(s, [A, D], [a], [_want(a)[2]])


def test_attached_output():
    A, B, C, D = _chain()
    s = te.create_schedule([B.op, C.op])
    s[B].compute_at(s[C], C.op.axis[0])
    err = refused(s, [A, B, C])
    assert err.rule == "attached-output"
    assert err.explanation.startswith(
        "B is an output of the schedule but is attached inside C's loop over i: the caller receives all of B"
    )
    assert err.fix == "s[B].compute_root()"
    apply_fix(s, err)
    a = rand(8, 6)
    b, c, _ = _want(a)
    check(s, [A, B, C], [a], [b, c])


def test_attachment_at_a_loop_that_no_longer_exists():
    A, B, C, D = _chain()
    s = te.create_schedule(D.op)
    s[D].split(D.op.axis[1], factor=4)
    st = s[C]
    st.attach_type, st.attach_stage, st.attach_ivar = SCOPE, s[D], D.op.axis[1]
    err = refused(s, [A, D])
    assert err.rule == "stale-attachment"
    assert err.explanation.startswith("C is attached at D's loop over j, but j is not one of D's loops now (i, j.outer, j.inner)")
    assert err.fix == "s[C].compute_at(s[D], s[D].leaf_iter_vars[2])"
    apply_fix(s, err)
    a = rand(8, 6)
    check(s, [A, D], [a], [_want(a)[2]])


def test_all_violations_are_listed_and_the_message_counts_them():
    A, B, C, D = _chain()
    E = te.compute((8, 6), lambda i, j: A[i, j] * 5, name="E")
    s = te.create_schedule([D.op, E.op])
    s[B].compute_at(s[E], E.op.axis[0])
    s[C].compute_at(s[E], E.op.axis[1])
    assert [v.rule for v in s.violations()] == ["attached-to-non-consumer", "attached-to-non-consumer"]
    err = refused(s, [A, D, E])
    assert "1 more problem(s)" in str(err)


# ---- rules beyond the tree ---------------------------------------------------------------
def _reduce():
    A = te.placeholder((8, 12), name="A")
    k = te.reduce_axis((0, 12), name="k")
    R = te.compute((8,), lambda i: te.sum(A[i, k], axis=k), name="R")
    return A, R


@pytest.mark.parametrize(("primitive", "verb"), [("parallel", "parallelize"), ("vectorize", "vectorize")])
def test_parallel_or_vectorized_reduction_loop(primitive, verb):
    A, R = _reduce()
    s = te.create_schedule(R.op)
    ko, ki = s[R].split(R.op.reduce_axis[0], factor=4)
    with pytest.raises(ScheduleError) as info:
        getattr(s[R], primitive)(ki)
    err = info.value
    assert err.rule == ("parallel" if primitive == "parallel" else "vectorized") + "-reduction"
    assert err.explanation.startswith(f"stage R: cannot {verb} k.inner: it is a reduction loop, so all of its "
                                      f"iterations update the same element R[i]")
    assert s[R].iter_var_attrs == {}  # refused before anything changed
    if primitive == "parallel":
        assert err.fix == "s[R].parallel(R.op.axis[0])"
    else:  # the vector loop goes innermost
        assert err.fix == ("s[R].reorder(s[R].leaf_iter_vars[1], s[R].leaf_iter_vars[2], R.op.axis[0])\n"
                           "s[R].vectorize(R.op.axis[0])")
    apply_fix(s, err)
    a = rand(8, 12)
    check(s, [A, R], [a], [a.sum(axis=1)], rtol=1e-5)


def test_parallel_full_reduction_is_fixed_by_rfactor():
    X = te.placeholder((64,), name="X")
    k = te.reduce_axis((0, 64), name="k")
    T = te.compute((1,), lambda _: te.sum(X[k], axis=k), name="T")
    s = te.create_schedule(T.op)
    ko, ki = s[T].split(k, nparts=4)
    with pytest.raises(ScheduleError) as info:
        s[T].parallel(ko)
    err = info.value
    assert err.fix == "T_rf = s.rfactor(T, s[T].leaf_iter_vars[1])\ns[T_rf].parallel(s[T_rf].op.axis[0])"
    apply_fix(s, err)
    assert str(s.schedule_tree()).startswith("root\n  stage T.rf\n    parallel k.outer\n")
    x = rand(64)
    check(s, [X, T], [x], [np.array([x.sum()], "float32")], rtol=1e-5)


def test_parallel_reduction_set_behind_the_primitives_back():
    A, R = _reduce()
    s = te.create_schedule(R.op)
    s[R].iter_var_attrs[R.op.reduce_axis[0]] = IterVarAttr("parallel")
    err = refused(s, [A, R])
    assert err.rule == "parallel-reduction"
    assert err.fix == "s[R].serial(R.op.reduce_axis[0])\ns[R].parallel(R.op.axis[0])"
    apply_fix(s, err)
    a = rand(8, 12)
    check(s, [A, R], [a], [a.sum(axis=1)], rtol=1e-5)


def test_the_fix_code_is_public_calls_and_the_steps_render_as_it():
    """The fix's text is what its steps render: ``serial`` is a primitive (it was
    ``s[R].iter_var_attrs.pop(...)``, beside a step calling a private method)."""
    A, R = _reduce()
    s = te.create_schedule(R.op)
    s[R].iter_var_attrs[R.op.reduce_axis[0]] = IterVarAttr("parallel")
    err = refused(s, [A, R])
    exec(err.fix, {"s": s, "R": R})  # the code as a user would paste it
    assert "s[R].serial(" in s.python() and "s[R].parallel(" in s.python()
    a = rand(8, 12)
    check(s, [A, R], [a], [a.sum(axis=1)], rtol=1e-5)


def test_thread_axis_bound_in_a_stage_inside_it_is_that_thread():
    # B inside C's threadIdx.x loop binds its own loop to threadIdx.x: the same thread (TVM's
    # cooperative binding), legal -- but B's loop runs once where C's runs 6 times, and a launch
    # has one number of threads: refused, and the fix splits B's loop by the launch's extent
    A, B, C, D = _chain()
    s = te.create_schedule(C.op)
    s[C].bind(C.op.axis[0], te.thread_axis("blockIdx.x"))
    s[C].bind(C.op.axis[1], te.thread_axis("threadIdx.x"))
    s[B].compute_at(s[C], C.op.axis[1])
    s[B].bind(B.op.axis[1], te.thread_axis("threadIdx.x"))
    err = refused(s, [A, C])
    assert err.rule == "thread-two-extents"
    assert err.explanation.startswith(
        "stage B: loop j is bound to threadIdx.x with extent 1, but C's loop j is bound to threadIdx.x with "
        "extent 6 in the same kernel: a launch has one number of threadIdx.x threads"
    )
    assert err.fix == "s[B].split(B.op.axis[1], factor=6)"
    apply_fix(s, err)
    a = rand(8, 6)
    check(s, [A, C], [a], [_want(a)[1]])


def test_one_thread_axis_in_sibling_scopes_is_legal():
    A, B, C, D = _chain()
    s = te.create_schedule(C.op)
    bx = te.thread_axis("blockIdx.x")
    tx = te.thread_axis("threadIdx.x")
    s[C].bind(C.op.axis[0], bx)
    s[B].compute_at(s[C], C.op.axis[0])
    s[B].bind(B.op.axis[1], tx)  # B's loops and C's inner loop are siblings under blockIdx.x
    s[C].bind(C.op.axis[1], tx)
    assert s.verify() is s
    a = rand(8, 6)
    check(s, [A, C], [a], [_want(a)[1]])


def _tuple_argmax(strict_ties: bool):
    def fcombine(x, y):
        take = (x[1] > y[1]) | ((x[1] == y[1]) & (x[0] < y[0])) if strict_ties else x[1] >= y[1]
        return te.select(take, x[0], y[0]), te.select(take, x[1], y[1])

    return te.comm_reducer(fcombine, lambda t0, t1: (te.const(-1, t0), te.min_value(t1)), name="argmax")


def _builtin_reducer(fcombine, fidentity, name):
    """A reducer as tessel defines its own (te.sum ...): its declaration is checked, not trusted
    (a te.comm_reducer is trusted, as in TVM: tests/tvm/test_tvm_differences_reducer.py)."""
    from tessel.te.reduce import Reducer

    return Reducer(fcombine, fidentity, name)


@pytest.mark.parametrize("which", ["subtract", "argmax-first-wins"])
def test_rfactor_of_an_order_dependent_reducer(which):
    A = te.placeholder((5, 24), name="A")
    k = te.reduce_axis((0, 24), name="k")
    if which == "subtract":
        sub = _builtin_reducer(lambda x, y: x - y, lambda t: te.const(0, t), name="sub_checked")
        out = te.compute((5,), lambda i: sub(A[i, k], axis=k), name="B")
        outs = [out]
    else:
        argmax = _tuple_argmax(False)
        argmax = _builtin_reducer(argmax.fcombine, argmax.fidentity, "argmax_checked")
        outs = list(te.compute((5,), lambda i: argmax((k.var, A[i, k]), axis=k), name="B"))
    s = te.create_schedule(outs[0].op)
    ko, ki = s[outs[0]].split(k, factor=4)
    with pytest.raises(ScheduleError) as info:
        s.rfactor(outs[0], ki)
    err = info.value
    assert err.rule == "rfactor-order-dependent-reducer"
    assert "is not commutative: combine(x, y) =" in err.explanation
    assert err.fix is None
    assert [st.name for st in s.stages] == ["A", "B"]  # nothing changed: the serial reduction stays correct
    a = np.round(rand(5, 24) * 4) / 4  # ties
    if which == "subtract":  # the serial loop: ((0 - a0) - a1) - ...
        acc = np.zeros(5, "float32")
        for j in range(24):
            acc = acc - a[:, j]
        want = [acc]
    else:
        want = [a.argmax(axis=1).astype("int32"), a.max(axis=1)]
    check(s, [A, *outs], [a], want, rtol=1e-5)


def test_rfactor_of_a_commutative_argmax_is_allowed():
    A = te.placeholder((5, 24), name="A")
    k = te.reduce_axis((0, 24), name="k")
    idx, val = te.compute((5,), lambda i: _tuple_argmax(True)((k.var, A[i, k]), axis=k), name="B")
    s = te.create_schedule(idx.op)
    ko, ki = s[idx].split(k, factor=4)
    fi, fv = s.rfactor(idx, ki)
    assert fi.op.name == "B.rf" and fi.op is fv.op
    a = np.round(rand(5, 24) * 4) / 4  # many ties: the first index must still win
    check(s, [A, idx, val], [a], [a.argmax(axis=1).astype("int32"), a.max(axis=1)])


def test_reorder_counterexample_accepts_the_builtin_reducers():
    from tessel.schedule.reducer_checks import reorder_counterexample

    for red in (te.sum, te.min, te.max):
        for dt in ("float32", "int32", "uint8"):
            from tessel.ir.dtype import dtype

            assert reorder_counterexample(red.combiner((dtype(dt),))) is None
    prod = te.comm_reducer(lambda x, y: x * y, lambda t: te.const(1, t), name="prod")
    from tessel.ir.dtype import dtype

    assert reorder_counterexample(prod.combiner((dtype("float32"),))) is None
    bad_identity = te.comm_reducer(lambda x, y: x + y, lambda t: te.const(1, t), name="plus1")
    assert "identity" in reorder_counterexample(bad_identity.combiner((dtype("int32"),)))
    avg = te.comm_reducer(lambda x, y: (x + y) * 0.5, lambda t: te.const(0, t), name="avg")
    assert "not associative" in reorder_counterexample(avg.combiner((dtype("float32"),)))


def test_build_refuses_an_illegal_schedule_too():
    A, B, C, D = _chain()
    s = te.create_schedule(D.op)
    s[B].compute_at(s[C], C.op.axis[0])
    s.cache_read(B, "shared", [C])
    for target in ("python", "c"):
        with pytest.raises(ScheduleError, match="its new reader B.shared sits at the root"):
            tessel.build(s, [A, D], target=target)


@pytest.mark.parametrize("name", ["lambda", "None", "x\u00b2", "s", "1st"])
def test_a_fix_runs_as_code_whatever_the_stage_is_called(name):
    """The fix's code names stages through the one name-safety function: a keyword, None, a
    non-ASCII letter or a leading digit must still give code that runs and fixes the schedule."""
    A = te.placeholder((16, 16), name="A")
    k = te.reduce_axis((0, 16), name="k")
    B = te.compute((16,), lambda i: te.sum(A[i, k], axis=k), name=name)
    s = te.create_schedule(B.op)
    with pytest.raises(tessel.ScheduleError) as info:
        s[B].vectorize(k)
    err = info.value
    exec(err.fix, {"s": s, **err.fix_names})
    s.verify()
    a = np.random.default_rng(3).uniform(-1, 1, (16, 16)).astype("float32")
    b = np.empty(16, "float32")
    tessel.build(s, [A, B])(a, b)
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5, atol=1e-5)
