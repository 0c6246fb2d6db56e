"""The benchmark kernels: tessel's schedule (from ``examples/``), NumPy's way, the peers' builders.

A :class:`Case` knows how to make its inputs, how NumPy computes the answer (the reference
every contender is checked against), how NumPy computes it at its best (the baseline that is
timed: into a preallocated output with ``out=``, temporaries allocated once, as a user who
cares would write it), what tessel's schedule is, and how much work one call does (flops or
bytes, for GFLOP/s or GB/s). Sizes come in two sets: the full ones of the runs in benchmarks/results/runs.md and
small ones for ``--quick``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from examples import fast_blur, fast_conv2d, fast_matmul, fast_rows, fast_streams

from . import definitions, peers
from .peer_base import aligned_empty


@dataclass
class Case:
    kernel: str                                   # table row group, e.g. "matmul"
    size: str                                     # as printed, e.g. "1024"
    unit: str                                     # "GFLOP/s" or "GB/s"
    work: float                                   # flops or bytes per call
    make_inputs: Callable[[np.random.Generator], list[np.ndarray]]
    out_shape: tuple[int, ...]
    numpy: Callable[..., np.ndarray]              # the reference (allocates its result)
    numpy_fast: Callable[..., Callable[[], np.ndarray]]  # inputs -> a call writing into buffers made once
    tessel: Callable[[], tuple]                   # -> (schedule, args)
    peers: dict[str, Callable[..., peers.PeerRun]] = field(default_factory=dict)
    rtol: float = 1e-4
    atol: float = 1e-4
    threads: int | None = None                    # None: every core
    auto: Callable[[], definitions.Definition] | None = None  # the bare definition tessel.auto_schedule gets
    out_dtype: str = "float32"


def _f32(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Random inputs, aligned as every contender's outputs are (the harness treats all alike)."""
    a = aligned_empty(shape)
    a[...] = rng.standard_normal(shape, dtype="float32")
    return a


def _zeros(shape: tuple[int, ...]) -> np.ndarray:
    a = aligned_empty(shape)
    a[...] = 0.0
    return a


def _into(shape: tuple[int, ...], fn: Callable[..., object]) -> Callable[..., Callable[[], np.ndarray]]:
    """NumPy's call ``fn(*inputs, out)`` with ``out`` allocated once."""
    def make(*inputs: np.ndarray) -> Callable[[], np.ndarray]:
        out = aligned_empty(shape)

        def run() -> np.ndarray:
            fn(*inputs, out)
            return out
        return run
    return make


def matmul(n: int, threads: int | None = None) -> Case:
    return Case(
        "matmul", f"{n}" + (" (1 thread)" if threads == 1 else ""), "GFLOP/s", 2.0 * n**3,
        lambda rng: [_f32(rng, n, n), _f32(rng, n, n)], (n, n), np.matmul,
        _into((n, n), lambda a, b, o: np.matmul(a, b, out=o)),
        lambda: fast_matmul.matmul(n),
        {"torch": lambda a, b: peers.torch_matmul(a, b, threads)} if threads == 1 else
        {"halide": peers.halide_matmul, "tvm": peers.tvm_matmul, "torch": peers.torch_matmul},
        rtol=2e-3, atol=2e-3, threads=threads, auto=lambda: definitions.matmul(n))


def _blur_fast(a: np.ndarray) -> Callable[[], np.ndarray]:
    """The separable blur in four ufunc calls into two buffers made once."""
    h, w = a.shape
    bx, out = aligned_empty((h, w - 2)), aligned_empty((h - 2, w - 2))
    third = np.float32(fast_blur.THIRD)

    def run() -> np.ndarray:
        np.add(a[:, :-2], a[:, 1:-1], out=bx)
        np.add(bx, a[:, 2:], out=bx)
        np.multiply(bx, third, out=bx)
        np.add(bx[:-2], bx[1:-1], out=out)
        np.add(out, bx[2:], out=out)
        return np.multiply(out, third, out=out)
    return run


def _softmax_fast(a: np.ndarray) -> Callable[[], np.ndarray]:
    rows = a.shape[0]
    out, red = aligned_empty(a.shape), aligned_empty((rows, 1))

    def run() -> np.ndarray:
        np.max(a, axis=1, keepdims=True, out=red)
        np.subtract(a, red, out=out)
        np.exp(out, out=out)
        np.sum(out, axis=1, keepdims=True, out=red)
        return np.divide(out, red, out=out)
    return run


def _layernorm_fast(a: np.ndarray, g: np.ndarray, b: np.ndarray) -> Callable[[], np.ndarray]:
    rows = a.shape[0]
    out, tmp = aligned_empty(a.shape), aligned_empty(a.shape)
    mu, var = aligned_empty((rows, 1)), aligned_empty((rows, 1))
    eps = np.float32(fast_rows.EPS)

    def run() -> np.ndarray:
        np.mean(a, axis=1, keepdims=True, out=mu)
        np.subtract(a, mu, out=out)
        np.multiply(out, out, out=tmp)
        np.mean(tmp, axis=1, keepdims=True, out=var)
        np.sqrt(np.add(var, eps, out=var), out=var)
        np.divide(out, var, out=out)
        np.multiply(out, g, out=out)
        return np.add(out, b, out=out)
    return run


def _conv2d_fast(x: np.ndarray, w: np.ndarray) -> Callable[[], np.ndarray]:
    """im2col into a buffer made once, then one BLAS matmul into the output."""
    n, c, h, wd = x.shape
    k = w.shape[0]
    xp = _zeros((n, c, h + 2, wd + 2))
    cols = aligned_empty((n, c, 3, 3, h, wd))
    out = aligned_empty((n, k, h, wd))
    wm = w.reshape(k, c * 9)

    def run() -> np.ndarray:
        xp[:, :, 1:-1, 1:-1] = x
        win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))  # n c h w 3 3
        np.copyto(cols, win.transpose(0, 1, 4, 5, 2, 3))
        np.matmul(wm, cols.reshape(n, c * 9, h * wd), out=out.reshape(n, k, h * wd))
        return out
    return run


def _conv1x1_fast(x: np.ndarray, w: np.ndarray) -> Callable[[], np.ndarray]:
    """A 1x1 conv is one BLAS matmul of the weights and the image's pixels, into the output."""
    n, c, h, wd = x.shape
    k = w.shape[0]
    out = aligned_empty((n, k, h, wd))
    wm, xm, om = w.reshape(k, c), x.reshape(n, c, h * wd), out.reshape(n, k, h * wd)

    def run() -> np.ndarray:
        np.matmul(wm, xm, out=om)
        return out
    return run


def _depthwise_fast(x: np.ndarray, w: np.ndarray) -> Callable[[], np.ndarray]:
    """Nine shifted multiply-adds over a padded copy, into buffers made once."""
    n, c, h, wd = x.shape
    xp = _zeros((n, c, h + 2, wd + 2))
    out, tmp = aligned_empty((n, c, h, wd)), aligned_empty((n, c, h, wd))
    taps = [(dy, dx, np.ascontiguousarray(w[None, :, dy, dx, None, None])) for dy in range(3) for dx in range(3)]

    def run() -> np.ndarray:
        xp[:, :, 1:-1, 1:-1] = x
        out.fill(0.0)
        for dy, dx, t in taps:
            np.multiply(xp[:, :, dy:dy + h, dx:dx + wd], t, out=tmp)
            np.add(out, tmp, out=out)
        return out
    return run


def blur(n: int) -> Case:
    return Case(
        "blur 3x3", f"{n}x{n}", "GB/s", 4.0 * (n * n + (n - 2) ** 2),
        lambda rng: [_f32(rng, n, n)], (n - 2, n - 2), fast_blur.reference, _blur_fast,
        lambda: fast_blur.blur(n, n),
        {"halide": peers.halide_blur, "tvm": peers.tvm_blur, "torch": peers.torch_blur}, rtol=1e-5, atol=1e-5,
        auto=lambda: definitions.blur(n, n))


def conv2d(c: int, h: int) -> Case:
    return Case(
        "conv2d 3x3", f"1x{c}x{h}x{h}, {c} out", "GFLOP/s", 2.0 * c * c * 9 * h * h,
        lambda rng: [_f32(rng, 1, c, h, h), _f32(rng, c, c, 3, 3)], (1, c, h, h), fast_conv2d.reference,
        _conv2d_fast, lambda: fast_conv2d.conv2d(1, c, c, h, h),
        {"halide": peers.halide_conv2d, "tvm": peers.tvm_conv2d, "torch": peers.torch_conv2d},
        rtol=1e-3, atol=1e-3, auto=lambda: definitions.conv2d(c, c, h, h))


def conv2d_1x1(c: int, h: int) -> Case:
    return Case(
        "conv2d 1x1", f"1x{c}x{h}x{h}, {c} out", "GFLOP/s", 2.0 * c * c * h * h,
        lambda rng: [_f32(rng, 1, c, h, h), _f32(rng, c, c, 1, 1)], (1, c, h, h), fast_conv2d.reference,
        _conv1x1_fast, lambda: fast_conv2d.conv2d(1, c, c, h, h, kernel=1),
        {"halide": peers.halide_conv2d, "tvm": peers.tvm_conv2d, "torch": peers.torch_conv2d},
        rtol=1e-3, atol=1e-3, auto=lambda: definitions.conv2d(c, c, h, h, kernel=1))


def conv2d_depthwise(c: int, h: int) -> Case:
    return Case(
        "conv2d depthwise 3x3", f"1x{c}x{h}x{h}", "GFLOP/s", 2.0 * c * 9 * h * h,
        lambda rng: [_f32(rng, 1, c, h, h), _f32(rng, c, 3, 3)], (1, c, h, h), fast_conv2d.depthwise_reference,
        _depthwise_fast, lambda: fast_conv2d.depthwise(1, c, h, h),
        {"halide": peers.halide_depthwise, "tvm": peers.tvm_depthwise, "torch": peers.torch_depthwise},
        rtol=1e-4, atol=1e-4, auto=lambda: definitions.depthwise(c, h, h))


def softmax(n: int) -> Case:
    return Case(
        "softmax (rows)", f"{n}x{n}", "GB/s", 8.0 * n * n,
        lambda rng: [_f32(rng, n, n)], (n, n), fast_rows.softmax_reference, _softmax_fast,
        lambda: fast_rows.softmax(n, n),
        {"halide": peers.halide_softmax, "tvm": peers.tvm_softmax, "torch": peers.torch_softmax},
        rtol=1e-5, atol=1e-7, auto=lambda: definitions.softmax(n, n))


def layernorm(n: int) -> Case:
    eps = fast_rows.EPS
    return Case(
        "layernorm (rows)", f"{n}x{n}", "GB/s", 8.0 * n * n,
        lambda rng: [_f32(rng, n, n), _f32(rng, n), _f32(rng, n)], (n, n), fast_rows.layernorm_reference,
        _layernorm_fast, lambda: fast_rows.layernorm(n, n),
        {"halide": lambda a, g, b, **auto: peers.halide_layernorm(a, g, b, eps, **auto),
         "tvm": lambda a, g, b, **auto: peers.tvm_layernorm(a, g, b, eps, **auto),
         "torch": lambda a, g, b: peers.torch_layernorm(a, g, b, eps)}, rtol=1e-4, atol=1e-4,
        auto=lambda: definitions.layernorm(n, n))


def add(n: int) -> Case:
    return Case(
        "add", f"2^{n.bit_length() - 1}", "GB/s", 12.0 * n,
        lambda rng: [_f32(rng, n), _f32(rng, n)], (n,), np.add, _into((n,), lambda a, b, o: np.add(a, b, out=o)),
        lambda: fast_streams.add(n),
        {"halide": peers.halide_add, "tvm": peers.tvm_add, "torch": peers.torch_add}, rtol=0, atol=0,
        auto=lambda: definitions.add(n))


def row_sum(n: int) -> Case:
    return Case(
        "row sum", f"{n}x{n}", "GB/s", 4.0 * n * n,
        lambda rng: [_f32(rng, n, n)], (n,), lambda a: a.sum(axis=1),
        _into((n,), lambda a, o: np.sum(a, axis=1, out=o)), lambda: fast_streams.row_sum(n, n),
        {"halide": peers.halide_row_sum, "tvm": peers.tvm_row_sum, "torch": peers.torch_row_sum},
        rtol=1e-4, atol=1e-3, auto=lambda: definitions.row_sum(n, n))


def argmax(n: int) -> Case:
    """The index of each row's maximum; NumPy's into an index array of its own (intp)."""
    def fast(a: np.ndarray) -> Callable[[], np.ndarray]:
        out = aligned_empty((a.shape[0],), dtype=np.dtype(np.intp).name)
        return lambda: np.argmax(a, axis=1, out=out)
    return Case(
        "argmax", f"{n}x{n}", "GB/s", 4.0 * n * n,
        lambda rng: [_f32(rng, n, n)], (n,), lambda a: a.argmax(axis=1), fast, lambda: fast_rows.argmax(n, n),
        {"torch": peers.torch_argmax}, rtol=0, atol=0, auto=lambda: definitions.argmax(n, n), out_dtype="int32")


def cases(quick: bool) -> list[Case]:
    if quick:
        return [matmul(256), matmul(256, threads=1), blur(512), conv2d(16, 28), conv2d_1x1(16, 28),
                conv2d_depthwise(16, 28), softmax(512), layernorm(512), add(1 << 20), row_sum(512),
                argmax(512)]
    return [matmul(512), matmul(1024), matmul(2048), matmul(1024, threads=1), blur(4096), conv2d(64, 56),
            conv2d_1x1(64, 56), conv2d_depthwise(64, 56), softmax(4096), layernorm(4096), add(1 << 24),
            row_sum(4096), argmax(4096)]
