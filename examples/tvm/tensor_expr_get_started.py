"""First steps with tensor expressions, written for TVM and run by tessel (``tessel tvm``).

Covers what TVM's tensor_expr_get_started tutorial exercises: a vector addition over a
symbolic length built for ``llvm``, arrays on a device (``tvm.nd.array``), a parallel and then
a split + vectorized schedule, timing with ``time_evaluator``, the lowered IR, saving the
kernel as a shared library and loading it back (``export_library`` / ``load_module``), and a
matrix multiplication improved step by step (blocking, vectorization, loop permutation,
array packing, a write cache, parallel rows). Every kernel is checked against NumPy.
"""

import numpy as np
import tvm
import tvm.testing
from tvm import te
from tvm.contrib import utils

tgt = tvm.target.Target(target="llvm", host="llvm")
dev = tvm.device(tgt.kind.name, 0)
rng = np.random.default_rng(0)


def vector_add():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    return A, B, C


# -- the default schedule: one loop ------------------------------------------------------------
A, B, C = vector_add()
s = te.create_schedule(C.op)
fadd = tvm.build(s, [A, B, C], tgt, name="myadd")
n = 1027  # not a multiple of any split below
a = tvm.nd.array(rng.uniform(size=n).astype(A.dtype), dev)
b = tvm.nd.array(rng.uniform(size=n).astype(B.dtype), dev)
c = tvm.nd.array(np.zeros(n, dtype=C.dtype), dev)
fadd(a, b, c)
tvm.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())
log = [("naive", fadd.time_evaluator(fadd.entry_name, dev, number=10)(a, b, c).mean)]

# -- parallel, then split + parallel + vectorize -----------------------------------------------
s[C].parallel(C.op.axis[0])
print(tvm.lower(s, [A, B, C], simple_mode=True))
fpar = tvm.build(s, [A, B, C], tgt, name="myadd_parallel")
c = tvm.nd.array(np.zeros(n, dtype=C.dtype), dev)
fpar(a, b, c)
tvm.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())
log.append(("parallel", fpar.time_evaluator(fpar.entry_name, dev, number=10)(a, b, c).mean))

A, B, C = vector_add()
s = te.create_schedule(C.op)
outer, inner = s[C].split(C.op.axis[0], factor=4)
s[C].parallel(outer)
s[C].vectorize(inner)
fvec = tvm.build(s, [A, B, C], tgt, name="myadd_vector")
print(tvm.lower(s, [A, B, C], simple_mode=True))
c = tvm.nd.array(np.zeros(n, dtype=C.dtype), dev)
fvec(a, b, c)
tvm.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())
log.append(("vector", fvec.time_evaluator(fvec.entry_name, dev, number=10)(a, b, c).mean))
for name, seconds in log:
    print(f"{name:>10}: {seconds * 1e6:9.2f} us")

# -- save the kernel as a library and load it back ----------------------------------------------
temp = utils.tempdir()
fvec.export_library(temp.relpath("myadd_pack.so"))
fadd2 = tvm.runtime.load_module(temp.relpath("myadd_pack.so"))
c = tvm.nd.array(np.zeros(n, dtype=C.dtype), dev)
fadd2(a, b, c)
tvm.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())
print("files:", temp.listdir())

# -- matrix multiplication, step by step --------------------------------------------------------
M = K = N = 96
bn = 32
a = tvm.nd.array(rng.uniform(size=(M, K)).astype("float32"), dev)
b = tvm.nd.array(rng.uniform(size=(K, N)).astype("float32"), dev)
answer = a.numpy() @ b.numpy()
k = te.reduce_axis((0, K), "k")
A = te.placeholder((M, K), name="A")
B = te.placeholder((K, N), name="B")
C = te.compute((M, N), lambda x, y: te.sum(A[x, k] * B[k, y], axis=k), name="C")


def evaluate(s, tensors, optimization):
    func = tvm.build(s, tensors, target=tgt, name="mmult")
    c = tvm.nd.array(np.zeros((M, N), dtype="float32"), dev)
    func(a, b, c)
    tvm.testing.assert_allclose(c.numpy(), answer, rtol=1e-5)
    mean = func.time_evaluator(func.entry_name, dev, number=3)(a, b, c).mean
    print(f"{optimization:>16}: {mean * 1e3:8.3f} ms")


s = te.create_schedule(C.op)
evaluate(s, [A, B, C], "none")

xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
(kaxis,) = s[C].op.reduce_axis
ko, ki = s[C].split(kaxis, factor=4)
s[C].reorder(xo, yo, ko, ki, xi, yi)
evaluate(s, [A, B, C], "blocking")

s[C].vectorize(yi)
evaluate(s, [A, B, C], "vectorization")

s = te.create_schedule(C.op)
xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
ko, ki = s[C].split(s[C].op.reduce_axis[0], factor=4)
s[C].reorder(xo, yo, ko, xi, ki, yi)
s[C].vectorize(yi)
evaluate(s, [A, B, C], "loop permutation")

# array packing: B rearranged so that the innermost loop reads it contiguously
packedB = te.compute((N // bn, K, bn), lambda x, y, z: B[y, x * bn + z], name="packedB")
C = te.compute(
    (M, N),
    lambda x, y: te.sum(A[x, k] * packedB[tvm.tir.indexdiv(y, bn), k, tvm.tir.indexmod(y, bn)], axis=k),
    name="C",
)
s = te.create_schedule(C.op)
xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
ko, ki = s[C].split(s[C].op.reduce_axis[0], factor=4)
s[C].reorder(xo, yo, ko, xi, ki, yi)
s[C].vectorize(yi)
x, y, z = s[packedB].op.axis
s[packedB].vectorize(z)
s[packedB].parallel(x)
evaluate(s, [A, B, C], "array packing")

# a write cache accumulated block by block, then every row block in parallel
s = te.create_schedule(C.op)
CC = s.cache_write(C, "global")
xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
s[CC].compute_at(s[C], yo)
xc, yc = s[CC].op.axis
ko, ki = s[CC].split(s[CC].op.reduce_axis[0], factor=4)
s[CC].reorder(ko, xc, ki, yc)
s[CC].unroll(ki)
s[CC].vectorize(yc)
x, y, z = s[packedB].op.axis
s[packedB].vectorize(z)
s[packedB].parallel(x)
s[C].parallel(xo)
evaluate(s, [A, B, C], "parallel")
print(tvm.lower(s, [A, B, C], simple_mode=True))
