"""Seed 001, rfactor: split a reduction, then factor its inner half into a stage B.rf.

B.rf computes partial sums, one per value of k.inner (now an ordinary axis of B.rf); B then
only reduces those. The dataflow graph gains A -> B.rf -> B; the IterVar-relation DAG shows
the split of k before the rfactor and the axes of B.rf and B after it.

    tessel explain examples/seed001_rfactor.py -o rfactor.html
"""

import tessel
from tessel import te

n, m = te.var("n"), te.var("m")
A = te.placeholder((n, m), name="A")
k = te.reduce_axis((0, m), "k")
B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
s = te.create_schedule(B.op)
ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
BF = s.rfactor(B, ki)

print(tessel.lower(s, [A, B], simple_mode=True))
