"""nvFuser's own computeAt and inlining tests (NVIDIA/Fuser, ``tests/cpp/test_gpu1.cpp``,
``test_gpu3.cpp``, ``test_inlining.cpp``, ``test_compute_with.cpp``), written again in tessel's
terms: nvFuser's positions where its test states or implies them, and NumPy's values on random
data at awkward sizes with both targets. Where tessel still differs, the test says so and why
(docs/compute_at.md lists the same differences)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check, rand

import tessel
from tessel import te
from tessel.errors import ScheduleError


def positions(s, *ts):
    return {t.name: s[t].compute_at_pos for t in ts}


# ---- AdvancedComputeAt7 / 8: a broadcast read, a fused and split output, two computeAts --------
def two_outputs(n, m):
    """t1 = t0 + 1 feeds t4 = t1 + (t2 + 3) and, broadcast along a new axis, t7 = t5 * t6."""
    t0, t2, t6 = (te.placeholder((n,), name="t0"), te.placeholder((n,), name="t2"),
                  te.placeholder((n, m), name="t6"))
    t1 = te.compute((n,), lambda i: t0[i] + 1.0, name="t1")
    t3 = te.compute((n,), lambda i: t2[i] + 3.0, name="t3")
    t4 = te.compute((n,), lambda i: t1[i] + t3[i], name="t4")
    t5 = te.compute((n, m), lambda i, j: t1[i], name="t5")
    t7 = te.compute((n, m), lambda i, j: t5[i, j] * t6[i, j], name="t7")
    return (t0, t2, t6), (t1, t3, t4, t5, t7)


def _two_outputs_check(s, ins, outs, n, m):
    t0, t2, t6 = ins
    a, b, c = rand(n), rand(n, seed=1), rand(n, m, seed=2)
    check(s, [t0, t2, t6, outs[2], outs[4]], [a, b, c], [a + 1 + b + 3, (a + 1)[:, None] * c])


def _fused_split_output(s, t7, outer_parts: bool):
    jo, _ = s[t7].split(t7.op.axis[1], factor=2)
    f = s[t7].fuse(t7.op.axis[0], jo)
    if outer_parts:  # AdvancedComputeAt8: split(0, 128, inner=false), split(0, 4, inner=false)
        fo, _ = s[t7].split(f, nparts=128)
        s[t7].split(fo, nparts=4)
    else:  # AdvancedComputeAt7: split(0, 4), split(0, 128)
        fo, _ = s[t7].split(f, factor=4)
        s[t7].split(fo, factor=128)


def test_advanced_compute_at_7_at_small_sizes():
    """t1 at t7's position 1 (its one loop inside the fused row x column-pair loop: broadcast
    forwarding, t1 recomputed per column pair); then computing t1 and t3 at t4 leaves t5's loops
    as they were (nvFuser's assertion). At 37 x 23 the outer loop has one iteration, so t4 can
    share it exactly."""
    n, m = 37, 23
    ins, (t1, t3, t4, t5, t7) = two_outputs(n, m)
    s = te.create_schedule([t4.op, t7.op])
    _fused_split_output(s, t7, outer_parts=False)
    s[t1].compute_at(s[t7], 1)
    assert positions(s, t1, t5) == {"t1": 1, "t5": 1}
    loops = list(s[t5].leaf_iter_vars)
    with pytest.raises(ScheduleError) as err:  # t1 already lives in t7's loop: it cannot move
        s[t1].compute_at(s[t4], -1)
    err.value.fix_steps.apply(s)
    s[t3].compute_at(s[t4], -1)
    assert s[t5].leaf_iter_vars == loops
    _two_outputs_check(s, ins, (t1, t3, t4, t5, t7), n, m)


@pytest.mark.parametrize("n, m", [(101, 203), (100, 200), (5, 1)])
def test_advanced_compute_at_7_at_nvfusers_sizes(n, m):
    """At nvFuser's sizes t7's fused outer loop runs over chunks of rows x column pairs, none of
    them t4's rows: t4 (an output beside t7) runs in that loop over the rows each chunk covers,
    a row spanning two chunks computed in both (nvFuser's predicated loop does the same); t1 is
    computed there for t5 and t4 together. Then computing t1 and t3 at t4 leaves t5's loops as
    they were (nvFuser's assertion)."""
    ins, (t1, t3, t4, t5, t7) = two_outputs(n, m)
    s = te.create_schedule([t4.op, t7.op])
    _fused_split_output(s, t7, outer_parts=False)
    s[t1].compute_at(s[t7], 1)
    assert positions(s, t1, t5) == {"t1": 1, "t5": 1}
    assert s[t4].attach_stage is s[t7]
    if n * m > 512:  # more than one chunk: t4 is tied to t7's rows, not sharing a loop of its own
        assert s[t4].placement.image and "t4 runs in t7's loop" in s.position_log[-1].to_text()
    loops = list(s[t5].leaf_iter_vars)
    _two_outputs_check(s, ins, (t1, t3, t4, t5, t7), n, m)
    s[t3].compute_at(s[t4], -1)
    assert s[t5].leaf_iter_vars == loops
    _two_outputs_check(s, ins, (t1, t3, t4, t5, t7), n, m)
    # t7's chunks over blocks (nvFuser's BIDx): a row two chunks cover is written by two blocks,
    # the same value, which the cuda target's simulator accepts (and would refuse otherwise)
    s[t7].bind(s[t7].leaf_iter_vars[0], te.thread_axis("blockIdx.x"))
    a, b, c = rand(n), rand(n, seed=1), rand(n, m, seed=2)
    check(s, [*ins, t4, t7], [a, b, c], [a + 1 + b + 3, (a + 1)[:, None] * c], targets=("cuda-sim -features=check",))


def test_advanced_compute_at_8_a_later_target_already_sharing_loops():
    """The reverse order: t7 shares t4's row loop after the first call, then is the target of
    the last one; the stages placed in t7 get t4's loop (it used to be refused with "t7 is itself
    computed inside another stage")."""
    n, m = 101, 203
    ins, (t1, t3, t4, t5, t7) = two_outputs(n, m)
    s = te.create_schedule([t4.op, t7.op])
    _fused_split_output(s, t7, outer_parts=True)
    s[t1].compute_at(s[t4], -1)
    s[t3].compute_at(s[t4], -1)
    assert s[t7].attach_stage is s[t4]  # t7 shares t4's row loop
    s[t1].compute_at(s[t7], -1)
    assert positions(s, t1, t3) == {"t1": 1, "t3": 1} and s[t5].compute_at_pos >= 1
    _two_outputs_check(s, ins, (t1, t3, t4, t5, t7), n, m)


# ---- SimpleBCast2, ComplexBCast1/2: producers inlined through fused broadcast loops ------------
def test_simple_bcast_2():
    x, y, z = 63, 33, 15
    t0, t1, t4 = te.placeholder((x, y), name="t0"), te.placeholder((x, y), name="t1"), te.placeholder((y, z), name="t4")
    t2 = te.compute((x, y), lambda i, j: t0[i, j] + t1[i, j], name="t2")
    t3 = te.compute((x, y, z), lambda i, j, k: t2[i, j], name="t3")
    t5 = te.compute((y, z), lambda j, k: t4[j, k] - 0.1, name="t5")
    t6 = te.compute((x, y, z), lambda i, j, k: t5[j, k], name="t6")
    t7 = te.compute((x, y, z), lambda i, j, k: t3[i, j, k] + t6[i, j, k], name="t7")
    s = te.create_schedule(t7.op)
    s[t7].fuse(t7.op.axis[0], t7.op.axis[1])
    s[t2].compute_at(s[t7], -1)
    s[t5].compute_at(s[t7], -1)
    assert positions(s, t2, t3, t5, t6) == {"t2": 1, "t3": 2, "t5": 2, "t6": 2}  # every loop each has
    a, b, c = rand(x, y), rand(x, y, seed=1), rand(y, z, seed=2)
    check(s, [t0, t1, t4, t7], [a, b, c], [(a + b)[:, :, None] + (c - np.float32(0.1))[None]])


def test_complex_bcast_1():
    """t7's three axes fused into one loop: t1 (over y only) goes inside it through two
    broadcasts (it used to stay at position 0 in standard mode without a word)."""
    x, y, z = 2, 3, 4
    t0, t3, t6 = te.placeholder((y,), name="t0"), te.placeholder((y, z), name="t3"), te.placeholder((x, y, z), name="t6")
    t1 = te.compute((y,), lambda j: t0[j] / 2.0, name="t1")
    t2 = te.compute((y, z), lambda j, k: t1[j], name="t2")
    t4 = te.compute((y, z), lambda j, k: t2[j, k] * t3[j, k], name="t4")
    t5 = te.compute((x, y, z), lambda i, j, k: t4[j, k], name="t5")
    t7 = te.compute((x, y, z), lambda i, j, k: t5[i, j, k] + t6[i, j, k], name="t7")
    s = te.create_schedule(t7.op)
    f = s[t7].fuse(t7.op.axis[0], t7.op.axis[1])
    s[t7].fuse(f, t7.op.axis[2])
    s[t1].compute_at(s[t7], -1)
    assert positions(s, t1, t2, t4, t5) == {"t1": 1, "t2": 1, "t4": 1, "t5": 1}
    a, b, c = rand(y), rand(y, z, seed=1), rand(x, y, z, seed=2)
    check(s, [t0, t3, t6, t7], [a, b, c], [((a / 2)[:, None] * b)[None] + c])


@pytest.mark.parametrize("x, y, z", [(2, 3, 4), (5, 7, 11)])
def test_complex_bcast_2(x, y, z):
    t0, t4 = te.placeholder((y, z), name="t0"), te.placeholder((x, y), name="t4")
    t1 = te.compute((y, z), lambda j, k: t0[j, k] / 2.0, name="t1")
    r = te.reduce_axis((0, z), name="r")
    t2 = te.compute((y,), lambda j: te.sum(t1[j, r], axis=r), name="t2")
    t3 = te.compute((x, y), lambda i, j: t2[j], name="t3")
    t5 = te.compute((x, y), lambda i, j: t3[i, j] + t4[i, j], name="t5")
    s = te.create_schedule(t5.op)
    s[t5].fuse(t5.op.axis[0], t5.op.axis[1])
    s[t1].compute_at(s[t5], -1)
    s[t1].compute_at(s[t2], -1)
    assert positions(s, t1, t2, t3) == {"t1": 2, "t2": 1, "t3": 1}
    a, b = rand(y, z), rand(x, y, seed=1)
    check(s, [t0, t4, t5], [a, b], [(a / 2).sum(1)[None] + b], rtol=1e-4, atol=1e-5)


def test_complex_bcast_1_with_a_symbolic_size_and_a_split():
    n = te.var("n")
    t0, t6 = te.placeholder((n,), name="t0"), te.placeholder((3, n, 4), name="t6")
    t1 = te.compute((n,), lambda j: t0[j] * 0.5, name="t1")
    t5 = te.compute((3, n, 4), lambda i, j, k: t1[j], name="t5")
    t7 = te.compute((3, n, 4), lambda i, j, k: t5[i, j, k] + t6[i, j, k], name="t7")
    s = te.create_schedule(t7.op)
    f = s[t7].fuse(t7.op.axis[0], t7.op.axis[1])
    s[t7].split(f, factor=5)
    s[t1].compute_at(s[t7], 2)
    assert positions(s, t1, t5) == {"t1": 2, "t5": 2}  # t1 gets the split of j, forwarded
    for size in (1, 13):
        a, c = rand(size), rand(3, size, 4, seed=1)
        check(s, [t0, t6, t7], [a, c], [(a * 0.5)[None, :, None] + c])


# ---- ReductionMultiConsumer: two reductions of one producer ------------------------------------
def reduction_multi_consumer(n, m):
    t0 = te.placeholder((n, m), name="t0")
    t1 = te.compute((n, m), lambda i, j: te.exp(t0[i, j]), name="t1")
    r2, r3 = te.reduce_axis((0, m), name="r2"), te.reduce_axis((0, m), name="r3")
    t2 = te.compute((n,), lambda i: te.max(t1[i, r2], axis=r2), name="t2")
    t3 = te.compute((n,), lambda i: te.min(t1[i, r3], axis=r3), name="t3")
    t4 = te.compute((n,), lambda i: t2[i] + t3[i], name="t4")
    return t0, t1, t2, t3, t4


@pytest.mark.parametrize("n, m", [(13, 29), (1, 1), (7, 33)])
def test_reduction_multi_consumer_shares_one_reduction_loop(n, m):
    """nvFuser's position 2: t1 inside the reduction loop t2 and t3 share. t3 runs its update
    in t2's loop r2 and its init (and storage) in the row loop around it, so t1 is computed
    once per element and both reductions start once per row."""
    t0, t1, t2, t3, t4 = reduction_multi_consumer(n, m)
    s = te.create_schedule(t4.op)
    s[t1].compute_at(s[t2], -1, mode="best_effort")
    assert positions(s, t1, t2, t3) == {"t1": 2, "t2": 1, "t3": 1}
    assert "t3 shares t2's loops down to r2" in s.position_log[-1].to_text()
    text = str(tessel.lower(s, [t0, t4]))
    assert text.count("exp(") == 1 and "r3" not in text  # t3 has no reduction loop of its own
    if m > 1:  # (a loop of one iteration is dropped)
        assert text.index("t3[0] = float32(inf)") < text.index("for (r2, 0")
    a = rand(n, m)
    e = np.exp(a)
    check(s, [t0, t4], [a], [e.max(1) + e.min(1)], rtol=1e-4)
    s[t4].bind(t4.op.axis[0], te.thread_axis("blockIdx.x"))  # the rows over blocks: the cuda target's simulator
    check(s, [t0, t4], [a], [e.max(1) + e.min(1)], rtol=1e-4, targets=("cuda-sim -features=check",))


# ---- the inliner: InlineRepro1803, GetMaxPosAll, ComputeWith1's uninlinable axes ---------------
def _welford_rows(n0, n1):
    t0 = te.placeholder((n0, n1), name="t0")
    t1 = te.compute((n0, n1), lambda i, j: t0[i, j] + 0.0, name="t1")
    red = te.comm_reducer(lambda x, y: (x[0] + y[0], x[1] + y[1]),
                          lambda a, b: (te.const(0, a), te.const(0, b)), name="sum_sq")
    k = te.reduce_axis((0, n1), name="k")
    w1, w2 = te.compute((n0,), lambda i: red((t1[i, k], t1[i, k] * t1[i, k]), axis=k), name="w")
    out = te.compute((n0,), lambda i: w2[i] + 0.0, name="out")
    return t0, t1, w1, w2, out


def test_inline_repro_1803_unrolled_loops_block_best_effort():
    t0, t1, w1, w2, out = _welford_rows(37, 19)
    s = te.create_schedule(out.op)
    _, ii = s[out].split(out.op.axis[0], factor=16)
    s[out].unroll(ii)
    s[t1].compute_at(s[out], -1, mode="best_effort")
    assert s[w1].compute_at_pos == s[w2].compute_at_pos == 1  # nvFuser's assertion
    assert "unrolled" in s.position_log[-1].to_text()
    x = rand(37, 19)
    check(s, [t0, out], [x], [(x * x).sum(1)], rtol=1e-4)


def normalization(a0, a1, a2):
    """GetMaxPosAllNormalization's inner normalization (without its reshapes): t5 = t1 - bcast(sum(t1) + 1)."""
    t0 = te.placeholder((a0, a1, a2), name="t0")
    t1 = te.compute((a0, a1, a2), lambda i, j, k: t0[i, j, k] * 2.0, name="t1")
    r1, r2 = te.reduce_axis((0, a1), name="r1"), te.reduce_axis((0, a2), name="r2")
    t2 = te.compute((a0,), lambda i: te.sum(t1[i, r1, r2], axis=[r1, r2]), name="t2")
    t3 = te.compute((a0,), lambda i: t2[i] + 1.0, name="t3")
    t4 = te.compute((a0, a1, a2), lambda i, j, k: t3[i], name="t4")
    t5 = te.compute((a0, a1, a2), lambda i, j, k: t1[i, j, k] - t4[i, j, k], name="t5")
    return t0, t1, t2, t3, t4, t5


def test_get_max_pos_all_normalization():
    """The persistent t1 can share only the outer loop: max_position says 1 before anything is
    inlined, and changes nothing; inline_most then gives it."""
    t0, t1, t2, t3, t4, t5 = normalization(3, 4, 5)
    s = te.create_schedule(t5.op)
    assert s.max_position(t1) == 1
    assert s[t1].compute_at_pos == 0 and s[t1].attach_stage is None  # a question only
    assert s.inline_most()["t1"] == 1
    x = rand(3, 4, 5)
    check(s, [t0, t5], [x], [2 * x - ((2 * x).sum((1, 2)) + 1)[:, None, None]], rtol=1e-4)


def compute_with_rows(n0, n1):
    """ComputeWith1's fusion: t4 = bcast(sum(t1)) + t1 with t1 = t0 (a copy)."""
    t0 = te.placeholder((n0, n1), name="t0")
    t1 = te.compute((n0, n1), lambda i, j: t0[i, j] + 0.0, name="t1")
    k = te.reduce_axis((0, n1), name="k")
    t2 = te.compute((n0,), lambda i: te.sum(t1[i, k], axis=k), name="t2")
    t3 = te.compute((n0, n1), lambda i, j: t2[i], name="t3")
    t4 = te.compute((n0, n1), lambda i, j: t3[i, j] + t1[i, j], name="t4")
    return t0, t1, t2, t3, t4


@pytest.mark.parametrize("n0, n1", [(10, 11), (1, 1), (3, 17)])
def test_compute_with_1(n0, n1):
    """inline_most with every 2-d stage's inner axis uninlinable keeps every stage in the outer
    loop only; then t1.compute_with(-1) computes t1 inside t2's reduction loop (nvFuser resolves
    the reader to t2), stored per row where it was, so t4 still reads the whole row after t2's
    loop. Both readers' inner loops are then fixed (nvFuser's max producer position 2)."""
    t0, t1, t2, t3, t4 = compute_with_rows(n0, n1)
    s = te.create_schedule(t4.op)
    inner = [s[t].leaf_iter_vars[1] for t in (t1, t2, t3, t4)]
    got = s.inline_most(uninlinable=inner)
    assert (got["t1"], got["t2"], got["t3"]) == (1, 1, 1) and s[t4].max_producer_pos == 1
    assert s[t1].compute_with(-1) is s[t2]
    assert s[t1].compute_at_pos == 1 and s[t2].max_producer_pos == s[t4].max_producer_pos == 2
    for t in (t2, t4):
        with pytest.raises(ScheduleError, match="max-producer position"):
            s[t].split(s[t].leaf_iter_vars[1], factor=4)
    text = str(tessel.lower(s, [t0, t4]))
    if n1 > 1:  # t1's produce is inside t2's loop k; its storage is a whole row
        assert text.index("for (k, 0") < text.index("produce t1") < text.index("produce t3")
        assert f"allocate t1[float32 * 1 * {n1}]" in text
    x = rand(n0, n1)
    want = [x.sum(1)[:, None] + x]
    check(s, [t0, t4], [x], want, rtol=1e-4)
    ns: dict = {}
    exec(s.python(), ns)  # the recorded steps, compute_with included, give the same program
    assert str(tessel.lower(ns["schedule"](t4), [t0, t4])) == text
    s[t4].bind(t4.op.axis[0], te.thread_axis("blockIdx.x"))  # rows over blocks: the cuda target's simulator
    check(s, [t0, t4], [x], want, rtol=1e-4, targets=("cuda-sim -features=check",))


@pytest.mark.parametrize("n", [123, 1, 13])
def test_compute_with_3_stored_at_the_root(n):
    """ComputeWith3: t1 at the root, its loops replayed from t2's (split by 4 then 3), computed
    with t2 at t1's position 2: inside t2's loops, stored at the root (tessel's broadcast axis
    has two values, so t1 is computed again for each: the same values stored twice)."""
    t0 = te.placeholder((n,), name="t0")
    t1 = te.compute((n,), lambda i: t0[i] * 2.0, name="t1")
    t2 = te.compute((2, n), lambda b, i: t1[i] + b, name="t2")
    s = te.create_schedule(t2.op)
    io, _ = s[t2].split(t2.op.axis[1], factor=4)
    s[t2].split(io, factor=3)
    s.propagate(t2)
    assert s[t1].compute_with(-2) is s[t2]
    assert s[t1].placement.store == () and s[t2].max_producer_pos == 3
    x = rand(n)
    check(s, [t0, t2], [x], [(2 * x[None] + np.arange(2)[:, None]).astype("float32")])


def test_compute_with_refusals_name_the_loop():
    t0, t1, t2, t3, t4 = compute_with_rows(5, 6)
    s = te.create_schedule(t4.op)
    with pytest.raises(ScheduleError, match="t2 reads t1 and runs before t4"):  # t1 would not exist yet
        s[t1].compute_with(-1, s[t4])
    with pytest.raises(ScheduleError, match="deeper than its position"):
        s[t1].compute_with(0)
    with pytest.raises(ScheduleError, match="does not read t1"):
        s[t1].compute_with(1, s[t3])
    s.inline_most(uninlinable=[s[t].leaf_iter_vars[1] for t in (t1, t2, t3, t4)])
    s[t1].compute_with(-1)
    s[t2].reorder(s[t2].leaf_iter_vars[1], s[t2].leaf_iter_vars[0])  # t1's loops are no longer t2's
    with pytest.raises(ScheduleError, match="no longer holds") as err:
        tessel.lower(s, [t0, t4])
    exec(err.value.fix, {"s": s, "t1": t1})
    x = rand(5, 6)
    check(s, [t0, t4], [x], [x.sum(1)[:, None] + x], rtol=1e-4)


# ---- setLoopDomain: a producer given its reader's loop over an axis it lacks ---------------------
@pytest.mark.parametrize("n0, n1", [(7, 9), (1, 5)])
def test_compare_logical_and_loop_domains_without_set_loop_domain(n0, n1):
    """nvFuser's CompareLogicalAndLoopDomains gives t2 (over i0 only) t4's loop over i1 with
    setLoopDomain, so that t2 is computed in both of t4's loops. tessel has no loop a stage's
    own axes do not derive; TE's compute_at at that loop places it there (one value per
    iteration, recomputed per i1), and a position primitive stops before it (a broadcast loop
    of the reader, which nvFuser's inliner does not enter either)."""
    t0, t1 = te.placeholder((n0, n1), name="t0"), te.placeholder((n0,), name="t1")
    t2 = te.compute((n0,), lambda i: t1[i] * 3.0, name="t2")
    t3 = te.compute((n0, n1), lambda i, j: t2[i], name="t3")
    t4 = te.compute((n0, n1), lambda i, j: t0[i, j] + t3[i, j], name="t4")
    s = te.create_schedule(t4.op)
    assert s.max_position(t2) == 1
    s[t3].compute_inline()
    s[t2].compute_at(s[t4], t4.op.axis[1])
    if n1 > 1:  # inside t4's loop over j
        text = str(tessel.lower(s, [t0, t1, t4]))
        assert text.index("for (j, 0") < text.index("produce t2")
    a, b = rand(n0, n1), rand(n0, seed=1)
    check(s, [t0, t1, t4], [a, b], [a + 3 * b[:, None]])
