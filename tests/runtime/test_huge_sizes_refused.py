"""Issue 30, item 3: sizes whose temporary's byte count leaves int64 (``n*n*n*4`` at n = 2**22)
are refused at call time with an ArgumentError naming the stage and the size, on both targets,
instead of allocating a wrapped-around block and writing past it (a SIGSEGV: probed in a
subprocess). Sizes that fit still compute NumPy's values."""

from __future__ import annotations

import numpy as np
import pytest
from faults_util import probe
from helpers import TARGETS, rand

import tessel
from tessel import te


def cube(dtype: str = "int64"):
    """``B[i] = sum over j, k of T[i, j, k]``: a temporary of n*n*n elements."""
    n = te.var("n", dtype=dtype)
    A = te.placeholder((n,), name="A")
    T = te.compute((n, n, n), lambda i, j, k: A[i] + A[j] * A[k], name="T")
    j = te.reduce_axis((0, n), name="j")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((n,), lambda i: te.sum(T[i, j, k], axis=[j, k]), name="B")
    return A, B


_CUBE = """
import sys
sys.path[:0] = ["tests", "tests/runtime"]
import numpy as np, tessel
from tessel import te
from test_huge_sizes_refused import cube
A, B = cube("{dtype}")
f = tessel.build(te.create_schedule(B.op), [A, B], target="{target}")
N = 2 ** 22
a = np.random.default_rng(1).uniform(-1, 1, N).astype("float32")
try:
    f(a, np.zeros(N, "float32"))
except tessel.ArgumentError as e:
    print(type(e).__name__, "stage 'T'" in str(e), f"n={{N}}" in str(e), str(4 * N ** 3) in str(e))
"""


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_a_temporary_too_big_to_count_is_refused(tmp_path, target, dtype):
    out = probe(_CUBE.format(target=target, dtype=dtype), tmp_path / "cache")
    assert out.split() == ["IndexOverflowError", "True", "True", "True"]


@pytest.mark.parametrize("target", TARGETS)
def test_a_temporary_that_fits_computes_numpys_values(target):
    A, B = cube()
    f = tessel.build(te.create_schedule(B.op), [A, B], target=target)
    for size in (7, 13):
        a = rand(size, seed=size)
        b = np.full(size, np.nan, "float32")
        f(a, b)
        a64 = a.astype("float64")
        want = size * size * a64 + a64.sum() ** 2
        np.testing.assert_allclose(b, want, rtol=1e-4, atol=1e-4)
