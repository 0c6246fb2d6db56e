"""What the cuda target's tests share: finding nvcc (a failure in CI, a skip elsewhere) and the
device IR and source of a schedule without compiling it."""

from __future__ import annotations

import os
import shutil

import pytest

import tessel
from tessel.codegen.cuda import cuda_source
from tessel.passes.gpu import device_pipeline
from tessel.target import Target


def need_nvcc() -> None:
    """Skip (or, with TESSEL_REQUIRE_NVCC=1 as CI sets it, fail) where nvcc is missing."""
    if shutil.which(os.environ.get("NVCC", "nvcc")) is None:
        if os.environ.get("TESSEL_REQUIRE_NVCC") == "1":
            pytest.fail("nvcc is required (TESSEL_REQUIRE_NVCC=1): install the CUDA toolkit")
        pytest.skip("nvcc (the CUDA toolkit) is not on the PATH")


def kernels(s, args, features=()):
    """The device IR of a schedule (what the generator and the simulator read)."""
    func = tessel.lower(s, args, target="cuda")
    return func, device_pipeline(func, Target("cuda", features=frozenset(features)))


def source(s, args, features=()) -> str:
    func, ks = kernels(s, args, features)
    return cuda_source(func, ks)[0]


def elementwise(n, fn, factor: int, dtype: str = "float32", name: str = "B", a_name: str = "A"):
    """``B[i] = fn(A, i)`` over ``n`` elements, blocks of ``factor`` threads: ``(s, [A, B])``."""
    from tessel import te

    A = te.placeholder((n,), name=a_name, dtype=dtype)
    B = te.compute((n,), lambda i: fn(A, i), name=name)
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=factor)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    return s, [A, B]
