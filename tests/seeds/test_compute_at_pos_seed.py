"""Seed 003's own examples as tests, with the positions the seed argues for: the T2/T3 reduction
chain, the broadcast chain, #110 (a producer read by two reductions that meet again), softmax,
and the double broadcast (#322): refused, explained, and fixed by a fix that works."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check, rand

import tessel
from tessel import te
from tessel.errors import ScheduleError


def reduction_chain(n0, n1, n2):
    t0 = te.placeholder((n0, n1, n2), name="T0")
    t1 = te.compute((n0, n1, n2), lambda a, b, c: t0[a, b, c] * 2.0, name="T1")
    r = te.reduce_axis((0, n1), name="r1")
    t2 = te.compute((n0, n2), lambda a, c: te.sum(t1[a, r, c], axis=r), name="T2")
    t3 = te.compute((n0, n2), lambda a, c: t2[a, c] + 1.0, name="T3")
    return t0, t1, t2, t3


def test_reduction_chain_loses_the_axis_it_reduces():
    """T2[i0, r1, i2] = T1[i0, i1, i2]; T3[i0, i2] = T2: T1 at T2's position 2 and T2 at T3's
    position 1 -- the reduction inside the shared loops costs one position (the seed's argument)."""
    t0, t1, t2, t3 = reduction_chain(9, 13, 7)
    s = te.create_schedule(t3.op)
    i0, i2, r1 = s[t2].leaf_iter_vars
    s[t2].reorder(i0, r1, i2)
    s[t1].compute_at(s[t2], 2)
    assert (s[t1].compute_at_pos, s[t1].attach_ivar) == (2, r1)
    assert s[t2].max_producer_pos == 2 and s[t2].compute_at_pos == 0
    with pytest.raises(ScheduleError, match="would change its outer loops") as err:
        s[t2].compute_at(s[t3], 2)  # T2's i2 would have to move outside r1, where T1 is computed
    assert err.value.rule == "fixed-loops" and err.value.fix == "s[T2].compute_at(s[T3], 1)"
    assert s[t2].attach_ivar is None and s[t1].attach_ivar is r1  # refused: nothing changed
    err.value.fix_steps.apply(s)
    assert s[t2].compute_at_pos == 1 and s[t2].attach_stage is s[t3]
    assert (s[t1].compute_at_pos, s[t1].attach_ivar) == (2, r1)  # the earlier call is not disturbed
    a = rand(9, 13, 7)
    check(s, [t0, t3], [a], [(2 * a).sum(axis=1) + 1], rtol=1e-4, atol=1e-4)


def test_reduction_chain_best_effort_keeps_what_an_earlier_call_fixed():
    t0, t1, t2, t3 = reduction_chain(9, 13, 7)
    s = te.create_schedule(t3.op)
    i0, i2, r1 = s[t2].leaf_iter_vars
    s[t2].reorder(i0, r1, i2)
    s[t1].compute_at(s[t2], 2)
    s[t2].compute_at(s[t3], 2, mode="best_effort")  # position 2 would move i2 outside r1
    assert s[t2].compute_at_pos == 1 and s[t2].leaf_iter_vars == [i0, r1, i2]
    a = rand(9, 13, 7)
    check(s, [t0, t3], [a], [(2 * a).sum(axis=1) + 1], rtol=1e-4, atol=1e-4)


def test_reduction_moves_inside_when_nothing_is_fixed():
    """Replaying T2 as T3 at position 2 puts T2's reduction loop inside the shared loops."""
    t0, t1, t2, t3 = reduction_chain(9, 13, 7)
    s = te.create_schedule(t3.op)
    i0, i2, r1 = s[t2].leaf_iter_vars
    s[t2].reorder(i0, r1, i2)
    s[t2].compute_at(s[t3], -1)
    s.verify()
    assert s[t2].compute_at_pos == 2 and s[t2].leaf_iter_vars == [i0, i2, r1]
    a = rand(9, 13, 7)
    check(s, [t0, t3], [a], [(2 * a).sum(axis=1) + 1], rtol=1e-4, atol=1e-4)


def test_broadcast_chain_trailing_broadcast_is_not_inlined():
    """T2[i0, b1, i2] = T1[i0, i2]; T3[i0, i1, i2] = T2 + X: T1 at 1, T2 at 2 (the seed's case)."""
    n0, n1, n2 = 11, 6, 5
    t0 = te.placeholder((n0, n2), name="T0")
    x = te.placeholder((n0, n1, n2), name="X")
    t1 = te.compute((n0, n2), lambda a, c: t0[a, c] * 3.0, name="T1")
    t2 = te.compute((n0, n1, n2), lambda a, b, c: t1[a, c], name="T2")
    t3 = te.compute((n0, n1, n2), lambda a, b, c: t2[a, b, c] + x[a, b, c], name="T3")
    s = te.create_schedule(t3.op)
    i0, i1, _ = s[t3].leaf_iter_vars
    s[t1].compute_at(s[t3], 2)
    assert (s[t1].compute_at_pos, s[t1].attach_ivar) == (1, i0)
    assert (s[t2].compute_at_pos, s[t2].attach_ivar) == (2, i1)
    a, b = rand(n0, n2), rand(n0, n1, n2, seed=3)
    check(s, [t0, x, t3], [a, b], [3 * a[:, None, :] + b])


def issue110(n0, n1):
    t0 = te.placeholder((n0, n1), name="T0")
    t1 = te.compute((n0, n1), lambda i, j: te.exp(t0[i, j]), name="T1")
    r = te.reduce_axis((0, n1), name="r")
    t2 = te.compute((n0,), lambda i: te.max(t1[i, r], axis=r), name="T2")
    q = te.reduce_axis((0, n1), name="q")
    t3 = te.compute((n0,), lambda i: te.min(t1[i, q], axis=q), name="T3")
    t4 = te.compute((n0,), lambda i: t2[i] + t3[i], name="T4")
    return t0, t1, t2, t3, t4


def test_issue_110_inlined_into_two_reductions_is_refused_and_fixed():
    t0, t1, t2, t3, t4 = issue110(63, 65)
    s = te.create_schedule(t4.op)
    with pytest.raises(ScheduleError) as err:
        s[t1].compute_at(s[t2], -1)
    ex = err.value
    assert ex.rule == "recompute-reduction"
    assert "T2" in str(ex) and ex.loops == ("r",) and "recomputed" in str(ex)
    assert ex.fix == "s[T1].compute_at(s[T2], 1)"
    assert not s.position_log and all(st.attach_ivar is None for st in s.stages)  # left as it was
    ex.fix_steps.apply(s)
    # T1 is computed inside the loop that both T2 and T3 (and T4) share: once per row
    assert {t.name: (s[t].compute_at_pos, s[t].max_producer_pos) for t in (t1, t2, t3, t4)} == {
        "T1": (1, 0), "T2": (1, 1), "T3": (1, 1), "T4": (0, 1)}
    assert s.position_log[-1].common_consumer == "T4"
    host = s[t4].leaf_iter_vars[0]
    assert all(s[t].attach_ivar is host for t in (t1, t2, t3))
    text = str(tessel.lower(s, [t0, t4], simple_mode=True))
    assert [ln for ln in text.splitlines() if ln.startswith("produce ")] == ["produce T4 {"]
    a = rand(63, 65)
    e = np.exp(a)
    check(s, [t0, t4], [a], [e.max(axis=1) + e.min(axis=1)], rtol=1e-5)


def test_issue_110_best_effort_lands_on_the_legal_position():
    """T2 and T3 stay at the row loop (their readers need finished values); T1 goes inside the
    reduction loop both share: T3 runs its update in T2's loop r, its init around it."""
    t0, t1, t2, t3, t4 = issue110(17, 33)
    s = te.create_schedule(t4.op)
    s[t1].compute_at(s[t2], -1, mode="best_effort")
    assert [s[t].compute_at_pos for t in (t1, t2, t3, t4)] == [2, 1, 1, 0]
    assert s[t3].attach_stage is s[t2] and s[t3].placement.store == (s[t4].leaf_iter_vars[0],)
    s.verify()
    a = rand(17, 33)
    e = np.exp(a)
    check(s, [t0, t4], [a], [e.max(axis=1) + e.min(axis=1)])


def softmax(n0, n1):
    t0 = te.placeholder((n0, n1), name="t0")
    k = te.reduce_axis((0, n1), name="k")
    t1 = te.compute((n0,), lambda i: te.sum(t0[i, k], axis=k), name="t1")
    t2 = te.compute((n0, n1), lambda i, j: t1[i], name="t2")
    t3 = te.compute((n0, n1), lambda i, j: t0[i, j] + 1.0, name="t3")
    t4 = te.compute((n0, n1), lambda i, j: t2[i, j] * t3[i, j], name="t4")
    k2 = te.reduce_axis((0, n1), name="k2")
    t5 = te.compute((n0,), lambda i: te.sum(t4[i, k2], axis=k2), name="t5")
    t6 = te.compute((n0, n1), lambda i, j: t5[i], name="t6")
    t7 = te.compute((n0, n1), lambda i, j: t6[i, j] - t4[i, j], name="t7")
    return t0, [t1, t2, t3, t4, t5, t6], t7


def softmax_ref(a):
    s1 = a.sum(axis=1, keepdims=True)
    t4 = s1 * (a + 1)
    return t4.sum(axis=1, keepdims=True) - t4


def test_softmax_compute_at_outer_position():
    t0, (t1, t2, t3, t4, t5, t6), t7 = softmax(63, 65)
    s = te.create_schedule(t7.op)
    s[t1].compute_at(s[t7], 1)
    assert s.position_log[-1].common_consumer == "t7"
    assert all(s[t].compute_at_pos == 1 for t in (t1, t2, t4, t5, t6))
    assert s[t3].compute_at_pos == 0 and s[t3].attach_ivar is None  # not downstream of t1: it stays
    s.verify()
    a = rand(63, 65)
    check(s, [t0, t7], [a], [softmax_ref(a)], rtol=1e-4, atol=1e-3)


def test_softmax_compute_at_innermost_is_refused_with_a_working_fix():
    t0, mids, t7 = softmax(63, 65)
    s = te.create_schedule(t7.op)
    with pytest.raises(ScheduleError) as err:
        s[mids[0]].compute_at(s[t7], -1)
    ex = err.value
    assert ex.rule == "recompute-reduction" and "reduction loop" in str(ex)
    assert ex.fix == "s[t1].compute_at(s[t7], 1)"
    ex.fix_steps.apply(s)
    a = rand(63, 65)
    check(s, [t0, t7], [a], [softmax_ref(a)], rtol=1e-4, atol=1e-3)


def double_broadcast(n):
    t0 = te.placeholder((n,), name="t0")
    t1 = te.compute((n,), lambda i: t0[i] * 0.5, name="t1")
    t2 = te.compute((n, n), lambda i, j: t1[j], name="t2")
    t3 = te.compute((n, n), lambda i, j: t1[i], name="t3")
    t4 = te.compute((n, n), lambda i, j: t2[i, j] + t3[i, j], name="t4")
    return t0, t1, t2, t3, t4


def test_double_broadcast_is_refused_with_a_working_fix():
    t0, t1, t2, t3, t4 = double_broadcast(37)
    s = te.create_schedule(t4.op)
    with pytest.raises(ScheduleError) as err:
        s[t1].compute_at(s[t3], -1)
    ex = err.value
    assert ex.rule == "broadcast-two-ways" and "t1" in str(ex) and "t2" in str(ex)
    assert "compute_at(s[t4]" in ex.fix  # t1 stays computed once; its readers move instead
    ex.fix_steps.apply(s)
    s.verify()
    assert s[t1].attach_ivar is None and s[t2].compute_at_pos == 2 and s[t3].compute_at_pos == 2
    a = rand(37)
    check(s, [t0, t4], [a], [0.5 * a[None, :] + 0.5 * a[:, None]])


def _size_one_broadcasts(n):
    """nvFuser's ComputeAtFailDueToRootMapping: t1 broadcast along a new outer axis of size one
    (t2) and along a new inner one (t3), then t4 = t2 + t3 (an outer sum)."""
    t0 = te.placeholder((n,), name="t0")
    t1 = te.compute((n,), lambda i: t0[i] + 1.0, name="t1")
    t2 = te.compute((1, n), lambda b, i: t1[i], name="t2")
    t3 = te.compute((n, 1), lambda i, b: t1[i], name="t3")
    t4 = te.compute((n, n), lambda i, j: t2[0, j] + t3[i, 0], name="t4")
    return t0, t1, t2, t3, t4


@pytest.mark.parametrize("n", [7, 33])
def test_size_one_broadcasts_two_ways_are_refused_in_standard_mode(n):
    """t4's outer loop is t1's axis through t3 and a broadcast through t2: nvFuser refuses
    t1.computeAt(t4, 1), and so does standard mode (it used to leave t1 at position 0 without a
    word); the fix moves the readers instead, and best effort computes t1 at position 0."""
    t0, t1, t2, t3, t4 = _size_one_broadcasts(n)
    s = te.create_schedule(t4.op)
    with pytest.raises(ScheduleError) as err:
        s[t1].compute_at(s[t4], 1)
    ex = err.value
    assert ex.rule == "broadcast-two-ways" and "t1" in str(ex) and "broadcast" in str(ex)
    assert s[t1].attach_ivar is None and s[t3].attach_ivar is None  # nothing moved
    ex.fix_steps.apply(s)
    a = rand(n)
    want = (a + 1)[None, :] + (a + 1)[:, None]
    check(s, [t0, t4], [a], [want])
    s2 = te.create_schedule(t4.op)
    s2[t1].compute_at(s2[t4], 1, mode="best_effort")
    assert s2[t1].compute_at_pos == 0
    check(s2, [t0, t4], [a], [want])


def _diamond(n0, n1):
    t0 = te.placeholder((n0, n1), name="t0")
    t1 = te.compute((n0, n1), lambda i, j: t0[i, j] * 0.5, name="t1")
    t2 = te.compute((n0, n1), lambda i, j: t1[i, j] + 1.0, name="t2")
    t3 = te.compute((n0, n1), lambda i, j: t2[i, j] * t1[i, j], name="t3")
    return t0, t1, t2, t3


def test_order_of_compute_at_calls_does_not_change_values():
    n0, n1 = 63, 65
    a = rand(n0, n1)
    got = []
    for order in ((1, 2), (2, 1)):
        t0, t1, t2, t3 = _diamond(n0, n1)
        s = te.create_schedule(t3.op)
        s[t3].split(t3.op.axis[1], factor=16)
        for k in order:
            s[t1 if k == 1 else t2].compute_at(s[t3], 2)
        s.verify()
        assert s[t1].compute_at_pos == 2 and s[t2].compute_at_pos == 2
        ref = (a * 0.5 + 1) * (a * 0.5)
        got.append(check(s, [t0, t3], [a], [ref]))
    assert len(got) == 2
