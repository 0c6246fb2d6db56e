"""Issue 15, difference 6: shapes written ``N / bn``, as TVM's tutorials write them.

In Python 3 ``N / bn`` is a float. A float that is a whole number is accepted as that size;
any other is refused with the message for a non-integer size (TVM would truncate it silently).
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check, rand

from tessel import DefinitionError, te


def test_packed_matmul_with_float_shapes_as_in_the_gemm_tutorial():
    M = N = K = 64
    bn = 16
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    packedB = te.compute((N / bn, K, bn), lambda x, y, z: B[y, x * bn + z], name="packedB")
    assert [int(d.value) for d in packedB.shape] == [4, 64, 16]
    assert all(d.dtype.is_integer for d in packedB.shape)
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda x, y: te.sum(A[x, k] * packedB[y // bn, k, te.indexmod(y, bn)], axis=k), name="C")
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    s[C].vectorize(yi)
    a, b = rand(M, K), rand(K, N, seed=1)
    check(s, [A, B, C], [a, b], [a @ b], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("size", [12 / 3, np.float32(4.0), np.float64(4.0), 4.0])
def test_integral_floats_are_sizes(size):
    A = te.placeholder((size, 3), name="A")
    B = te.compute((size, 3), lambda i, j: A[i, j] + 1, name="B")
    assert A.shape[0].value == 4 and B.shape[0].value == 4 and A.shape[0].dtype == "int32"
    a = rand(4, 3)
    check(te.create_schedule(B.op), [A, B], [a], [a + 1])


@pytest.mark.parametrize("size", [64 / 7, 2.5, float("inf"), float("nan")])
def test_other_floats_are_refused_with_the_size_message(size):
    with pytest.raises(DefinitionError, match=r"dimension 0 of A is .* of dtype float32; sizes must be integers"):
        te.placeholder((size, 3), name="A")
    with pytest.raises(DefinitionError, match=r"dimension 1 of B is .*; sizes must be integers"):
        te.compute((3, size), lambda i, j: i + j, name="B")
