"""Argument checking: every bad call is refused, on both targets alike, before any memory is touched."""

from __future__ import annotations

import numpy as np
import pytest
from cg_util import elementwise, ld, rand

from tessel.driver import build_func
from tessel.errors import ArgumentError, BuildError
from tessel.ir import expr as E
from tessel.ir import stmt as S
from tessel.ir.expr import const

TARGETS = ["python", "c"]


def _add2d() -> S.PrimFunc:
    """C[i, j] = A[i, j] + B[i, j] on (n, 4) arrays, flattened."""
    n = E.Var("n", "int32")
    A, B, C = (S.Buffer(x, "float32", (n, 4)) for x in "ABC")
    i = E.Var("i", "int32")
    body = S.For(i, const(0), n * 4, "serial", S.BufferStore(C, ld(A, i) + ld(B, i), (i,)))
    return S.PrimFunc("add2d", (A, B, C), (n,), body, (C,))


@pytest.fixture(scope="module", params=TARGETS)
def kernel(request):
    return build_func(_add2d(), request.param)


def _arrays(n=3):
    return rand((n, 4), "float32", 1), rand((n, 4), "float32", 2), np.zeros((n, 4), "float32")


def test_good_call_and_inputs_may_alias_each_other(kernel):
    a, b, c = _arrays()
    kernel(a, b, c)
    np.testing.assert_allclose(c, a + b)
    kernel(a, a, c)
    np.testing.assert_allclose(c, a + a)


def test_wrong_count(kernel):
    a, b, _ = _arrays()
    with pytest.raises(ArgumentError, match=r"kernel 'add2d' takes 3 arrays \(A: float32\(n, 4\), .*got 2"):
        kernel(a, b)


def test_not_an_array(kernel):
    _, b, c = _arrays()
    with pytest.raises(ArgumentError, match=r"argument 0 \('A'\): expected a NumPy array of dtype float32, got list"):
        kernel([[1.0] * 4] * 3, b, c)


def test_wrong_dtype(kernel):
    a, b, c = _arrays()
    with pytest.raises(ArgumentError, match=r"argument 1 \('B'\): expected dtype float32, got float64"):
        kernel(a, b.astype("float64"), c)


def test_wrong_ndim(kernel):
    a, b, c = _arrays()
    with pytest.raises(ArgumentError, match=r"argument 0 \('A'\): expected 2 dimension\(s\) with shape \(n, 4\), got 1"):
        kernel(a.reshape(-1), b, c)


def test_wrong_constant_extent(kernel):
    a, b, c = _arrays()
    with pytest.raises(ArgumentError, match=r"argument 2 \('C'\): expected shape \(n, 4\), got \(3, 5\).*must be 4, not 5"):
        kernel(a, b, np.zeros((3, 5), "float32"))


def test_inconsistent_symbolic_size(kernel):
    a, _, c = _arrays(3)
    b = rand((5, 4), "float32", 2)
    with pytest.raises(ArgumentError, match=r"argument 1 \('B'\).*'n', which an earlier argument set to 3, but here it is 5"):
        kernel(a, b, c)


def test_non_contiguous(kernel):
    a, b, c = _arrays()
    strided = rand((6, 4), "float32", 3)[::2]
    with pytest.raises(ArgumentError, match=r"argument 0 \('A'\): expected a C-contiguous array"):
        kernel(strided, b, c)
    with pytest.raises(ArgumentError, match=r"argument 2 \('C'\): expected a C-contiguous array"):
        kernel(a, b, np.zeros((4, 3), "float32").T)


def test_misaligned(kernel):
    a, b, c = _arrays()
    raw = bytearray(a.nbytes + 1)
    mis = np.frombuffer(raw, dtype="float32", offset=1, count=a.size).reshape(a.shape)
    mis[...] = a  # a writable, misaligned view
    with pytest.raises(ArgumentError, match=r"argument 0 \('A'\): data pointer 0x[0-9a-f]+ is not aligned to the 4-byte"):
        kernel(mis, b, c)


def test_output_aliasing_an_input(kernel):
    a, b, _ = _arrays()
    with pytest.raises(ArgumentError, match=r"argument 2 \('C'\): the output shares memory with argument 0 \('A'\)"):
        kernel(a, b, a)
    big = rand((7, 4), "float32", 4)
    with pytest.raises(ArgumentError, match=r"argument 2 \('C'\): the output shares memory with argument 1 \('B'\)"):
        kernel(a, big[0:3], big[2:5])  # overlapping rows
    before = big.copy()
    kernel(a, big[0:3], big[3:6])  # same base, disjoint bytes: fine
    np.testing.assert_allclose(big[3:6], a + before[0:3])


def test_read_only_output(kernel):
    a, b, c = _arrays()
    c.flags.writeable = False
    with pytest.raises(ArgumentError, match=r"argument 2 \('C'\): is an output but the array is read-only"):
        kernel(a, b, c)


def test_read_only_input_is_fine(kernel):
    a, b, c = _arrays()
    a.flags.writeable = False
    kernel(a, b, c)
    np.testing.assert_allclose(c, a + b)


@pytest.mark.parametrize("target", TARGETS)
def test_size_that_does_not_fit_the_size_var_dtype(target):
    n = E.Var("n", "int8")
    A, B = S.Buffer("A", "float32", (n,)), S.Buffer("B", "float32", (n,))
    i = E.Var("i", "int8")
    f = elementwise("tiny", [A], [(B, lambda i: ld(A, i))], n, i=i)
    k = build_func(f, target)
    a = rand(100, "float32")
    k(a, b := np.zeros(100, "float32"))
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ArgumentError, match=r"argument 0 \('A'\): dimension 0 is 200, which does not fit size var 'n' of dtype int8"):
        k(rand(200, "float32"), np.zeros(200, "float32"))


@pytest.mark.parametrize("target", TARGETS)
def test_shape_expression_is_checked(target):
    n = E.Var("n", "int32")
    A, B = S.Buffer("A", "float32", (n,)), S.Buffer("B", "float32", (n * 2,))
    i = E.Var("i", "int32")
    body = S.For(i, const(0), n * 2, "serial", S.BufferStore(B, ld(A, E.FloorDiv(i, const(2))), (i,)))
    k = build_func(S.PrimFunc("dup", (A, B), (n,), body, (B,)), target)
    a = rand(5, "float32")
    k(a, b := np.zeros(10, "float32"))
    np.testing.assert_array_equal(b, np.repeat(a, 2))
    with pytest.raises(ArgumentError, match=r"argument 1 \('B'\): expected shape \(n\*2,\), got \(9,\); dimension 0 = n\*2 must be 10"):
        k(a, np.zeros(9, "float32"))


@pytest.mark.parametrize("target", TARGETS)
def test_size_var_absent_from_every_shape_is_a_build_error(target):
    n, m = E.Var("n", "int32"), E.Var("m", "int32")
    A, B = S.Buffer("A", "float32", (n,)), S.Buffer("B", "float32", (n,))
    f = elementwise("lost", [A], [(B, lambda i: ld(A, i))], n)
    f = S.PrimFunc(f.name, f.params, (n, m), f.body, f.outputs)
    with pytest.raises(BuildError, match=r"size var 'm' is not a dimension of any parameter"):
        build_func(f, target)


@pytest.mark.parametrize("target", TARGETS)
def test_constant_shapes_take_the_quick_path_and_refuse_the_same_calls(target):
    """Kernels with constant shapes check a usual call by identity and tuple comparisons only;
    every call that is not usual must still get the full checks and their messages."""
    A, B, C = (S.Buffer(x, "float32", (3, 4)) for x in "ABC")
    i = E.Var("i", "int32")
    body = S.For(i, const(0), const(12), "serial", S.BufferStore(C, ld(A, i) + ld(B, i), (i,)))
    f = build_func(S.PrimFunc("add_const", (A, B, C), (), body, (C,)), target)
    assert f._spec._fast is not None
    a, b, c = _arrays()
    f(a, b, c)
    np.testing.assert_array_equal(c, a + b)
    ro = a.copy()
    ro.flags.writeable = False
    f(ro, b, c)  # a read-only input is fine
    with pytest.raises(ArgumentError, match="is an output but the array is read-only"):
        f(a, b, ro)
    with pytest.raises(ArgumentError, match="expected a C-contiguous array"):
        f(rand((6, 4), "float32", 3)[::2], b, c)
    with pytest.raises(ArgumentError, match="expected dtype float32"):
        f(a.astype(">f4"), b, c)  # byte-swapped: same kind and size, not the same dtype
    with pytest.raises(ArgumentError, match="shares memory"):
        f(a, b, a)
    raw = bytearray(a.nbytes + 1)
    mis = np.frombuffer(raw, dtype="float32", offset=1, count=a.size).reshape(a.shape)
    with pytest.raises(ArgumentError, match="not aligned"):
        f(mis, b, c)
    with pytest.raises(ArgumentError, match=r"dimension 0 must be 3"):
        f(rand((4, 4), "float32", 3), b, c)
