"""The GPU examples (examples/gpu) compute NumPy's values under target="cuda-sim".

Each example's own schedule function, at sizes that divide none of its tiles (so every guard,
tail and partial warp runs), on random data. The simulator runs the kernels the CUDA target
compiles (barriers, warp shuffles, virtual threads included) and refuses any race, so a pass
here also says the schedule is race-free at these sizes.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check, rand

import tessel
from examples.gpu import conv2d, gemm, row_reduce, softmax
from tessel.errors import RaceError


def gemm_case(k: int = 19):
    """C = A^T B: 64x64 tiles per block, 8x8 threads, 2x2 virtual threads, cooperative fetch."""
    n, m = 70, 67
    s, args = gemm.schedule(n, m, k)
    a, b = rand(k, n), rand(k, m, seed=1)
    return s, args, [a, b], [a.T @ b]


def conv2d_case():
    """Direct convolution in HWCN with shared and local caches (TVM's opt_conv_cuda)."""
    batch, cin, cout, size, kernel, pad, stride = 5, 6, 11, 4, 3, 1, 1
    s, args = conv2d.schedule(batch, cin, cout, size, kernel, pad, stride)
    a, w = rand(size, size, cin, batch), rand(kernel, kernel, cin, cout, seed=1)
    out = (size - kernel + 2 * pad) // stride + 1
    padded = np.pad(a.astype("float64"), ((pad, pad), (pad, pad), (0, 0), (0, 0)))
    want = np.zeros((out, out, cout, batch))
    for y in range(kernel):
        for x in range(kernel):
            win = padded[y:y + out * stride:stride, x:x + out * stride:stride]
            want += np.einsum("hwcn,cf->hwfn", win, w[y, x])
    return s, args, [a, w], [want.astype("float32")]


def row_reduce_case():
    """Row sums by a warp's worth of threads per row (rfactor, reduce axis bound to threadIdx.x)."""
    n, m = 13, 101
    s, args = row_reduce.schedule(n, m)
    a = rand(n, m)
    return s, args, [a], [a.sum(axis=1)]


def softmax_case():
    """Softmax over rows: cross-thread max and sum, then the normalised exponentials."""
    n, m = 5, 131
    s, args = softmax.schedule(n, m)
    x = rand(n, m, low=-4.0, high=4.0)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return s, args, [x], [e / e.sum(axis=1, keepdims=True)]


EXAMPLES = {"gemm": gemm_case, "conv2d": conv2d_case, "row_reduce": row_reduce_case, "softmax": softmax_case}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_equals_numpy_under_cuda_sim(name):
    s, args, inputs, expected = EXAMPLES[name]()
    check(s, args, inputs, expected, targets=("cuda-sim", "cuda-sim -features=check"), rtol=1e-4, atol=1e-5)


def test_gemm_blocks_run_in_any_order():
    s, args, inputs, _ = gemm_case(k=5)
    f = tessel.build(s, args, target="cuda-sim -features=check")
    outs = []
    for seed in (0, 3):
        f.block_order_seed = seed
        c = np.full((70, 67), np.nan, "float32")
        f(*inputs, c)
        outs.append(c)
    np.testing.assert_array_equal(outs[0], outs[1])


@pytest.mark.parametrize("name", ["gemm", "conv2d"])
def test_example_without_its_barriers_is_a_race(name):
    """The same kernels with the CUDA target's barrier insertion switched off: the shared tiles
    are read by other threads than the ones that fetched them, and the detector says where."""
    s, args, inputs, expected = EXAMPLES[name]()
    f = tessel.build(s, args, target="cuda-sim -features=check,no_barriers")
    with pytest.raises(RaceError) as info:
        f(*inputs, *[np.zeros_like(e) for e in expected])
    assert info.value.buffer.endswith(".shared")
    assert len(info.value.statements) == 2 and len(info.value.threads) == 2
