"""Row-wise kernels fused into one pass per row: softmax, layer normalization and argmax.

Every stage is computed at the row loop of the output (``compute_at``), so a row is read
from memory once and its intermediates (the exponentials of softmax, a 16 KiB row) stay in
L1/L2; rows are shared among threads. Each row reduction (max, sum, mean, variance) is
split and ``rfactor``-ed over the inner part, and that factored axis is vectorized: a few whole
vectors of partial results per row (``tessel.target.tiles.reduction_lanes``: 64 float32 on
AVX2, 8 independent vectors, enough to hide the add latency), combined at the end. That is
the reassociation which lets a reduction run at SIMD speed, written out in the schedule.

Softmax reads each row twice: its max brings the row in from memory, then the exponentials
find it in L1 and only compute. Left so, memory idles during that pass; a ``prefetch`` hint
in it, one per cache line, asks for the next row meanwhile (the hint's address runs past the
row's end into the next row), so the next max finds its row in cache (Zen 5, two threads,
4096 x 4096: 27 GB/s without the hint, 34 with it).

    python examples/fast_rows.py
"""

from __future__ import annotations

import numpy as np

import tessel
from tessel import te
from tessel.autosched import partials as partials_
from tessel.target import Target, as_target, resolve
from tessel.target.tiles import prefetch_step, reduction_lanes

EPS = 1e-5


def partials(target: str | Target | None = None) -> int:
    """Partial results per row reduction on ``target`` (default: this machine)."""
    return reduction_lanes(resolve(as_target(target)))


def _vector_reduce(s, R, O, v: int, target, at_self: bool = False) -> None:
    """Reduce R's row with ``v`` partial results in vector lanes, combined a vector at a time
    into one vector before the lanes (``tessel.autosched.partials``), at O's row loop (R's own
    row loop when ``at_self``: R is the output)."""
    lanes = resolve(as_target(target)).vector_lanes(str(R.dtype))
    stages = partials_.factor(s, R, v, lanes)
    partials_.attach(s, stages, O, s[O].op.axis[0])  # O's loops as they are after the rfactor
    if not at_self:
        s[R].compute_at(s[O], s[O].op.axis[0])


def _rowwise(s, O) -> None:
    s[O].parallel(s[O].op.axis[0])
    s[O].vectorize(s[O].op.axis[1])  # whole rows: strip-mined (and aligned for streaming) by the pass


def softmax_definition(rows: int, cols: int):
    """What row softmax computes, unscheduled: ``A, M, E, S, O`` (the benchmark's automatic
    scheduler starts from this same definition)."""
    A = te.placeholder((rows, cols), name="A")
    k1 = te.reduce_axis((0, cols), name="k1")
    M = te.compute((rows,), lambda i: te.max(A[i, k1], axis=k1), name="M")
    E = te.compute((rows, cols), lambda i, j: te.exp(A[i, j] - M[i]), name="E")
    k2 = te.reduce_axis((0, cols), name="k2")
    S = te.compute((rows,), lambda i: te.sum(E[i, k2], axis=k2), name="S")
    O = te.compute((rows, cols), lambda i, j: E[i, j] / S[i], name="O")
    return A, M, E, S, O


def layernorm_definition(rows: int, cols: int, eps: float = EPS):
    """What layer normalization computes, unscheduled: ``A, G, B, S1, Mu, S2, R, O``."""
    A = te.placeholder((rows, cols), name="A")
    G = te.placeholder((cols,), name="G")
    Bt = te.placeholder((cols,), name="B")
    k1 = te.reduce_axis((0, cols), name="k1")
    S1 = te.compute((rows,), lambda i: te.sum(A[i, k1], axis=k1), name="S1")
    Mu = te.compute((rows,), lambda i: S1[i] / float(cols), name="Mu")
    k2 = te.reduce_axis((0, cols), name="k2")
    S2 = te.compute((rows,), lambda i: te.sum((A[i, k2] - Mu[i]) * (A[i, k2] - Mu[i]), axis=k2), name="S2")
    R = te.compute((rows,), lambda i: te.rsqrt(S2[i] / float(cols) + eps), name="R")
    O = te.compute((rows, cols), lambda i, j: (A[i, j] - Mu[i]) * R[i] * G[j] + Bt[j], name="O")
    return A, G, Bt, S1, Mu, S2, R, O


def softmax(rows: int, cols: int, target: str | Target | None = None, v: int | None = None):
    """The schedule and its arguments ``[A, O]``: O = softmax of each row of A."""
    v = v or partials(target)
    A, M, E, S, O = softmax_definition(rows, cols)
    s = te.create_schedule(O.op)
    _rowwise(s, O)
    _vector_reduce(s, M, O, v, target)
    s[E].compute_at(s[O], s[O].op.axis[0])
    step = prefetch_step(resolve(as_target(target)))
    jo, ji = s[E].split(s[E].op.axis[1], factor=step)
    s[E].vectorize(ji)
    s[E].prefetch(A, jo, -(-cols // step))  # a row on: the next row's line at this column
    _vector_reduce(s, S, O, v, target)
    return s, [A, O]


def layernorm(rows: int, cols: int, target: str | Target | None = None, v: int | None = None,
              eps: float = EPS):
    """The schedule and its arguments ``[A, G, B, O]``: O = (A - mean) / std * G + B per row."""
    v = v or partials(target)
    A, G, Bt, S1, Mu, S2, R, O = layernorm_definition(rows, cols, eps)
    s = te.create_schedule(O.op)
    _rowwise(s, O)
    _vector_reduce(s, S1, O, v, target)
    s[Mu].compute_at(s[O], s[O].op.axis[0])
    _vector_reduce(s, S2, O, v, target)
    s[R].compute_at(s[O], s[O].op.axis[0])
    return s, [A, G, Bt, O]


def argmax(rows: int, cols: int, target: str | Target | None = None, v: int | None = None):
    """The schedule and its arguments ``[A, I]``: I = the index of each row's maximum (the
    first, as NumPy's). ``te.argmax`` breaks ties by the index, so its partial results combine
    in any order: a row's ``v`` partials in vector lanes (an index vector and a value vector,
    each lane keeping its best so far), combined once per row, a vector at a time first. Four
    vectors of partials, fewer than a sum's: each combine is a chain of compares and selects,
    not one add (Zen 5, 4096 x 4096, one thread, CPU time: 15.6 GB/s with 2 vectors, 21.8 with
    4, 21.2 with 8; NumPy 26.5)."""
    v = v or 4 * resolve(as_target(target)).vector_lanes("float32")
    A = te.placeholder((rows, cols), name="A")
    k = te.reduce_axis((0, cols), name="k")
    index, _ = te.compute((rows,), lambda i: te.argmax((k, A[i, k]), axis=k), name="B")
    s = te.create_schedule(index.op)
    _vector_reduce(s, index, index, v, target, at_self=True)
    s[index].parallel(s[index].op.axis[0])
    return s, [A, index]


def softmax_reference(a: np.ndarray) -> np.ndarray:
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def layernorm_reference(a: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float = EPS) -> np.ndarray:
    mu = a.mean(axis=1, keepdims=True)
    var = ((a - mu) ** 2).mean(axis=1, keepdims=True)
    return (a - mu) / np.sqrt(var + np.float32(eps)) * g + b


def main() -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((37, 203), "float32")
    g, b = rng.standard_normal(203, "float32"), rng.standard_normal(203, "float32")
    out = np.empty_like(a)
    s, args = softmax(37, 203)
    tessel.build(s, args)(a, out)
    np.testing.assert_allclose(out, softmax_reference(a), rtol=1e-5, atol=1e-7)
    s, args = layernorm(37, 203)
    tessel.build(s, args)(a, g, b, out)
    np.testing.assert_allclose(out, layernorm_reference(a, g, b), rtol=1e-4, atol=1e-4)
    s, args = argmax(37, 203)
    index = np.empty(37, "int32")
    tessel.build(s, args)(a, index)
    np.testing.assert_array_equal(index, a.argmax(axis=1))
    print("softmax, layernorm and argmax 37x203: match NumPy")


if __name__ == "__main__":
    main()
