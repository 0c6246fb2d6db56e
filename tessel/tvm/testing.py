"""``tvm.testing``: the checks TVM's tutorials and tests compare results with."""

from __future__ import annotations

import sys

import numpy as np

from ._names import missing_names
from .nd import NDArray


def _array(x) -> np.ndarray:
    return x.numpy() if isinstance(x, NDArray) else np.asarray(x)


def assert_allclose(actual, desired, rtol: float = 1e-7, atol: float = 1e-7) -> None:
    """NumPy's assert_allclose on NDArrays or arrays, with TVM's defaults; the shapes must
    match exactly (no broadcasting, which would hide a kernel that wrote too little)."""
    a, d = _array(actual), _array(desired)
    np.testing.assert_equal(a.shape, d.shape, err_msg="assert_allclose: the shapes differ")
    np.testing.assert_allclose(a, d, rtol=rtol, atol=atol, verbose=True)


def assert_prim_expr_equal(lhs, rhs) -> None:
    """That two integer expressions are equal for every value of their variables (the analyzer
    proves it), as TVM's does after simplifying both."""
    from ..arith import Analyzer
    from ..ir.expr import convert

    if not Analyzer().can_prove_equal(convert(lhs), convert(rhs)):
        raise AssertionError(f"{lhs} is not provably equal to {rhs}")


def main() -> None:
    """``tvm.testing.main()``, the last line of TVM's test files: run this file's tests with
    pytest (in this process, so under ``tessel tvm`` its ``import tvm`` still means tessel)."""
    import pytest

    import __main__

    sys.exit(pytest.main([__main__.__file__, "-p", "no:cacheprovider", *sys.argv[1:]]))


__getattr__ = missing_names(__name__)
