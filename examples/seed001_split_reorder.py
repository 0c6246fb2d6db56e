"""Seed 001, "The Operational Model": split a loop, then reorder the two halves.

The IterVar-relation DAG of C shows the split (j -> j.outer, j.inner, factor 2); the schedule
tree shows C's loops in their new order, i, j.inner, j.outer. Step through it with

    tessel explain examples/seed001_split_reorder.py -o split_reorder.html
"""

import tessel
from tessel import te

m, n = te.var("m"), te.var("n")
A = te.placeholder((m, n), name="A")
B = te.compute((m, n), lambda i, j: A[i, j] + 1, name="B")
C = te.compute((m, n), lambda i, j: B[i, j] * 2, name="C")
s = te.create_schedule(C.op)
i0, j0 = s[C].op.axis
j1o, j1i = s[C].split(j0, 2)
s[C].reorder(j1i, j1o)

print(tessel.lower(s, [A, C], simple_mode=True))
