"""A row-distributed matmul and a sum over a distributed axis, on MPI ranks.

    python examples/distributed_matmul.py [n k m]
    mpirun -np 3 python examples/distributed_matmul.py 301 64 129

``C[i, j] = sum_r A[i, r] B[r, j]`` with ``s[C].distribute(i)``: the plan splits the rows of A
(the dimension C indexes with i) and keeps a whole copy of B on every rank (no dimension of B
follows i), so no message is needed once the data is placed. ``S[j] = sum_i C[i, j]`` with
``s[S].distribute(r)`` distributes the reduce axis: each rank sums its rows, and the partial
sums are combined by an MPI Allreduce (``deterministic=True``: in rank order instead).
"""

from __future__ import annotations

import sys

import numpy as np

from tessel import distributed as dist
from tessel import te


def matmul(n: int, k: int, m: int, block: int | None = None):
    A = te.placeholder((n, k), name="A", dtype="float64")
    B = te.placeholder((k, m), name="B", dtype="float64")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    s = te.create_schedule(C.op)
    s[C].distribute(C.op.axis[0], **({"block": block} if block else {}))
    _, ji = s[C].split(C.op.axis[1], 8)
    s[C].vectorize(ji)
    return s, [A, B, C]


def column_sums(n: int, m: int, block: int | None = None):
    X = te.placeholder((n, m), name="X", dtype="float64")
    r = te.reduce_axis((0, n), name="r")
    S = te.compute((m,), lambda j: te.sum(X[r, j], axis=r), name="S")
    s = te.create_schedule(S.op)
    s[S].distribute(r, **({"block": block} if block else {}))
    return s, [X, S]


def main(n: int = 301, k: int = 64, m: int = 129) -> tuple[float, float] | None:
    comm = dist.world()
    rng = np.random.default_rng(0)
    a, b = (rng.random((n, k)), rng.random((k, m))) if comm.rank == 0 else (None, None)
    s, args = matmul(n, k, m)
    mm = dist.build(s, args, comm)
    da, db, dc = mm.scatter("A", a), mm.scatter("B", b), mm.empty("C")
    mm(da, db, dc)
    s2, args2 = column_sums(n, m)
    cs = dist.build(s2, args2, comm, deterministic=True)
    dx = cs.scatter("X", mm.gather(dc))
    dsum = cs.empty("S")
    cs(dx, dsum)
    c, total = mm.gather(dc), cs.gather(dsum)
    if comm.rank != 0:
        return None
    errs = float(np.abs(c - a @ b).max()), float(np.abs(total - (a @ b).sum(axis=0)).max())
    print(f"{comm.size} rank(s): matmul {n}x{k}x{m} max error {errs[0]:.2e}; column sums max error {errs[1]:.2e}")
    print(cs.plan({}))
    return errs


if __name__ == "__main__":
    main(*[int(x) for x in sys.argv[1:4]])
