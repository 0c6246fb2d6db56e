"""Propagation and inlining as public tools (seed 003; NVFUSER.md section 8, scenarios 16-18):
``s.propagate``, ``s.inline_most``, ``s[T].inline_at``, ``s.inline_all_at``, each computed on
random data against NumPy with both targets."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check, rand

from tessel import te
from tessel.errors import ScheduleError
from tessel.schedule.dataflow import py_name


def test_propagate_with_a_selector():
    """Scenario 16: only t0 (against the flow) and t3 (with it) may follow t2's split."""
    n = 53
    a0 = te.placeholder((n,), name="a0")
    a1 = te.placeholder((n,), name="a1")
    t0 = te.compute((n,), lambda i: a0[i] + 0.0, name="t0")
    t1 = te.compute((n,), lambda i: a1[i] + 0.0, name="t1")
    t2 = te.compute((n,), lambda i: t0[i] + t1[i], name="t2")
    t3 = te.compute((n,), lambda i: te.sin(t2[i]), name="t3")
    t4 = te.compute((n,), lambda i: te.cos(t2[i]), name="t4")
    s = te.create_schedule([t3.op, t4.op])
    s[t2].split(t2.op.axis[0], factor=10)
    changed = s.propagate(t2, -1, selector=[t0, t3])
    assert sorted(changed) == ["t0", "t3"]
    assert {t.name: len(s[t].leaf_iter_vars) for t in (t0, t1, t2, t3, t4)} == {
        "t0": 2, "t1": 1, "t2": 2, "t3": 2, "t4": 1}
    x, y = rand(n), rand(n, seed=1)
    check(s, [a0, a1, t3, t4], [x, y], [np.sin(x + y), np.cos(x + y)])


def test_propagate_only_what_feeds_the_position():
    """Scenario 17: from t1 at position 2 only split(0, 2) reaches t0."""
    a = te.placeholder((22, 105), name="a")
    t0 = te.compute((22, 105), lambda i, j: a[i, j] * 1.5, name="t0")
    t1 = te.compute((22, 105), lambda i, j: te.sin(t0[i, j]), name="t1")
    s = te.create_schedule(t1.op)
    i, j = t1.op.axis
    s[t1].split(i, factor=2)
    _, ji = s[t1].split(j, factor=3)
    s[t1].split(ji, factor=5)
    s.propagate(t1, 2)
    assert [r.kind for r in s[t0].relations] == ["split"]
    assert [r.params()["factor"].value for r in s[t0].relations] == [2]
    assert len(s[t0].leaf_iter_vars) == 3
    x = rand(22, 105)
    check(s, [a, t1], [x], [np.sin(x * 1.5)])


def test_propagate_never_overwrites_what_matches():
    a = te.placeholder((40, 30), name="a")
    t0 = te.compute((40, 30), lambda i, j: a[i, j] + 1.0, name="t0")
    t1 = te.compute((40, 30), lambda i, j: t0[i, j] * 2.0, name="t1")
    s = te.create_schedule(t1.op)
    s[t1].split(t1.op.axis[0], factor=8)
    assert s.propagate(t1) == ["t0"]
    before = list(s[t0].leaf_iter_vars)
    assert s.propagate(t1) == []  # already matching: left alone
    assert s[t0].leaf_iter_vars == before


def chain5(shape=(2, 3, 4)):
    """Scenario 18's fusion: sin, cos, transpose(1, 2), exp, tan."""
    a, b, c = shape
    t0 = te.placeholder(shape, name="t0")
    t1 = te.compute(shape, lambda i, j, k: te.sin(t0[i, j, k]), name="t1")
    t2 = te.compute(shape, lambda i, j, k: te.cos(t1[i, j, k]), name="t2")
    t3 = te.compute((a, c, b), lambda i, k, j: t2[i, j, k], name="t3")
    t4 = te.compute((a, c, b), lambda i, k, j: te.exp(t3[i, k, j]), name="t4")
    t5 = te.compute((a, c, b), lambda i, k, j: te.tan(t4[i, k, j]), name="t5")
    return t0, [t1, t2, t3, t4], t5


def chain5_ref(x):
    return np.tan(np.exp(np.cos(np.sin(x)).transpose(0, 2, 1)))


def test_inline_most_mismatched_dims():
    t0, (t1, t2, t3, t4), t5 = chain5()
    s = te.create_schedule(t5.op)
    got = s.inline_most()
    assert {k: got[k] for k in ("t1", "t2", "t3", "t4")} == {"t1": 3, "t2": 1, "t3": 3, "t4": 3}
    assert s[t2].attach_ivar is s[t5].leaf_iter_vars[0]
    s.verify()
    x = rand(2, 3, 4)
    check(s, [t0, t5], [x], [chain5_ref(x)], rtol=1e-4)


def test_inline_all_at_maps_positions_through_the_reference():
    t0, (t1, t2, t3, t4), t5 = chain5()
    s = te.create_schedule(t5.op)
    got = s.inline_all_at(t5, -1, best_effort=True)
    assert {k: got[k] for k in ("t1", "t2", "t3", "t4")} == {"t1": 1, "t2": 1, "t3": 3, "t4": 3}
    x = rand(2, 3, 4)
    check(s, [t0, t5], [x], [chain5_ref(x)], rtol=1e-4)


def test_inline_most_after_a_merge():
    """Scenario 18, MismatchedDims4: t3's axes 1 and 2 fused; t3 and t2 stop early."""
    t0, (t1, t2, t3, t4), t5 = chain5((3, 5, 7))
    s = te.create_schedule(t5.op)
    _, k, j = s[t3].leaf_iter_vars
    s[t3].fuse(k, j)
    got = s.inline_most()
    assert {k: got[k] for k in ("t1", "t2", "t3", "t4")} == {"t1": 3, "t2": 1, "t3": 1, "t4": 3}
    x = rand(3, 5, 7)
    check(s, [t0, t5], [x], [chain5_ref(x)], rtol=1e-4)


def test_inline_at_full_and_refused_past_a_reduction():
    a = te.placeholder((31, 29), name="a")
    t1 = te.compute((31, 29), lambda i, j: te.sin(a[i, j]), name="t1")
    t2 = te.compute((31, 29), lambda i, j: te.cos(t1[i, j]), name="t2")
    s = te.create_schedule(t2.op)
    assert s[t1].inline_at(-1) == 2
    assert s[t1].attach_ivar is s[t2].leaf_iter_vars[1]
    x = rand(31, 29)
    check(s, [a, t2], [x], [np.cos(np.sin(x))])

    k = te.reduce_axis((0, 29), name="k")
    r = te.compute((31,), lambda i: te.sum(a[i, k], axis=k), name="r")
    u = te.compute((31, 29), lambda i, j: r[i] * a[i, j], name="u")
    s2 = te.create_schedule(u.op)
    with pytest.raises(ScheduleError, match=r"r.*largest legal one is 1.*reduction loop") as err:
        s2[r].inline_at(2)
    assert err.value.fix == "s[r].inline_at(1)"
    assert s2[r].inline_at(2, best_effort=True) == 1
    check(s2, [a, u], [x], [x.sum(axis=1, keepdims=True) * x], rtol=1e-4)


def test_the_inline_at_fix_spells_the_stage_as_an_identifier():
    """The fix is code a user runs: a stage's name reaches it only through the name-safety module."""
    a = te.placeholder((31, 29), name="a")
    k = te.reduce_axis((0, 29), name="k")
    r = te.compute((31,), lambda i: te.sum(a[i, k], axis=k), name='r"]; __import__("os").system("x")#')
    u = te.compute((31, 29), lambda i, j: r[i] * a[i, j], name="u")
    s = te.create_schedule(u.op)
    with pytest.raises(ScheduleError, match="largest legal one is 1") as err:
        s[r].inline_at(2)
    assert err.value.fix == f"s[{py_name(r.op.name)}].inline_at(1)" and '"' not in err.value.fix


def test_vectorized_loop_stops_inlining():
    a = te.placeholder((16, 24), name="a")
    t1 = te.compute((16, 24), lambda i, j: a[i, j] * 3.0, name="t1")
    t2 = te.compute((16, 24), lambda i, j: t1[i, j] + 1.0, name="t2")
    s = te.create_schedule(t2.op)
    s[t1].vectorize(t1.op.axis[1])
    assert s[t1].inline_at(-1, best_effort=True) == 1
    x = rand(16, 24)
    check(s, [a, t2], [x], [x * 3 + 1])


def test_unmappable_read_is_named():
    a = te.placeholder((40,), name="a")
    t1 = te.compute((40,), lambda i: a[i] + 1.0, name="t1")
    t2 = te.compute((20,), lambda i: t1[i * 2], name="t2")
    s = te.create_schedule(t2.op)
    with pytest.raises(ScheduleError, match=r"t2 reads it as t1\[i\*2\]"):
        s[t1].inline_at(1)
    assert s[t1].inline_at(1, best_effort=True) == 0
    x = rand(40)
    check(s, [a, t2], [x], [x[::2] + 1])


def _bounded_chain(n):
    """nvFuser's BoundedDirectionSelection1: t1 = t0, t2 = t1, t3 = t2 + t1."""
    t0 = te.placeholder((n, 40), name="t0")
    t1 = te.compute((n, 40), lambda i, j: t0[i, j] * 1.0, name="t1")
    t2 = te.compute((n, 40), lambda i, j: t1[i, j] + 2.0, name="t2")
    t3 = te.compute((n, 40), lambda i, j: t2[i, j] + t1[i, j], name="t3")
    return t0, t1, t2, t3


def test_bounded_backward_propagation_reaches_what_lies_between():
    """backward(t3, -1, to={t0, t2}): t2 follows and so does t1, which lies between t3 and t0."""
    t0, t1, t2, t3 = _bounded_chain(te.var("n"))
    s = te.create_schedule(t3.op)
    _, ji = s[t3].split(t3.op.axis[1], factor=5)
    s[t3].split(ji, factor=8)
    changed = s.propagate(t3, -1, direction="backward", to=[t0, t2])
    assert sorted(changed) == ["t1", "t2"]
    assert len(s[t1].leaf_iter_vars) == len(s[t2].leaf_iter_vars) == 4
    for n in (1, 6):
        x = rand(n, 40)
        check(s, [t0, t3], [x], [(x + 2) + x])


def test_bounded_backward_stops_at_the_bound_and_forward_goes_only_to_readers():
    t0, t1, t2, t3 = _bounded_chain(9)
    s = te.create_schedule(t3.op)
    s[t3].split(t3.op.axis[0], factor=4)
    assert s.propagate(t3, -1, direction="backward", to=[t2]) == ["t2"]
    s2 = te.create_schedule(t3.op)
    s2[t1].split(t1.op.axis[0], factor=3)
    assert sorted(s2.propagate(t1, -1, direction="forward")) == ["t2", "t3"]
    with pytest.raises(ScheduleError, match="direction"):
        s2.propagate(t1, -1, direction="sideways")
    x = rand(9, 40)
    check(s, [t0, t3], [x], [(x + 2) + x])
    check(s2, [t0, t3], [x], [(x + 2) + x])
