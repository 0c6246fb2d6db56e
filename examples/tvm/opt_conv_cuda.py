"""A convolution scheduled for a GPU and built for ``"cuda"`` (TVM's opt_conv_cuda tutorial).

The layout is HWCN, the input is zero-padded by a compute stage, and the output is tiled into
blocks and threads with ``bind``: block and thread axes, and virtual threads that interleave
the tile. Shared and local caches (``cache_read``/``cache_write``) stage the data, the shared
tiles filled cooperatively (their copy loops bound to the block's threads, vectorized by four).
The module runs on the GPU where there is one; where there is none (or no nvcc) it runs on the
simulator, the kernels compiled as CPU loops, and says so. The values are checked against NumPy.
"""

import numpy as np
import tvm
import tvm.testing
from tvm import te

# small sizes (the tutorial's are 256 x 14 x 14 x 256 -> 512); none divides the tiles evenly
batch, in_channel, out_channel = 12, 8, 16
in_size, kernel, pad, stride = 7, 3, 1, 1

A = te.placeholder((in_size, in_size, in_channel, batch), name="A")
W = te.placeholder((kernel, kernel, in_channel, out_channel), name="W")
out_size = (in_size - kernel + 2 * pad) // stride + 1
Apad = te.compute(
    (in_size + 2 * pad, in_size + 2 * pad, in_channel, batch),
    lambda yy, xx, cc, nn: tvm.tir.if_then_else(
        tvm.tir.all(yy >= pad, yy - pad < in_size, xx >= pad, xx - pad < in_size),
        A[yy - pad, xx - pad, cc, nn],
        tvm.tir.const(0.0, "float32"),
    ),
    name="Apad",
)
rc = te.reduce_axis((0, in_channel), name="rc")
ry = te.reduce_axis((0, kernel), name="ry")
rx = te.reduce_axis((0, kernel), name="rx")
B = te.compute(
    (out_size, out_size, out_channel, batch),
    lambda yy, xx, ff, nn: te.sum(Apad[yy * stride + ry, xx * stride + rx, rc, nn] * W[ry, rx, rc, ff],
                                  axis=[ry, rx, rc]),
    name="B",
)

s = te.create_schedule(B.op)
s[Apad].compute_inline()
AA = s.cache_read(Apad, "shared", [B])
WW = s.cache_read(W, "shared", [B])
AL = s.cache_read(AA, "local", [B])
WL = s.cache_read(WW, "local", [B])
BL = s.cache_write(B, "local")

tile, num_thread, step, vthread = 4, 2, 4, 2
block_x, block_y, block_z = te.thread_axis("blockIdx.x"), te.thread_axis("blockIdx.y"), te.thread_axis("blockIdx.z")
thread_x = te.thread_axis((0, num_thread), "threadIdx.x")
thread_y = te.thread_axis((0, num_thread), "threadIdx.y")
thread_xz = te.thread_axis((0, vthread), "vthread", name="vx")
thread_yz = te.thread_axis((0, vthread), "vthread", name="vy")

hi, wi, fi, ni = s[B].op.axis
bz = s[B].fuse(hi, wi)
by, fi = s[B].split(fi, factor=tile * num_thread)
bx, ni = s[B].split(ni, factor=tile)
tyz, fi = s[B].split(fi, nparts=vthread)
txz, ni = s[B].split(ni, nparts=vthread)
ty, fi = s[B].split(fi, nparts=num_thread)
tx, ni = s[B].split(ni, nparts=num_thread)
s[B].reorder(bz, by, bx, tyz, txz, ty, tx, fi, ni)
s[B].bind(bz, block_z)
s[B].bind(by, block_y)
s[B].bind(bx, block_x)
s[B].bind(tyz, thread_yz)
s[B].bind(txz, thread_xz)  # two virtual threads, one inside the other: vy and vx are two axes
s[B].bind(ty, thread_y)
s[B].bind(tx, thread_x)

s[BL].compute_at(s[B], tx)
yi, xi, fi, ni = s[BL].op.axis
ry, rx, rc = s[BL].op.reduce_axis
rco, rci = s[BL].split(rc, factor=step)
s[BL].reorder(rco, ry, rx, rci, fi, ni)
s[AA].compute_at(s[BL], rx)
s[WW].compute_at(s[BL], rx)
s[AL].compute_at(s[BL], rci)
s[WL].compute_at(s[BL], rci)

# cooperative fetching: the block's threads copy each shared tile together, four elements at a time
for cache in (AA, WW):
    yi, xi, ci, li = s[cache].op.axis
    ty, ci = s[cache].split(ci, nparts=num_thread)
    tx, li = s[cache].split(li, nparts=num_thread)
    _, li = s[cache].split(li, factor=4)
    s[cache].reorder(ty, tx, yi, xi, ci, li)
    s[cache].bind(ty, thread_y)
    s[cache].bind(tx, thread_x)
    s[cache].vectorize(li)

print(tvm.lower(s, [A, W, B], simple_mode=True))
func = tvm.build(s, [A, W, B], "cuda")
print(func.imported_modules[0].get_source()[:400])  # the CUDA kernel

dev = tvm.cuda(0)
rng = np.random.default_rng(7)
a_np = rng.uniform(-1, 1, size=(in_size, in_size, in_channel, batch)).astype(A.dtype)
w_np = rng.uniform(-1, 1, size=(kernel, kernel, in_channel, out_channel)).astype(W.dtype)
a = tvm.nd.array(a_np, dev)
w = tvm.nd.array(w_np, dev)
b = tvm.nd.array(np.full((out_size, out_size, out_channel, batch), np.nan, dtype=B.dtype), dev)
func(a, w, b)

# the same convolution in NumPy: pad, then sum the shifted products
padded = np.pad(a_np, ((pad, pad), (pad, pad), (0, 0), (0, 0)))
want = np.zeros((out_size, out_size, out_channel, batch), dtype="float64")
for y in range(kernel):
    for x in range(kernel):
        window = padded[y:y + out_size * stride:stride, x:x + out_size * stride:stride]  # (H, W, C, N)
        want += np.einsum("hwcn,cf->hwfn", window, w_np[y, x])
tvm.testing.assert_allclose(b.numpy(), want, rtol=1e-4, atol=1e-5)

evaluator = func.time_evaluator(func.entry_name, dev, number=2)
print(f"convolution: {evaluator(a, w, b).mean * 1e3:.3f} ms per call")
