"""Direct conv2d with shared and local caches (TVM's opt_conv_cuda tutorial, smaller).

HWCN layout, zero padding computed inline, 3 x 3 kernel. Each block computes a tile of output
channels x batch for one output pixel; two virtual threads per direction interleave the
thread tile; the input and weight tiles of each step of ``rc`` are fetched into shared memory
by the block's threads together (cooperative fetching), then into registers.
"""

from __future__ import annotations

from tessel import te

TILE, NUM_THREAD, STEP, VTHREAD = 4, 8, 8, 2


def compute(batch: int, in_channel: int, out_channel: int, in_size: int, kernel: int, pad: int, stride: int):
    """The convolution as tensors (HWCN), the padding a stage of its own: ``(A, W, Apad, B)``."""
    A = te.placeholder((in_size, in_size, in_channel, batch), name="A")
    W = te.placeholder((kernel, kernel, in_channel, out_channel), name="W")
    out_size = (in_size - kernel + 2 * pad) // stride + 1
    Apad = te.compute(
        (in_size + 2 * pad, in_size + 2 * pad, in_channel, batch),
        lambda yy, xx, cc, nn: te.if_then_else(
            te.all(yy >= pad, yy - pad < in_size, xx >= pad, xx - pad < in_size),
            A[yy - pad, xx - pad, cc, nn], te.const(0.0, "float32")),
        name="Apad")
    rc = te.reduce_axis((0, in_channel), name="rc")
    ry = te.reduce_axis((0, kernel), name="ry")
    rx = te.reduce_axis((0, kernel), name="rx")
    B = te.compute((out_size, out_size, out_channel, batch),
                   lambda yy, xx, ff, nn: te.sum(Apad[yy * stride + ry, xx * stride + rx, rc, nn] * W[ry, rx, rc, ff],
                                                 axis=[ry, rx, rc]), name="B")
    return A, W, Apad, B


def schedule(batch: int = 64, in_channel: int = 32, out_channel: int = 64, in_size: int = 14,
             kernel: int = 3, pad: int = 1, stride: int = 1):
    """``(s, [A, W, B])``: the scheduled convolution ``B = conv(pad(A), W)`` in HWCN."""
    A, W, Apad, B = compute(batch, in_channel, out_channel, in_size, kernel, pad, stride)
    s = te.create_schedule(B.op)
    s[Apad].compute_inline()
    AA = s.cache_read(Apad, "shared", [B])
    WW = s.cache_read(W, "shared", [B])
    AL = s.cache_read(AA, "local", [B])
    WL = s.cache_read(WW, "local", [B])
    BL = s.cache_write(B, "local")

    block_x, block_y, block_z = te.thread_axis("blockIdx.x"), te.thread_axis("blockIdx.y"), te.thread_axis("blockIdx.z")
    thread_x = te.thread_axis((0, NUM_THREAD), "threadIdx.x")
    thread_y = te.thread_axis((0, NUM_THREAD), "threadIdx.y")
    thread_xz = te.thread_axis((0, VTHREAD), "vthread", name="vx")
    thread_yz = te.thread_axis((0, VTHREAD), "vthread", name="vy")

    hi, wi, fi, ni = s[B].op.axis
    bz = s[B].fuse(hi, wi)
    by, fi = s[B].split(fi, factor=TILE * NUM_THREAD)
    bx, ni = s[B].split(ni, factor=TILE * NUM_THREAD)
    tyz, fi = s[B].split(fi, nparts=VTHREAD)
    txz, ni = s[B].split(ni, nparts=VTHREAD)
    ty, fi = s[B].split(fi, nparts=NUM_THREAD)
    tx, ni = s[B].split(ni, nparts=NUM_THREAD)
    s[B].reorder(bz, by, bx, tyz, txz, ty, tx, fi, ni)
    s[B].bind(bz, block_z)
    s[B].bind(by, block_y)
    s[B].bind(bx, block_x)
    s[B].bind(tyz, thread_yz)
    s[B].bind(txz, thread_xz)
    s[B].bind(ty, thread_y)
    s[B].bind(tx, thread_x)

    s[BL].compute_at(s[B], tx)
    _, _, fi, ni = s[BL].op.axis
    ry, rx, rc = s[BL].op.reduce_axis
    rco, rci = s[BL].split(rc, factor=STEP)
    s[BL].reorder(rco, ry, rx, rci, fi, ni)
    s[AA].compute_at(s[BL], rx)
    s[WW].compute_at(s[BL], rx)
    s[AL].compute_at(s[BL], rci)
    s[WL].compute_at(s[BL], rci)
    for cache in (AA, WW):  # cooperative fetching, as the tutorial: the block's threads share the copy
        _cooperative_fetch(s[cache], thread_x, thread_y)
    return s, [A, W, B]


def _cooperative_fetch(stage, thread_x, thread_y) -> None:
    """The tile's copy split over the block's threads (channels over y, batch over x), 4 at a time."""
    yi, xi, ci, ni = stage.op.axis
    ty, ci = stage.split(ci, nparts=NUM_THREAD)
    tx, ni = stage.split(ni, nparts=NUM_THREAD)
    _, ni = stage.split(ni, factor=4)
    stage.reorder(ty, tx, yi, xi, ci, ni)
    stage.bind(ty, thread_y)
    stage.bind(tx, thread_x)
    stage.vectorize(ni)


if __name__ == "__main__":
    from examples.gpu.report import figures, show

    s, args = schedule()
    show("conv2d 14 x 14 x 32 x 64 -> 64, 3 x 3, shared and local caches", figures(s, args))
