"""The readers a position primitive does not move (issue 29, defects 1 and 10): a reader that
shares a host's loops runs its whole body once per iteration of every host loop around it, so
it may share only loops it has (nvFuser's NonUniqueBroadcastSize: t5 ran 7 times over), and a
reduction loop only with its init and storage outside it (nvFuser's Issue329: t3 once kept only
its last term; now it shares t2's reduction loop, its init in the row loop, as nvFuser). Every
compute_at mode refuses with a fix that works or lands on a legal position; values are NumPy's
on both targets."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check, loops, rand

import tessel
from tessel import te
from tessel.errors import ScheduleError


def two_sums(n0=7, n1=13, where=False):
    """Issue329: t1 = t0 + 1 read by two reductions, both outputs (t3 optionally with where=)."""
    t0 = te.placeholder((n0, n1), name="t0")
    t1 = te.compute((n0, n1), lambda i, j: t0[i, j] + 1.0, name="t1")
    r2 = te.reduce_axis((0, n1), name="r2")
    t2 = te.compute((n0,), lambda i: te.sum(t1[i, r2], axis=r2), name="t2")
    r3 = te.reduce_axis((0, n1), name="r3")
    t3 = te.compute((n0,), lambda i: te.sum(t1[i, r3], axis=r3, where=r3 <= i) if where
                    else te.sum(t1[i, r3], axis=r3), name="t3")
    return t0, t1, t2, t3


def two_sums_ref(a, where=False):
    b = a + 1
    if where:
        return [b.sum(1), np.array([b[i, :i + 1].sum() for i in range(a.shape[0])], a.dtype)]
    return [b.sum(1), b.sum(1)]


def broadcast_rows(rows4=7, rows5=9, n=13):
    """NonUniqueBroadcastSize: t3[j] read by t4 (rows4 rows) and t5 (rows5 rows), both outputs."""
    t0 = te.placeholder((n,), name="t0")
    t1 = te.placeholder((rows4, n), name="t1")
    t2 = te.placeholder((rows5, n), name="t2")
    t3 = te.compute((n,), lambda j: t0[j] * 2.0, name="t3")
    t4 = te.compute((rows4, n), lambda i, j: t3[j] + t1[i, j], name="t4")
    t5 = te.compute((rows5, n), lambda i, j: t3[j] + t2[i, j], name="t5")
    return t0, t1, t2, t3, t4, t5


def broadcast_data(rows4=7, rows5=9, n=13):
    a, b, c = rand(n), rand(rows4, n, seed=1), rand(rows5, n, seed=2)
    return [a, b, c], [2 * a + b, 2 * a + c]


def state(s, *ts):
    return {t.name: (s[t].compute_at_pos, s[t].max_producer_pos,
                     None if s[t].attach_ivar is None else s[t].attach_ivar.name) for t in ts}


# ---- defect 1: a reduction reader sharing the host's reduction loop --------------------------
def _init_outside_r2(text: str, reader: str = "t3", loop: str = "for (r2, 0") -> None:
    """The reader's init runs once per row, before the shared reduction loop, never inside it."""
    assert text.count(f"{reader}[i] = 0.0f") == 1 and text.index(f"{reader}[i] = 0.0f") < text.index(loop)


@pytest.mark.parametrize("mode", ["standard", "best_effort", "most_inlined"])
def test_issue329_shares_the_reduction_loop(mode):
    """nvFuser's Issue329: t1 inside t2's reduction loop; t3 reads t1, so it runs its update in
    that loop too, its init (once per row) in the row loop around it. It used to be refused
    (t3's init inside r2 would have kept only the last term)."""
    t0, t1, t2, t3 = two_sums()
    s = te.create_schedule([t2.op, t3.op])
    s[t1].compute_at(s[t2], -1, mode=mode)
    assert state(s, t1, t2, t3) == {"t1": (2, 0, "r2"), "t2": (0, 2, None), "t3": (0, 2, "r2")}
    assert s[t3].placement.store == (s[t2].leaf_iter_vars[0],)
    _init_outside_r2(str(tessel.lower(s, [t0, t2, t3], simple_mode=True)))
    a = rand(7, 13)
    check(s, [t0, t2, t3], [a], two_sums_ref(a))


def test_issue329_with_where_hosted_by_the_masked_sum():
    t0, t1, t2, t3 = two_sums(11, 11, where=True)
    s = te.create_schedule([t2.op, t3.op])
    s[t1].compute_at(s[t3], -1)  # hosted by the masked sum: t2 shares its loop r3
    assert s[t2].attach_stage is s[t3] and s[t2].placement.store == (s[t3].leaf_iter_vars[0],)
    _init_outside_r2(str(tessel.lower(s, [t0, t2, t3], simple_mode=True)), "t2", "for (r3, 0")
    a = rand(11, 11)
    check(s, [t0, t2, t3], [a], two_sums_ref(a, where=True))


def test_issue329_inline_at_inline_most_and_inline_all_at():
    a = rand(7, 13)
    for how in ("inline_at", "inline_most", "inline_all_at"):
        t0, t1, t2, t3 = two_sums()
        s = te.create_schedule([t2.op, t3.op])
        if how == "inline_at":
            got = s[t1].inline_at(-1)
        else:
            got = (s.inline_most() if how == "inline_most" else s.inline_all_at(t2, -1))["t1"]
        assert got == 2, how
        check(s, [t0, t2, t3], [a], two_sums_ref(a))


def test_issue329_after_propagate_of_a_split_reduction():
    """t2's reduction split and propagated: t1 goes inside both split loops, t3 shares both, its
    init once per row outside them (and the bound guard of the split, about r2's loops, is not
    tested where those loops do not run)."""
    t0, t1, t2, t3 = two_sums(7, 13)
    s = te.create_schedule([t2.op, t3.op])
    s[t2].split(t2.op.reduce_axis[0], factor=4)
    s.propagate(t2)
    assert s.inline_most()["t1"] == 3
    text = str(tessel.lower(s, [t0, t2, t3], simple_mode=True))
    _init_outside_r2(text, loop="for (r2.outer, 0")
    a = rand(7, 13)
    check(s, [t0, t2, t3], [a], two_sums_ref(a))


@pytest.mark.parametrize("which", ["host", "reader"])
def test_issue329_with_rfactor(which):
    """One of the two sums rfactored: the partial sums read t1 and move with it; at -1 the call
    is refused (a reduction loop would be shared, or t1's column is no loop of t3.rf's) with a
    fix that computes NumPy's values."""
    t0, t1, t2, t3 = two_sums(7, 13)
    s = te.create_schedule([t2.op, t3.op])
    red = t2 if which == "host" else t3
    _, ki = s[red].split(red.op.reduce_axis[0], factor=4)
    rf = s.rfactor(red, ki)
    with pytest.raises(ScheduleError) as err:
        s[t1].compute_at(s[rf if which == "host" else t2], -1)
    assert err.value.rule in ("recompute-reduction", "unmappable-axis") and err.value.fix is not None
    err.value.fix_steps.apply(s)
    a = rand(7, 13)
    check(s, [t0, t2, t3], [a], two_sums_ref(a))


def test_a_reduction_reader_may_share_its_spatial_loop():
    """Nearby and legal: t1 computed per row, t3 shares the row loop (its reduction inside)."""
    t0, t1, t2, t3 = two_sums(9, 7)
    s = te.create_schedule([t2.op, t3.op])
    s[t1].compute_at(s[t2], 1)
    text = str(tessel.lower(s, [t0, t2, t3], simple_mode=True))
    assert loops(text)[0] == "for (i, 0, 9) {" and text.count("for (i, 0, 9)") == 1
    a = rand(9, 7)
    check(s, [t0, t2, t3], [a], two_sums_ref(a))


# ---- defect 10: a reader run inside a host loop it does not have -----------------------------
def test_non_unique_broadcast_size_refused_with_a_working_fix():
    t0, t1, t2, t3, t4, t5 = broadcast_rows()
    s = te.create_schedule([t4.op, t5.op])
    with pytest.raises(ScheduleError) as err:
        s[t3].compute_at(s[t4], -1)
    ex = err.value
    assert ex.rule == "unmappable-axis"
    text = str(ex)
    assert "t5 reads t3" in text and "t4's loops i (7 values), j (13 values)" in text
    assert "i (9 values)" in text and "again on every iteration" in text
    assert ex.fix == "s[t4].reorder(t4.op.axis[1], t4.op.axis[0])\ns[t3].compute_at(s[t4], 1)"
    assert not s.position_log and all(st.attach_ivar is None for st in s.stages)
    ex.fix_steps.apply(s)
    assert state(s, t3, t5) == {"t3": (1, 0, "j"), "t5": (0, 1, "j")}
    text = str(tessel.lower(s, [t0, t1, t2, t4, t5], simple_mode=True))
    assert loops(text)[0] == "for (j, 0, 13) {" and text.count("for (i, 0, 7)") == 1
    ins, outs = broadcast_data()
    check(s, [t0, t1, t2, t4, t5], ins, outs)


@pytest.mark.parametrize("mode", ["best_effort", "most_inlined"])
def test_non_unique_broadcast_size_best_effort_modes(mode):
    t0, t1, t2, t3, t4, t5 = broadcast_rows()
    s = te.create_schedule([t4.op, t5.op])
    s[t3].compute_at(s[t4], -1, mode=mode)
    assert s[t5].attach_ivar is None or s[t5].attach_ivar.name != "j" or s[t4].leaf_iter_vars[0].name == "j"
    text = str(tessel.lower(s, [t0, t1, t2, t4, t5], simple_mode=True))
    assert text.count("t5[") == 1 and "for (i_1, 0, 9)" not in text.split("t4[")[0]
    ins, outs = broadcast_data()
    check(s, [t0, t1, t2, t4, t5], ins, outs)


def test_non_unique_broadcast_size_inline_modes():
    ins, outs = broadcast_data()
    t0, t1, t2, t3, t4, t5 = broadcast_rows()
    s = te.create_schedule([t4.op, t5.op])
    with pytest.raises(ScheduleError):  # t4's outer loop is its row: t3 cannot be inside it alone
        s[t3].inline_at(-1)
    s.inline_most()
    check(s, [t0, t1, t2, t4, t5], ins, outs)
    t0, t1, t2, t3, t4, t5 = broadcast_rows()
    s = te.create_schedule([t4.op, t5.op])
    with pytest.raises(ScheduleError, match="t5"):
        s.inline_all_at(t4, -1)
    s.inline_all_at(t4, -1, best_effort=True)
    check(s, [t0, t1, t2, t4, t5], ins, outs)


def test_non_unique_broadcast_size_after_the_fix_by_hand_with_a_split():
    """The reordered host, its shared loop split: t5 still runs once per column block."""
    t0, t1, t2, t3, t4, t5 = broadcast_rows(5, 11, 13)
    s = te.create_schedule([t4.op, t5.op])
    i, j = t4.op.axis
    s[t4].reorder(j, i)
    s[t4].split(j, factor=4)
    s[t3].compute_at(s[t4], 2)
    ins, outs = broadcast_data(5, 11, 13)
    check(s, [t0, t1, t2, t4, t5], ins, outs)


def test_equal_rows_are_refused_too():
    """Nothing ties t5's rows to t4's (t3 has no row axis), so even at equal extents t5 would
    still run once per row of t4: refused with the same fix."""
    t0, t1, t2, t3, t4, t5 = broadcast_rows(7, 7)
    s = te.create_schedule([t4.op, t5.op])
    with pytest.raises(ScheduleError) as err:
        s[t3].compute_at(s[t4], -1)
    assert "tied to no loop of t4's" in str(err.value)
    err.value.fix_steps.apply(s)
    ins, outs = broadcast_data(7, 7)
    check(s, [t0, t1, t2, t4, t5], ins, outs)


def test_a_reduction_reader_of_an_elementwise_host():
    """The same with a host that is no reduction: t3 shares t2's column loop as its reduction
    loop, its init once per row before it."""
    t0 = te.placeholder((7, 13), name="t0")
    t1 = te.compute((7, 13), lambda i, j: t0[i, j] + 1.0, name="t1")
    t2 = te.compute((7, 13), lambda i, j: t1[i, j] * 2.0, name="t2")
    r = te.reduce_axis((0, 13), name="r")
    t3 = te.compute((7,), lambda i: te.sum(t1[i, r], axis=r), name="t3")
    s = te.create_schedule([t2.op, t3.op])
    s[t1].compute_at(s[t2], -1)
    assert s[t3].attach_ivar is s[t2].leaf_iter_vars[1] and s[t3].placement.store == (s[t2].leaf_iter_vars[0],)
    _init_outside_r2(str(tessel.lower(s, [t0, t2, t3], simple_mode=True)), loop="for (j, 0")
    a = rand(7, 13)
    check(s, [t0, t2, t3], [a], [(a + 1) * 2, (a + 1).sum(1)])


@pytest.mark.parametrize("case", ["issue329", "broadcast"])
def test_host_reordered_afterwards_is_caught_on_the_final_schedule(case):
    """A TE reorder of the host after the position primitive puts the reader inside a host loop
    it does not share (the same defects, made by another path): the final schedule is refused,
    and the fix (the shared loops outermost again) computes NumPy's values."""
    if case == "issue329":
        t0, t1, t2, t3 = two_sums(7, 13)
        s = te.create_schedule([t2.op, t3.op])
        s[t1].compute_at(s[t2], 1)
        s[t2].reorder(*reversed(s[t2].leaf_iter_vars))
        args, reader, host = [t0, t2, t3], "t3", "t2"
        a = rand(7, 13)
        ins, outs = [a], two_sums_ref(a)
    else:
        t0, t1, t2, t3, t4, t5 = broadcast_rows()
        s = te.create_schedule([t4.op, t5.op])
        i, j = t4.op.axis
        s[t4].reorder(j, i)
        s[t3].compute_at(s[t4], 1)
        s[t4].reorder(i, j)
        args, reader, host = [t0, t1, t2, t4, t5], "t5", "t4"
        ins, outs = broadcast_data()
    with pytest.raises(ScheduleError) as err:
        s.verify()
    assert err.value.rule == "attached-output" and reader in str(err.value)
    assert err.value.fix.startswith(f"s[{host}].reorder(")
    err.value.fix_steps.apply(s)
    check(s, args, ins, outs)


def test_te_compute_at_into_a_reduction_then_inline_most():
    """Found by the fuzzer's second outputs: C computed (TE) inside Z's reduction loop, then
    inline_most moved C into D's loops and made Z share D's column loop as its reduction loop,
    so Z kept its last term. Now Z's init stays in the row loop and its update shares D's
    column loop, C inside it (nvFuser's loop sharing)."""
    A = te.placeholder((10, 13), name="A")
    C = te.compute((10, 13), lambda i, j: A[i, j] * 2.0, name="C")
    D = te.compute((10, 13), lambda i, j: C[i, j] * 1.5 + 0.25, name="D")
    kz = te.reduce_axis((0, 13), name="kz")
    Z = te.compute((10,), lambda i: te.sum(C[i, kz], axis=kz), name="Z")
    s = te.create_schedule([D.op, Z.op])
    s[C].compute_at(s[Z], s[Z].leaf_iter_vars[1])
    assert s.inline_most()["C"] == 2
    # Z, an output, gets the depth its own loops allow (its reduction loop stops it), as in nvFuser
    assert state(s, C, Z) == {"C": (2, 0, "j"), "Z": (1, 2, "j")}
    assert s[Z].placement.store == (s[D].leaf_iter_vars[0],)
    a = rand(10, 13)
    check(s, [A, D, Z], [a], [a * 2 * 1.5 + 0.25, (a * 2).sum(1)])
