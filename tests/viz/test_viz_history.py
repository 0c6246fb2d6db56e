"""Every schedule records its primitive calls: the call, the caller's line, a frozen snapshot;
a failing call is a step too; a primitive built from others is one step."""

from __future__ import annotations

import pytest

import tessel
from tessel import te
from tessel.schedule import history


def _program():
    n = te.var("n")
    A = te.placeholder((n, 32), name="A")
    B = te.compute((n, 32), lambda i, j: A[i, j] + 1, name="B")
    C = te.compute((n, 32), lambda i, j: B[i, j] * 2, name="C")
    return A, B, C


def test_calls_lines_results():
    A, B, C = _program()
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 4)
    s[B].compute_at(s[C], yo)
    s[C].vectorize(yi)
    recs = s.history
    assert [r.call for r in recs] == [
        "create_schedule(C.op)",
        "s[C].tile(i, j, 8, 4)",  # one step: its splits and reorder are not separate steps
        "s[B].compute_at(s[C], j.outer)",
        "s[C].vectorize(j.inner)",
    ]
    assert recs[1].result == "i.outer, j.outer, i.inner, j.inner"
    assert recs[1].code == "xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 4)"
    assert recs[1].filename == __file__
    assert recs[2].lineno == recs[1].lineno + 1
    assert [r.index for r in recs] == [0, 1, 2, 3]
    assert "tile" in repr(recs[1])


def test_keyword_arguments_and_lists():
    A, B, C = _program()
    s = te.create_schedule([C.op])
    s[C].split(C.op.axis[1], nparts=4)
    s[C].reorder([C.op.axis[0]])
    assert s.history[0].call == "create_schedule(C.op)"
    assert s.history[1].call == "s[C].split(j, nparts=4)"
    assert s.history[2].call == "s[C].reorder([i])"


def test_failing_call_is_recorded_and_still_raises():
    A, B, C = _program()
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    with pytest.raises(tessel.ScheduleError) as info:
        s[C].fuse(xi, C.op.axis[0])
    rec = s.history[-1]
    assert rec.error is info.value and rec.primitive == "fuse"
    assert "raised ScheduleError" in repr(rec)
    assert [st.leaf_iter_vars for st in rec.snapshot.stages][-1][0].name == "i.outer"


def test_snapshots_are_frozen():
    A, B, C = _program()
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=4)
    s[B].compute_inline()
    first = s.history[1].snapshot
    assert [iv.name for iv in first.stages[-1].leaf_iter_vars] == ["i.outer", "i.inner", "j"]
    assert first.stages[1].attach_type == "root"  # the later compute_inline does not reach back
    assert s.stages[1].attach_type == "inline"
    assert first is not s and first.history == []
    # a user's tensor is found in the snapshot, and lowering the snapshot works
    A2 = s.history[1].in_snapshot(A)
    assert A2 is not None and A2 is not A and A2.name == "A"
    text = str(tessel.lower(first, [A2, s.history[1].in_snapshot(C)], simple_mode=True))
    assert "i.inner" in text


def test_snapshots_can_be_turned_off(monkeypatch):
    monkeypatch.setattr(history, "SNAPSHOTS", False)
    A, B, C = _program()
    s = te.create_schedule(C.op)
    s[C].parallel(C.op.axis[0])
    assert [r.snapshot for r in s.history] == [None, None]
    assert s.history[1].call == "s[C].parallel(i)"


def test_capture_sees_every_new_schedule():
    A, B, C = _program()
    te.create_schedule(C.op)
    with history.capture() as found:
        s1 = te.create_schedule(C.op)
        s2 = te.create_schedule(B.op)
    te.create_schedule(C.op)
    assert found == [s1, s2]


def test_copies_do_not_record():
    A, B, C = _program()
    s = te.create_schedule(C.op)
    copy = getattr(s, "copy", None)
    if copy is None:
        pytest.skip("Schedule.copy not available")
    c = copy()
    c[C].split(C.op.axis[0], factor=2)
    assert len(s.history) == 1
