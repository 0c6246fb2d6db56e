"""A scan keeps only the steps still read: ``storage_fold`` of its scan axis (issue 33: every
scan kept its whole history, and no storage command reached a scan). Legal exactly when the
update reads back fewer steps than the fold, the init has no more, and what reads the scan
afterwards reads only its last steps; refused otherwise with the least fold that is."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import TARGETS

import tessel
from tessel import te
from tessel.ir import stmt as S
from tessel.ir.functor import collect


def _allocated(s, args) -> dict[str, int]:
    func = tessel.lower(s, args)
    return {a.buffer.name: math.prod(int(x) for x in a.buffer.shape)
            for a in collect(func.body, lambda n: isinstance(n, S.Allocate), statements_only=True)}


def _decay(T, n, back=1, last=1):
    X = te.placeholder((T, n), name="X", dtype="float64")
    init = te.compute((back, n), lambda t, i: X[t, i], name="init")
    st = te.placeholder((T, n), name="st", dtype="float64")
    if back == 1:
        upd = te.compute((T, n), lambda t, i: st[t - 1, i] * 0.5 + X[t, i], name="upd")
    else:
        upd = te.compute((T, n), lambda t, i: st[t - 1, i] * 0.5 + st[t - 2, i] * 0.25 + X[t, i], name="upd")
    res = te.scan(init, upd, st, name="res")
    O = te.compute((n,), lambda i: res[T - 1, i] + (res[T - last, i] if last > 1 else 0.0), name="O")
    return X, res, O


def _decay_ref(x, back=1, last=1):
    T = len(x)
    h = x.copy()
    for t in range(back, T):
        h[t] = h[t - 1] * 0.5 + (h[t - 2] * 0.25 if back == 2 else 0.0) + x[t]
    return h[T - 1] + (h[T - last] if last > 1 else 0.0)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("T", "n", "fold"), [(6, 9, 2), (11, 5, 3)])
def test_a_scan_keeps_only_the_steps_it_reads(target, T, n, fold):
    X, res, O = _decay(T, n)
    s = te.create_schedule(O.op)
    s[res].storage_fold(s[res].op.scan_axis, fold)
    assert _allocated(s, [X, O])["res"] == fold * n
    x = np.random.default_rng(T).random((T, n))
    got = np.zeros(n)
    tessel.build(s, [X, O], target=target)(x, got)
    np.testing.assert_allclose(got, _decay_ref(x), rtol=1e-12)


def test_a_fold_smaller_than_the_update_reads_back_is_refused_with_the_least():
    X, res, O = _decay(7, 4, back=2)
    s = te.create_schedule(O.op)
    with pytest.raises(tessel.ScheduleError, match=r"must keep 3 step\(s\), as upd reads st 2 step\(s\) back.*"
                                                   r"storage_fold\(s\[res\]\.op\.scan_axis, 3\)"):
        s[res].storage_fold(s[res].op.scan_axis, 2)
    assert s[res].scan_fold is None  # the refused command changed nothing
    s[res].storage_fold(s[res].op.scan_axis, 3)
    x = np.random.default_rng(2).random((7, 4))
    for target in TARGETS:
        got = np.zeros(4)
        tessel.build(s, [X, O], target=target)(x, got)
        np.testing.assert_allclose(got, _decay_ref(x, back=2), rtol=1e-12)


def test_the_reader_after_the_scan_decides_too():
    """O reads the last step and the one three before it: a fold of 4 at least."""
    X, res, O = _decay(9, 5, last=4)
    s = te.create_schedule(O.op)
    with pytest.raises(tessel.ScheduleError, match="O reads the step 3 before the last"):
        s[res].storage_fold(s[res].op.scan_axis, 2)
    s[res].storage_fold(s[res].op.scan_axis, 4)
    x = np.random.default_rng(3).random((9, 5))
    got = np.zeros(5)
    tessel.build(s, [X, O], target="c")(x, got)
    np.testing.assert_allclose(got, _decay_ref(x, last=4), rtol=1e-12)


def test_a_reader_of_every_step_and_a_wrong_axis_are_refused():
    T, n = 6, 4
    X, res, _ = _decay(T, n)
    t = te.reduce_axis((0, T), name="t")
    total = te.compute((n,), lambda i: te.sum(res[t, i], axis=t), name="total")
    s = te.create_schedule(total.op)
    with pytest.raises(tessel.ScheduleError, match="must keep every step, as total reads res"):
        s[res].storage_fold(s[res].op.scan_axis, 2)
    with pytest.raises(tessel.ScheduleError, match="give its scan axis"):
        s[res].storage_fold(s[res].op.spatial_axis_[0], 2)


@pytest.mark.parametrize("target", TARGETS)
def test_two_states_of_different_ranks_folded(target):
    T, n = 7, 5
    A = te.placeholder((T, n), name="A")
    Xs = te.placeholder((T, n), name="Xs")
    Ys = te.placeholder((T,), name="Ys")
    Xi = te.compute((1, n), lambda t, i: A[0, i], name="Xi")
    Yi = te.compute((1,), lambda t: A[0, 0] * 0.0 + 1.0, name="Yi")
    Xu = te.compute((T, n), lambda t, i: Xs[t - 1, i] * 0.5 + Ys[t - 1] + A[t, i], name="Xu")
    Yu = te.compute((T,), lambda t: Ys[t - 1] + Xs[t - 1, n - 1], name="Yu")
    X, Y = te.scan([Xi, Yi], [Xu, Yu], [Xs, Ys], name="sc")
    Z = te.compute((n,), lambda i: X[T - 1, i] * Y[T - 2], name="Z")
    s = te.create_schedule(Z.op)
    s[X].storage_fold(s[X].op.scan_axis, 2)
    kept = _allocated(s, [A, Z])
    assert (kept["sc.v0"], kept["sc.v1"]) == (2 * n, 2)  # both states keep two steps
    a = np.random.default_rng(4).random((T, n)).astype("float32")
    x, y = np.zeros((T, n)), np.zeros(T)
    x[0], y[0] = a[0], 1.0
    for k in range(1, T):
        x[k] = x[k - 1] * 0.5 + y[k - 1] + a[k]
        y[k] = y[k - 1] + x[k - 1, n - 1]
    got = np.zeros(n, "float32")
    tessel.build(s, [A, Z], target=target)(a, got)
    np.testing.assert_allclose(got, x[T - 1] * y[T - 2], rtol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_a_fold_over_symbolic_sizes(target):
    T, n = te.var("T"), te.var("n")
    X = te.placeholder((T, n), name="X", dtype="float64")
    init = te.compute((1, n), lambda t, i: X[t, i], name="init")
    st = te.placeholder((T, n), name="st", dtype="float64")
    upd = te.compute((T, n), lambda t, i: st[t - 1, i] * 0.5 + X[t, i], name="upd")
    res = te.scan(init, upd, st, name="res")
    O = te.compute((n,), lambda i: res[T - 1, i], name="O")
    s = te.create_schedule(O.op)
    s[res].storage_fold(s[res].op.scan_axis, 2)
    f = tessel.build(s, [X, O], target=target)
    for steps, size in ((6, 9), (3, 17)):
        x = np.random.default_rng(steps).random((steps, size))
        got = np.zeros(size)
        f(x, got)
        np.testing.assert_allclose(got, _decay_ref(x), rtol=1e-12)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fold", [None, 2])
def test_the_init_is_computed_straight_into_the_scan_s_storage(target, fold):
    """The init's values are the scan's first step: computed where that step is kept, as TVM
    lowers a scan, not into a temporary of their own and then copied (durbin's init row was
    a third of its temporaries), folded or not, whatever the sizes."""
    T, n = te.var("T"), te.var("n")
    X, res, O = _decay(T, n) if fold is None else _decay(7, 9)
    s = te.create_schedule(O.op)
    if fold is not None:
        s[res].storage_fold(s[res].op.scan_axis, fold)
    text = str(tessel.lower(s, [X, O]))
    assert "allocate init" not in text and "produce init" in text
    f = tessel.build(s, [X, O], target=target)
    for steps, size in ((7, 9),) if fold is not None else ((6, 9), (3, 17)):
        x = np.random.default_rng(steps).random((steps, size))
        got = np.zeros(size)
        f(x, got)
        np.testing.assert_allclose(got, _decay_ref(x), rtol=1e-12)


def test_a_caller_s_init_on_a_gpu_is_refused_with_a_fix_that_computes_right():
    """A caller's array as the init is copied into the scan's first step; on a GPU that copy
    had no thread, and lowering made it read the scan's own storage instead: every step wrong.
    Refused, naming the fix, and the fix gives NumPy's values (on the simulator without a GPU)."""
    m, n = 6, 32
    X = te.placeholder((m, n), name="X")
    st = te.placeholder((m, n), name="st")
    upd = te.compute((m, n), lambda t, i: st[t - 1, i] * 0.5 + X[t, i], name="upd")

    def schedule(init):
        sc = te.scan(init, upd, st, name="sc")
        s = te.create_schedule(sc.op)
        for T in (upd, *([] if init.op.is_placeholder else [init])):
            bx, tx = s[T].split(T.op.axis[1], factor=8)
            s[T].bind(bx, te.thread_axis("blockIdx.x"))
            s[T].bind(tx, te.thread_axis("threadIdx.x"))
        return s, sc

    init = te.placeholder((1, n), name="init")
    s, sc = schedule(init)
    with pytest.raises(tessel.LowerError, match=r"its init init is the caller's array.*init_c = te.compute"):
        tessel.build(s, [X, init, sc], target="cuda")
    s, sc = schedule(te.compute(init.shape, lambda *i: init(*i), name="init_c"))
    rng = np.random.default_rng(5)
    x, i0 = rng.random((m, n)).astype("float32"), rng.random((1, n)).astype("float32")
    want = np.zeros_like(x)
    want[0] = i0[0]
    for t in range(1, m):
        want[t] = want[t - 1] * 0.5 + x[t]
    got = np.zeros_like(x)
    tessel.build(s, [X, init, sc], target="cuda")(x, i0, got)
    np.testing.assert_allclose(got, want, rtol=1e-6)
