"""Standard mode's promise (``promises.py``): the producer a ``compute_at`` by position names gets
every consumer loop tied to it, or the call is refused with a fix that was seen to work; best
effort lowers instead and says what it lowered and why."""

from __future__ import annotations

import numpy as np
from helpers import check, rand

from tessel import te
from tessel.errors import ScheduleError
from tessel.schedule.axis_map import Graph
from tessel.schedule.promises import short_of_request, tied_loops


def fused_broadcast(n, m):
    """t1 over n; t2 = t1 broadcast along m; t3 = t2 + b, its two axes fused and split."""
    t0, b = te.placeholder((n,), name="t0"), te.placeholder((m, n), name="b")
    t1 = te.compute((n,), lambda j: t0[j] * 3.0, name="t1")
    t2 = te.compute((m, n), lambda i, j: t1[j], name="t2")
    t3 = te.compute((m, n), lambda i, j: t2[i, j] + b[i, j], name="t3")
    return t0, b, t1, t2, t3


def test_tied_loops_skip_loops_only_of_broadcast_axes():
    t0, b, t1, t2, t3 = fused_broadcast(5, 7)
    s = te.create_schedule(t3.op)
    assert tied_loops(Graph(s), s[t1], s[t3], 2) == [1]  # t3's i is a broadcast of t1
    s[t3].fuse(*t3.op.axis)
    assert tied_loops(Graph(s), s[t1], s[t3], 1) == [0]  # the fused loop is made from j too


def test_a_producer_short_of_a_tied_loop_is_refused_with_the_loop_named():
    t0, b, t1, t2, t3 = fused_broadcast(5, 7)
    s = te.create_schedule(t3.op)
    why = short_of_request(Graph(s), s[t1], s[t3], {id(s[t1]): []}, 2)
    assert why is not None and why.limit == 0 and "t3's loop j" in why.text and "silently" in why.text


def test_through_a_fused_broadcast_standard_mode_keeps_the_position_asked():
    """Symbolic sizes, a fuse and a split: t1 lands inside t3's outer fused loop, as asked."""
    n, m = te.var("n"), te.var("m")
    t0, b, t1, t2, t3 = fused_broadcast(n, m)
    s = te.create_schedule(t3.op)
    f = s[t3].fuse(*t3.op.axis)
    s[t3].split(f, factor=8)
    s[t1].compute_at(s[t3], 1)
    assert s[t1].compute_at_pos == 1 and s[t1].attach_stage is s[t3] and not s.position_log[-1].lowered
    for nn, mm in ((3, 5), (17, 2)):
        a, bb = rand(nn), rand(mm, nn, seed=1)
        check(s, [t0, b, t3], [a, bb], [3 * a[None, :] + bb])


def test_best_effort_says_what_it_lowered_and_standard_refuses_it():
    """Two reductions of one producer (nvFuser's ReductionMultiConsumer): standard mode refuses
    position -1 with a verified fix; best effort lowers and the report gives the reason."""
    n, m = 6, 11
    t0 = te.placeholder((n, m), name="t0")
    t1 = te.compute((n, m), lambda i, j: t0[i, j] + 1.0, name="t1")
    r2, r3 = te.reduce_axis((0, m), name="r2"), te.reduce_axis((0, m), name="r3")
    t2 = te.compute((n,), lambda i: te.sum(t1[i, r2], axis=r2), name="t2")
    t3 = te.compute((n,), lambda i: te.max(t1[i, r3], axis=r3), name="t3")
    t4 = te.compute((n,), lambda i: t2[i] * t3[i], name="t4")
    s = te.create_schedule(t4.op)
    try:
        s[t1].compute_at(s[t2], -1)
        raise AssertionError("standard mode accepted a position it cannot honour")
    except ScheduleError as err:
        assert err.fix and s[t1].compute_at_pos == 0
        err.fix_steps.apply(s)
    s2 = te.create_schedule(t4.op)
    s2[t1].compute_at(s2[t2], -1, mode="best_effort")
    lowered = s2.position_log[-1].lowered
    assert lowered and lowered[0][1] > lowered[-1][2] and all(why for *_, why in lowered)
    a = rand(n, m)
    want = [(a + 1).sum(1) * (a + 1).max(1)]
    check(s, [t0, t4], [a], want, rtol=1e-4)
    check(s2, [t0, t4], [a], want, rtol=1e-4)
    assert np.isfinite(want[0]).all()
