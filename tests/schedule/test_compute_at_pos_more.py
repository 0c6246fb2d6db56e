"""Seed 003 scenarios the first pass left open: sibling outputs of one multi-output reduction
(NVFUSER.md scenario 19), broadcast forwarding in inline_most (scenario 18, InliningBroadcast),
and #110's refusal explained by the loop of the consumer the user named."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import check, rand

import tessel
from tessel import te
from tessel.errors import ScheduleError


def welford(n0, n1):
    """t1 = 2*t0; (w.v0, w.v1) = (sum, sum of squares) of t1's rows by one tuple reducer."""
    t0 = te.placeholder((n0, n1), name="t0")
    t1 = te.compute((n0, n1), lambda i, j: t0[i, j] * 2.0, name="t1")
    red = te.comm_reducer(lambda x, y: (x[0] + y[0], x[1] + y[1]),
                          lambda a, b: (te.const(0, a), te.const(0, b)), name="sum_sq")
    k = te.reduce_axis((0, n1), name="k")
    s1, s2 = te.compute((n0,), lambda i: red((t1[i, k], t1[i, k] * t1[i, k]), axis=k), name="w")
    t5 = te.compute((n0,), lambda i: s1[i] + 1.0, name="t5")
    t6 = te.compute((n0,), lambda i: s2[i] * 2.0, name="t6")
    return t0, t1, s1, s2, t5, t6


def welford_ref(a):
    b = 2 * a
    return [b.sum(axis=1) + 1, (b * b).sum(axis=1) * 2]


def pos(s, t):
    st = s[t]
    return st.compute_at_pos, st.max_producer_pos, None if st.attach_ivar is None else st.attach_ivar.name


def test_sibling_outputs_move_together():
    """Scenario 19: the siblings read by two different outputs share one stage, one position and
    one loop; the other output shares the host's loop (no common consumer)."""
    t0, t1, s1, s2, t5, t6 = welford(37, 29)
    s = te.create_schedule([t5.op, t6.op])
    s[t5].split(t5.op.axis[0], factor=8)
    s[t1].compute_at(s[t5], 1)
    assert s[s1] is s[s2]
    assert pos(s, s1) == pos(s, s2) == (1, 1, "i.outer")
    assert [x.name for x in s[s1].leaf_iter_vars] == ["i.outer", "i.inner", "k"]
    assert pos(s, t1) == (1, 0, "i.outer") and pos(s, t6) == (0, 1, "i.outer")
    assert s.position_log[-1].common_consumer is None
    text = str(tessel.lower(s, [t0, t5, t6], simple_mode=True))
    assert text.count("produce w {") == 2  # once in the loop, once for the tail of 37 = 4*8 + 5
    a = rand(37, 29)
    check(s, [t0, t5, t6], [a], welford_ref(a), rtol=1e-4, atol=1e-4)


def test_sibling_outputs_read_by_one_consumer():
    t0, t1, s1, s2, _, _ = welford(23, 13)
    t4 = te.compute((23,), lambda i: s2[i] / 13.0 - (s1[i] / 13.0) * (s1[i] / 13.0), name="t4")
    s = te.create_schedule(t4.op)
    s[t4].split(t4.op.axis[0], factor=4)
    s[t1].compute_at(s[t4], 1)
    assert s.position_log[-1].common_consumer == "t4"
    assert pos(s, s1) == pos(s, s2) == (1, 1, "i.outer") and pos(s, t1) == (1, 0, "i.outer")
    a = rand(23, 13)
    b = 2 * a
    check(s, [t0, t4], [a], [(b * b).mean(axis=1) - b.mean(axis=1) ** 2], rtol=1e-3, atol=1e-4)


def test_siblings_after_propagate_and_inline_most():
    t0, t1, s1, s2, t5, t6 = welford(19, 11)
    s = te.create_schedule([t5.op, t6.op])
    s[t5].split(t5.op.axis[0], factor=4)
    s.propagate(s[t5])
    assert [x.name for x in s[t6].leaf_iter_vars] == ["i.outer", "i.inner"]
    got = s.inline_most()
    assert got["w"] == 2 and got["t1"] == 3
    assert pos(s, s1) == pos(s, s2) == (2, 3, "i.inner")
    a = rand(19, 11)
    check(s, [t0, t5, t6], [a], welford_ref(a), rtol=1e-4, atol=1e-4)


def test_siblings_of_an_rfactor_keep_one_position():
    t0, t1, s1, s2, t5, t6 = welford(17, 12)
    s = te.create_schedule([t5.op, t6.op])
    _, ki = s[s1].split(s[s1].op.reduce_axis[0], factor=4)
    r1, r2 = s.rfactor(s1, ki)
    assert s[r1] is s[r2]
    got = s.inline_most()
    assert pos(s, s1) == pos(s, s2) and got["w"] == pos(s, s1)[0] == 1
    a = rand(17, 12)
    check(s, [t0, t5, t6], [a], welford_ref(a), rtol=1e-4, atol=1e-4)


def broadcast_chain(bext):
    """Scenario 18, InliningBroadcast: t2 broadcasts t1 along three new axes of extent ``bext``;
    t2, t3, t4 fuse each data axis with the broadcast axis after it."""
    t0 = te.placeholder((2, 3, 5), name="t0")
    t1 = te.compute((2, 3, 5), lambda i, j, k: te.sin(t0[i, j, k]), name="t1")
    shp = (2, bext, 3, bext, 5, bext)
    t2 = te.compute(shp, lambda i, a, j, b, k, c: t1[i, j, k], name="t2")
    t3 = te.compute(shp, lambda *ix: te.cos(t2[ix]), name="t3")
    t4 = te.compute(shp, lambda *ix: te.exp(t3[ix]), name="t4")
    s = te.create_schedule(t4.op)
    for t in (t2, t3, t4):
        for q in range(3):
            lv = s[t].leaf_iter_vars
            s[t].fuse(lv[q], lv[q + 1])
    x = rand(2, 3, 5)
    ref = np.exp(np.cos(np.broadcast_to(np.sin(x)[:, None, :, None, :, None], shp)))
    return s, (t0, t1, t2, t3, t4), x, ref


def test_inline_most_forwards_through_size_one_broadcasts():
    s, (t0, t1, t2, t3, t4), x, ref = broadcast_chain(1)
    got = s.inline_most()
    assert (got["t1"], got["t2"], got["t3"]) == (3, 3, 3)  # t1, not fused, inside all three loops
    inner = s[t4].leaf_iter_vars[2]
    assert all(s[t].attach_ivar is inner for t in (t1, t2, t3))
    s.verify()
    check(s, [t0, t4], [x], [ref], rtol=1e-4)


def test_broadcast_of_real_extent_is_forwarded_and_recomputed():
    """nvFuser forwards through a fused data x broadcast loop whatever the broadcast's extent and
    accepts the recomputation: t1 goes inside all three fused loops, computed once per
    broadcast value (the region of t1 each iteration needs is one point)."""
    s, (t0, t1, t2, t3, t4), x, ref = broadcast_chain(2)
    got = s.inline_most()
    assert (got["t1"], got["t2"], got["t3"]) == (3, 3, 3)
    assert s[t1].attach_ivar is s[t4].leaf_iter_vars[2]
    check(s, [t0, t4], [x], [ref], rtol=1e-4)


def test_issue_110_explained_by_the_named_consumers_loop():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "seeds"))
    from test_compute_at_pos_seed import issue110

    t0, t1, t2, t3, t4 = issue110(9, 14)
    s = te.create_schedule(t4.op)
    with pytest.raises(ScheduleError) as err:
        s[t1].compute_at(s[t2], -1)
    ex = err.value
    assert ex.rule == "recompute-reduction" and ex.loops == ("r",)
    assert "T2's loop r is a reduction loop" in str(ex) and "T3's loop q" not in str(ex)
    assert ex.fix == "s[T1].compute_at(s[T2], 1)"
    ex.fix_steps.apply(s)
    a = rand(9, 14)
    e = np.exp(a)
    check(s, [t0, t4], [a], [e.max(axis=1) + e.min(axis=1)], rtol=1e-5)


@pytest.mark.parametrize("symbolic", [False, True])
def test_a_host_reorder_that_moves_a_shared_loop_inside_ends_the_sharing(symbolic):
    """The fuzzer's seed 5, case 1355 (F21): C computed by position inside both of H's loops
    shares them; reordering H put the loop over i inside the attach point, so C's slice of one
    (i, j) was computed outside the loop over i with i free, and lowering refused its own code
    with a message about the sizes. Such a stage is now attached at its loop like a TE
    compute_at: C is computed for all i in each iteration of j."""
    from tessel.schedule.storage_point import shares_host_loops

    n = te.var("n") if symbolic else 31
    A = te.placeholder((n, 3), name="A")
    C = te.compute((n, 3), lambda i, j: A[i, j] * 2.0 - 0.5, name="C")
    H = te.compute((n, 3), lambda i, j: C[i, j] + A[i, j], name="H")
    s = te.create_schedule(H.op)
    s[C].compute_at(s[H], -1)
    assert shares_host_loops(s[C])
    s[H].reorder(H.op.axis[1], H.op.axis[0])
    assert not shares_host_loops(s[C])
    for rows in (31, 7) if symbolic else (31,):
        a = rand(rows, 3, seed=rows)
        check(s, [A, H], [a], [a * 3 - 0.5])
