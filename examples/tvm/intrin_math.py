"""Math functions in kernels (TVM's intrin_math tutorial), on the CPU.

``te.exp`` and the other intrinsics are target-independent: the same expression builds for
float32 and float64 and calls the C library's ``expf``/``exp``. A kernel may also call a
C function directly by name with ``tvm.tir.call_pure_extern`` (the tutorial calls CUDA's
``__expf``; on the CPU, libm's ``expf`` and ``log``), which is how a user-defined intrinsic
such as ``mylog`` is written. Every result is checked against NumPy.
The call_pure_extern part needs branch teext.
"""

import numpy as np
import tvm
import tvm.testing
from tvm import te

dev = tvm.cpu(0)
rng = np.random.default_rng(9)
size = 101


def run(fcompute, dtype, want, name):
    n = te.var("n")
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.compute(A.shape, lambda i: fcompute(A[i]), name="B")
    s = te.create_schedule(B.op)
    _, xi = s[B].split(B.op.axis[0], factor=16)
    s[B].vectorize(xi)
    f = tvm.build(s, [A, B], "llvm", name=name)
    a_np = rng.uniform(0.1, 2.0, size=size).astype(dtype)
    b = tvm.nd.array(np.zeros(size, dtype=dtype), dev)
    f(tvm.nd.array(a_np, dev), b)
    tvm.testing.assert_allclose(b.numpy(), want(a_np), rtol=1e-5 if dtype == "float32" else 1e-12)
    return f


# unified intrinsics: one spelling for every dtype
for dtype in ("float32", "float64"):
    run(te.exp, dtype, np.exp, "myexp")
    run(te.log, dtype, np.log, "mylog")
    run(lambda x: te.sqrt(x) + te.tanh(x), dtype, lambda a: np.sqrt(a) + np.tanh(a), "mixed")
    run(te.sigmoid, dtype, lambda a: 1 / (1 + np.exp(-a)), "mysigmoid")
    run(lambda x: te.power(x, 2.5), dtype, lambda a: a ** 2.5, "mypow")

# a direct call of a C function by name
f = run(lambda x: tvm.tir.call_pure_extern("float32", "expf", x), "float32", np.exp, "extern_exp")
print(f.get_source()[:400])


def mylog(x):
    """A user intrinsic: libm's log of the operand's type."""
    name = "logf" if x.dtype == "float32" else "log"
    return tvm.tir.call_pure_extern(x.dtype, name, x)


run(mylog, "float32", np.log, "mylog_f32")
run(mylog, "float64", np.log, "mylog_f64")
