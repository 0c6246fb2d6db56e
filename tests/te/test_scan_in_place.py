"""A scan's state kept in the caller's array, each step over the one before (issue 33:
durbin's y, PolyBench's footprint): ``s[sc].store_in(Y, output=state)``. Legal exactly when no
value of the step before is read after the update wrote over it; refused otherwise, naming the
read (schedule/scan_storage.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import TARGETS

import tessel
from tessel import te
from tessel.ir import stmt as S
from tessel.ir.functor import collect

F64 = "float64"


def _allocated(s, args) -> dict[str, int]:
    func = tessel.lower(s, args)
    return {a.buffer.name: math.prod(int(x) for x in a.buffer.shape)
            for a in collect(func.body, lambda n: isinstance(n, S.Allocate), statements_only=True)}


def _durbin(N, direct_update=False):
    """Levinson-Durbin as PolyBench writes it: y updated in place through z each step."""
    r = te.placeholder((N,), F64, name="r")
    zero = te.const(0.0, F64)
    sb, sa, sy = (te.placeholder(shape, F64, name=n) for shape, n in (((N,), "beta"), ((N,), "alpha"), ((N, N), "ys")))
    b0 = te.compute((1,), lambda _: te.const(1.0, F64), name="beta0")
    a0 = te.compute((1,), lambda _: -r[0], name="alpha0")
    y0 = te.compute((1, N), lambda _, i: te.if_then_else(i == 0, -r[0], zero), name="y0")
    beta = te.compute((N,), lambda k: (1.0 - sa[k - 1] * sa[k - 1]) * sb[k - 1], name="beta_k")
    i = te.reduce_axis((0, N), name="i")
    total = te.compute((N,), lambda k: te.sum(r[k - i - 1] * sy[k - 1, i], axis=i, where=i < k, init=r[k]), name="sum")
    alpha = te.compute((N,), lambda k: -total[k] / beta[k], name="alpha_k")
    if direct_update:  # y's new row read straight from the row before, reversed: two rows needed
        y = te.compute((N, N), lambda k, j: te.if_then_else(
            j < k, sy[k - 1, j] + alpha[k] * sy[k - 1, k - j - 1], te.if_then_else(j == k, alpha[k], zero)), name="y_k")
    else:
        z = te.compute((N, N), lambda k, j: te.if_then_else(
            j < k, sy[k - 1, j] + alpha[k] * sy[k - 1, k - j - 1], zero), name="z")
        y = te.compute((N, N), lambda k, j: te.if_then_else(j < k, z[k, j], te.if_then_else(j == k, alpha[k], zero)),
                       name="y_k")
    _, _, ys = te.scan([b0, a0, y0], [beta, alpha, y], [sb, sa, sy], name="durbin")
    return r, ys


def _durbin_ref(r):
    N = len(r)
    y = np.zeros(N)
    y[0], beta, alpha = -r[0], 1.0, -r[0]
    for k in range(1, N):
        beta = (1 - alpha * alpha) * beta
        alpha = -(r[k] + r[k - 1::-1] @ y[:k]) / beta
        y[:k] = y[:k] + alpha * y[k - 1::-1]
        y[k] = alpha
    return y


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("N", [7, 31])
def test_durbin_s_y_lives_in_the_caller_s_array(target, N):
    r, ys = _durbin(N)
    Y = te.placeholder((N,), F64, name="y")
    s = te.create_schedule(ys.op)
    s[ys.op].storage_fold(ys.op.scan_axis, 2)
    s[ys.op].store_in(Y, output=ys)
    kept = _allocated(s, [r, Y])
    assert "durbin.v2" not in kept and "y0" not in kept  # no rows of its own, the init computed into y
    assert sum(kept.values()) == N + 5  # z's row, beta's and alpha's two steps, the sum
    rr = np.random.default_rng(N).random(N) + N  # a well-conditioned Toeplitz system
    got = np.full(N, np.nan)
    tessel.build(s, [r, Y], target=target)(rr, got)
    np.testing.assert_allclose(got, _durbin_ref(rr), rtol=1e-10)
    # the step is written as Python (the caller's array a parameter) and replays to the same program
    text = s.python()
    assert "store_in(y, output=s[durbin].op.output(2))" in text
    ns: dict = {}
    exec(compile(text, "<s.python()>", "exec"), ns)
    again = ns["schedule"](ys, Y)
    assert str(tessel.lower(again, [r, Y])) == str(tessel.lower(s, [r, Y]))


def test_an_update_reading_another_element_of_the_step_before_is_refused():
    r, ys = _durbin(9, direct_update=True)
    s = te.create_schedule(ys.op)
    with pytest.raises(tessel.ScheduleError, match=r"the update y_k reads ys\[k - 1, k - j - 1\], another element"):
        s[ys.op].store_in(te.placeholder((9,), F64, name="y"), output=ys)
    assert s[ys.op].scan_homes == ()  # the refused command changed nothing


def _decay(T, n):
    X = te.placeholder((T, n), F64, name="X")
    st = te.placeholder((T, n), F64, name="st")
    init = te.compute((1, n), lambda t, i: X[0, i], name="init")
    side = te.compute((T, n), lambda t, i: st[t - 1, (i + 1) % n] * 2.0, name="side")
    upd = te.compute((T, n), lambda t, i: st[t - 1, i] * 0.5 + side[t, i] + X[t, i], name="upd")
    res = te.scan(init, upd, st, name="res")
    return X, side, upd, res


def _decay_ref(x):
    h = x[0].copy()
    for t in range(1, len(x)):
        h = h * 0.5 + np.roll(h, -1) * 2.0 + x[t]
    return h


@pytest.mark.parametrize("target", TARGETS)
def test_a_body_stage_reading_other_elements_runs_before_the_update(target):
    """side reads the step before at i + 1: legal in place because it is computed whole before
    the update writes; computed inside the update's loops it would read overwritten values,
    which the build refuses (the rule is judged again on the finished schedule)."""
    T, n = 6, 11
    X, side, upd, res = _decay(T, n)
    H = te.placeholder((n,), F64, name="H")
    s = te.create_schedule(res.op)
    s[res].store_in(H, output=res)
    x = np.random.default_rng(1).random((T, n))
    got = np.zeros(n)
    tessel.build(s, [X, H], target=target)(x, got)
    np.testing.assert_allclose(got, _decay_ref(x), rtol=1e-12)
    s[side].compute_at(s[upd], upd.op.axis[1])
    with pytest.raises(tessel.ScheduleError, match="side reads st inside the loops of the update upd"):
        tessel.build(s, [X, H], target=target)


def test_what_the_caller_s_array_cannot_hold_is_refused():
    T, n = 6, 5
    X, side, upd, res = _decay(T, n)
    s = te.create_schedule(res.op)
    with pytest.raises(tessel.ScheduleError, match=r"H is float64\[4\], but a step of res is float64\[5\]"):
        s[res].store_in(te.placeholder((4,), F64, name="H"), output=res)
    with pytest.raises(tessel.ScheduleError, match="takes the caller's array"):
        s[res].store_in(upd, output=res)
    with pytest.raises(tessel.ScheduleError, match="give no index"):
        s[res].store_in(te.placeholder((n,), F64, name="H"), lambda t, i: (i,), output=res)
    # the caller's array read by another stage would show it a step's values
    H = te.placeholder((n,), F64, name="H")
    upd2 = te.compute((T, n), lambda t, i: res.op.state_placeholder[0][t - 1, i] + H[i], name="upd2")
    del upd2
    seen = te.compute((n,), lambda i: res[T - 2, i], name="seen")
    s = te.create_schedule(seen.op)
    with pytest.raises(tessel.ScheduleError, match=r"seen reads res\[4, \.\.\.\] after the scan"):
        s[res].store_in(H, output=res)


def test_a_state_starting_from_the_caller_s_values_reads_them_in_its_init():
    """The init reads the caller's array at the element it writes: the state starts from Y's
    values and ends in Y (an in-place time loop), on both targets."""
    T, n = 5, 9
    Y = te.placeholder((n,), F64, name="Y")
    st = te.placeholder((T, n), F64, name="st")
    init = te.compute((1, n), lambda t, i: Y[i], name="init")
    upd = te.compute((T, n), lambda t, i: st[t - 1, i] * 0.75 + 1.0, name="upd")
    res = te.scan(init, upd, st, name="res")
    s = te.create_schedule(res.op)
    s[res].store_in(Y, output=res)
    y0 = np.random.default_rng(3).random(n)
    want = y0.copy()
    for _ in range(T - 1):
        want = want * 0.75 + 1.0
    for target in TARGETS:
        got = y0.copy()
        tessel.build(s, [Y], target=target)(got)
        np.testing.assert_allclose(got, want, rtol=1e-12)
    other = te.compute((n,), lambda i: Y[(i + 1) % n] + res[T - 1, i], name="other")
    s = te.create_schedule(other.op)
    with pytest.raises(tessel.ScheduleError, match="other reads Y, which holds res's steps"):
        s[res].store_in(Y, output=res)


def test_a_state_in_the_caller_s_array_on_a_gpu():
    """Each step's threads write the caller's array (the cuda target, on the simulator where
    there is no GPU): the init's threads too, the steps a host loop around their launches."""
    T, n = 6, 32
    X = te.placeholder((T, n), "float32", name="X")
    H = te.placeholder((n,), "float32", name="H")
    st = te.placeholder((T, n), "float32", name="st")
    init = te.compute((1, n), lambda t, i: X[0, i], name="init")
    upd = te.compute((T, n), lambda t, i: st[t - 1, i] * 0.5 + X[t, i], name="upd")
    res = te.scan(init, upd, st, name="res")
    s = te.create_schedule(res.op)
    for stage in (upd, init):
        bx, tx = s[stage].split(stage.op.axis[1], factor=8)
        s[stage].bind(bx, te.thread_axis("blockIdx.x"))
        s[stage].bind(tx, te.thread_axis("threadIdx.x"))
    s[res].store_in(H, output=res)
    x = np.random.default_rng(7).random((T, n)).astype("float32")
    want = x[0].copy()
    for t in range(1, T):
        want = want * 0.5 + x[t]
    got = np.zeros(n, "float32")
    tessel.build(s, [X, H], target="cuda")(x, got)
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("seed", range(12))
def test_random_scans_in_place_are_refused_or_right(seed):
    """Random steps (a side stage reading the step before at a shifted element or not, an update
    reading its own element or a shifted one), random spatial schedules (a split, the side stage
    inside the update's loops or not): each state in the caller's array is either refused, at
    the command or at the build, or gives the values of the scan with every step kept."""
    rng = np.random.default_rng(seed)
    T, n = int(rng.integers(3, 7)), int(rng.integers(5, 14))
    d_side, d_upd = (int(x) for x in rng.choice([0, 1, n - 1], size=2))
    X = te.placeholder((T, n), F64, name="X")
    st = te.placeholder((T, n), F64, name="st")
    init = te.compute((1, n), lambda t, i: X[0, i], name="init")
    side = te.compute((T, n), lambda t, i: st[t - 1, (i + d_side) % n] * 0.25, name="side")
    upd = te.compute((T, n), lambda t, i: st[t - 1, (i + d_upd) % n] * 0.5 + side[t, i] + X[t, i], name="upd")
    res = te.scan(init, upd, st, name="res")
    H = te.placeholder((n,), F64, name="H")
    s = te.create_schedule(res.op)
    if rng.random() < 0.5:
        s[upd].split(upd.op.axis[1], int(rng.integers(2, 5)))
    if rng.random() < 0.4:
        s[side].compute_at(s[upd], s[upd].leaf_iter_vars[-1])
    x = rng.random((T, n))
    h = x[0].copy()
    for t in range(1, T):
        h = np.roll(h, -d_upd) * 0.5 + np.roll(h, -d_side) * 0.25 + x[t]
    try:
        s[res].store_in(H, output=res)
        f = tessel.build(s, [X, H], target="c")
    except tessel.ScheduleError as err:
        assert d_upd != 0 or "inside the loops of the update" in str(err), str(err)
        return
    assert d_upd == 0
    got = np.zeros(n)
    f(x, got)
    np.testing.assert_allclose(got, h, rtol=1e-12)


# the suite's replay check rebuilds the program on fresh copies, whose size variables a caller's
# array that no stage reads (H) does not follow, so it would refuse H's n as another n; s.python()
# takes H as a parameter and replays it (test_durbin_s_y_lives_in_the_caller_s_array)
@pytest.mark.no_replay_check
@pytest.mark.parametrize("target", TARGETS)
def test_a_state_in_the_caller_s_array_over_symbolic_sizes_folded_and_split(target):
    """In place with symbolic steps and size, the scan folded, the update split and a side stage
    reading the neighbour (computed whole first): one build, two sizes, NumPy's values."""
    T, n = te.var("T"), te.var("n")
    X = te.placeholder((T, n), F64, name="X")
    st = te.placeholder((T, n), F64, name="st")
    init = te.compute((1, n), lambda t, i: X[0, i], name="init")
    side = te.compute((T, n), lambda t, i: st[t - 1, (i + 1) % n] * 2.0, name="side")
    upd = te.compute((T, n), lambda t, i: st[t - 1, i] * 0.5 + side[t, i] + X[t, i], name="upd")
    res = te.scan(init, upd, st, name="res")
    H = te.placeholder((n,), F64, name="H")
    s = te.create_schedule(res.op)
    s[res].storage_fold(s[res].op.scan_axis, 2)
    s[upd].split(upd.op.axis[1], 4)
    s[res].store_in(H, output=res)
    f = tessel.build(s, [X, H], target=target)
    for steps, size in ((5, 11), (3, 6)):
        x = np.random.default_rng(steps).random((steps, size))
        got = np.zeros(size)
        f(x, got)
        np.testing.assert_allclose(got, _decay_ref(x), rtol=1e-12)
