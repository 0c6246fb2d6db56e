"""computeAt by position (seed 003): the scenarios of ../shared/peers/NVFUSER.md section 8 that
run on a CPU, with their expected positions and loop structure, each computed on random data
against NumPy with both targets on awkward sizes."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check, rand

import tessel
from tessel import te
from tessel.errors import ScheduleError


def state(s, t):
    st = s[t]
    at = (st.attach_stage.name, st.attach_ivar.name) if st.attach_ivar is not None else None
    return st.compute_at_pos, st.max_producer_pos, len(st.leaf_iter_vars), at


def positions(s, tensors):
    return {t.name: (s[t].compute_at_pos, s[t].max_producer_pos) for t in tensors}


def flat_split(s, t):
    """merge(0); split(0, 128); split(0, 4) -> [ceil(ceil(n/128)/4), 4, 128]."""
    f = s[t].fuse(*s[t].op.axis)
    o, i = s[t].split(f, factor=128)
    oo, oi = s[t].split(o, factor=4)
    return oo, oi, i


# ---- 1. FusionAdvancedComputeAt1 -----------------------------------------------------------------
def advanced1(n0, n1):
    t0 = te.placeholder((n0, n1), name="t0")
    t1 = te.compute((n0, n1), lambda i, j: t0[i, j] * 0.5, name="t1")
    t2 = te.compute((n0, n1), lambda i, j: t1[i, j] * -1.0, name="t2")
    t3 = te.compute((n0, n1), lambda i, j: t1[i, j] + 3.0, name="t3")
    t4 = te.compute((n0, n1), lambda i, j: t1[i, j] * 2.0, name="t4")
    t5 = te.compute((n0, n1), lambda i, j: t3[i, j] + t2[i, j], name="t5")
    t6 = te.compute((n0, n1), lambda i, j: t5[i, j] + t4[i, j], name="t6")
    t7 = te.compute((n0, n1), lambda i, j: t1[i, j] + t4[i, j], name="t7")
    return t0, [t1, t2, t3, t4, t5], t6, t7


def test_advanced_compute_at_1_from_an_input():
    t0, mids, t6, t7 = advanced1(129, 127)
    s = te.create_schedule([t6.op, t7.op])
    outer, _, _ = flat_split(s, t7)
    s[t0].compute_at(s[t7], 1)
    for t in mids:
        assert state(s, t) == (1, 0 if t.name == "t1" else s[t].max_producer_pos, 3, ("t7", outer.name)), t.name
    assert s[mids[0]].max_producer_pos == 0
    assert state(s, t7)[:3] == (0, 1, 3) and s[t7].attach_ivar is None
    assert state(s, t6) == (0, 1, 3, ("t7", outer.name))  # shares t7's outer loop, reads no stage there
    s.verify()
    a = rand(129, 127)
    x = a * 0.5
    check(s, [t0, t6, t7], [a], [(x + 3) + (-x) + 2 * x, x + 2 * x])
    text = str(tessel.lower(s, [t0, t6, t7], simple_mode=True))
    # one outer loop holds all seven computations: only t7 is produced at the root
    assert [ln for ln in text.splitlines() if ln.startswith("produce ")] == ["produce t7 {"]
    assert next(ln.split(",")[0] for ln in text.splitlines() if ln.startswith("  for (")) == f"  for ({outer.name}"


# ---- 2. FusionAdvancedComputeAt2: a non-terminal output ----------------------------------------
def test_advanced_compute_at_2_non_terminal_output():
    n0, n1 = 63, 65
    t0 = te.placeholder((n0, n1), name="t0")
    t1 = te.compute((n0, n1), lambda i, j: t0[i, j] * -1.0, name="t1")
    t2 = te.compute((n0, n1), lambda i, j: t0[i, j] + 3.0, name="t2")
    t3 = te.compute((n0, n1), lambda i, j: t0[i, j] * 2.0, name="t3")
    t4 = te.compute((n0, n1), lambda i, j: t2[i, j] + t1[i, j], name="t4")
    t5 = te.compute((n0, n1), lambda i, j: t4[i, j] + t3[i, j], name="t5")
    t6 = te.compute((n0, n1), lambda i, j: t5[i, j] + t3[i, j], name="t6")
    s = te.create_schedule([t5.op, t6.op])
    flat_split(s, t6)
    s[t0].compute_at(s[t6], 1)
    for t in (t1, t2, t3, t4, t5):
        assert s[t].compute_at_pos == 1 and len(s[t].leaf_iter_vars) == 3, t.name
    s.verify()
    a = rand(n0, n1)
    t5v = (a + 3 - a) + 2 * a
    check(s, [t0, t5, t6], [a], [t5v, t5v + 2 * a])


# ---- 3 and 4. several inputs computed at one consumer --------------------------------------------
def test_advanced_compute_at_3_two_inputs():
    shape = (7, 9, 6, 5)
    t0 = te.placeholder(shape, name="t0")
    t1 = te.placeholder(shape, name="t1")
    t2 = te.compute(shape, lambda a, b, c, d: t1[a, b, c, d] * 0.979361, name="t2")
    t3 = te.compute(shape, lambda a, b, c, d: t2[a, b, c, d] * t0[a, b, c, d], name="t3")
    s = te.create_schedule(t3.op)
    outer, _, _ = flat_split(s, t3)
    s[t0].compute_at(s[t3], 1)
    s[t1].compute_at(s[t3], 1)
    assert state(s, t2) == (1, 0, 3, ("t3", outer.name))
    x, y = rand(*shape, seed=1), rand(*shape, seed=2)
    check(s, [t0, t1, t3], [x, y], [y * np.float32(0.979361) * x])


def test_advanced_compute_at_4_four_inputs():
    shape = (5, 7, 6, 9)
    t0, t1, t2, t3 = (te.placeholder(shape, name=f"t{k}") for k in range(4))
    t4 = te.compute(shape, lambda *i: t2(*i) - t3(*i), name="t4")
    t5 = te.compute(shape, lambda *i: t1(*i) + t4(*i), name="t5")
    t6 = te.compute(shape, lambda *i: t5(*i) - t0(*i), name="t6")
    s = te.create_schedule(t6.op)
    outer, _, _ = flat_split(s, t6)
    for t in (t0, t1, t2, t3):
        s[t].compute_at(s[t6], 1)
    assert state(s, t4)[0] == state(s, t5)[0] == 1
    assert s[t4].attach_ivar is outer and s[t5].attach_ivar is outer
    a, b, c, d = (rand(*shape, seed=k) for k in range(4))
    check(s, [t0, t1, t2, t3, t6], [a, b, c, d], [b + (c - d) - a])


# ---- 5 and 6. a producer computed at a consumer's split, with its own inner split -----------------
def pair(n0, n1):
    t0 = te.placeholder((n0, n1), name="t0")
    t1 = te.placeholder((n0, n1), name="t1")
    t2 = te.compute((n0, n1), lambda i, j: t0[i, j] + 2.0, name="t2")
    t3 = te.compute((n0, n1), lambda i, j: t1[i, j] * t2[i, j], name="t3")
    return t0, t1, t2, t3


def test_advanced_compute_at_5():
    t0, t1, t2, t3 = pair(63, 65)
    s = te.create_schedule(t3.op)
    f = s[t3].fuse(*t3.op.axis)
    o, i = s[t3].split(f, factor=8)
    s[t3].split(i, factor=4)
    s[t2].compute_at(s[t3], 1)
    # only what makes t3's first loop is replayed: t2 is fused and split once, not twice
    assert state(s, t2)[:3] == (1, 0, 2) and s[t2].attach_ivar is o
    assert [r.kind for r in s[t2].relations] == ["fuse", "split"]
    a, b = rand(63, 65, seed=1), rand(63, 65, seed=2)
    check(s, [t0, t1, t3], [a, b], [b * (a + 2)])


def test_advanced_compute_at_6_producer_keeps_its_inner_split():
    t0, t1, t2, t3 = pair(63, 65)
    s = te.create_schedule(t3.op)
    f2 = s[t2].fuse(*t2.op.axis)
    _, i2 = s[t2].split(f2, factor=8)
    s[t2].split(i2, factor=4)
    f3 = s[t3].fuse(*t3.op.axis)
    o3, _ = s[t3].split(f3, factor=8)
    s[t2].compute_at(s[t3], 1)  # the outer axis already matches: t2 keeps its own [2, 4] split
    assert state(s, t2)[:3] == (1, 0, 3) and s[t2].attach_ivar is o3
    assert s.position_log[-1].replayed == []
    a, b = rand(63, 65, seed=3), rand(63, 65, seed=4)
    check(s, [t0, t1, t3], [a, b], [b * (a + 2)])


# ---- 7, 8, 11. several consumers; the common consumer stops the propagation -------------------------
def multi(n, extra_common=False, extra_use=False):
    t0 = te.placeholder((n,), name="t0")
    t1 = te.compute((n,), lambda i: t0[i] * 0.5, name="t1")
    t2 = te.compute((n,), lambda i: t1[i] * -1.0, name="t2")
    t3 = te.compute((n,), lambda i: t1[i] * -2.0, name="t3")
    out = {"t0": t0, "t1": t1, "t2": t2, "t3": t3}
    if extra_common:
        out["t4"] = te.compute((n,), lambda i: t2[i] + t3[i], name="t4")
        out["t5"] = te.compute((n,), lambda i: out["t4"][i] * 5.0, name="t5")
    if extra_use:
        out["t6"] = te.compute((n,), lambda i: t1[i] * 6.0, name="t6")
    return out


def test_compute_at_multi_consumers():
    t = multi(129)
    s = te.create_schedule([t["t2"].op, t["t3"].op])
    o, _ = s[t["t3"]].split(t["t3"].op.axis[0], factor=32)
    s[t["t1"]].compute_at(s[t["t3"]], 1)
    assert state(s, t["t1"]) == (1, 0, 2, ("t3", o.name))
    assert state(s, t["t2"]) == (0, 1, 2, ("t3", o.name))  # replayed though not on the t1 -> t3 path
    assert state(s, t["t3"]) == (0, 1, 2, None)
    a = rand(129)
    check(s, [t["t0"], t["t2"], t["t3"]], [a], [a * 0.5 * -1, a * 0.5 * -2])


def test_compute_at_common_consumer_1():
    t = multi(129, extra_common=True)
    s = te.create_schedule([t["t3"].op, t["t4"].op, t["t5"].op])
    s[t["t3"]].split(t["t3"].op.axis[0], factor=32)
    s[t["t1"]].compute_at(s[t["t3"]], 1)
    assert s.position_log[-1].common_consumer == "t4"
    assert {k: state(s, t[k])[:3] for k in ("t1", "t2", "t3", "t4")} == {
        "t1": (1, 0, 2), "t2": (1, 1, 2), "t3": (1, 1, 2), "t4": (0, 1, 2)}
    assert len(s[t["t5"]].leaf_iter_vars) == 1 and s[t["t5"]].attach_ivar is None  # propagation stops at t4
    s[t["t5"]].split(t["t5"].op.axis[0], factor=32)
    a = rand(129)
    x = a * 0.5
    check(s, [t["t0"], t["t3"], t["t4"], t["t5"]], [a], [-2 * x, -x - 2 * x, (-x - 2 * x) * 5])


def test_compute_at_no_common_consumer():
    t = multi(129, extra_common=True, extra_use=True)
    s = te.create_schedule([t["t3"].op, t["t4"].op, t["t5"].op, t["t6"].op])
    s[t["t3"]].split(t["t3"].op.axis[0], factor=32)
    s[t["t1"]].compute_at(s[t["t3"]], 1)
    assert s.position_log[-1].common_consumer is None
    assert all(len(s[t[k]].leaf_iter_vars) == 2 for k in ("t1", "t2", "t3", "t4", "t5", "t6"))
    assert [s[t[k]].compute_at_pos for k in ("t1", "t2", "t3", "t4", "t5", "t6")] == [1, 1, 1, 1, 0, 0]
    a = rand(129)
    x = a * 0.5
    y = -x - 2 * x
    check(s, [t["t0"], t["t3"], t["t4"], t["t5"], t["t6"]], [a], [-2 * x, y, y * 5, 6 * x])


# ---- 9 and 10. common consumer off the producer -> target path --------------------------------------
def common2(n0, n1, extra=False):
    t0 = te.placeholder((n0, n1), name="t0")
    t1 = te.compute((n0, n1), lambda i, j: t0[i, j] * 0.5, name="t1")
    t2 = te.compute((n0, n1), lambda i, j: t1[i, j] * -1.0, name="t2")
    t3 = te.compute((n0, n1), lambda i, j: t2[i, j] * -1.0, name="t3")
    t4 = te.compute((n0, n1), lambda i, j: t1[i, j] + 4.0, name="t4")
    t5 = te.compute((n0, n1), lambda i, j: t3[i, j] + t4[i, j], name="t5")
    ts = [t0, t1, t2, t3, t4, t5]
    if extra:
        ts.append(te.compute((n0, n1), lambda i, j: t1[i, j] + 6.0, name="t6"))
    return ts


def test_compute_at_common_consumer_2():
    t0, t1, t2, t3, t4, t5 = common2(129, 127)
    s = te.create_schedule(t5.op)
    flat_split(s, t3)
    s[t1].compute_at(s[t3], 1)
    assert all(len(s[t].leaf_iter_vars) == 3 for t in (t1, t2, t3, t4, t5))
    assert [s[t].compute_at_pos for t in (t1, t2, t3, t4, t5)] == [1, 1, 1, 1, 0]
    assert s[t5].attach_ivar is None and s[t4].attach_stage is s[t5]
    a = rand(129, 127)
    check(s, [t0, t5], [a], [a * 0.5 + (a * 0.5 + 4)])


def test_compute_at_common_consumer_3():
    t0, t1, t2, t3, t4, t5, t6 = common2(63, 65, extra=True)
    s = te.create_schedule([t5.op, t6.op])
    flat_split(s, t3)
    s[t1].compute_at(s[t3], 1)
    assert all(len(s[t].leaf_iter_vars) == 3 for t in (t1, t2, t3, t4, t5, t6))
    assert {t.name: (s[t].compute_at_pos, s[t].max_producer_pos) for t in (t5, t6)} == {"t5": (0, 1), "t6": (0, 1)}
    assert [s[t].compute_at_pos for t in (t1, t2, t3, t4)] == [1, 1, 1, 1]
    a = rand(63, 65)
    check(s, [t0, t5, t6], [a], [a * 0.5 + (a * 0.5 + 4), a * 0.5 + 6])


# ---- 14, 15. zero-dimensional and broadcast-mapped ------------------------------------------------
def test_zero_dim_compute_at_is_accepted():
    t0 = te.placeholder((17,), name="t0")
    k = te.reduce_axis((0, 17), name="k")
    t1 = te.compute((1,), lambda i: te.sum(t0[k], axis=k), name="t1")
    t2 = te.compute((1,), lambda i: t1[i] + 1.0, name="t2")
    s = te.create_schedule(t2.op)
    s[t1].compute_at(s[t2], 0)
    assert s[t1].attach_ivar is None and s[t1].compute_at_pos == 0
    a = rand(17)
    check(s, [t0, t2], [a], [np.array([a.sum() + 1], dtype="float32")], rtol=1e-4)


def test_broadcast_across_compute_at():
    n0, n1 = 17, 19
    t0 = te.placeholder((n0,), name="t0")
    t1 = te.placeholder((n0, n1), name="t1")
    t2 = te.compute((n0, n1), lambda i, j: t0[i], name="t2")  # broadcast along j
    t3 = te.compute((n0, n1), lambda i, j: t1[i, j] + t2[i, j], name="t3")
    s = te.create_schedule(t3.op)
    _, ji = s[t3].split(t3.op.axis[1], factor=8)
    s[t0].compute_at(s[t3], 2)
    assert s[t2].compute_at_pos == 2 and s[t2].attach_stage is s[t3]
    assert len(s[t2].leaf_iter_vars) == 3
    a, b = rand(n0), rand(n0, n1, seed=5)
    check(s, [t0, t1, t3], [a, b], [b + a[:, None]])


# ---- errors ---------------------------------------------------------------------------------------
def test_not_a_dependency_is_refused_by_name():
    t = multi(33)
    s = te.create_schedule([t["t2"].op, t["t3"].op])
    with pytest.raises(ScheduleError, match=r"stage t3: compute_at\(t2, 1\) needs t2 to read t3"):
        s[t["t3"]].compute_at(s[t["t2"]], 1)


def test_position_out_of_range_names_the_loops():
    t = multi(33)
    s = te.create_schedule([t["t2"].op, t["t3"].op])
    with pytest.raises(ScheduleError, match=r"position 3 is out of range: t3 has 1 loops \(i\)"):
        s[t["t1"]].compute_at(s[t["t3"]], 3)


def test_iter_var_compute_at_keeps_tvm_meaning():
    t = multi(40)
    s = te.create_schedule(t["t3"].op)
    o, i = s[t["t3"]].split(t["t3"].op.axis[0], factor=8)
    s[t["t1"]].compute_at(s[t["t3"]], o)
    assert s[t["t1"]].attach_ivar is o and len(s[t["t1"]].leaf_iter_vars) == 1  # no replay
    assert s[t["t1"]].compute_at_pos == 0 and not s.position_log
