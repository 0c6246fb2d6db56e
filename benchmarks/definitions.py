"""The benchmark kernels as compute definitions alone, for the automatic scheduler.

``examples/fast_*.py`` write each kernel together with its hand schedule, some in a form the
schedule needs (conv2d's padded input and packed weights, matmul's packed B). Here each is the
definition a user writes first, with no schedule: what ``tessel.auto_schedule`` starts from.
Each function returns a :class:`Definition`: the output tensors, a maker of random inputs and
NumPy's answer. conv2d also comes as a 1x1 and a depthwise variant (issue 17's acceptance).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from examples import fast_rows
from tessel import te

EPS = fast_rows.EPS  # the example schedules and the bare definitions normalize alike
THIRD = 1.0 / 3.0


@dataclass
class Definition:
    name: str
    params: list                                      # the placeholders, in call order
    outputs: list                                     # te tensors
    inputs: Callable[[np.random.Generator], list[np.ndarray]]
    reference: Callable[..., np.ndarray]
    rtol: float = 1e-4
    atol: float = 1e-4


def _f32(rng: np.random.Generator, *shape: int) -> np.ndarray:
    a = rng.uniform(-1.0, 1.0, size=shape).astype("float32")
    a[a == 0] = 0.5
    return a


def matmul(m: int, n: int | None = None, k: int | None = None) -> Definition:
    n, k = n or m, k or m
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return Definition("matmul", [A, B], [C], lambda g: [_f32(g, m, k), _f32(g, k, n)], np.matmul, 1e-3, 1e-3)


def conv2d(c: int, k: int, h: int, w: int, kernel: int = 3) -> Definition:
    """NCHW, stride 1, zero padding keeping the size (a padding stage, as TOPI writes it)."""
    p = kernel // 2
    X = te.placeholder((1, c, h, w), name="X")
    W = te.placeholder((k, c, kernel, kernel), name="W")
    if p:
        Xp = te.compute((1, c, h + 2 * p, w + 2 * p), lambda b, ci, y, x: te.if_then_else(
            te.all(y >= p, y < h + p, x >= p, x < w + p), X[b, ci, y - p, x - p], 0.0), name="Xp")
    else:
        Xp = X
    rc = te.reduce_axis((0, c), name="rc")
    ry = te.reduce_axis((0, kernel), name="ry")
    rx = te.reduce_axis((0, kernel), name="rx")
    Y = te.compute((1, k, h, w), lambda b, o, y, x: te.sum(
        Xp[b, rc, y + ry, x + rx] * W[o, rc, ry, rx], axis=[rc, ry, rx]), name="Y")

    def ref(x: np.ndarray, wt: np.ndarray) -> np.ndarray:
        xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p))).astype("float64")
        out = np.zeros((1, k, h, w))
        for dy in range(kernel):
            for dx in range(kernel):
                out += np.einsum("oc,bchw->bohw", wt[:, :, dy, dx], xp[:, :, dy:dy + h, dx:dx + w])
        return out.astype("float32")
    return Definition(f"conv2d {kernel}x{kernel}", [X, W], [Y], lambda g: [_f32(g, 1, c, h, w), _f32(g, k, c, kernel, kernel)],
                      ref, 1e-3, 1e-3)


def depthwise(c: int, h: int, w: int) -> Definition:
    """A 3x3 depthwise convolution (each channel with its own filter), zero padding 1."""
    X = te.placeholder((1, c, h, w), name="X")
    W = te.placeholder((c, 3, 3), name="W")
    Xp = te.compute((1, c, h + 2, w + 2), lambda b, ci, y, x: te.if_then_else(
        te.all(y >= 1, y < h + 1, x >= 1, x < w + 1), X[b, ci, y - 1, x - 1], 0.0), name="Xp")
    ry = te.reduce_axis((0, 3), name="ry")
    rx = te.reduce_axis((0, 3), name="rx")
    Y = te.compute((1, c, h, w), lambda b, ci, y, x: te.sum(
        Xp[b, ci, y + ry, x + rx] * W[ci, ry, rx], axis=[ry, rx]), name="Y")

    def ref(x: np.ndarray, wt: np.ndarray) -> np.ndarray:
        xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        return sum(xp[:, :, dy:dy + h, dx:dx + w] * wt[None, :, dy, dx, None, None]
                   for dy in range(3) for dx in range(3)).astype("float32")
    return Definition("depthwise 3x3", [X, W], [Y], lambda g: [_f32(g, 1, c, h, w), _f32(g, c, 3, 3)], ref)


def blur(h: int, w: int) -> Definition:
    A = te.placeholder((h, w), name="A")
    Bx = te.compute((h, w - 2), lambda y, x: (A[y, x] + A[y, x + 1] + A[y, x + 2]) * THIRD, name="Bx")
    By = te.compute((h - 2, w - 2), lambda y, x: (Bx[y, x] + Bx[y + 1, x] + Bx[y + 2, x]) * THIRD, name="By")

    def ref(a: np.ndarray) -> np.ndarray:
        t = np.float32(THIRD)
        bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) * t
        return (bx[:-2] + bx[1:-1] + bx[2:]) * t
    return Definition("blur 3x3", [A], [By], lambda g: [_f32(g, h, w)], ref, 1e-5, 1e-5)


def softmax(rows: int, cols: int) -> Definition:
    A, *_, O = fast_rows.softmax_definition(rows, cols)

    def ref(a: np.ndarray) -> np.ndarray:
        e = np.exp(a - a.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    return Definition("softmax", [A], [O], lambda g: [_f32(g, rows, cols)], ref, 1e-5, 1e-6)


def layernorm(rows: int, cols: int) -> Definition:
    A, G, Bt, *_, O = fast_rows.layernorm_definition(rows, cols, EPS)

    def ref(a: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
        mu = a.mean(axis=1, keepdims=True)
        var = ((a - mu) ** 2).mean(axis=1, keepdims=True)
        return (a - mu) / np.sqrt(var + np.float32(EPS)) * g + b
    return Definition("layernorm", [A, G, Bt], [O], lambda g: [_f32(g, rows, cols), _f32(g, cols), _f32(g, cols)], ref)


def add(n: int) -> Definition:
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    return Definition("add", [A, B], [C], lambda g: [_f32(g, n), _f32(g, n)], np.add, 0, 0)


def row_sum(rows: int, cols: int) -> Definition:
    A = te.placeholder((rows, cols), name="A")
    k = te.reduce_axis((0, cols), name="k")
    B = te.compute((rows,), lambda i: te.sum(A[i, k], axis=k), name="B")
    return Definition("row sum", [A], [B], lambda g: [_f32(g, rows, cols)], lambda a: a.sum(axis=1), 1e-4, 1e-3)


def argmax(rows: int, cols: int) -> Definition:
    """The index of each row's maximum (te.argmax: NumPy's first index, under any schedule);
    the maximum itself is the same operation's other output, left to the kernel."""
    A = te.placeholder((rows, cols), name="A")
    k = te.reduce_axis((0, cols), name="k")
    index, _ = te.compute((rows,), lambda i: te.argmax((k, A[i, k]), axis=k), name="B")
    return Definition("argmax", [A], [index], lambda g: [_f32(g, rows, cols)],
                      lambda a: a.argmax(axis=1).astype("int32"), 0, 0)


def suite(small: bool = True) -> list[Definition]:
    """Every kernel of the benchmark suite (and the conv2d variants), at awkward small sizes
    for tests or at the benchmark's sizes."""
    if small:
        return [matmul(37, 45, 29), conv2d(5, 12, 9, 19), conv2d(7, 10, 6, 21, kernel=1), depthwise(6, 7, 19),
                blur(21, 35), softmax(7, 203), layernorm(9, 131), add(1003), row_sum(5, 333), row_sum(3, 4099),
                argmax(6, 333)]
    return [matmul(1024), conv2d(64, 64, 56, 56), conv2d(64, 64, 56, 56, kernel=1), depthwise(64, 56, 56),
            blur(4096, 4096), softmax(4096, 4096), layernorm(4096, 4096), add(1 << 24), row_sum(4096, 4096),
            argmax(4096, 4096)]
