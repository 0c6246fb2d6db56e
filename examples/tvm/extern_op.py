"""External functions inside a tensor program (TVM's extern_op tutorial).

``te.extern`` declares a stage whose body is a call out of the kernel: here a matrix product
done by a NumPy-backed function registered with ``tvm.register_func`` (the tutorial calls
cblas), followed by an ordinary compute stage that adds a bias, all in one kernel; then a
Python function hooked in as an extern op (``my_addone``). Both are checked against NumPy.
Needs te.extern / call_packed / register_func (branch teext).
"""

import numpy as np
import tvm
import tvm.testing
from tvm import te


@tvm.register_func("example.matmul")
def matmul(a, b, c, transa, transb):
    """What the tutorial's tvm.contrib.cblas.matmul computes, in NumPy."""
    x = a.numpy().T if transa else a.numpy()
    y = b.numpy().T if transb else b.numpy()
    c.copyfrom(x @ y)


n, l, m = 33, 47, 25
bias = te.var("bias", dtype="float32")
A = te.placeholder((n, l), name="A")
B = te.placeholder((l, m), name="B")
C = te.extern(
    (n, m),
    [A, B],
    lambda ins, outs: tvm.tir.call_packed("example.matmul", ins[0], ins[1], outs[0], False, False),
    name="C",
)
D = te.compute(C.shape, lambda i, j: C[i, j] + bias, name="D")
s = te.create_schedule(D.op)
print(tvm.lower(s, [A, B, D, bias], simple_mode=True))
f = tvm.build(s, [A, B, D, bias], "llvm")
dev = tvm.cpu(0)
rng = np.random.default_rng(6)
a = tvm.nd.array(rng.uniform(size=(n, l)).astype(A.dtype), dev)
b = tvm.nd.array(rng.uniform(size=(l, m)).astype(B.dtype), dev)
d = tvm.nd.array(np.zeros((n, m), dtype=D.dtype), dev)
bb = 10.0
f(a, b, d, bb)
tvm.testing.assert_allclose(d.numpy(), np.dot(a.numpy(), b.numpy()) + 10, rtol=1e-5)


@tvm.register_func("tvm.contrib.my_tvm_addone")
def my_tvm_addone(x, y):
    print(f"my_tvm_addone signatures: {type(x).__name__}, {type(y).__name__}")
    tvm.nd.array(x.numpy() + 1).copyto(y)


A = te.placeholder((n,), name="A")
B = te.extern(
    A.shape,
    [A],
    lambda ins, outs: tvm.tir.call_packed("tvm.contrib.my_tvm_addone", ins[0], outs[0]),
    name="C",
)
s = te.create_schedule(B.op)
f = tvm.build(s, [A, B], "llvm")
a = tvm.nd.array(rng.uniform(size=(n,)).astype(A.dtype), dev)
b = tvm.nd.array(np.zeros(n, dtype=B.dtype), dev)
f(a, b)
tvm.testing.assert_allclose(b.numpy(), a.numpy() + 1, rtol=1e-5)
