"""Seed 001, Example 5: a legal schedule, made illegal by cache_read, made legal again.

Step 1 computes B inside C's first loop. Step 2's cache_read puts a new stage B.local between
B and C, under the root of the schedule tree: B.local reads B, yet B is computed inside C's
loop, below B.local (LCA(B.local, C) is above LCA(B, C)). Step 3 moves B.local next to B.
Step through it, with the explanation and the fix at step 2, with

    tessel explain examples/seed001_example5.py -o example5.html
"""

import tessel
from tessel import te

M, N = te.var("M"), te.var("N")
A = te.placeholder((M, N), name="A")
B = te.compute((M, N), lambda bi, bj: A[bi, bj] + 1, name="B")
C = te.compute((M, N), lambda ci, cj: B[ci, cj] * 3, name="C")

s = te.create_schedule(C.op)

# step 1
s[B].compute_at(s[C], s[C].op.axis[0])

# step 2
BL = s.cache_read(B, "local", readers=[C])

# step 3 (the above schedule is illegal; this step makes it legal)
s[BL].compute_at(s[C], s[C].op.axis[0])

print(tessel.lower(s, [A, C], simple_mode=True))
