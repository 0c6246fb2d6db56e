"""The inliner's limits (``max_position.py``) and ``s.max_position``: uninlinable loops, unrolled
loops in best effort, outputs at the depth their own loops allow; values on both targets."""

from __future__ import annotations

import pytest
from helpers import check, rand

from tessel import te
from tessel.errors import ScheduleError


def chain(n, m):
    t0 = te.placeholder((n, m), name="t0")
    t1 = te.compute((n, m), lambda i, j: t0[i, j] * 2.0, name="t1")
    t2 = te.compute((n, m), lambda i, j: t1[i, j] + 1.0, name="t2")
    k = te.reduce_axis((0, m), name="k")
    t3 = te.compute((n,), lambda i: te.sum(t2[i, k], axis=k), name="t3")
    return t0, t1, t2, t3


def ref(x):
    return (2 * x + 1).sum(1)


def test_max_position_asks_without_changing_anything():
    t0, t1, t2, t3 = chain(te.var("n"), 12)
    s = te.create_schedule(t3.op)
    assert (s.max_position(t1), s.max_position(t2)) == (2, 2)
    assert s[t1].compute_at_pos == s[t2].compute_at_pos == 0 and len(s.history) == 1  # create_schedule only
    got = s.inline_most()
    assert (got["t1"], got["t2"], got["t3"]) == (2, 2, 1)  # t3, an output, stops at its reduction loop
    with pytest.raises(ScheduleError, match="compute-at position"):
        s[t3].split(s[t3].leaf_iter_vars[0], factor=4)
    for n in (1, 7):
        x = rand(n, 12)
        check(s, [t0, t3], [x], [ref(x)], rtol=1e-4)


def test_uninlinable_loops_stop_inline_most_inline_at_and_inline_all_at():
    t0, t1, t2, t3 = chain(9, 10)
    s = te.create_schedule(t3.op)
    ko, ki = s[t3].split(s[t3].leaf_iter_vars[1], factor=4)
    got = s.inline_most(uninlinable=[ko])
    assert got["t2"] == 1 and s.max_position(t2, uninlinable=[ko]) == 1
    x = rand(9, 10)
    check(s, [t0, t3], [x], [ref(x)], rtol=1e-4)
    s2 = te.create_schedule(t3.op)
    with pytest.raises(ScheduleError, match="uninlinable"):
        s2[t2].inline_at(2, uninlinable=[s2[t3].leaf_iter_vars[1]])
    assert s2[t2].inline_at(2, best_effort=True, uninlinable=[s2[t3].leaf_iter_vars[1]]) == 1
    s3 = te.create_schedule(t3.op)
    s3.inline_all_at(t3, -1, best_effort=True, uninlinable=[s3[t3].leaf_iter_vars[1]])
    assert s3[t2].compute_at_pos == 1
    check(s3, [t0, t3], [x], [ref(x)], rtol=1e-4)


def test_unrolled_loops_block_best_effort_not_standard():
    t0, t1, t2, t3 = chain(8, 12)
    s = te.create_schedule(t3.op)
    s[t3].unroll(s[t3].leaf_iter_vars[1])
    assert s.max_position(t2) == 1
    s[t2].compute_at(s[t3], 2)  # standard mode may still ask for the unrolled loop
    assert s[t2].compute_at_pos == 2
    x = rand(8, 12)
    check(s, [t0, t3], [x], [ref(x)], rtol=1e-4)


def test_a_split_inside_a_position_is_refused_and_te_compute_at_is_not_affected():
    t0, t1, t2, t3 = chain(8, 12)
    s = te.create_schedule(t3.op)
    s[t1].compute_at(s[t2], 1)
    with pytest.raises(ScheduleError, match="cannot split axis i: it is loop 0 of t1"):
        s[t1].split(s[t1].leaf_iter_vars[0], factor=2)
    with pytest.raises(ScheduleError, match="max-producer position"):
        s[t2].fuse(*s[t2].leaf_iter_vars)
    s[t1].split(s[t1].leaf_iter_vars[1], factor=5)  # after the position: allowed
    s2 = te.create_schedule(t3.op)
    s2[t1].compute_at(s2[t2], s2[t2].leaf_iter_vars[0])  # TE's compute_at fixes no position
    s2[t2].split(s2[t2].leaf_iter_vars[0], factor=3)
    x = rand(8, 12)
    check(s, [t0, t3], [x], [ref(x)], rtol=1e-4)
    check(s2, [t0, t3], [x], [ref(x)], rtol=1e-4)
