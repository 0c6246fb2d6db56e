"""``s.parallelize_all_like(reference)`` (nvFuser's parallelizeAllLike): the reference's loop
kinds copied to the loops of every stage that map to them, on values with both targets."""

from __future__ import annotations

import pytest
from helpers import check, rand

from tessel import te
from tessel.errors import ScheduleError


def row_normalize(n):
    t0 = te.placeholder((n, 24), name="t0")
    t1 = te.compute((n, 24), lambda i, j: t0[i, j] * 2.0, name="t1")
    k = te.reduce_axis((0, 24), name="k")
    t2 = te.compute((n,), lambda i: te.sum(t1[i, k], axis=k), name="t2")
    t3 = te.compute((n, 24), lambda i, j: t1[i, j] - t2[i], name="t3")
    return t0, t1, t2, t3


def _scheduled(n):
    t0, t1, t2, t3 = row_normalize(n)
    s = te.create_schedule(t3.op)
    io, ii = s[t3].split(t3.op.axis[0], factor=4)
    jo, ji = s[t3].split(t3.op.axis[1], factor=8)
    s[t3].reorder(io, jo, ii, ji)
    s.propagate(t3)
    s[t3].parallel(io)
    s[t3].vectorize(ji)
    return s, (t0, t1, t2, t3)


def test_kinds_follow_the_mapped_loops_with_a_symbolic_size():
    s, (t0, t1, t2, t3) = _scheduled(te.var("n"))
    got = s.parallelize_all_like(t3)
    assert got["t1"] == ["i.outer: parallel", "j.inner: vectorized"] and got["t2"] == ["i.outer: parallel"]
    assert s[t2].leaf_kind(s[t2].leaf_iter_vars[0]) == "parallel"
    for n in (1, 9):
        x = rand(n, 24)
        check(s, [t0, t3], [x], [2 * x - (2 * x).sum(1, keepdims=True)], rtol=1e-4)
    again = s.history.replay()  # a recorded step: replayed onto fresh tensors
    st2 = next(st for st in again.stages if st.name == "t2")
    assert st2.leaf_kind(st2.leaf_iter_vars[0]) == "parallel"


def test_only_the_kinds_and_stages_asked_for():
    s, (t0, t1, t2, t3) = _scheduled(13)
    got = s.parallelize_all_like(t3, stages=[t1], kinds=["vectorized"])
    assert got == {"t1": ["j.inner: vectorized"]}
    assert s[t2].leaf_kind(s[t2].leaf_iter_vars[0]) == "serial"
    x = rand(13, 24)
    check(s, [t0, t3], [x], [2 * x - (2 * x).sum(1, keepdims=True)], rtol=1e-4)


def test_a_refused_copy_is_reported_not_applied():
    """A reduction loop mapped to a parallel loop keeps its kind; the answer says why."""
    t0, t1, t2, t3 = row_normalize(10)
    s = te.create_schedule(t3.op)
    s[t1].parallel(s[t1].leaf_iter_vars[1])  # t1's j maps to t2's reduction loop k
    got = s.parallelize_all_like(t1, stages=[t2])
    assert len(got["t2"]) == 1 and "k: parallel refused" in got["t2"][0]
    assert s[t2].leaf_kind(s[t2].leaf_iter_vars[1]) == "serial"
    x = rand(10, 24)
    check(s, [t0, t3], [x], [2 * x - (2 * x).sum(1, keepdims=True)], rtol=1e-4)


def test_an_unknown_kind_is_an_error():
    s, (t0, t1, t2, t3) = _scheduled(8)
    with pytest.raises(ScheduleError, match="unknown loop kind 'sideways'"):
        s.parallelize_all_like(t3, kinds=["sideways"])
