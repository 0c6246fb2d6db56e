"""The rules of ``bind`` (schedule/threads.py): refused with an explanation and a fix that keeps
what the schedule computes, validated by replay; what TVM accepts (cooperative fetching, nested
virtual threads) is legal."""

from __future__ import annotations

import pytest
from helpers import TARGETS, check, rand

import tessel
from tessel import te
from tessel.errors import ScheduleError


def _refused(s, args) -> ScheduleError:
    with pytest.raises(ScheduleError) as info:
        tessel.lower(s, args)
    return info.value


def _chain(n=29, m=16):
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2, name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] + 1, name="C")
    return A, B, C


def test_declared_thread_extent_must_match_the_loop():
    A, B, C = _chain()
    s = te.create_schedule(C.op)
    s[B].compute_inline()
    s[C].bind(C.op.axis[0], te.thread_axis("blockIdx.x"))
    s[C].bind(C.op.axis[1], te.thread_axis((0, 8), "threadIdx.x"))  # the loop runs 16 times
    err = _refused(s, [A, C])
    assert err.rule == "thread-extent-declared"
    assert "loop j runs 16 times but is bound to threadIdx.x, declared with 8 threads" in err.explanation
    assert err.fix == "s[C].split(C.op.axis[1], factor=8)"
    err.fix_steps.apply(s)
    a = rand(29, 16)
    check(s, [A, C], [a], [a * 2 + 1])


def test_one_thread_at_two_extents_in_one_kernel():
    A, B, C = _chain(29, 12)
    s = te.create_schedule(C.op)
    bx = te.thread_axis("blockIdx.x")
    xo, xi = s[C].split(C.op.axis[1], factor=4)
    s[C].bind(C.op.axis[0], bx)
    s[C].bind(xi, te.thread_axis("threadIdx.x"))  # 4 threads
    s[B].compute_at(s[C], C.op.axis[0])
    s[B].bind(B.op.axis[1], te.thread_axis("threadIdx.x"))  # a row of B: 12 of them
    err = _refused(s, [A, C])
    assert err.rule == "thread-two-extents"
    assert ("loop j is bound to threadIdx.x with extent 12, but C's loop j.inner is bound to threadIdx.x "
            "with extent 4 in the same kernel") in err.explanation
    assert err.fix == "s[B].split(B.op.axis[1], factor=4)"
    err.fix_steps.apply(s)
    s.verify()
    a = rand(29, 12)
    check(s, [A, C], [a], [a * 2 + 1])


def test_the_same_thread_in_two_kernels_may_have_two_extents():
    A, B, C = _chain(29, 12)
    s = te.create_schedule(C.op)
    s[B].bind(B.op.axis[1], te.thread_axis("threadIdx.x"))  # 12 threads, in B's own launch
    xo, xi = s[C].split(C.op.axis[1], factor=4)
    s[C].bind(xi, te.thread_axis("threadIdx.x"))  # 4 threads, in C's
    assert s.verify() is s
    a = rand(29, 12)
    check(s, [A, C], [a], [a * 2 + 1])


@pytest.mark.parametrize("adjacent", [True, False])
def test_two_loops_of_one_stage_bound_to_one_thread(adjacent):
    A, B, C = _chain(12, 10)
    s = te.create_schedule(C.op)
    s[B].compute_inline()
    tx = te.thread_axis("threadIdx.x")
    i, j = C.op.axis
    if adjacent:
        s[C].bind(i, tx)
        s[C].bind(j, te.thread_axis("threadIdx.x"))  # another object, the same thread index
    else:
        jo, ji = s[C].split(j, factor=5)
        s[C].bind(i, tx)
        s[C].bind(ji, tx)
    err = _refused(s, [A, C])
    assert err.rule == "thread-bound-twice"
    assert "a thread has one value for the whole launch, so both loops would take the same value" in err.explanation
    # one loop counts both: fuse (next to each other first), then bind once
    fuse = ("fused = s[C].fuse(C.op.axis[0], C.op.axis[1])" if adjacent else
            "loop0 = C.op.axis[0]\nloop1 = s[C].leaf_iter_vars[2]\nloop2 = s[C].leaf_iter_vars[1]\n"
            "s[C].reorder(loop0, loop1, loop2)\nfused = s[C].fuse(loop0, loop1)")
    assert err.fix == fuse + "\ns[C].bind(fused, te.thread_axis('threadIdx.x'))"
    if not adjacent:  # the code does what the steps do
        s2 = s.copy()
        exec(err.fix, {"s": s2, **err.fix_names})
        assert len(s2[C].leaf_iter_vars) == 2

    assert "threadIdx.z" not in err.fix and "threadIdx.y" not in err.fix  # no other thread: same meaning
    err.fix_steps.apply(s)
    s.verify()
    a = rand(12, 10)
    check(s, [A, C], [a], [a * 2 + 1])


@pytest.mark.parametrize("tag", ['threadIdx.x"); __import__("os").system("touch {m}")#',
                                 "vthread'); __import__('os').system('touch {m}')#"])
def test_a_thread_tag_in_a_fix_is_a_string_of_its_characters(tmp_path, tag):
    """The fix is Python a user pastes: a tag reaches it only as a literal, never as code."""
    marker = tmp_path / "pwned"
    tag = tag.format(m=marker)
    A, B, C = _chain(12, 10)
    s = te.create_schedule(C.op)
    s[B].compute_inline()
    t = te.thread_axis((0, 12), tag) if tag.startswith("vthread") else te.thread_axis(tag)
    i, j = C.op.axis
    s[C].bind(i, t)
    s[C].bind(j, t)
    err = _refused(s, [A, C])
    assert err.rule == "thread-bound-twice"
    s2 = s.copy()
    exec(err.fix, {"s": s2, **err.fix_names})
    assert not marker.exists(), "a thread tag in the fix ran as code"
    assert [s2[C].iter_var_attrs[iv].bind_thread.thread_tag for iv in s2[C].leaf_iter_vars] == [tag]


def test_one_virtual_thread_bound_twice_in_a_stage_is_refused_two_are_not():
    A, B, C = _chain(12, 10)
    s = te.create_schedule(C.op)
    s[B].compute_inline()
    v = te.thread_axis((0, 2), "vthread", name="vy")
    io, ii = s[C].split(C.op.axis[0], nparts=2)
    jo, ji = s[C].split(C.op.axis[1], nparts=2)
    s[C].reorder(io, jo, ii, ji)
    s[C].bind(io, v)
    s[C].bind(jo, te.thread_axis((0, 2), "vthread", name="vx"))
    assert s.verify() is s
    s[C].bind(jo, v)
    assert _refused(s, [A, C]).rule == "thread-bound-twice"


@pytest.mark.parametrize("target", TARGETS)
def test_cooperative_binding_is_legal_and_local_copies_run_serially(target):
    # B.local inside C's thread loop binds its loop to the same thread: that thread, not a loop
    A, B, C = _chain(23, 8)
    s = te.create_schedule(C.op)
    BL = s.cache_read(B, "local", [C])
    tx = te.thread_axis("threadIdx.x")
    s[C].bind(C.op.axis[0], te.thread_axis("blockIdx.x"))
    s[C].bind(C.op.axis[1], tx)
    s[BL].compute_at(s[C], C.op.axis[1])
    s[B].compute_at(s[C], C.op.axis[1])
    assert s.verify() is s
    a = rand(23, 8)
    check(s, [A, C], [a], [a * 2 + 1], targets=(target,))
