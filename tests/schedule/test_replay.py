"""Schedules are data: every primitive call is a step that ``s.history.replay`` rebuilds, on the
same operations or on fresh tensors of the same program, to the identical lowered IR; copies are
independent; legality classifies by kind, checks its fixes by replaying them, and reports a
failure of that check as an internal error; rfactor trusts what a reducer declares.

The whole suite is checked the same way (conftest.py; on unless ``TESSEL_REPLAY_CHECK=0``): every
schedule with a history that any test lowers or builds is replayed and lowered again.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import check, four_stage_chain, rand
from replay_check import replayed_lowering

import tessel
from tessel import te
from tessel.errors import InternalError, ScheduleError
from tessel.schedule.history import AxisRef, StageRef, corresponding
from tessel.schedule.violation import ViolationKind

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


# ---- every example's schedules replay to the same IR -------------------------------------------
@pytest.mark.parametrize("script", sorted(p.name for p in EXAMPLES.glob("seed001_*.py")))
def test_example_scripts_replay(script):
    from tessel.cli import run_script

    run = run_script(EXAMPLES / script, stdout_to_stderr=True)
    assert run.failure is None and run.schedules
    for sch in run.schedules:
        args = run.args.get(sch) or [t for st in sch.stages if st.is_placeholder for t in st.op.outputs] + \
            [t for op in sch.outputs for t in op.outputs]
        want, got = replayed_lowering(sch, args)
        assert got == want and "for (" in want


def _fast(module: str, name: str, *args, **kw):
    sys.path.insert(0, str(EXAMPLES.parent))
    try:
        return getattr(importlib.import_module(f"examples.{module}"), name)(*args, **kw)
    finally:
        sys.path.remove(str(EXAMPLES.parent))


@pytest.mark.parametrize("module, name, args", [
    ("fast_matmul", "matmul", (37,)),
    ("fast_blur", "blur", (19, 45)),
    ("fast_conv2d", "conv2d", (1, 8, 16, 10, 11)),
    ("fast_rows", "softmax", (5, 67)),
    ("fast_rows", "layernorm", (5, 67)),
    ("fast_streams", "add", (1000,)),
    ("fast_streams", "copy", (1000,)),
    ("fast_streams", "row_sum", (5, 67)),
])
def test_example_kernels_replay(module, name, args):
    s, tensors = _fast(module, name, *args)
    want, got = replayed_lowering(s, tensors)
    # a loop nest was lowered (a row kernel's loops may all be parallel, vector or unrolled)
    assert got == want and ("for (" in want or "parallel (" in want)


# ---- replay onto fresh tensors ------------------------------------------------------------------
def _program():
    n = te.var("n")
    A = te.placeholder((n, 24), name="A")
    k = te.reduce_axis((0, 24), name="k")
    B = te.compute((n, 24), lambda i, j: A[i, j] * 2 + 1, name="B")
    C = te.compute((n,), lambda i: te.sum(B[i, k] * A[i, k], axis=k), name="C")
    return n, A, B, C


def _schedule(n, A, B, C):
    s = te.create_schedule(C.op)
    BL = s.cache_read(B, "local", [C])
    io, ii = s[C].split(C.op.axis[0], factor=n // 2 + 1)  # a symbolic factor: the size is mapped too
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=5)
    CF = s.rfactor(C, ki)
    s[BL].compute_at(s[CF], s[CF].leaf_iter_vars[1])
    s[B].compute_at(s[CF], s[CF].leaf_iter_vars[1])
    s[CF].unroll(s[CF].op.axis[0])
    return s, BL


def test_replay_onto_fresh_tensors_of_the_same_program():
    n, A, B, C = _program()
    s, BL = _schedule(n, A, B, C)
    n2, A2, B2, C2 = _program()
    again = s.history.replay(onto=[C2.op])
    assert again is not s and again[C2].op is not s[C].op
    want = str(tessel.lower(s, [A, C], simple_mode=True))
    got = str(tessel.lower(again, [A2, C2], simple_mode=True))
    assert got == want and "n" in want
    assert corresponding(BL, s, again).name == "B.local"
    a = rand(7, 24)
    b = a * 2 + 1
    check(again, [A2, C2], [a], [(b * a).sum(axis=1)], rtol=1e-5)


def test_replay_refuses_another_program():
    n, A, B, C = _program()
    s, _ = _schedule(n, A, B, C)
    D = te.compute((n,), lambda i: A[i, 0] + 1, name="D")
    with pytest.raises(ScheduleError, match="replay onto a schedule of another computation"):
        s.history.replay(onto=[D.op])


def test_steps_are_data():
    n, A, B, C = _program()
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=4)
    step = s.history[1]
    assert step.primitive == "split" and step.target == StageRef(2)
    assert step.args == (AxisRef(2, 0),) and step.kwargs == {"factor": 4}
    assert step.call == "s[C].split(i, factor=4)" and step.lineno is not None


# ---- copies --------------------------------------------------------------------------------------
def test_copy_is_independent_of_the_original():
    n, A, B, C = _program()
    s = te.create_schedule(C.op)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=4)
    s[C].pragma(s[C].op.axis[0], "auto_unroll_max_step", 4)
    before = str(tessel.lower(s, [A, C], simple_mode=True))
    steps = len(s.history)
    t = s.copy()
    CF = t.rfactor(C, ki)
    t[B].compute_at(t[CF], t[CF].leaf_iter_vars[1])
    t[C].pragma(t[C].op.axis[0], "auto_unroll_max_step", 64)  # a new pragma dict, not the original's
    t[C].parallel(t[C].op.axis[0])
    assert str(tessel.lower(s, [A, C], simple_mode=True)) == before
    assert len(s.history) == steps and len(t.history) == steps + 4
    assert s[C].iter_var_attrs[C.op.axis[0]].pragmas == {"auto_unroll_max_step": 4}
    # the copy's own history rebuilds the copy
    assert str(t.history.replay().__class__.__name__) == "Schedule"
    want, got = replayed_lowering(t, [A, C])
    assert got == want and "C.rf" in want


def test_primitives_change_no_ir_node():
    """rfactor used to give split loops their domain afterwards, fuse its loop variable a dtype."""
    n, A, B, C = _program()
    s = te.create_schedule(C.op)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=5)
    kio, kii = s[C].split(ki, factor=2)
    every = [iv for st in s.stages for iv in st.all_iter_vars]
    fields = [(iv.dom, iv.var, iv.var.dtype, iv.iter_type) for iv in every]
    s.rfactor(C, kii)
    assert [(iv.dom, iv.var, iv.var.dtype, iv.iter_type) for iv in every] == fields
    assert ko.dom is not None and int(ko.dom.extent) == 5  # known when the loop was made

    m = te.var("m", "int64")
    X = te.placeholder((m, 10), name="X")
    Y = te.compute((m, 10), lambda i, j: X[i, j] + 1, name="Y")
    s = te.create_schedule(Y.op)
    f = s[Y].fuse(*Y.op.axis)  # an int64 and an int32 loop: the fused loop is int64 from the start
    assert f.dtype == "int64" and [str(iv.dtype) for iv in Y.op.axis] == ["int64", "int32"]
    want, got = replayed_lowering(s, [X, Y])
    assert got == want


# ---- legality as data ----------------------------------------------------------------------------
def _bicycle():
    return four_stage_chain("bicycle")


def test_a_stage_named_bicycle_is_not_an_attachment_cycle():
    A, B, bike, D = _bicycle()
    s = te.create_schedule(D.op)
    s[B].compute_at(s[bike], bike.op.axis[0])
    s[bike].compute_inline()
    (v,) = s.violations()
    assert v.kind is ViolationKind.INLINED_TARGET and v.rule == "inlined-target"
    assert [st.name for st in v.stages] == ["B", "bicycle"] and [iv.name for iv in v.loops] == ["i"]

    s = te.create_schedule(D.op)
    s[B].compute_at(s[bike], bike.op.axis[1])
    s[bike].split(bike.op.axis[1], factor=2)  # moves B to j.inner; put it back on the stale loop
    s[B].attach_ivar = bike.op.axis[1]
    (v,) = s.violations()
    assert v.kind is ViolationKind.STALE_ATTACHMENT
    assert v.fix == "s[B].compute_at(s[bicycle], s[bicycle].leaf_iter_vars[2])"


def test_a_fix_is_steps_checked_by_replay():
    A, B, bike, D = _bicycle()
    s = te.create_schedule(D.op)
    s[B].compute_at(s[D], D.op.axis[0])
    with pytest.raises(ScheduleError) as info:
        s.verify()
    err = info.value
    assert err.kind is ViolationKind.LCA and err.stages == ("B", "bicycle", "D") and err.loops == ("i",)
    assert err.fix == "s[bicycle].compute_at(s[D], D.op.axis[0])"
    assert [st.primitive for st in err.fix_steps.steps] == ["compute_at"]
    err.fix_steps.apply(s)
    assert s.verify() is s and s[bike].attach_stage is s[D]
    a = rand(8, 6)
    check(s, [A, D], [a], [(a + 1) * 2 - 3])


def test_a_bug_while_checking_a_fix_is_an_internal_error(monkeypatch):
    A, B, bike, D = _bicycle()
    s = te.create_schedule(D.op)
    s[B].compute_at(s[D], D.op.axis[0])
    from tessel.schedule.stage import Stage

    def broken(self, *args, **kwargs):
        raise KeyError("a bug in a primitive")

    monkeypatch.setattr(Stage, "compute_at", broken)
    monkeypatch.setattr(Stage, "compute_root", broken)
    with pytest.raises(InternalError, match="a bug in a primitive") as info:
        s.verify()
    assert not isinstance(info.value, ScheduleError)


def test_rfactor_follows_the_reducers_declaration():
    A = te.placeholder((5, 24), name="A")
    k = te.reduce_axis((0, 24), name="k")
    plus = te.comm_reducer(lambda x, y: x + y, lambda t: te.const(0, t), name="plus", associative=False)
    B = te.compute((5,), lambda i: plus(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=4)
    with pytest.raises(ScheduleError) as info:
        s.rfactor(B, ki)  # sums do reorder, but the reducer says its combine does not: it is trusted
    assert info.value.kind is ViolationKind.RFACTOR_ORDER_DEPENDENT_REDUCER
    assert "declared not associative (associative=False)" in info.value.explanation
    assert [st.name for st in s.stages] == ["A", "B"]
    a = rand(5, 24)
    check(s, [A, B], [a], [a.sum(axis=1)], rtol=1e-5)

    swap = te.comm_reducer(lambda x, y: y + x, lambda t: te.const(0, t), name="swapped", commutative=False)
    B2 = te.compute((5,), lambda i: swap(A[i, k], axis=k), name="B2")
    s2 = te.create_schedule(B2.op)
    with pytest.raises(ScheduleError, match="declared not commutative"):
        s2.rfactor(B2, k)


def test_snapshots_replay_the_steps_on_a_copy_of_the_program():
    n, A, B, C = _program()
    s, BL = _schedule(n, A, B, C)
    snap = s.history[3].snapshot  # after the second split, before rfactor
    assert [st.name for st in snap.stages] == ["A", "B", "B.local", "C"]
    assert [iv.name for iv in snap.stages[3].leaf_iter_vars] == ["i.outer", "i.inner", "k.outer", "k.inner"]
    assert s.history[3].in_snapshot(BL).op is snap.stages[2].op and snap.stages[0].op is not A.op
    got = str(tessel.lower(snap, [s.history[3].in_snapshot(A), s.history[3].in_snapshot(C)], simple_mode=True))
    assert "k.inner" in got
    assert np.all([st.snapshot is not None for st in s.history])
