"""TVM's GPU spellings under tessel's ``tvm``: ``"cuda"`` builds with nvcc and runs on the GPU,
or on the simulator where there is none; ``tvm.cuda(0)`` holds the arrays."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from helpers import cross_thread_row_sum

import tessel.tvm as tvm
from tessel.errors import BuildError, TesselWarning
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
    s, A, B, _ = cross_thread_row_sum(te.var("n"), te.var("m"))
    for target in ("cuda-sim", "cuda-sim -features=check", "cuda"):
        with warnings.catch_warnings():  # "cuda" with no GPU (or no nvcc) says it runs on the simulator
            warnings.simplefilter("ignore", TesselWarning)
            f = tvm.build(s, [A, B], target)
            x = np.random.default_rng(5).uniform(size=(45, 37)).astype("float32")
            out = tvm.nd.array(np.full(45, np.nan, "float32"), tvm.cuda(0))
            f(tvm.nd.array(x, tvm.cuda(0)), out)
        np.testing.assert_allclose(out.numpy(), x.sum(axis=1), rtol=1e-5)
        if f.kernel.target == "cuda":
            assert "__global__" in f.imported_modules[0].get_source()
