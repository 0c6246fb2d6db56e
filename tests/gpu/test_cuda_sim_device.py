"""On a machine with a CUDA device: the real kernels agree with cuda-sim (and with NumPy).

Skipped, with the reason, where there is no device (the usual case: CI and these machines
have none). Each case is built twice from one schedule, for ``target="cuda"`` and for
``target="cuda-sim"``, and run on the same random inputs at awkward sizes.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from gpu_cases import CASES
from helpers import garbage_like

import tessel


def _no_device() -> str | None:
    """Why the real-device tests cannot run here (None: they can)."""
    if shutil.which("nvcc") is None:
        return "nvcc is not on the PATH"
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return "no CUDA device: nvidia-smi is not installed"
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"no CUDA device: nvidia-smi -L failed ({e})"
    if out.returncode != 0 or "GPU" not in out.stdout:
        return "no CUDA device: nvidia-smi -L lists none"
    return None


REASON = _no_device()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


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
def test_device_agrees_with_cuda_sim(case):
    s, args, inputs, expected = _cases()[case]()
    on_gpu = _run(tessel.build(s, args, target="cuda"), inputs, expected)
    simulated = _run(tessel.build(s, args, target="cuda-sim"), inputs, expected)
    for k, (g, c, want) in enumerate(zip(on_gpu, simulated, expected)):
        # the device contracts a*b+c into FMAs and may use its own exp: float32 rounding differs
        np.testing.assert_allclose(g, c, rtol=1e-4, atol=1e-5, err_msg=f"{case}: output {k}, GPU vs cuda-sim")
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-5, err_msg=f"{case}: output {k}, GPU vs NumPy")
