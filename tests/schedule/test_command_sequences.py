"""Sequences of Tiramisu commands whose final schedule is legal are accepted (issue 32).

A reshaping command (interchange, skew, reverse) is given to one stage at a time; between the
calls, stages fused with ``after`` disagree about their shared loops and a dependence across
them runs the wrong way. That intermediate state is a step towards a legal schedule, not an
error: the call is accepted as "legal only if" the other stages follow, and the build checks
the final schedule (and says the condition again if it still breaks a dependence).
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, check, ir_text, loops, rand

import tessel
from tessel import te
from tessel.errors import ScheduleError, TesselWarning


def _fused_pair(n, m):
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] + 1, name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] * 3, name="C")
    s = te.create_schedule(C.op)
    s[C].after(s[B], C.op.axis[1])  # one nest, B then C in its innermost loop
    return A, B, C, s


@pytest.mark.parametrize("c_first", [False, True])
def test_after_then_interchange_of_both_fused_stages_is_accepted(c_first):
    A, B, C, s = _fused_pair(7, 13)
    for T in ((C, B) if c_first else (B, C)):
        s[T].interchange(*T.op.axis)
    heads = loops(ir_text(s, [A, C]))
    # the order's level names C's loop j, now the outer one: one nest over the columns
    assert heads[0].startswith("for (j") and all(h.startswith("for (i") for h in heads[1:])
    a = rand(7, 13)
    check(s, [A, C], [a], [(a + 1) * 3])


def test_interchange_of_one_fused_stage_is_refused_at_build_with_its_condition():
    A, B, C, s = _fused_pair(7, 13)
    s[B].interchange(*B.op.axis)  # legal only once C follows
    for target in TARGETS:
        with pytest.raises(ScheduleError, match="flow dependence B -> C") as e:
            tessel.build(s, [A, C], target=target)
        assert "interchange(i, j) of B was accepted as legal only if C" in str(e.value)


def test_a_shift_that_breaks_a_fusion_is_still_refused_at_the_call():
    A, B, C, s = _fused_pair(7, 13)
    with pytest.raises(ScheduleError, match="shift\\(i, 1\\) is refused"):
        s[B].shift(B.op.axis[0], 1)  # an offset against C: shifting C alike would undo it


def _wavefront(n, m):
    A = te.placeholder((n, m), name="A")
    R = te.compute((n - 1, m - 1), lambda i, j: (A[i, j + 1] + A[i + 1, j]) * 0.5, name="R")
    s = te.create_schedule(R.op)
    s[R].store_in(A, lambda i, j: (i + 1, j + 1))  # in place: dependences (1, 0) and (0, 1)
    return A, R, s


def _wavefront_ref(a):
    out = a.copy()
    for i in range(1, a.shape[0]):
        for j in range(1, a.shape[1]):
            out[i, j] = (out[i - 1, j] + out[i, j - 1]) * np.float32(0.5)
    return out


def test_skew_then_reverse_of_the_wavefront_inner_loop_is_accepted():
    A, R, s = _wavefront(9, 13)
    i, j = R.op.axis
    s[R].skew(i, j, 1, 1)
    s[R].reverse(j)  # the skewed inner loop carries no dependence: any direction is legal
    _check_in_place(s, A)


def test_one_skew_over_three_fused_stages_is_accepted():
    n, m = 9, 13
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] + 1, name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] * 3, name="C")
    D = te.compute((n, m), lambda i, j: C[i, j] - B[i, j], name="D")
    s = te.create_schedule(D.op)
    s[C].after(s[B], C.op.axis[1])
    s[D].after(s[C], D.op.axis[1])
    for T in (B, C, D):
        s[T].skew(*T.op.axis, 1, 1)
    heads = loops(ir_text(s, [A, D]))
    assert len(heads) == 2 and "n" not in heads[0]  # one skewed nest over constant sizes
    a = rand(n, m)
    check(s, [A, D], [a], [(a + 1) * 2])


def _check_in_place(s, A):
    """The wavefront updates A in place: each target against the reference, from one input."""
    a = rand(9, 13)
    for target in TARGETS:
        x = a.copy()
        tessel.build(s, [A], target=target)(x)
        np.testing.assert_allclose(x, _wavefront_ref(a), rtol=1e-5, atol=1e-6, err_msg=target)


@pytest.mark.parametrize("matrix", [(1, 0, 1, 1), (0, 1, 1, 0), (2, 1, 1, 1)])
def test_skew_takes_any_unimodular_matrix(matrix):
    A, R, s = _wavefront(9, 13)
    s[R].skew(*R.op.axis, *matrix)  # (i, i + j); the two loops swapped; (2i + j, i + j)
    _check_in_place(s, A)


def test_tile_after_a_skew_given_as_a_matrix_tiles_the_skewed_loops():
    A, R, s = _wavefront(9, 13)
    i, j = R.op.axis
    s[R].skew(i, j, 1, 1, 0, 1)
    s[R].tile(i, j, 4, 4)
    heads = loops(ir_text(s, [A]))
    assert len(heads) == 4
    _check_in_place(s, A)


def test_a_skew_matrix_that_is_not_unimodular_is_refused_with_one_that_is():
    A, R, s = _wavefront(9, 13)
    with pytest.raises(ScheduleError, match="a\\*e - b\\*c is 2, must be 1 or -1.*\\(c, e\\) = \\(0, 1\\)"):
        s[R].skew(*R.op.axis, 1, 1, 0, 2)
    with pytest.raises(ScheduleError, match="whole or not at all"):
        s[R].skew(*R.op.axis, 1, 1, 0)
    assert not s[R].commands


def _chain_with_init():
    A = te.placeholder((3, 13), name="A", dtype="int32")
    kb = te.reduce_axis((0, 13), name="kb")
    Bp = te.compute((3,), lambda i: A[i, 0] * 2 + 1, name="Bp")
    B = te.compute((3,), lambda i: te.sum(A[i, kb] * 2, axis=kb, init=Bp[i], where=kb > i), name="B")
    C = te.compute((2,), lambda i: B[i] * 1 + B[i + 1] * -2, name="C")
    D = te.compute((1,), lambda i: C[i] * 1 + C[i + 1] * -2, name="D")
    a = rand(3, 13, dtype="int32")
    k = np.arange(13)[None, :] > np.arange(3)[:, None]
    rb = (a[:, 0] * 2 + 1).astype(np.int64) + np.where(k, a.astype(np.int64) * 2, 0).sum(axis=1)
    rc = rb[0:2] - 2 * rb[1:3]
    return A, Bp, C, D, a, (rc[0:1] - 2 * rc[1:2]).astype(np.int32)


def test_a_command_is_refused_only_for_what_it_breaks():
    """Fuzz F18: D was first ordered before Bp (which runs before C, which D reads: broken, and
    judged at the build). Refusing the next commands for that dependence refused the way out:
    ``after(C, i)`` then ``shift(i, 1)`` is legal, and each call is a step towards it."""
    A, Bp, C, D, a, rd = _chain_with_init()
    s = te.create_schedule([D.op])
    s[D].before(s[Bp], s[D].leaf_iter_vars[0])
    s[D].after(s[C], D.op.axis[0])
    s[D].shift(D.op.axis[0], 1)
    check(s, [A, D], [a], [rd], targets=TARGETS)


def test_a_refusals_fix_works_from_the_schedule_it_leaves():
    """The fix a refused command offers is checked on the schedule as the refusal leaves it
    (F18: it was checked with the refused command applied), so applying it is accepted."""
    A, Bp, C, D, a, rd = _chain_with_init()
    s = te.create_schedule([D.op])
    with pytest.raises(ScheduleError, match="shifted by 1") as err:
        s[D].after(s[C], D.op.axis[0])
    exec(err.value.fix, {"s": s, "D": D, "C": C})
    check(s, [A, D], [a], [rd], targets=TARGETS)


def test_a_command_moving_a_loop_the_init_shares_into_the_update_alone_is_refused():
    """Fuzz F19: an interchange of a loop outside the reduction loop (the init's and the
    update's) with one inside it (each has its own), made so by a reorder after it, crashed the
    model (an IndexError); the positions it would give the shared loop disagree, so it is refused."""
    A = te.placeholder((7, 3), name="A", dtype="float64")
    kb = te.reduce_axis((0, 3), name="kb")
    B = te.compute((7, 1), lambda i, j: te.sum(A[i, j + kb] * (kb + 1).astype("float64"), axis=kb), name="B")
    s = te.create_schedule([B.op])
    s[B].reorder(*[s[B].leaf_iter_vars[p] for p in [1, 0, 2]])
    s[B].reverse(s[B].leaf_iter_vars[0])
    s[B].tile(s[B].leaf_iter_vars[0], s[B].leaf_iter_vars[1], 16, 3)
    s[B].interchange(s[B].leaf_iter_vars[1], s[B].leaf_iter_vars[3])
    s[B].interchange(s[B].leaf_iter_vars[2], s[B].leaf_iter_vars[1])
    s[B].reorder(*[s[B].leaf_iter_vars[p] for p in [0, 4, 2, 3]])
    with pytest.raises(ScheduleError, match=r"interchange\(i.outer, i.inner\) moves loop i.outer, which B .* shares"):
        tessel.lower(s, [A, B])


def _fused_pair_among_many(n, m, others):
    """_fused_pair beside ``others`` independent stages (all outputs): a large schedule."""
    A, B, C, _ = _fused_pair(n, m)
    def scaled(k: int):
        return lambda i: A[i, 0] * k

    rest = [te.compute((n,), scaled(k), name=f"D{k}") for k in range(others)]
    return A, B, C, rest, te.create_schedule([C.op, *[d.op for d in rest]])


def test_a_large_schedule_s_commands_are_judged_at_build_with_the_same_refusal(recwarn):
    """Past EAGER_CHECK_STAGES computed stages, a command is not checked on its own (each check
    models every stage: many commands cost the square of the program); the build refuses the
    same broken dependence, and the user is told once when the checks move there."""
    from tessel.check.commands import EAGER_CHECK_STAGES

    A, B, C, rest, s = _fused_pair_among_many(7, 13, EAGER_CHECK_STAGES)
    with pytest.warns(TesselWarning, match="after\\(B, j\\) and the commands after it are checked against the "
                                                  "program's dependences once, when the schedule is built"):
        s[C].after(s[B], C.op.axis[1])
    s[B].shift(B.op.axis[0], 1)  # refused at the call in a small schedule (the test above)
    s[rest[0]].shift(rest[0].op.axis[0], 1)  # told once only
    assert not [w for w in recwarn.list if "checked against the program" in str(w.message)][1:]
    with pytest.raises(ScheduleError, match="flow dependence B -> C"):
        tessel.build(s, [A, C, *rest], target="c")
    small = _fused_pair_among_many(7, 13, EAGER_CHECK_STAGES - 3)[-1]  # 40 computed stages: checked at once
    B2, C2 = (small.stages[[st.name for st in small.stages].index(n)] for n in "BC")
    C2.after(B2, C2.op.axis[1])
    with pytest.raises(ScheduleError, match="shift\\(i, 1\\) is refused"):
        B2.shift(B2.op.axis[0], 1)
