"""A cross-thread row reduction (TVM's cross-thread reduction tutorial): row sums of ``A``.

The reduction axis is split by the number of threads, the inner part factored out with
``rfactor`` (each thread sums a strided slice of the row), and the remaining reduction axis is
bound to ``threadIdx.x``: the threads' partial sums are combined by warp shuffles (and, past 32
threads, through shared memory). Rows go to ``threadIdx.y`` and ``blockIdx.x``.
"""

from __future__ import annotations

from tessel import te


def schedule(n: int = 1024, m: int = 1000, threads: int = 32, rows_per_block: int = 4, dtype: str = "float32"):
    """``(s, [A, B])``: ``B[i] = sum_k A[i, k]`` with ``threads`` threads per row."""
    A = te.placeholder((n, m), name="A", dtype=dtype)
    k = te.reduce_axis((0, m), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    _, ki = s[B].split(B.op.reduce_axis[0], factor=threads)
    BF = s.rfactor(B, ki)
    xo, xi = s[B].split(s[B].op.axis[0], factor=rows_per_block)
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    s[B].bind(xi, te.thread_axis("threadIdx.y"))
    tx = s[B].op.reduce_axis[0]
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    s[BF].compute_at(s[B], tx)
    return s, [A, B]


if __name__ == "__main__":
    from examples.gpu.report import figures, show

    s, args = schedule()
    show("row sums 1024 x 1000, 32 threads per row (warp shuffles)", figures(s, args))
    s, args = schedule(threads=256, rows_per_block=1)
    show("row sums 1024 x 1000, 256 threads per row (shuffles, then shared partials)", figures(s, args))
