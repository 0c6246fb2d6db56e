"""Replacing part of a computation with a micro-kernel (TVM's tensorize tutorial), on the CPU.

A matrix-vector product ``gemv`` is declared as a tensor intrinsic whose body is a call of a C
function, ``gemv_update``; ``tensorize`` matches it against the inner tile of a matrix
product and puts the call there. The tutorial compiles the C with clang into LLVM IR and
imports it with a pragma; under tessel the C source is registered by name
(``tvm.register_func(name, c_source=...)``, tessel's way of linking C) and the kernel calls it.
Then the reduction is split with a reset and an update part, as the tutorial's second half
does. Both are checked against NumPy. Needs decl_tensor_intrin / tensorize / decl_buffer /
call_extern (branch teext).
"""

import numpy as np
import tvm
import tvm.testing
from tvm import te

GEMV_C = r"""
#include <stdint.h>
int32_t gemv_update(float *cc, float *aa, float *bb, int32_t m, int32_t l, int32_t stride) {
  for (int32_t i = 0; i < m; ++i)
    for (int32_t j = 0; j < l; ++j)
      cc[i] += aa[j] * bb[i * stride + j];
  return 0;
}
int32_t gemv_reset(float *cc, int32_t m) {
  for (int32_t i = 0; i < m; ++i)
    cc[i] = 0.0f;
  return 0;
}
"""
tvm.register_func("gemv_update", c_source=GEMV_C, symbol="gemv_update")
tvm.register_func("gemv_reset", c_source=GEMV_C, symbol="gemv_reset")

N, M, L = 48, 96, 64  # C[i, j] = sum_k A[i, k] * B[j, k]
A = te.placeholder((N, L), name="A")
B = te.placeholder((M, L), name="B")
k = te.reduce_axis((0, L), name="k")
C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C")
factor = 16


def intrin_gemv(m, l, split_reset):
    """``c[i] = sum_k a[k] * b[i, k]`` for an m x l tile, as a call of the C micro-kernel."""
    a = te.placeholder((l,), name="a")
    b = te.placeholder((m, l), name="b")
    kk = te.reduce_axis((0, l), name="k")
    c = te.compute((m,), lambda i: te.sum(a[kk] * b[i, kk], axis=kk), name="c")
    Ab = tvm.tir.decl_buffer(a.shape, a.dtype, name="A", offset_factor=1, strides=[1])
    Bb = tvm.tir.decl_buffer(b.shape, b.dtype, name="B", offset_factor=1, strides=[te.var("s1"), 1])
    Cb = tvm.tir.decl_buffer(c.shape, c.dtype, name="C", offset_factor=1, strides=[1])

    def intrin_func(ins, outs):
        aa, bb = ins
        cc = outs[0]
        update = tvm.tir.call_extern("int32", "gemv_update", cc.access_ptr("w"), aa.access_ptr("r"),
                                     bb.access_ptr("r"), m, l, bb.strides[0])
        if not split_reset:
            return update
        reset = tvm.tir.call_extern("int32", "gemv_reset", cc.access_ptr("w"), m)
        return None, reset, update

    return te.decl_tensor_intrin(c.op, intrin_func, binds={a: Ab, b: Bb, c: Cb})


rng = np.random.default_rng(10)
a = tvm.nd.array(rng.uniform(size=(N, L)).astype(A.dtype))
b = tvm.nd.array(rng.uniform(size=(M, L)).astype(B.dtype))
want = np.dot(a.numpy(), b.numpy().T)

# the inner 16 x 64 tile of each row is one gemv
s = te.create_schedule(C.op)
x, y = C.op.axis
(z,) = C.op.reduce_axis
yo, yi = s[C].split(y, factor=factor)
s[C].reorder(x, yo, yi, z)
s[C].tensorize(yi, intrin_gemv(factor, L, split_reset=False))
print(tvm.lower(s, [A, B, C], simple_mode=True))
c = tvm.nd.array(np.zeros((N, M), dtype=C.dtype))
tvm.build(s, [A, B, C], "llvm")(a, b, c)
tvm.testing.assert_allclose(c.numpy(), want, rtol=1e-3)

# the reduction split too: the micro-kernel runs on 16 x 16 tiles with a reset and an update
s = te.create_schedule(C.op)
x, y = C.op.axis
(z,) = C.op.reduce_axis
yo, yi = s[C].split(y, factor=factor)
zo, zi = s[C].split(z, factor=factor)
s[C].reorder(x, yo, zo, yi, zi)
s[C].tensorize(yi, intrin_gemv(factor, factor, split_reset=True))
print(tvm.lower(s, [A, B, C], simple_mode=True))
c = tvm.nd.array(np.zeros((N, M), dtype=C.dtype))
tvm.build(s, [A, B, C], "llvm")(a, b, c)
tvm.testing.assert_allclose(c.numpy(), want, rtol=1e-3)
