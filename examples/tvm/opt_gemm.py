"""Matrix multiplication made fast on the CPU, the way TVM's opt_gemm tutorial does it.

Baseline, blocking, vectorization, loop permutation, array packing, a block-wise write cache
and parallel rows: seven schedules of one computation, each checked against NumPy and timed
with ``time_evaluator`` (the times are printed, not checked). The matrix sizes are not
multiples of the block size, so every schedule also handles the ragged edge.
"""

import numpy as np
import tvm
import tvm.testing
from tvm import te

M, K, N = 200, 136, 168
bn = 32
target = "llvm"
dev = tvm.device(target, 0)
rng = np.random.default_rng(5)
a = tvm.nd.array(rng.uniform(size=(M, K)).astype("float32"), dev)
b = tvm.nd.array(rng.uniform(size=(K, N)).astype("float32"), dev)
answer = np.dot(a.numpy(), b.numpy())

k = te.reduce_axis((0, K), "k")
A = te.placeholder((M, K), name="A")
B = te.placeholder((K, N), name="B")
C = te.compute((M, N), lambda m, n: te.sum(A[m, k] * B[k, n], axis=k), name="C")


def measure(s, title):
    func = tvm.build(s, [A, B, C], target=target, name="mmult")
    c = tvm.nd.array(np.full((M, N), np.nan, dtype="float32"), dev)
    func(a, b, c)
    tvm.testing.assert_allclose(c.numpy(), answer, rtol=1e-5)
    evaluator = func.time_evaluator(func.entry_name, dev, number=3, repeat=2)
    print(f"{title:>18}: {evaluator(a, b, c).mean * 1e3:8.3f} ms")


s = te.create_schedule(C.op)
measure(s, "baseline")


def blocked(order_inner_first):
    s = te.create_schedule(C.op)
    mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    ko, ki = s[C].split(s[C].op.reduce_axis[0], factor=4)
    s[C].reorder(mo, no, ko, *((mi, ki) if order_inner_first else (ki, mi)), ni)
    return s, ni


s, _ = blocked(order_inner_first=False)
measure(s, "blocking")
s, ni = blocked(order_inner_first=False)
s[C].vectorize(ni)
measure(s, "vectorization")
s, ni = blocked(order_inner_first=True)
s[C].vectorize(ni)
measure(s, "loop permutation")
print(tvm.lower(s, [A, B, C], simple_mode=True))

# array packing: B in blocks of bn columns, each block contiguous along k
packedB = te.compute((tvm.tir.indexdiv(N + bn - 1, bn), K, bn),
                     lambda bigN, kk, littleN: te.if_then_else(bigN * bn + littleN < N,
                                                               B[kk, tvm.tir.min(bigN * bn + littleN, N - 1)],
                                                               tvm.tir.const(0.0, "float32")),
                     name="packedB")
C = te.compute((M, N), lambda m, n: te.sum(A[m, k] * packedB[n // bn, k, tvm.tir.indexmod(n, bn)], axis=k),
               name="C")


def packed(write_cache, parallel):
    s = te.create_schedule(C.op)
    if write_cache:
        CC = s.cache_write(C, "global")
    mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    if write_cache:
        s[CC].compute_at(s[C], no)
        mc, nc = s[CC].op.axis
        ko, ki = s[CC].split(s[CC].op.reduce_axis[0], factor=4)
        s[CC].reorder(ko, mc, ki, nc)
        s[CC].vectorize(nc)
        s[CC].unroll(ki)
    else:
        ko, ki = s[C].split(s[C].op.reduce_axis[0], factor=4)
        s[C].reorder(mo, no, ko, mi, ki, ni)
        s[C].vectorize(ni)
    bigN, _, littleN = s[packedB].op.axis
    s[packedB].vectorize(littleN)
    s[packedB].parallel(bigN)
    if parallel:
        s[C].parallel(mo)
    return s


measure(packed(write_cache=False, parallel=False), "array packing")
measure(packed(write_cache=True, parallel=False), "block write cache")
s = packed(write_cache=True, parallel=True)
measure(s, "parallel")
print(tvm.lower(s, [A, B, C], simple_mode=True))
