"""``tvm.testing``: the checks TVM's tutorials and tests compare results with."""

from __future__ import annotations

import functools
import sys
import unittest
from collections.abc import Callable

import numpy as np

from ._names import missing_names
from .nd import NDArray, device

#: the target kinds tessel builds and runs: the CPU's, and CUDA's (on the GPU, or on the
#: simulator where there is none), so a test that asks for a GPU runs everywhere
RUNNABLE = ("llvm", "c", "cuda")


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


def device_enabled(target: str) -> bool:
    """Whether tessel builds and runs ``target`` here (``"cuda"``: yes, on the simulator where
    there is no GPU; ``"opencl"``, ``"vulkan"``, ``"stackvm"``: no, so a TVM test skips them)."""
    return isinstance(target, str) and target.split(" ")[0] in RUNNABLE


def enabled_targets() -> list[tuple[str, object]]:
    """``(target, device)`` for each target :func:`device_enabled` accepts."""
    return [(t, device(t)) for t in RUNNABLE]


class Feature:
    """One of TVM's test markers (``@tvm.testing.requires_gpu``). A feature tessel has leaves the
    test as it is; one it lacks makes the test skip, saying why (``unittest.SkipTest``, which
    pytest reports as a skip), instead of failing somewhere inside it."""

    def __init__(self, name: str, missing: str | None = None):
        self.name = name
        self.missing = missing

    def __call__(self, func: Callable | None = None, *, support_required: str = "compile-and-run"):
        if func is None:  # uses_gpu = requires_gpu(support_required="optional")
            return Feature(self.name, None if support_required == "optional" else self.missing)
        if self.missing is None:
            return func

        @functools.wraps(func)
        def skipped(*args, **kwargs):
            raise unittest.SkipTest(f"tvm.testing.requires_{self.name}: {self.missing}")

        return skipped

    def marks(self, support_required: str = "compile-and-run") -> list:
        return []


requires_gpu = Feature("gpu")
requires_cuda = Feature("cuda")
requires_llvm = Feature("llvm")
uses_gpu = requires_gpu(support_required="optional")
requires_tensorcore = Feature("tensorcore", "tessel's cuda target has no tensor-core (wmma) intrinsics")
requires_opencl = Feature("opencl", "tessel has no OpenCL target; its GPU target is CUDA")
requires_vulkan = Feature("vulkan", "tessel has no Vulkan target; its GPU target is CUDA")
requires_rocm = Feature("rocm", "tessel has no ROCm target; its GPU target is CUDA")
requires_metal = Feature("metal", "tessel has no Metal target; its GPU target is CUDA")

__getattr__ = missing_names(__name__)
