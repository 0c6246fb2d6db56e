"""On a machine with a CUDA device: the real kernels agree with cuda-sim (and with NumPy).

Skipped, with the reason, where there is no device (the usual case: CI and these machines
have none). Each case is built twice from one schedule, for ``target="cuda"`` and for
``target="cuda-sim"``, and run on the same random inputs at awkward sizes.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from gpu_cases import CASES, elementwise
from helpers import garbage_like

import tessel
from tessel.errors import NoDeviceError

#: the GPU or nothing: a call with no device raises instead of running on the simulator
ON_DEVICE = "cuda -features=no_simulator"

@pytest.fixture(scope="module")
def device() -> None:
    """Skip (saying why) unless a CUDA kernel can be launched here: nvcc compiles, the driver
    finds a device. The probe is the public path, a tiny kernel built and called."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on the PATH, so no CUDA kernel can be built")
    s, args, inputs, expected = elementwise(5)
    f = tessel.build(s, args, target=ON_DEVICE)
    try:
        f(*inputs, np.zeros_like(expected[0]))
    except NoDeviceError as e:
        pytest.skip(f"no CUDA device here: {e}")


def _run(f, inputs, expected) -> list[np.ndarray]:
    ins = [np.array(a, copy=True) for a in inputs]
    outs = [garbage_like(np.asarray(e)) for e in expected]
    f(*ins, *outs)
    for a, b in zip(ins, inputs):
        np.testing.assert_array_equal(a, b, err_msg=f"{f.target}: an input was modified")
    return outs


def _cases() -> dict:
    """The shared cases, and the examples in examples/gpu once they are importable."""
    cases = dict(CASES)
    try:
        from test_cuda_sim_examples import EXAMPLES
    except ImportError:
        return cases
    cases.update(EXAMPLES)
    return cases


@pytest.mark.parametrize("case", sorted(_cases()))
def test_device_agrees_with_cuda_sim(case, device):
    s, args, inputs, expected = _cases()[case]()
    on_gpu = _run(tessel.build(s, args, target=ON_DEVICE), inputs, expected)
    simulated = _run(tessel.build(s, args, target="cuda-sim"), inputs, expected)
    for k, (g, c, want) in enumerate(zip(on_gpu, simulated, expected)):
        # the device contracts a*b+c into FMAs and may use its own exp: float32 rounding differs
        np.testing.assert_allclose(g, c, rtol=1e-4, atol=1e-5, err_msg=f"{case}: output {k}, GPU vs cuda-sim")
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-5, err_msg=f"{case}: output {k}, GPU vs NumPy")
