"""Each schedule primitive of TVM's schedule_primitives tutorial, checked against NumPy.

split (by factor and by nparts), tile, fuse, reorder, bind, compute_at, compute_inline and
compute_root: each rewrites the loop nest (printed) and none changes the values computed.
Sizes are symbolic and the test sizes divide none of the factors.
"""

import numpy as np
import tvm
import tvm.testing
from tvm import te

dev = tvm.cpu(0)
rng = np.random.default_rng(1)
m_val, n_val = 37, 29


def arrays(*shapes):
    return [tvm.nd.array(rng.uniform(-1, 1, size=sh).astype("float32"), dev) for sh in shapes]


def check(s, tensors, inputs, expected, title):
    print(f"---- {title}")
    print(tvm.lower(s, tensors, simple_mode=True))
    func = tvm.build(s, tensors, "llvm")
    out = tvm.nd.array(np.full(expected.shape, np.nan, dtype="float32"), dev)
    func(*inputs, out)
    tvm.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)


n = te.var("n")
m = te.var("m")

# split by factor, and by the number of outer iterations
A = te.placeholder((m,), name="A")
B = te.compute((m,), lambda i: A[i] * 2, name="B")
(a,) = arrays((m_val,))
s = te.create_schedule(B.op)
xo, xi = s[B].split(B.op.axis[0], factor=32)
check(s, [A, B], [a], a.numpy() * 2, "split factor=32")
s = te.create_schedule(B.op)
bx, tx = s[B].split(B.op.axis[0], nparts=5)
check(s, [A, B], [a], a.numpy() * 2, "split nparts=5")

# tile, fuse, reorder over a 2-d computation
A = te.placeholder((m, n), name="A")
B = te.compute((m, n), lambda i, j: A[i, j] + 1, name="B")
(a,) = arrays((m_val, n_val))
s = te.create_schedule(B.op)
xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=10, y_factor=5)
check(s, [A, B], [a], a.numpy() + 1, "tile 10 x 5")
fused = s[B].fuse(xi, yi)
check(s, [A, B], [a], a.numpy() + 1, "fuse the inner tile")
s = te.create_schedule(B.op)
xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=10, y_factor=5)
s[B].reorder(xi, yo, xo, yi)
check(s, [A, B], [a], a.numpy() + 1, "reorder xi, yo, xo, yi")

# bind: GPU thread axes; on the CPU the bound loops run in order
A = te.placeholder((n,), name="A")
B = te.compute(A.shape, lambda i: A[i] * 2, name="B")
(a,) = arrays((n_val,))
s = te.create_schedule(B.op)
bx, tx = s[B].split(B.op.axis[0], factor=8)
s[B].bind(bx, te.thread_axis("blockIdx.x"))
s[B].bind(tx, te.thread_axis("threadIdx.x"))
check(s, [A, B], [a], a.numpy() * 2, "bind (serial on the CPU)")

# compute_at, compute_inline, compute_root of a producer
A = te.placeholder((m,), name="A")
B = te.compute((m,), lambda i: A[i] + 1, name="B")
C = te.compute((m,), lambda i: B[i] * 2, name="C")
(a,) = arrays((m_val,))
want = (a.numpy() + 1) * 2
s = te.create_schedule(C.op)
s[B].compute_at(s[C], C.op.axis[0])
check(s, [A, B, C][::2], [a], want, "compute_at")
s = te.create_schedule(C.op)
s[B].compute_inline()
check(s, [A, C], [a], want, "compute_inline")
s[B].compute_root()
check(s, [A, C], [a], want, "compute_root")
