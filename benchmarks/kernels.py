"""The benchmark kernels: tessel's schedule (from ``examples/``), NumPy's way, the peers' builders.

A :class:`Case` knows how to make its inputs, how NumPy computes the answer (which is both
the baseline that is timed and the reference every contender is checked against), what
tessel's schedule is, and how much work one call does (flops or bytes, for GFLOP/s or GB/s).
Sizes come in two sets: the full ones of docs/performance.md and small ones for ``--quick``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from examples import fast_blur, fast_conv2d, fast_matmul, fast_rows, fast_streams

from . import peers


@dataclass
class Case:
    kernel: str                                   # table row group, e.g. "matmul"
    size: str                                     # as printed, e.g. "1024"
    unit: str                                     # "GFLOP/s" or "GB/s"
    work: float                                   # flops or bytes per call
    make_inputs: Callable[[np.random.Generator], list[np.ndarray]]
    out_shape: tuple[int, ...]
    numpy: Callable[..., np.ndarray]
    tessel: Callable[[], tuple]                   # -> (schedule, args)
    peers: dict[str, Callable[..., peers.PeerRun]] = field(default_factory=dict)
    rtol: float = 1e-4
    atol: float = 1e-4
    threads: int | None = None                    # None: every core


def _f32(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape, dtype="float32")


def matmul(n: int, threads: int | None = None) -> Case:
    return Case(
        "matmul", f"{n}" + (" (1 thread)" if threads == 1 else ""), "GFLOP/s", 2.0 * n**3,
        lambda rng: [_f32(rng, n, n), _f32(rng, n, n)], (n, n), np.matmul,
        lambda: fast_matmul.matmul(n),
        {} if threads == 1 else {"halide": peers.halide_matmul, "tvm": peers.tvm_matmul},
        rtol=2e-3, atol=2e-3, threads=threads)


def blur(n: int) -> Case:
    return Case(
        "blur 3x3", f"{n}x{n}", "GB/s", 4.0 * (n * n + (n - 2) ** 2),
        lambda rng: [_f32(rng, n, n)], (n - 2, n - 2), fast_blur.reference,
        lambda: fast_blur.blur(n, n),
        {"halide": peers.halide_blur, "tvm": peers.tvm_blur}, rtol=1e-5, atol=1e-5)


def conv2d(c: int, h: int) -> Case:
    return Case(
        "conv2d 3x3", f"1x{c}x{h}x{h}, {c} out", "GFLOP/s", 2.0 * c * c * 9 * h * h,
        lambda rng: [_f32(rng, 1, c, h, h), _f32(rng, c, c, 3, 3)], (1, c, h, h), fast_conv2d.reference,
        lambda: fast_conv2d.conv2d(1, c, c, h, h),
        {"halide": peers.halide_conv2d, "tvm": peers.tvm_conv2d}, rtol=1e-3, atol=1e-3)


def softmax(n: int) -> Case:
    return Case(
        "softmax (rows)", f"{n}x{n}", "GB/s", 8.0 * n * n,
        lambda rng: [_f32(rng, n, n)], (n, n), fast_rows.softmax_reference,
        lambda: fast_rows.softmax(n, n),
        {"halide": peers.halide_softmax, "tvm": peers.tvm_softmax}, rtol=1e-5, atol=1e-7)


def layernorm(n: int) -> Case:
    eps = fast_rows.EPS
    return Case(
        "layernorm (rows)", f"{n}x{n}", "GB/s", 8.0 * n * n,
        lambda rng: [_f32(rng, n, n), _f32(rng, n), _f32(rng, n)], (n, n), fast_rows.layernorm_reference,
        lambda: fast_rows.layernorm(n, n),
        {"halide": lambda a, g, b: peers.halide_layernorm(a, g, b, eps),
         "tvm": lambda a, g, b: peers.tvm_layernorm(a, g, b, eps)}, rtol=1e-4, atol=1e-4)


def add(n: int) -> Case:
    return Case(
        "add", f"2^{n.bit_length() - 1}", "GB/s", 12.0 * n,
        lambda rng: [_f32(rng, n), _f32(rng, n)], (n,), np.add,
        lambda: fast_streams.add(n),
        {"halide": peers.halide_add, "tvm": peers.tvm_add}, rtol=0, atol=0)


def row_sum(n: int) -> Case:
    return Case(
        "row sum", f"{n}x{n}", "GB/s", 4.0 * n * n,
        lambda rng: [_f32(rng, n, n)], (n,), lambda a: a.sum(axis=1),
        lambda: fast_streams.row_sum(n, n),
        {"halide": peers.halide_row_sum, "tvm": peers.tvm_row_sum}, rtol=1e-4, atol=1e-3)


def cases(quick: bool) -> list[Case]:
    if quick:
        return [matmul(256), matmul(256, threads=1), blur(512), conv2d(16, 28), softmax(512), layernorm(512),
                add(1 << 20), row_sum(512)]
    return [matmul(512), matmul(1024), matmul(2048), matmul(1024, threads=1), blur(4096), conv2d(64, 56),
            softmax(4096), layernorm(4096), add(1 << 24), row_sum(4096)]
