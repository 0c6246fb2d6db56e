"""Softmax over the rows of ``x``, as TVM's CUDA softmax schedule: three kernels.

``max_elem[i] = max_k x[i, k]`` and ``expsum[i] = sum_k exp(x[i, k] - max_elem[i])`` are
cross-thread reductions (one block per row, the reduction axis over ``threadIdx.x`` after
``rfactor``); ``out[i, j] = exp(x[i, j] - max_elem[i]) / expsum[i]`` is elementwise, a block
per row and the columns over the threads. The two row vectors are global temporaries that the
host allocates on the device between the launches.
"""

from __future__ import annotations

from tessel import te

NUM_THREAD = 64


def schedule(n: int = 256, m: int = 1000, threads: int = NUM_THREAD):
    """``(s, [x, out])``: the scheduled softmax of ``x`` (n x m, float32) over its rows."""
    x = te.placeholder((n, m), name="x")
    k1 = te.reduce_axis((0, m), name="k1")
    max_elem = te.compute((n,), lambda i: te.max(x[i, k1], axis=k1), name="max_elem")
    k2 = te.reduce_axis((0, m), name="k2")
    expsum = te.compute((n,), lambda i: te.sum(te.exp(x[i, k2] - max_elem[i]), axis=k2), name="expsum")
    out = te.compute((n, m), lambda i, j: te.exp(x[i, j] - max_elem[i]) / expsum[i], name="out")
    s = te.create_schedule(out.op)
    block_x, thread_x = te.thread_axis("blockIdx.x"), te.thread_axis((0, threads), "threadIdx.x")
    for red in (max_elem, expsum):
        _, ki = s[red].split(red.op.reduce_axis[0], factor=threads)
        rf = s.rfactor(red, ki)
        s[red].bind(s[red].op.axis[0], block_x)
        s[red].bind(s[red].op.reduce_axis[0], thread_x)
        s[rf].compute_at(s[red], s[red].op.reduce_axis[0])
    _, ji = s[out].split(out.op.axis[1], factor=threads)
    s[out].bind(out.op.axis[0], block_x)
    s[out].bind(ji, thread_x)
    return s, [x, out]


if __name__ == "__main__":
    from examples.gpu.report import figures, show

    s, args = schedule()
    show("softmax 256 x 1000: max, exp-sum (cross-thread) and normalize kernels", figures(s, args))
