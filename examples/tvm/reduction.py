"""Reductions, as TVM's reduction tutorial schedules them, checked against NumPy.

A row sum over symbolic sizes; the same with the row and the reduction axes split; rfactor,
which turns part of the reduction into a data-parallel axis (here run in parallel, then over GPU
threads that combine their partial sums, built for ``"cuda"``); a 2-d
convolution written as a reduction over two axes; and a product reducer made with
``te.comm_reducer``.
"""

import numpy as np
import tvm
import tvm.testing
from tvm import te

dev = tvm.cpu(0)
rng = np.random.default_rng(2)
nn, mm = 67, 53

n = te.var("n")
m = te.var("m")
A = te.placeholder((n, m), name="A")
k = te.reduce_axis((0, m), "k")
B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
a = tvm.nd.array(rng.uniform(size=(nn, mm)).astype(A.dtype), dev)


def run(s, title):
    print(f"---- {title}")
    print(tvm.lower(s, [A, B], simple_mode=True))
    func = tvm.build(s, [A, B], "llvm")
    b = tvm.nd.array(np.full(nn, np.nan, dtype=B.dtype), dev)
    func(a, b)
    tvm.testing.assert_allclose(b.numpy(), np.sum(a.numpy(), axis=1), rtol=1e-4)


s = te.create_schedule(B.op)
run(s, "default schedule")

ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
xo, xi = s[B].split(B.op.axis[0], factor=32)
run(s, "rows and reduction split")

s = te.create_schedule(B.op)
ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
BF = s.rfactor(B, ki)
print(s[B].op.body)
run(s, "rfactor")

xo, xi = s[B].split(s[B].op.axis[0], factor=32)
s[BF].compute_at(s[B], xo)
s[BF].parallel(s[BF].op.axis[0])
run(s, "rfactor, the factored axis in parallel")

# a cross-thread reduction on a GPU: rows over blockIdx.x and threadIdx.y, the factored axis over
# threadIdx.x, whose threads combine their partial sums; one thread stores each row's sum
s = te.create_schedule(B.op)
ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
BF = s.rfactor(B, ki)
xo, xi = s[B].split(s[B].op.axis[0], factor=32)
s[B].bind(xo, te.thread_axis("blockIdx.x"))
s[B].bind(xi, te.thread_axis("threadIdx.y"))
tx = te.thread_axis("threadIdx.x")
s[B].bind(s[B].op.reduce_axis[0], tx)
s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
s[B].set_store_predicate(tx.var.equal(0))
fcuda = tvm.build(s, [A, B], "cuda")
print(fcuda.imported_modules[0].get_source()[:300])
gpu = tvm.cuda(0)
b = tvm.nd.array(np.full(nn, np.nan, dtype=B.dtype), gpu)
fcuda(tvm.nd.array(a.numpy(), gpu), b)  # on the GPU, or on the simulator where there is none
tvm.testing.assert_allclose(b.numpy(), np.sum(a.numpy(), axis=1), rtol=1e-4)

# a convolution as a reduction over two axes
n = te.var("n")
Input = te.placeholder((n, n), name="Input")
Filter = te.placeholder((3, 3), name="Filter")
di = te.reduce_axis((0, 3), name="di")
dj = te.reduce_axis((0, 3), name="dj")
Output = te.compute(
    (n - 2, n - 2),
    lambda i, j: te.sum(Input[i + di, j + dj] * Filter[di, dj], axis=[di, dj]),
    name="Output",
)
s = te.create_schedule(Output.op)
print(tvm.lower(s, [Input, Filter, Output], simple_mode=True))
size = 23
inp = rng.uniform(-1, 1, size=(size, size)).astype("float32")
flt = rng.uniform(-1, 1, size=(3, 3)).astype("float32")
out = tvm.nd.array(np.zeros((size - 2, size - 2), dtype="float32"), dev)
tvm.build(s, [Input, Filter, Output], "llvm")(tvm.nd.array(inp), tvm.nd.array(flt), out)
want = sum(inp[y:y + size - 2, x:x + size - 2] * flt[y, x] for y in range(3) for x in range(3))
tvm.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)

# a reducer of one's own: the product of each row
n = te.var("n")
m = te.var("m")
product = te.comm_reducer(lambda x, y: x * y, lambda t: tvm.tir.const(1, dtype=t), name="product")
A = te.placeholder((n, m), name="A")
k = te.reduce_axis((0, m), name="k")
B = te.compute((n,), lambda i: product(A[i, k], axis=k), name="B")
s = te.create_schedule(B.op)
vals = rng.uniform(0.5, 1.5, size=(9, 11)).astype("float32")
b = tvm.nd.array(np.zeros(9, dtype="float32"), dev)
tvm.build(s, [A, B], "llvm")(tvm.nd.array(vals), b)
tvm.testing.assert_allclose(b.numpy(), np.prod(vals, axis=1), rtol=1e-5)
