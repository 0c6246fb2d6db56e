"""Bandwidth-bound kernels: elementwise add, a row sum, and a copy (the yardstick).

Nothing to compute, so the schedule's job is to keep memory busy: long contiguous vector
loops, split into chunks of half an L2 (``tessel.target.tiles.stream_chunk``: 64 Ki floats
with a 512 KiB L2) that the threads share. A result this large (64
MiB) is written with streaming stores, which tessel chooses by itself for big outputs the
kernel never reads back: no cache line of C is read before it is overwritten. The row sum
reduces each row in a few vectors of partial sums (``rfactor`` over the inner part of the
split row, ``tessel.target.tiles.reduction_lanes``), so the adds keep pace with the loads.

    python examples/fast_streams.py
"""

from __future__ import annotations

import numpy as np

import tessel
from tessel import te
from tessel.autosched import partials
from tessel.target import Target, as_target, resolve
from tessel.target.tiles import reduction_lanes, stream_chunk


def _stream(s, T, chunk: int) -> None:
    xo, xi = s[T].split(T.op.axis[0], factor=chunk)
    s[T].parallel(xo)
    s[T].vectorize(xi)  # the vectorize pass strip-mines the chunk into whole vectors itself


def _chunk(target: str | Target | None) -> int:
    return stream_chunk(resolve(as_target(target)))


def add(n: int, target: str | Target | None = None, chunk: int | None = None):
    """``[A, B, C]`` with C = A + B."""
    chunk = chunk or _chunk(target)
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    _stream(s, C, chunk)
    return s, [A, B, C]


def copy(n: int, target: str | Target | None = None, chunk: int | None = None):
    """``[A, C]`` with C = A: what the memory system can do, for comparison."""
    chunk = chunk or _chunk(target)
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i], name="C")
    s = te.create_schedule(C.op)
    _stream(s, C, chunk)
    return s, [A, C]


def row_sum(rows: int, cols: int, target: str | Target | None = None, v: int | None = None):
    """``[A, B]`` with B[i] = sum of row i of A."""
    v = v or reduction_lanes(resolve(as_target(target)))
    A = te.placeholder((rows, cols), name="A")
    k = te.reduce_axis((0, cols), name="k")
    B = te.compute((rows,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    lanes = resolve(as_target(target)).vector_lanes("float32")
    stages = partials.factor(s, B, v, lanes)  # v partials, combined a vector at a time first
    s[B].parallel(s[B].op.axis[0])
    partials.attach(s, stages, B, s[B].op.axis[0])
    return s, [A, B]


def main() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(100003, "float32"), rng.standard_normal(100003, "float32")
    c = np.empty_like(a)
    s, args = add(100003)
    tessel.build(s, args)(a, b, c)
    np.testing.assert_array_equal(c, a + b)
    m = rng.standard_normal((37, 1027), "float32")
    r = np.empty(37, "float32")
    s, args = row_sum(37, 1027)
    tessel.build(s, args)(m, r)
    np.testing.assert_allclose(r, m.sum(axis=1), rtol=1e-4, atol=1e-4)
    print("add and row sum: match NumPy")


if __name__ == "__main__":
    main()
