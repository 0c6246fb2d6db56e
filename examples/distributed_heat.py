"""A 2-D heat stencil over time, its rows distributed over MPI ranks.

One script for every rank count (SPMD)::

    python examples/distributed_heat.py [n m steps]                      # one process, one rank
    mpirun -np 4 python examples/distributed_heat.py 1001 517 50          # four ranks

``s[B].distribute(i)`` splits the rows of ``B`` in blocks over the ranks (blocks of sizes that
differ by at most one, for any n). tessel derives from the access relations which rows of ``A``
each rank needs from which other rank (here one row from each neighbour, its border columns
left out because no instance reads them), exchanges exactly those before every call, and runs
each rank's block through an ordinary tessel kernel scheduled by the same steps (the split and
vectorize below). The time loop is a Python loop of calls: one halo exchange per step. Rank 0
prints the plan, the reason of every message of rank 1 and the error against NumPy.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from tessel import distributed as dist
from tessel import te


def heat(n: int, m: int, block: int | None = None):
    """``B = 0.6 A + 0.1 (north + south + west + east)`` inside, ``A`` on the border; rows in one
    block per rank, or (``block``) block-cyclic."""
    A = te.placeholder((n, m), name="A", dtype="float64")
    inside = lambda i, j: te.all(i > 0, i < n - 1, j > 0, j < m - 1)  # noqa: E731
    B = te.compute((n, m), lambda i, j: te.if_then_else(
        inside(i, j), 0.6 * A[i, j] + 0.1 * (A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1]), A[i, j]),
        name="B")
    s = te.create_schedule(B.op)
    s[B].distribute(B.op.axis[0], **({"block": block} if block else {}))
    _, ji = s[B].split(B.op.axis[1], 8)
    s[B].vectorize(ji)
    return s, [A, B]


def reference(a: np.ndarray, steps: int) -> np.ndarray:
    for _ in range(steps):
        b = a.copy()
        b[1:-1, 1:-1] = 0.6 * a[1:-1, 1:-1] + 0.1 * (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:])
        a = b
    return a


def main(n: int = 258, m: int = 256, steps: int = 20) -> float | None:
    comm = dist.world()
    s, args = heat(n, m)
    k = dist.build(s, args, comm)
    g = np.random.default_rng(0).random((n, m)) if comm.rank == 0 else None
    a = k.scatter("A", g)
    b = k.empty_like(a, "B")
    start = time.perf_counter()
    for step in range(steps):
        if step == 1:  # the first call built the rank's kernel: not timed
            start = time.perf_counter()
        k(a, b)
        a, b = b, a
    took = (time.perf_counter() - start) * steps / max(1, steps - 1)
    out = k.gather(a)
    if comm.rank != 0:
        return None
    plan = k.plan({})
    print(plan)
    print(plan.explain(1 if comm.size > 1 else 0))
    err = float(np.abs(out - reference(g, steps)).max())
    print(f"{comm.size} rank(s), {n}x{m}, {steps} steps: {1e3 * took / steps:.3f} ms/step, max error {err:.2e}")
    return err


if __name__ == "__main__":
    main(*[int(x) for x in sys.argv[1:4]])
