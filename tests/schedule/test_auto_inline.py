"""Inlining every stage of a kind (auto_inline.py), each a recorded compute_inline: what an
operator library's schedule does first. Values against NumPy."""

from __future__ import annotations

from helpers import check, rand

from tessel import te
from tessel.schedule.auto_inline import auto_inline_broadcast, auto_inline_elemwise, auto_inline_injective
from tessel.schedule.kinds import INLINE, ROOT


def _program():
    A, B = te.placeholder((6, 7), name="A"), te.placeholder((6,), name="B")
    ew = te.compute((6, 7), lambda i, j: A[i, j] * 2.0, name="ew")
    bc = te.compute((6, 7), lambda i, j: B[i] + ew[i, j], name="bc", tag="broadcast")
    tr = te.compute((7, 6), lambda i, j: bc[j, i] - 1.0, name="tr")  # injective, not elementwise
    k = te.reduce_axis((0, 6), name="k")
    out = te.compute((7,), lambda i: te.sum(tr[i, k], axis=k), name="out")
    return A, B, out


def _kinds(s):
    return {st.name: st.attach_type for st in s.stages if not st.is_placeholder}


def test_each_kind_inlines_its_own_stages_only():
    A, B, out = _program()
    s = te.create_schedule(out.op)
    auto_inline_elemwise(s)
    assert _kinds(s) == {"ew": INLINE, "bc": ROOT, "tr": ROOT, "out": ROOT}
    auto_inline_broadcast(s)
    assert _kinds(s)["bc"] == INLINE and _kinds(s)["tr"] == ROOT
    auto_inline_injective(s)
    assert _kinds(s) == {"ew": INLINE, "bc": INLINE, "tr": INLINE, "out": ROOT}
    a, b = rand(6, 7), rand(6, seed=1)
    check(s, [A, B, out], [a, b], [((b[:, None] + a * 2) - 1).sum(axis=0)])


def test_a_stage_already_scheduled_is_left_alone():
    A, B, out = _program()
    s = te.create_schedule(out.op)
    s[s.stages[2].op].split(s.stages[2].op.axis[0], factor=2)  # ew
    auto_inline_injective(s)
    assert _kinds(s)["ew"] == ROOT and _kinds(s)["tr"] == INLINE
