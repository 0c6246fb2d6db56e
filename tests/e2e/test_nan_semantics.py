"""min/max and float floor division at NaN and infinity: one meaning, every target and schedule.

``te.max``/``te.min`` follow NumPy's ``max``/``maximum``: a NaN operand makes the result NaN,
so a reduction over a row holding a NaN is NaN whatever the order the schedule visits the
row in. Float ``//`` and ``%`` follow NumPy's ``floor_divide``/``remainder``. The python and
C targets (scalar and vector code), the IR evaluator and constant folding must all agree.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, garbage_like, rand

import tessel
from tessel import te
from tessel.ir import expr as E
from tessel.ir.evaluate import evaluate

ROWS, COLS = 7, 37


def _with_nans(seed: int, dtype: str = "float32") -> np.ndarray:
    """Random rows; NaN at random places in some rows (first and last columns included), none
    in others, so that both the propagation and the plain maximum are checked."""
    a = rand(ROWS, COLS, dtype=dtype, seed=seed, low=-5.0, high=5.0)
    rng = np.random.default_rng(seed)
    a[0, 0] = np.nan
    a[1, COLS - 1] = np.nan
    for r in (2, 4):
        a[r, rng.choice(COLS, size=rng.integers(1, 4), replace=False)] = np.nan
    a[3, rng.integers(COLS)] = np.inf
    a[5, rng.integers(COLS)] = -np.inf
    return a


def _reduce(kind: str, dtype: str = "float32"):
    A = te.placeholder((ROWS, COLS), name="A", dtype=dtype)
    k = te.reduce_axis((0, COLS), name="k")
    fn = te.max if kind == "max" else te.min
    B = te.compute((ROWS,), lambda i: fn(A[i, k], axis=k), name="B")
    return A, B


def _plain(s, B):
    pass


def _split_reorder(s, B):
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=4)
    s[B].reorder(ki, ko, B.op.axis[0])


def _rfactor(s, B):
    _, ki = s[B].split(B.op.reduce_axis[0], factor=8)
    s.rfactor(B, ki)


def _rfactor_vectorized(s, B):
    """The schedule of the benchmarks' softmax row max: partial results in vector lanes."""
    _, ki = s[B].split(B.op.reduce_axis[0], factor=8)
    BF = s.rfactor(B, ki)
    s[BF].compute_at(s[B], s[B].op.axis[0])
    s[BF].reorder(*s[BF].op.reduce_axis, s[BF].op.axis[0])
    s[BF].vectorize(s[BF].op.axis[0])


def _cache_write(s, B):
    BL = s.cache_write(B, "local")
    ko, ki = s[BL].split(s[BL].op.reduce_axis[0], factor=5)
    s[BL].reorder(ki, ko)


def _unrolled(s, B):
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=4)
    s[B].unroll(ki)


def _parallel(s, B):
    _, ki = s[B].split(B.op.reduce_axis[0], factor=8)
    BF = s.rfactor(B, ki)
    s[BF].parallel(s[BF].op.axis[0])
    s[B].parallel(s[B].op.axis[0])


SCHEDULES = [_plain, _split_reorder, _rfactor, _rfactor_vectorized, _cache_write, _unrolled, _parallel]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", ["max", "min"])
@pytest.mark.parametrize("schedule", SCHEDULES, ids=lambda f: f.__name__.strip("_"))
def test_a_nan_in_a_row_makes_its_max_and_min_nan_under_every_schedule(target, kind, schedule):
    A, B = _reduce(kind)
    s = te.create_schedule(B.op)
    schedule(s, B)
    f = tessel.build(s, [A, B], target=target)
    for seed in (1, 2, 3):
        a = _with_nans(seed)
        out = garbage_like(np.empty(ROWS, "float32"))
        f(a, out)
        want = np.max(a, axis=1) if kind == "max" else np.min(a, axis=1)
        np.testing.assert_array_equal(out, want, err_msg=f"{target}, {schedule.__name__}, seed {seed}")
        assert np.isnan(out).tolist() == np.isnan(a).any(axis=1).tolist()


def test_the_issue_reproducer_gives_nan_plain_and_after_split_reorder():
    a = np.array([5, 9, np.nan, 1, 2, 3, 0.5, 0.25], "float32")
    A = te.placeholder((8,), name="A")
    k = te.reduce_axis((0, 8), name="k")
    B = te.compute((1,), lambda i: te.max(A[k], axis=k), name="B")
    for target in TARGETS:
        for reorder in (False, True):
            s = te.create_schedule(B.op)
            if reorder:
                ko, ki = s[B].split(k, factor=4)
                s[B].reorder(ki, ko)
            out = np.zeros(1, "float32")
            tessel.build(s, [A, B], target=target)(a, out)
            assert np.isnan(out[0]), (target, reorder)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["int32", "int8", "uint16"])
@pytest.mark.parametrize("schedule", [_plain, _split_reorder, _rfactor_vectorized, _parallel],
                         ids=lambda f: f.__name__.strip("_"))
def test_integer_max_and_min_reductions_are_unchanged(target, dtype, schedule):
    for kind in ("max", "min"):
        A, B = _reduce(kind, dtype)
        s = te.create_schedule(B.op)
        schedule(s, B)
        a = rand(ROWS, COLS, dtype=dtype, seed=4)
        out = garbage_like(np.empty(ROWS, dtype))
        tessel.build(s, [A, B], target=target)(a, out)
        np.testing.assert_array_equal(out, a.max(axis=1) if kind == "max" else a.min(axis=1))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("vector", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_elementwise_maximum_and_minimum_follow_numpy(target, vector, dtype):
    n = 45
    rng = np.random.default_rng(7)
    a, b = rand(n, dtype=dtype, seed=5), rand(n, dtype=dtype, seed=6)
    a[rng.choice(n, 6, replace=False)] = np.nan
    b[rng.choice(n, 6, replace=False)] = np.nan  # some positions NaN in both
    a[3], b[4] = np.inf, -np.inf
    A = te.placeholder((n,), name="A", dtype=dtype)
    Bp = te.placeholder((n,), name="B", dtype=dtype)
    Mx = te.compute((n,), lambda i: te.max(A[i], Bp[i]), name="Mx")
    Mn = te.compute((n,), lambda i: te.min(A[i], Bp[i]), name="Mn")
    s = te.create_schedule([Mx.op, Mn.op])
    if vector:
        for T in (Mx, Mn):
            _, xi = s[T].split(T.op.axis[0], factor=4)
            s[T].vectorize(xi)
    f = tessel.build(s, [A, Bp, Mx, Mn], target=target)
    mx, mn = garbage_like(a), garbage_like(a)
    f(a, b, mx, mn)
    np.testing.assert_array_equal(mx, np.maximum(a, b))
    np.testing.assert_array_equal(mn, np.minimum(a, b))


def test_the_evaluator_and_constant_folding_propagate_nan_in_either_order():
    nan = float("nan")
    x = te.var("x", "float32")
    for a, b in ((nan, 1.0), (1.0, nan)):
        for cls, fn in ((E.Max, E.max_), (E.Min, E.min_)):
            assert np.isnan(evaluate(cls(x, E.const(b, "float32")), {x: a}))
            folded = fn(E.const(a, "float32"), E.const(b, "float32"))
            assert isinstance(folded, E.FloatImm) and np.isnan(folded.value)
    assert evaluate(E.Max(x, E.const(2.0, "float32")), {x: -np.inf}) == 2.0
    assert E.min_(E.const(3, "int32"), E.const(-4, "int32")).value == -4


def test_the_simplifier_does_not_drop_a_nan_operand_of_max():
    from tessel.arith import Analyzer

    x = te.var("x", "float32")
    e = Analyzer().simplify(te.max(te.max(x, E.const(float("nan"), "float32")), E.const(1.0, "float32")))
    assert np.isnan(evaluate(e, {x: 5.0}))
    e = Analyzer().simplify(te.min(E.const(float("nan"), "float32"), E.const(1.0, "float32")))
    assert np.isnan(evaluate(e, {}))


# ---- float floor division -----------------------------------------------------------------
_SPECIAL = [np.inf, -np.inf, np.nan, 0.0, -0.0, 5.0, -5.0, 1.0, 0.1, -0.1, 3.5, -7.25, 1e30, -1e-30]


def _pairs(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of special values, then random finite ones (``1 // 0.1`` and such)."""
    sp = np.array(_SPECIAL, dtype)
    a, b = np.repeat(sp, len(sp)), np.tile(sp, len(sp))
    rng = np.random.default_rng(11)
    ra = rng.uniform(-20, 20, 93).astype(dtype)
    rb = rng.choice(np.array([0.1, -0.1, 0.3, 1.7, -2.9, 7.0], dtype), 93)
    return np.concatenate([a, ra]), np.concatenate([b, rb])


def _assert_same_floats(got: np.ndarray, want: np.ndarray, what: str) -> None:
    np.testing.assert_array_equal(got, want, err_msg=what)
    nz = (want == 0)
    assert (np.signbit(got[nz]) == np.signbit(want[nz])).all(), f"{what}: the sign of a zero differs"


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("vector", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_floordiv_and_floormod_follow_numpy_at_inf_nan_and_zero(target, vector, dtype):
    a, b = _pairs(dtype)
    n = a.size
    A = te.placeholder((n,), name="A", dtype=dtype)
    Bp = te.placeholder((n,), name="B", dtype=dtype)
    Q = te.compute((n,), lambda i: A[i] // Bp[i], name="Q")
    R = te.compute((n,), lambda i: A[i] % Bp[i], name="R")
    s = te.create_schedule([Q.op, R.op])
    if vector:
        for T in (Q, R):
            _, xi = s[T].split(T.op.axis[0], factor=4)
            s[T].vectorize(xi)
    q, r = garbage_like(a), garbage_like(a)
    tessel.build(s, [A, Bp, Q, R], target=target)(a, b, q, r)
    with np.errstate(all="ignore"):
        _assert_same_floats(q, np.floor_divide(a, b), f"{target} //")
        _assert_same_floats(r, np.remainder(a, b), f"{target} %")


def test_the_evaluator_computes_float_floordiv_and_floormod_as_numpy():
    x, y = te.var("x", "float32"), te.var("y", "float32")
    a, b = _pairs("float32")
    with np.errstate(all="ignore"):
        q, r = np.floor_divide(a, b), np.remainder(a, b)
    for k in range(a.size):
        env = {x: float(a[k]), y: float(b[k])}
        got_q, got_r = evaluate(E.FloorDiv(x, y), env), evaluate(E.FloorMod(x, y), env)
        np.testing.assert_array_equal(np.float32(got_q), q[k], err_msg=f"{a[k]} // {b[k]}")
        np.testing.assert_array_equal(np.float32(got_r), r[k], err_msg=f"{a[k]} % {b[k]}")
