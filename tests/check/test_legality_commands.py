"""Legality of Tiramisu's commands from exact dependences, with repairs (issue 14, item 4).

After every command the schedules are checked against the dependences of the program order:
a command that would run a dependence's sink before its source is refused with a
ScheduleError (rule ``dependence-order``) naming the dependence -- kind, source, sink, tensor,
distance vectors -- and a concrete instance pair, and proposing a fix tessel computed from the
dependences and checked by replay: the shifts that make a fusion legal, the root order when no
loop can be shared, a skew that keeps every dependence. Each fix is applied and the kernel run
against NumPy on both targets. ``tessel.check.legalize_fusion`` and ``tessel.check.wavefront``
are the same solvers as a public API.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, check, ir_text, loops, rand

import tessel
from tessel import te
from tessel.errors import ScheduleError


def _run_in_place(s, A, a, expected, threads=None):
    for target in TARGETS:
        f = tessel.build(s, [A], target=target)
        x = a.copy()
        if threads is None:
            f(x)
        else:
            f(x, num_threads=threads)
        np.testing.assert_allclose(x, expected, rtol=1e-5, atol=1e-6, err_msg=target)


# ---- the two stencils of Tiramisu's tests 176/179/184/185, in place ---------------------------
def _wavefront(n, m):
    """A[i, j] = (A[i-1, j] + A[i, j-1]) / 2 in place: distances (1, 0) and (0, 1)."""
    A = te.placeholder((n, m), name="A")
    R = te.compute((n - 1, m - 1), lambda i, j: (A[i, j + 1] + A[i + 1, j]) * 0.5, name="R")
    s = te.create_schedule(R.op)
    s[R].store_in(A, lambda i, j: (i + 1, j + 1))
    return A, R, s


def _wavefront_ref(a):
    out = a.copy()
    for i in range(1, a.shape[0]):
        for j in range(1, a.shape[1]):
            out[i, j] = (out[i - 1, j] + out[i, j - 1]) * np.float32(0.5)
    return out


def _diagonal(n, m):
    """A[i, j] = (A[i-1, j-1] + A[i-1, j+1]) / 2 in place: distances (1, 1) and (1, -1)."""
    A = te.placeholder((n, m), name="A")
    D = te.compute((n - 1, m - 2), lambda i, j: (A[i, j] + A[i, j + 2]) * 0.5, name="D")
    s = te.create_schedule(D.op)
    s[D].store_in(A, lambda i, j: (i + 1, j + 1))
    return A, D, s


def _diagonal_ref(a):
    out = a.copy()
    for i in range(1, a.shape[0]):
        for j in range(1, a.shape[1] - 1):
            out[i, j] = (out[i - 1, j - 1] + out[i - 1, j + 1]) * np.float32(0.5)
    return out


def test_skew_1_1_is_legal_on_the_1_0_0_1_stencil():
    n, m = te.var("n"), te.var("m")
    A, R, s = _wavefront(n, m)
    s[R].skew(*R.op.axis, 1, 1)
    assert s.verify() is s
    a = rand(8, 9)
    _run_in_place(s, A, a, _wavefront_ref(a))


def test_skew_1_1_is_refused_on_the_diagonal_stencil_and_the_fix_is_2_1():
    n, m = te.var("n"), te.var("m")
    A, D, s = _diagonal(n, m)
    i, j = D.op.axis
    with pytest.raises(ScheduleError) as e:
        s[D].skew(i, j, 1, 1)
    err = e.value
    assert err.rule == "dependence-order"
    msg = str(err)
    assert "skew(i, j, 1, 1) is refused" in msg and "flow dependence D -> D through A" in msg
    assert "(1, -1), (1, 1)" in msg  # the distance vectors
    assert not s[D].commands and err.fix == "s[D].skew(D.op.axis[0], D.op.axis[1], 2, 1)"
    err.fix_steps.apply(s)
    assert [c.text() for c in s[D].commands] == ["skew(i, j, 2, 1)"]
    a = rand(7, 9)
    _run_in_place(s, A, a, _diagonal_ref(a))


def test_skew_2_1_is_legal_on_the_diagonal_stencil_and_its_inner_loop_is_parallel():
    n, m = te.var("n"), te.var("m")
    A, D, s = _diagonal(n, m)
    i, j = D.op.axis
    s[D].skew(i, j, 2, 1)
    s[D].parallel(j)
    assert s.verify() is s
    a = rand(9, 8)
    _run_in_place(s, A, a, _diagonal_ref(a), threads=2)


def test_the_refusal_names_the_broken_pair_of_instances():
    n = te.var("n")
    A, D, s = _diagonal(n, n)
    with pytest.raises(ScheduleError) as e:
        s[D].skew(*D.op.axis, 1, 1)
    msg = str(e.value)
    # "D(i=a, j=b) would no longer run after D(i=c, j=d)": a (1, -1) pair
    import re
    got = re.search(r"D\(i=(-?\d+), j=(-?\d+)\) would no longer run after D\(i=(-?\d+), j=(-?\d+)\)", msg)
    assert got is not None, msg
    si, sj, oi, oj = map(int, got.groups())
    assert (si - oi, sj - oj) == (1, -1)


# ---- parallel / vectorize / unroll before and after the skew ----------------------------------
def test_parallel_inner_loop_is_refused_before_the_skew_with_the_wavefront_as_fix():
    n, m = te.var("n"), te.var("m")
    A, R, s = _wavefront(n, m)
    i, j = R.op.axis
    s[R].parallel(j)
    with pytest.raises(ScheduleError) as e:
        s.verify()
    assert e.value.rule == "carried-dependence" and "cannot parallelize j" in str(e.value)
    assert e.value.fix == "s[R].skew(R.op.axis[0], R.op.axis[1], 1, 1)"
    e.value.fix_steps.apply(s)
    assert s.verify() is s
    a = rand(10, 7)
    _run_in_place(s, A, a, _wavefront_ref(a), threads=2)


def test_parallel_outer_loop_stays_refused_after_the_skew():
    n = te.var("n")
    A, R, s = _wavefront(n, n)
    i, j = R.op.axis
    s[R].skew(i, j, 1, 1)
    s[R].parallel(i)  # the wavefront's outer loop carries every dependence
    with pytest.raises(ScheduleError, match="cannot parallelize i"):
        s.verify()


@pytest.mark.parametrize("skew", [False, True])
def test_vectorize_inner_loop_before_and_after_the_skew(skew):
    n, m = te.var("n"), te.var("m")
    A, R, s = _wavefront(n, m)
    i, j = R.op.axis
    if skew:
        s[R].skew(i, j, 1, 1)
    s[R].vectorize(j)
    if not skew:
        with pytest.raises(ScheduleError, match="cannot vectorize j"):
            s.verify()
        return
    assert s.verify() is s
    a = rand(9, 11)
    _run_in_place(s, A, a, _wavefront_ref(a))


@pytest.mark.parametrize("skew", [False, True])
def test_unroll_keeps_the_order_so_it_is_legal_before_and_after_the_skew(skew):
    A, R, s = _wavefront(6, 5)
    i, j = R.op.axis
    if skew:
        s[R].skew(i, j, 1, 1)
    s[R].unroll(j)
    assert s.verify() is s
    a = rand(6, 5)
    _run_in_place(s, A, a, _wavefront_ref(a))


def test_wavefront_solver_finds_the_skew_and_the_parallel_loop():
    n = te.var("n")
    A, R, s = _wavefront(n, n)
    p = tessel.check.wavefront(s, R, *R.op.axis)
    assert p.possible and p.details["factors"] == (1, 1)
    assert p.code == "s[R].skew(R.op.axis[0], R.op.axis[1], 1, 1)\ns[R].parallel(R.op.axis[1])"
    assert not s[R].commands  # a proposal changes nothing until applied
    p.apply(s)
    a = rand(8, 8)
    _run_in_place(s, A, a, _wavefront_ref(a), threads=2)
    # the diagonal stencil's dependences are all carried by i: its inner loop is parallel as it is
    A, D, s2 = _diagonal(n, n)
    q = tessel.check.wavefront(s2, D, *D.op.axis)
    assert q.possible and q.details["factors"] is None and q.code == "s[D].parallel(D.op.axis[1])"
    q.apply(s2)
    _run_in_place(s2, A, a, _diagonal_ref(a), threads=2)


def test_a_2d_wavefront_recurrence_on_two_threads_computes_what_it_computes_serially():
    """h[i, j] = f(h[i-1, j], h[i, j-1]) written with te.recurrence, skewed, inner loop parallel."""
    n, m = 24, 19
    X = te.placeholder((n, m), name="X")

    def step(h, i, j):
        return te.if_then_else(te.all(i > 0, j > 0), (h[i - 1, j] + h[i, j - 1]) * 0.5 + X[i, j] * 0.25, X[i, j])

    h = te.recurrence((n, m), [te.define(step)], name="h")
    s = te.create_schedule(h.op)
    i, j = h.op.axis
    s[h].parallel(j)
    with pytest.raises(ScheduleError) as e:
        s.verify()
    assert "skew" in (e.value.fix or "")
    p = tessel.check.wavefront(te.create_schedule(h.op), h, i, j)
    assert p.possible and p.details["factors"] == (1, 1)
    s = te.create_schedule(h.op)
    p.apply(s)
    x = rand(n, m)
    ref = x.copy()
    for a in range(n):
        for b in range(m):
            if a > 0 and b > 0:
                ref[a, b] = (ref[a - 1, b] + ref[a, b - 1]) * np.float32(0.5) + x[a, b] * np.float32(0.25)
    for target in TARGETS:
        f = tessel.build(s, [X, h], target=target)
        outs = {}
        for threads in (1, 2):
            out = np.zeros((n, m), "float32")
            f(x, out, num_threads=threads)
            outs[threads] = out
        np.testing.assert_allclose(outs[1], ref, rtol=1e-5, atol=1e-5, err_msg=target)
        np.testing.assert_array_equal(outs[2], outs[1], err_msg=target)


# ---- fusion repaired by shifts; fusion possible only at an outer level -------------------------
def _blur(read="rows"):
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n + 2, m + 2), name="A")
    bx = te.compute((n + 2, m), lambda i, j: (A[i, j] + A[i, j + 1] + A[i, j + 2]) / 3, name="bx")
    body = {
        "rows": lambda i, j: (bx[i, j] + bx[i + 1, j] + bx[i + 2, j]) / 3,
        "reversed row": lambda i, j: bx[i, m - 1 - j] - bx[i + 1, j],
        "reversed column": lambda i, j: bx[n - 1 - i, j] * 2,
    }[read]
    by = te.compute((n, m), body, name="by")
    return A, bx, by, te.create_schedule(by.op)


def _blur_ref(a, read="rows"):
    bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / 3
    n = a.shape[0] - 2
    if read == "rows":
        return (bx[:-2] + bx[1:-1] + bx[2:]) / 3
    if read == "reversed row":
        return bx[:n, ::-1] - bx[1:n + 1]
    return bx[:n][::-1] * 2


def test_a_fusion_at_the_inner_level_is_repaired_by_the_shift_tessel_proposes():
    A, bx, by, s = _blur()
    with pytest.raises(ScheduleError) as e:
        s[by].after(s[bx], by.op.axis[1])
    err = e.value
    assert err.rule == "dependence-order"
    assert "flow dependence bx -> by through bx" in str(err)
    assert "(-2, 0), (-1, 0), (0, 0)" in str(err)  # by's row i reads bx's rows i .. i + 2
    assert err.fix == "s[by].shift(by.op.axis[0], 2)\ns[by].after(s[bx], by.op.axis[1])"
    assert s.orders == () and not s[by].commands  # refused: nothing changed
    err.fix_steps.apply(s)
    heads = loops(ir_text(s, [A, by]))
    assert len(heads) == 2  # one fused nest
    a = rand(11, 10)
    check(s, [A, by], [a], [_blur_ref(a)])


def test_legalize_fusion_gives_the_same_commands_as_a_proposal():
    A, bx, by, s = _blur()
    p = tessel.check.legalize_fusion(s, by, bx, by.op.axis[1])
    assert p.possible and p.details["shifts"] == {by.op.axis[0]: 2} and p.details["level"] is by.op.axis[1]
    assert str(p) == "s[by].shift(by.op.axis[0], 2)\ns[by].after(s[bx], by.op.axis[1])"
    # one row less is refused: the shift is the least that works
    s2 = s.copy()
    s2[by].shift(by.op.axis[0], 1)
    with pytest.raises(ScheduleError, match="dependence bx -> by"):
        s2[by].after(s2[bx], by.op.axis[1])
    # the proposal replays onto a fresh schedule of the same program
    fresh = te.create_schedule(by.op)
    p.apply(fresh)
    a = rand(9, 13)
    check(fresh, [A, by], [a], [_blur_ref(a)])


def test_a_row_read_backwards_is_fused_inside_with_one_row_of_delay():
    A, bx, by, s = _blur("reversed row")
    p = tessel.check.legalize_fusion(s, by, bx, by.op.axis[1])
    assert p.possible and p.details["shifts"] == {by.op.axis[0]: 1}
    p.apply(s)
    a = rand(8, 9)
    check(s, [A, by], [a], [_blur_ref(a, "reversed row")])


def test_an_impossible_fusion_is_refused_with_the_level_where_it_becomes_possible():
    A, bx, by, s = _blur("reversed column")
    for level in (by.op.axis[1], by.op.axis[0]):
        with pytest.raises(ScheduleError) as e:
            s[by].after(s[bx], level)
        msg = str(e.value)
        assert "flow dependence bx -> by through bx" in msg
        assert "possible only at the root" in msg
        assert e.value.fix == "s[by].after(s[bx], None)"
    p = tessel.check.legalize_fusion(s, by, bx, by.op.axis[1])
    assert not p.possible and p.details["level"] is None
    e.value.fix_steps.apply(s)
    a = rand(7, 6)
    check(s, [A, by], [a], [_blur_ref(a, "reversed column")])


def test_reverse_of_a_loop_carrying_a_dependence_is_refused():
    n = te.var("n")
    A, R, s = _wavefront(n, n)
    with pytest.raises(ScheduleError, match="reverse\\(i\\) is refused: it reverses the flow dependence R -> R"):
        s[R].reverse(R.op.axis[0])
    assert not s[R].commands
    B = te.compute((n, n), lambda i, j: A[i, j] + 1, name="B")
    s2 = te.create_schedule(B.op)
    s2[B].reverse(B.op.axis[0])  # no dependence: any order is legal
    a = rand(5, 5)
    check(s2, [A, B], [a], [a + 1])


def test_a_shift_that_undoes_a_legal_fusion_is_refused():
    A, bx, by, s = _blur()
    tessel.check.legalize_fusion(s, by, bx, by.op.axis[1]).apply(s)
    with pytest.raises(ScheduleError, match="shift\\(i, -1\\) is refused"):
        s[by].shift(by.op.axis[0], -1)
    a = rand(6, 5)
    check(s, [A, by], [a], [_blur_ref(a)])


# ---- storage folding: the fold must hold every value until it is read --------------------------
def test_a_fold_too_small_for_the_fused_blur_is_refused_with_the_least_that_works():
    A, bx, by, s = _blur()
    tessel.check.legalize_fusion(s, by, bx, by.op.axis[1]).apply(s)
    s[bx].storage_fold(bx.op.axis[0], 2)  # by reads rows i .. i + 2: three are live at once
    with pytest.raises(ScheduleError) as e:  # judged on the finished schedule: verify, build
        tessel.build(s, [A, by], target="python")
    msg = str(e.value)
    assert e.value.rule == "dependence-order" and "flow dependence bx -> by" in msg and "overwrote" in msg
    assert e.value.fix == "s[bx].storage_fold(bx.op.axis[0], 3)"
    e.value.fix_steps.apply(s)
    assert s.verify() is s
    a = rand(10, 7)
    check(s, [A, by], [a], [_blur_ref(a)])


def test_a_fold_before_the_fusion_that_makes_it_legal_is_accepted():
    A, bx, by, s = _blur()
    s[bx].storage_fold(bx.op.axis[0], 3)
    with pytest.raises(ScheduleError, match="overwrote") as e:
        s.verify()  # every row of bx is written before by reads any
    assert e.value.fix is None  # no constant fold holds a whole image of symbolic size
    tessel.check.legalize_fusion(s, by, bx, by.op.axis[1]).apply(s)
    assert s.verify() is s
    a = rand(9, 8)
    check(s, [A, by], [a], [_blur_ref(a)])
