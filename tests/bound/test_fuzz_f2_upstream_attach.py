"""Fuzz family F2: a stage computed inside the loops of a stage it reads (directly or through
others) made InferBound raise a raw KeyError(iter_var) (seed 0 cases 17, 23, 26, 49, 53, 79,
100, 236). InferBound now refuses it with a ScheduleError naming the stage and the loop, with a
fix; a command given meanwhile is judged at build, where verify (or InferBound) refuses it."""

import numpy as np
import pytest

from tessel import ScheduleError, te
from tessel.bound.infer import run_infer_bound
from tessel.testing import check, rand

TARGETS = ("c", "python")


def _f2_program():
    A = te.placeholder((33, 10), name="A", dtype="int16")
    kb = te.reduce_axis((0, 10), name="kb")
    Bp = te.compute((33,), lambda i: A[i, 0] * 2 + 1, name="Bp")
    B = te.compute((33,), lambda i: te.sum(A[i, kb] * 2, axis=kb, init=Bp[i]), name="B")
    C = te.compute((35,), lambda i: te.if_then_else(te.all(i >= 1, i < 34), B[i - 1], -3), name="C")
    D = te.compute((35,), lambda i: C[34 - i] + 2, name="D")
    a = rand(33, 10, dtype="int16")
    rb = ((a[:, 0] * 2 + 1).astype(np.int64) + (a.astype(np.int64) * 2).sum(axis=1)).astype(np.int16)
    rd = (np.pad(rb, [(1, 1)], constant_values=-3)[::-1] + 2).astype(np.int16)
    return A, Bp, B, C, D, a, rd


def test_attachment_into_a_stage_it_reads_is_refused_at_build_with_a_working_fix():
    """F2 itself: C attached in Bp, which C reads through B. TE compute_at leaves legality to
    verify (test_legality.test_attachment_cycle); a command given meanwhile must not crash."""
    A, Bp, B, C, D, a, rd = _f2_program()
    s = te.create_schedule([D.op])
    s[C].compute_at(s[Bp], s[Bp].leaf_iter_vars[0])
    with pytest.raises(ScheduleError, match="stage C is computed inside Bp's loop over i, but C reads Bp") as info:
        run_infer_bound(s)  # was KeyError(iter_var i)
    assert info.value.rule == "unbounded-reader" and info.value.fix == "s[C].compute_root()"
    s[B].skew(s[B].leaf_iter_vars[0], s[B].leaf_iter_vars[1], 0, 1)  # was KeyError: judged at build now
    s[B].reverse(s[B].leaf_iter_vars[0])
    with pytest.raises(ScheduleError) as info:
        check(s, [A, D], [a], [rd], targets=TARGETS)
    err = info.value
    assert err.rule == "attached-to-non-consumer" and err.fix == "s[C].compute_at(s[D], D.op.axis[0])"
    exec(err.fix, {"s": s, **err.fix_names})
    with pytest.raises(ScheduleError, match=r"B \(init\) runs inside i and not inside kb"):
        check(s, [A, D], [a], [rd], targets=TARGETS)  # the skew, judged now that the model exists
    s = te.create_schedule([D.op])
    s[C].compute_at(s[D], D.op.axis[0])
    with pytest.raises(ScheduleError, match=r"B \(init\) runs inside i and not inside kb"):
        s[B].skew(s[B].leaf_iter_vars[0], s[B].leaf_iter_vars[1], 0, 1)  # on a legal schedule: refused at once


def test_fixed_f2_schedule_gives_the_right_values():
    A, Bp, B, C, D, a, rd = _f2_program()
    s = te.create_schedule([D.op])
    s[C].compute_at(s[Bp], s[Bp].leaf_iter_vars[0])
    s[B].reverse(s[B].leaf_iter_vars[0])
    v = s.violations()
    assert [x.rule for x in v] == ["attached-to-non-consumer"]
    exec(v[0].fix, {"s": s, **v[0].names})
    check(s, [A, D], [a], [rd], targets=TARGETS)


def _recurrence_program():
    """Case 79: B is read by the recurrence's init C.def0 and by its update C, which reads C.def0."""
    A = te.placeholder((10, 10), name="A", dtype="float32")
    B = te.compute((10, 20), lambda i, j: A[i, j // 2] * 0.75, name="B")
    C = te.recurrence((10, 20), [te.define(lambda h, i, j: B[i, j]),
                                 te.define(lambda h, i, j: B[i, j] + h[i - 1, j - 1] * 0.5,
                                           where=lambda i, j: te.all(i >= 1, j >= 1))], name="C")
    a = rand(10, 10, dtype="float32")
    rb = np.repeat(a, 2, axis=1).astype(np.float64) * 0.75
    rc = rb.copy()
    for i in range(1, 10):
        for j in range(1, 20):
            rc[i, j] = rb[i, j] + rc[i - 1, j - 1] * 0.5
    return A, B, C, a, rc.astype(np.float32)


def test_inline_at_does_not_make_a_reader_share_the_loops_of_a_stage_it_reads():
    """inline_at(2) of B made C share the loops of C.def0, which C reads; InferBound then raised
    KeyError(iter_var i) at the next command or build. The rule (legality): a stage sharing a
    host's loops must not read the host. Refused as asked; best effort takes a legal position."""
    A, B, C, a, rc = _recurrence_program()
    s = te.create_schedule([C.op])
    with pytest.raises(ScheduleError, match=r"C is attached inside C\.def0's loop over j.*C reads C\.def0"):
        s[B].inline_at(2, best_effort=False)
    assert all(st.attach_type == "root" for st in s.stages)  # the refusal left the schedule as it was
    s[B].inline_at(2, best_effort=True)
    s.propagate(B, 1)
    s[C].skew(s[C].leaf_iter_vars[0], s[C].leaf_iter_vars[1], 1, 1)
    assert s.violations() == []
    check(s, [A, C], [a], [rc], targets=TARGETS, rtol=1e-4, atol=1e-4)
