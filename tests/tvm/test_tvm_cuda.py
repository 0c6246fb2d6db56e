"""TVM's GPU spellings under tessel's ``tvm``: ``"cuda"`` builds with nvcc and runs on the GPU,
or on the simulator where there is none; ``tvm.cuda(0)`` holds the arrays."""

from __future__ import annotations

import numpy as np
import pytest

import tessel.tvm as tvm
from tessel.errors import BuildError
from tessel.tvm import te


def test_cuda_devices_exist_and_name_themselves():
    for dev in (tvm.cuda(0), tvm.gpu(0), tvm.device("cuda", 0)):
        assert dev.exist and dev.device_type == 2 and str(dev) == "cuda(0)"


def test_the_cuda_target_is_tesseles_and_keeps_a_known_arch():
    assert tvm.target.Target("cuda").tessel.kind == "cuda"
    assert tvm.target.Target("cuda -arch=sm_90 -max_num_threads=1024").tessel.mcpu == "sm_90"
    assert tvm.target.Target("cuda -arch=sm_75").tessel.mcpu is None  # a GPU tessel has no tables for: the default
    with pytest.raises(BuildError, match="rocm"):
        _ = tvm.target.Target("rocm").tessel


def test_a_cross_thread_sum_with_a_store_predicate_builds_for_cuda_and_computes():
    """The reduction tutorial's last schedule: one thread of each row stores the row's sum
    (set_store_predicate), which is what the cross-thread reduction writes anyway."""
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    _, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    BF = s.rfactor(B, ki)
    xo, xi = s[B].split(s[B].op.axis[0], factor=32)
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    s[B].bind(xi, te.thread_axis("threadIdx.y"))
    tx = te.thread_axis("threadIdx.x")
    s[B].bind(s[B].op.reduce_axis[0], tx)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    s[B].set_store_predicate(tx.var.equal(0))
    for target in ("cuda-sim -features=check", "cuda"):
        f = tvm.build(s, [A, B], target)
        x = np.random.default_rng(5).uniform(size=(45, 37)).astype("float32")
        out = tvm.nd.array(np.full(45, np.nan, "float32"), tvm.cuda(0))
        with pytest.warns() if target == "cuda" else _nothing():
            f(tvm.nd.array(x, tvm.cuda(0)), out)
        np.testing.assert_allclose(out.numpy(), x.sum(axis=1), rtol=1e-5)
        if target == "cuda" and f.kernel.target == "cuda":
            assert "__global__" in f.imported_modules[0].get_source()


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
