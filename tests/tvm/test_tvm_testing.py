"""``tvm.testing``'s markers and target questions, ``tvm.contrib.nvcc``'s compute-capability
questions, and ``tvm.topi.testing``'s references checked against tessel's operators."""

from __future__ import annotations

import unittest

import numpy as np
import pytest
from helpers import rand

import tessel
from tessel.errors import BuildError
from tessel.tvm import te, testing, topi
from tessel.tvm.contrib import nvcc


def test_targets_tessel_runs_are_enabled_and_the_others_are_not():
    assert testing.device_enabled("llvm") and testing.device_enabled("cuda")  # cuda: GPU or simulator
    assert not testing.device_enabled("opencl -device=intel_graphics") and not testing.device_enabled("stackvm")
    assert [t for t, _ in testing.enabled_targets()] == ["llvm", "c", "cuda"]


def test_markers_run_what_tessel_has_and_skip_what_it_lacks_saying_why():
    def body():
        return 7

    assert testing.requires_gpu(body) is body and testing.uses_gpu(body) is body
    with pytest.raises(unittest.SkipTest, match="no tensor-core"):
        testing.requires_tensorcore(body)()
    assert testing.requires_tensorcore(support_required="optional")(body) is body


def test_nvcc_compute_capabilities():
    assert nvcc.parse_compute_version("8.6") == (8, 6)
    assert nvcc.have_fp16("7.0") and not nvcc.have_fp16("6.1") and nvcc.have_int8("6.1")
    assert not nvcc.have_tensorcore("8.0")  # no wmma code from tessel
    with pytest.raises(BuildError, match="MAJOR.MINOR"):
        nvcc.parse_compute_version("sm80")
    with pytest.raises(BuildError, match="target_format"):
        nvcc.compile_cuda("", target_format="sass")


def test_softmax_reference_against_topi():
    A = te.placeholder((5, 9), name="A")
    B = topi.nn.softmax(A, axis=1)
    f = tessel.build(topi.generic.schedule_injective(B), [A, B])
    a, out = rand(5, 9), np.zeros((5, 9), "float32")
    f(a, out)
    np.testing.assert_allclose(out, topi.testing.softmax_python(a), rtol=1e-5)


@pytest.mark.parametrize(("stride", "padding"), [(1, 0), (2, 1), ((2, 1), "SAME")])
def test_conv2d_references_against_topi(stride, padding):
    A, W = te.placeholder((2, 3, 9, 7), name="A"), te.placeholder((4, 3, 3, 2), name="W")
    C = topi.nn.conv2d_nchw(A, W, stride, padding, 1)
    f = tessel.build(topi.generic.schedule_conv2d_nchw(C), [A, W, C])
    a, w = rand(2, 3, 9, 7), rand(4, 3, 3, 2, seed=1)
    want = topi.testing.conv2d_nchw_python(a, w, stride, padding)
    out = np.zeros(want.shape, "float32")
    f(a, w, out)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    nhwc = topi.testing.conv2d_nhwc_python(a.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0), stride, padding)
    np.testing.assert_allclose(nhwc, want.transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-5)


def test_injective_schedule_per_target():
    A = te.placeholder((7, 13), name="A")
    B = topi.exp(A)
    assert testing.device_enabled("cuda")
    s = topi.testing.get_elemwise_schedule("cuda")(B)
    attrs = s[B].iter_var_attrs
    assert [attrs[v].bind_thread.thread_tag for v in s[B].leaf_iter_vars] == ["blockIdx.x", "threadIdx.x"]
    f = tessel.build(s, [A, B], target="cuda-sim")
    a, out = rand(7, 13), np.zeros((7, 13), "float32")
    f(a, out)
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-5)
    assert topi.testing.get_broadcast_schedule("llvm") is topi.generic.schedule_injective


def test_cuda_schedules_inline_the_chain_and_give_every_computed_stage_threads():
    A, W = te.placeholder((1, 2, 7, 7), name="A"), te.placeholder((3, 2, 3, 3), name="W")
    conv = topi.nn.conv2d_nchw(A, W, 1, 1, 1)
    out = (conv + 1.0) * 2.0
    compute, schedule = topi.testing.get_conv2d_nchw_implement("cuda")
    assert compute is topi.nn.conv2d_nchw
    s = schedule([out])
    kinds = {st.name: st.attach_type for st in s.stages if not st.is_placeholder}
    assert kinds["pad_temp"] == "inline" and kinds["T_add"] == "inline" and kinds["conv2d_nchw"] == "root"
    f = tessel.build(s, [A, W, out], target="cuda-sim")
    a, w = rand(1, 2, 7, 7), rand(3, 2, 3, 3, seed=1)
    got = np.zeros((1, 3, 7, 7), "float32")
    f(a, w, got)
    np.testing.assert_allclose(got, (topi.testing.conv2d_nchw_python(a, w, 1, 1) + 1) * 2, rtol=1e-4, atol=1e-4)
