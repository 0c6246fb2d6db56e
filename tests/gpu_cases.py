"""GPU schedules the cuda-sim tests and the real-device comparison share: each returns the
schedule, its arguments, random inputs (awkward sizes) and the NumPy answer."""

from __future__ import annotations

import numpy as np
from helpers import rand

from examples.gpu import row_reduce
from tessel import te


def elementwise(n: int = 1001):
    N = te.var("n")
    A = te.placeholder((N,), name="A")
    B = te.compute((N,), lambda i: A[i] * 2.0 + 1.0, name="B")
    s = te.create_schedule(B.op)
    bo, bi = s[B].split(B.op.axis[0], factor=64)
    s[B].bind(bo, te.thread_axis("blockIdx.x"))
    s[B].bind(bi, te.thread_axis("threadIdx.x"))
    a = rand(n)
    return s, [A, B], [a], [a * 2 + 1]


def tiled_matmul(M: int = 37, N: int = 29, K: int = 13, seed: int = 0):
    """16x16 output tiles per block, 2x2 per thread accumulated in registers (``C.local``)."""
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    CL = s.cache_write(C, "local")
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 16, 16)
    s[C].bind(io, te.thread_axis("blockIdx.y"))
    s[C].bind(jo, te.thread_axis("blockIdx.x"))
    iio, iii = s[C].split(ii, factor=2)
    jio, jii = s[C].split(ji, factor=2)
    s[C].reorder(iio, jio, iii, jii)
    s[C].bind(iio, te.thread_axis("threadIdx.y"))
    s[C].bind(jio, te.thread_axis("threadIdx.x"))
    s[CL].compute_at(s[C], jio)
    a, b = rand(M, K, seed=seed), rand(K, N, seed=seed + 1)
    return s, [A, B, C], [a, b], [a @ b]


def shared_gemm(M: int = 40, N: int = 36, K: int = 22, seed: int = 0):
    """16x16 tiles per block, 8x8 threads with 2x2 each in registers, K in steps of 4 through
    shared tiles of A and B that the block's threads fetch cooperatively (one element each)."""
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    AS, BS = s.cache_read(A, "shared", [C]), s.cache_read(B, "shared", [C])
    CL = s.cache_write(C, "local")
    ty, tx = te.thread_axis((0, 8), "threadIdx.y"), te.thread_axis((0, 8), "threadIdx.x")
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 16, 16)
    s[C].bind(io, te.thread_axis("blockIdx.y"))
    s[C].bind(jo, te.thread_axis("blockIdx.x"))
    iio, iii = s[C].split(ii, nparts=8)
    jio, jii = s[C].split(ji, nparts=8)
    s[C].reorder(iio, jio, iii, jii)
    s[C].bind(iio, ty)
    s[C].bind(jio, tx)
    s[CL].compute_at(s[C], jio)
    ko, ki = s[CL].split(CL.op.reduce_axis[0], factor=4)
    s[CL].reorder(ko, ki, *CL.op.axis)
    for T in (AS, BS):
        s[T].compute_at(s[CL], ko)
        fo, fi = s[T].split(s[T].fuse(*T.op.axis), factor=8)
        _, fio = s[T].split(fo, factor=8)
        s[T].bind(fi, tx)
        s[T].bind(fio, ty)
    a, b = rand(M, K, seed=seed), rand(K, N, seed=seed + 1)
    return s, [A, B, C], [a, b], [a @ b]


def softmax_launches(n: int = 13, m: int = 45):
    """Softmax as four kernels (one per stage) exchanging global intermediates."""
    N, Mv = te.var("n"), te.var("m")
    X = te.placeholder((N, Mv), name="X")
    k = te.reduce_axis((0, Mv), name="k")
    M = te.compute((N,), lambda i: te.max(X[i, k], axis=k), name="M")
    Ex = te.compute((N, Mv), lambda i, j: te.exp(X[i, j] - M[i]), name="E")
    k2 = te.reduce_axis((0, Mv), name="k2")
    Sm = te.compute((N,), lambda i: te.sum(Ex[i, k2], axis=k2), name="S")
    Y = te.compute((N, Mv), lambda i, j: Ex[i, j] / Sm[i], name="Y")
    s = te.create_schedule(Y.op)
    for T in (M, Sm):
        io, ii = s[T].split(T.op.axis[0], factor=8)
        s[T].bind(io, te.thread_axis("blockIdx.x"))
        s[T].bind(ii, te.thread_axis("threadIdx.x"))
    for T in (Ex, Y):
        s[T].bind(T.op.axis[0], te.thread_axis("blockIdx.x"))
        _, ji = s[T].split(T.op.axis[1], factor=32)
        s[T].bind(ji, te.thread_axis("threadIdx.x"))
    x = rand(n, m)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return s, [X, Y], [x], [e / e.sum(axis=1, keepdims=True)]


def row_sum_multiwarp():
    """TVM's cross-thread reduction (examples/gpu/row_reduce) over 128 threads a row: four warps'
    shuffled partials combined through shared memory."""
    s, args = row_reduce.schedule(9, 301, threads=128, rows_per_block=1)
    a = rand(9, 301)
    return s, args, [a], [a.sum(axis=1)]


CASES = {"elementwise": elementwise, "tiled_matmul": tiled_matmul, "shared_gemm": shared_gemm,
         "softmax_launches": softmax_launches, "row_sum_multiwarp": row_sum_multiwarp}
