"""The rules of ``bind`` on loop extents, which InferBound derives from the schedule.

A loop bound to a thread axis declared with a range (``te.thread_axis((0, 32), "threadIdx.x")``)
must run over exactly that range, and one thread has one extent in a launch: every loop bound to
``threadIdx.x`` in one kernel counts the same. Both are judged on InferBound's extents, so they
run once the tree rules hold (``schedule.legality.tree_violations``); ``bind``'s rule on the
loops as written (one stage binding two loops to one thread) is ``schedule.threads``'.
"""

from __future__ import annotations

from ..bound.infer import run_infer_bound
from ..errors import TesselError
from ..ir import expr as E
from ..schedule.fixes import FixBuilder, Names, choose
from ..schedule.stage import Stage
from ..schedule.threads import bind_map, thread_key
from ..schedule.violation import Violation, ViolationKind


def _kernel_of(st: Stage) -> Stage:
    """The stage at the root whose loop nest ``st`` is computed in: one launch group."""
    seen = 0
    while st.attach_stage is not None and seen < len(st.schedule.stages):
        st, seen = st.attach_stage, seen + 1
    return st


def thread_extent_violations(sch, propose: bool = True) -> list:
    """A loop bound to a thread axis declared with a range must run over that range, and one
    thread has one extent in a launch (every loop bound to it in one kernel counts the same)."""
    binds = bind_map(sch.stages)
    if not binds:
        return []
    try:
        ctx = run_infer_bound(sch, check=False)
    except TesselError:
        return []  # the schedule is broken otherwise; lowering says how
    ana, out, first = ctx.analyzer, [], {}
    for st in reversed(sch.stages):  # readers first: a launch's extent is its outermost stage's
        for iv in st.leaf_iter_vars:
            thread, r = binds.get(iv), ctx.rmap.get(iv)
            if thread is None or r is None or st not in ctx.paths:
                continue
            if thread.dom is not None and not ana.can_prove_equal(r.extent, thread.dom.extent):
                out.append(_extent_violation(sch, st, iv, thread, r.extent, thread.dom.extent, None, propose))
                continue
            key = (id(_kernel_of(st)), thread_key(thread))
            if key not in first:
                first[key] = (st, iv, r.extent)
            elif not ana.can_prove_equal(r.extent, first[key][2]):
                out.append(_extent_violation(sch, st, iv, thread, r.extent, first[key][2], first[key], propose))
    return out


def _extent_violation(sch, st: Stage, iv: E.IterVar, thread: E.IterVar, ext, want, other, propose: bool):
    tag = thread.thread_tag
    if other is None:
        kind = ViolationKind.THREAD_EXTENT_DECLARED
        text = (f"stage {st.name}: loop {iv.name} runs {ext} times but is bound to {tag}, declared with "
                f"{want} threads (te.thread_axis(({thread.dom.min}, {thread.dom.min} + {want}), {tag!r})): the "
                f"launch has {want} of them, so iterations would be lost or threads idle. Split the loop by "
                f"{want} and bind the inner loop, or declare the axis with the loop's extent")
        stages, loops = (st,), (iv,)
    else:
        kind = ViolationKind.THREAD_TWO_EXTENTS
        text = (f"stage {st.name}: loop {iv.name} is bound to {tag} with extent {ext}, but {other[0].name}'s "
                f"loop {other[1].name} is bound to {tag} with extent {want} in the same kernel: a launch has one "
                f"number of {tag} threads. Split {iv.name} by {want} and bind the inner loop")
        stages, loops = (st, other[0]), (iv, other[1])
    v = Violation(kind, st, text, stages, loops)
    if not propose:
        return v
    candidates = [FixBuilder(Names(sch)).split(st, iv, int(want.value))] if isinstance(want, E.IntImm) else []
    return choose(sch, v, candidates)


__all__ = ["thread_extent_violations"]
