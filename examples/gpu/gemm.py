"""GEMM with shared-memory tiles, virtual threads and cooperative fetching (TVM's GPU GEMM test).

``C = A^T B`` over ``k``: each block computes a 64 x 64 tile of ``C`` with 8 x 8 threads, each
thread a 2 x 2 grid (virtual threads ``vy``, ``vx``) of 4 x 4 elements kept in registers
(``CC``, scope local). Step by step along ``k`` the block copies 8 x 64 tiles of ``A`` and
``B`` into shared memory, every thread copying its share (the copy loops bound to the block's
own threads: cooperative fetching), and each thread reads them through register copies
(``AL``, ``BL``). Run it to print the kernel's registers, shared memory and occupancy.
"""

from __future__ import annotations

from tessel import te

SCALE, NUM_THREAD, BLOCK_FACTOR = 4, 8, 32  # BLOCK_FACTOR = SCALE * NUM_THREAD (the vthreads multiply it)


def schedule(n: int = 256, m: int = 256, k: int = 256, dtype: str = "float32"):
    """``(s, [A, B, C])``: the scheduled GEMM of ``A[k, n]^T`` by ``B[k, m]``."""
    A = te.placeholder((k, n), name="A", dtype=dtype)
    B = te.placeholder((k, m), name="B", dtype=dtype)
    kk = te.reduce_axis((0, k), name="k")
    C = te.compute((n, m), lambda ii, jj: te.sum(A[kk, ii] * B[kk, jj], axis=kk), name="C")
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "shared", [C])
    BB = s.cache_read(B, "shared", [C])
    AL = s.cache_read(AA, "local", [C])
    BL = s.cache_read(BB, "local", [C])
    CC = s.cache_write(C, "local")

    block_x, block_y = te.thread_axis("blockIdx.x"), te.thread_axis("blockIdx.y")
    thread_x = te.thread_axis((0, NUM_THREAD), "threadIdx.x")
    thread_y = te.thread_axis((0, NUM_THREAD), "threadIdx.y")
    thread_xz = te.thread_axis((0, 2), "vthread", name="vx")
    thread_yz = te.thread_axis((0, 2), "vthread", name="vy")

    by, yi = s[C].split(C.op.axis[0], factor=BLOCK_FACTOR * 2)
    bx, xi = s[C].split(C.op.axis[1], factor=BLOCK_FACTOR * 2)
    s[C].bind(by, block_y)
    s[C].bind(bx, block_x)
    s[C].reorder(by, bx, yi, xi)
    tyz, yi = s[C].split(yi, nparts=2)
    ty, yi = s[C].split(yi, nparts=NUM_THREAD)
    txz, xi = s[C].split(xi, nparts=2)
    tx, xi = s[C].split(xi, nparts=NUM_THREAD)
    s[C].reorder(tyz, txz, ty, tx, yi, xi)
    s[C].bind(tyz, thread_yz)
    s[C].bind(txz, thread_xz)
    s[C].bind(ty, thread_y)
    s[C].bind(tx, thread_x)

    s[CC].compute_at(s[C], tx)
    yo, xo = CC.op.axis
    ko, ki = s[CC].split(s[CC].op.reduce_axis[0], factor=8)
    s[CC].reorder(ko, ki, yo, xo)
    s[AA].compute_at(s[CC], ko)
    s[BB].compute_at(s[CC], ko)
    s[AL].compute_at(s[CC], ki)
    s[BL].compute_at(s[CC], ki)
    for cache in (AA, BB):  # cooperative fetching: the tile's copy shared by the block's threads
        ty_, _ = s[cache].split(s[cache].op.axis[0], nparts=NUM_THREAD)
        tx_, _ = s[cache].split(s[cache].op.axis[1], nparts=NUM_THREAD)
        s[cache].bind(ty_, thread_y)
        s[cache].bind(tx_, thread_x)
    return s, [A, B, C]


if __name__ == "__main__":
    from examples.gpu.report import figures, show

    s, args = schedule()
    show("GEMM 256 x 256 x 256, shared tiles, vthreads, cooperative fetch", figures(s, args))
