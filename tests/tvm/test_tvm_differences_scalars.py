"""Issue 15, difference 3: scalar kernel arguments of any dtype, as in TVM.

``build(s, [A, D, bias])`` with ``bias = te.var("bias", dtype="float32")`` makes ``bias`` a
parameter passed by value at its place in the call, on both targets, and each call checks it
(type, and range for integers) before the kernel runs.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, garbage_like, rand

import tessel
from tessel import ArgumentError, LowerError, te


def _affine():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    bias = te.var("bias", dtype="float32")
    D = te.compute((n,), lambda i: A[i] * 2 + bias, name="D")
    return A, D, bias, te.create_schedule(D.op)


@pytest.mark.parametrize("target", TARGETS)
def test_float_scalar_argument(target):
    A, D, bias, s = _affine()
    f = tessel.build(s, [A, D, bias], target=target)
    for n, b in ((1, 0.25), (13, -3.5), (64, 1e3)):
        a = rand(n)
        d = garbage_like(a)
        f(a, d, b)
        np.testing.assert_allclose(d, a * np.float32(2) + np.float32(b), rtol=1e-6)
    f(a, d, np.float32(1.5))  # NumPy scalars and ints are numbers too
    f(a, d, 2)
    np.testing.assert_allclose(d, a * np.float32(2) + 2, rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_scalars_of_several_dtypes_in_any_position(target):
    m = te.var("m")
    A = te.placeholder((m, 3), name="A", dtype="float64")
    off = te.var("off", dtype="int64")
    k = te.var("k", dtype="int32")
    flag = te.var("flag", dtype="bool")
    scale = te.var("scale", dtype="float64")
    B = te.compute((m, 3), lambda i, j: te.if_then_else(flag, A[i, j] * scale, A[i, j])
                   + te.if_then_else(i < k, off.astype("float64"), 0.0), name="B")
    s = te.create_schedule(B.op)
    f = tessel.build(s, [off, A, k, B, flag, scale], target=target)
    assert f.signature == "off: int64, A: float64(m, 3), k: int32, B: float64(m, 3), flag: bool, scale: float64"
    a = rand(9, 3, dtype="float64")
    for fl in (True, False):
        b = garbage_like(a)
        f(-(2 ** 40), a, 4, b, fl, 0.5)
        want = (a * 0.5 if fl else a) + np.where(np.arange(9)[:, None] < 4, float(-(2 ** 40)), 0.0)
        np.testing.assert_allclose(b, want, rtol=1e-12)


@pytest.mark.parametrize("target", TARGETS)
def test_scalar_checked_at_call_time(target):
    A, D, bias, s = _affine()
    f = tessel.build(s, [A, bias, D], target=target)
    a = rand(5)
    d = garbage_like(a)
    for bad in ("1.0", None, np.ones(2, "float32"), [1.0]):
        with pytest.raises(ArgumentError, match=r"argument 1 \('bias'\): expected a scalar of dtype float32"):
            f(a, bad, d)
    with pytest.raises(ArgumentError, match=r"takes 3 arguments \(A: float32\(n,\), bias: float32, D: float32\(n,\)\)"):
        f(a, d)
    k = te.var("k", dtype="int8")
    A4 = te.placeholder((4,), name="A4")  # a (4,) result reads 4 elements (A's n may be smaller)
    E = te.compute((4,), lambda i: A4[i] + k.astype("float32"), name="E")
    g = tessel.build(te.create_schedule(E.op), [A4, E, k], target=target)
    with pytest.raises(ArgumentError, match=r"300 does not fit its dtype int8"):
        g(rand(4), garbage_like(rand(4)), 300)
    with pytest.raises(ArgumentError, match="expected a scalar of dtype int8"):
        g(rand(4), garbage_like(rand(4)), 1.5)


@pytest.mark.parametrize("target", TARGETS)
def test_a_scalar_that_is_also_a_size_must_agree_with_the_arrays(target):
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + n.astype("float32"), name="B")
    s = te.create_schedule(B.op)
    f = tessel.build(s, [A, B, n], target=target)  # as TVM tutorials pass n
    a = rand(6)
    b = garbage_like(a)
    f(a, b, 6)
    np.testing.assert_allclose(b, a + 6)
    with pytest.raises(ArgumentError, match="'n'"):
        f(a, b, 5)


def test_leaving_a_scalar_out_says_to_pass_it():
    A, D, bias, s = _affine()
    with pytest.raises(LowerError, match=r"bias.*or the variable itself in the argument list"):
        tessel.build(s, [A, D])


def test_lowered_function_lists_the_scalar_in_its_place():
    A, D, bias, s = _affine()
    text = str(tessel.lower(s, [A, bias, D]))
    assert "func main(A: float32[n], bias: float32, D: float32[n])" in text


def test_scalar_given_twice_is_refused():
    A, D, bias, s = _affine()
    with pytest.raises(LowerError, match="scalar 'bias' appears twice"):
        tessel.build(s, [A, D, bias, bias])
