"""Computations with several outputs and reductions over tuples (TVM's tuple_inputs tutorial).

One compute stage that yields two tensors; an argmax written as a ``comm_reducer`` over
(index, value) pairs; and a two-output stage computed at a consumer's loop: a stage is
scheduled as a whole, whichever of its outputs names it.
"""

import numpy as np
import tvm
import tvm.testing
from tvm import te

dev = tvm.cpu(0)
rng = np.random.default_rng(3)
mm, nn = 13, 17

# two outputs from one loop nest
n = te.var("n")
m = te.var("m")
A0 = te.placeholder((m, n), name="A0")
A1 = te.placeholder((m, n), name="A1")
B0, B1 = te.compute((m, n), lambda i, j: (A0[i, j] + 2, A1[i, j] * 3), name="B")
s = te.create_schedule(B0.op)
print(tvm.lower(s, [A0, A1, B0, B1], simple_mode=True))
a0 = tvm.nd.array(rng.uniform(size=(mm, nn)).astype("float32"), dev)
a1 = tvm.nd.array(rng.uniform(size=(mm, nn)).astype("float32"), dev)
b0 = tvm.nd.array(np.zeros((mm, nn), "float32"), dev)
b1 = tvm.nd.array(np.zeros((mm, nn), "float32"), dev)
tvm.build(s, [A0, A1, B0, B1], "llvm")(a0, a1, b0, b1)
tvm.testing.assert_allclose(b0.numpy(), a0.numpy() + 2, rtol=1e-6)
tvm.testing.assert_allclose(b1.numpy(), a1.numpy() * 3, rtol=1e-6)


# argmax: a reduction whose operands are (index, value) pairs
def fcombine(x, y):
    take_x = x[1] >= y[1]
    return tvm.tir.Select(take_x, x[0], y[0]), tvm.tir.Select(take_x, x[1], y[1])


def fidentity(t0, t1):
    return tvm.tir.const(-1, t0), tvm.te.min_value(t1)


argmax = te.comm_reducer(fcombine, fidentity, name="argmax")
m = te.var("m")
n = te.var("n")
idx = te.placeholder((m, n), name="idx", dtype="int32")
val = te.placeholder((m, n), name="val", dtype="int32")
k = te.reduce_axis((0, n), "k")
T0, T1 = te.compute((m,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="T")
s = te.create_schedule(T0.op)
print(tvm.lower(s, [idx, val, T0, T1], simple_mode=True))
idx_np = np.tile(np.arange(nn, dtype="int32"), (mm, 1))
val_np = rng.permuted(np.tile(np.arange(nn, dtype="int32") * 3 - 20, (mm, 1)), axis=1)  # no ties
t0 = tvm.nd.array(np.zeros(mm, "int32"), dev)
t1 = tvm.nd.array(np.zeros(mm, "int32"), dev)
tvm.build(s, [idx, val, T0, T1], "llvm")(tvm.nd.array(idx_np), tvm.nd.array(val_np), t0, t1)
np.testing.assert_array_equal(t0.numpy(), np.argmax(val_np, axis=1))
np.testing.assert_array_equal(t1.numpy(), np.max(val_np, axis=1))

# a two-output stage computed where its consumer needs it
n = te.var("n")
m = te.var("m")
A0 = te.placeholder((m, n), name="A0")
B0, B1 = te.compute((m, n), lambda i, j: (A0[i, j] + 2, A0[i, j] * 3), name="B")
A1 = te.placeholder((m, n), name="A1")
C = te.compute((m, n), lambda i, j: A1[i, j] + B0[i, j], name="C")
s = te.create_schedule(C.op)
s[B0].compute_at(s[C], C.op.axis[0])
print(tvm.lower(s, [A0, A1, C], simple_mode=True))
c = tvm.nd.array(np.zeros((mm, nn), "float32"), dev)
tvm.build(s, [A0, A1, C], "llvm")(a0, a1, c)
tvm.testing.assert_allclose(c.numpy(), a1.numpy() + a0.numpy() + 2, rtol=1e-6)
