"""``tvm.contrib.cblas``: a matrix product as an extern stage calling into NumPy's BLAS."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import rand

import tessel.tvm as tvm
from tessel.tvm import te


@pytest.mark.parametrize(("transa", "transb"), [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_with_either_operand_transposed(transa, transb):
    from tessel.tvm.contrib import cblas

    n, k, m = 13, 7, 9
    A = te.placeholder((k, n) if transa else (n, k), name="A")
    B = te.placeholder((m, k) if transb else (k, m), name="B")
    C = cblas.matmul(A, B, transa, transb)
    D = te.compute(C.shape, lambda i, j: C[i, j] + 1.0, name="D")  # a stage after the call
    f = tvm.build(te.create_schedule(D.op), [A, B, D], "llvm")
    a, b = rand(*A.shape), rand(*B.shape, seed=1)
    d = tvm.nd.array(np.full((n, m), np.nan, "float32"))
    f(tvm.nd.array(a), tvm.nd.array(b), d)
    want = (a.T if transa else a) @ (b.T if transb else b) + 1
    np.testing.assert_allclose(d.numpy(), want, rtol=1e-5)
    assert tvm.get_global_func("tvm.contrib.cblas.matmul", allow_missing=True) is not None


def test_batch_matmul():
    from tessel.tvm.contrib import cblas

    A = te.placeholder((3, 5, 4), name="A")
    B = te.placeholder((3, 4, 6), name="B")
    C = cblas.batch_matmul(A, B)
    f = tvm.build(te.create_schedule(C.op), [A, B, C], "llvm")
    a, b = rand(3, 5, 4), rand(3, 4, 6, seed=2)
    c = tvm.nd.array(np.zeros((3, 5, 6), "float32"))
    f(tvm.nd.array(a), tvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-5)
