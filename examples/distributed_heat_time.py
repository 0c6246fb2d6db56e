"""The 2-D heat stencil of ``distributed_heat.py`` written as ONE program over time, its rows
distributed over MPI ranks.

One script for every rank count (SPMD)::

    python examples/distributed_heat_time.py [n m steps]                  # one process, one rank
    mpirun -np 4 python examples/distributed_heat_time.py 1001 517 50      # four ranks

``h`` is a ``te.recurrence`` over ``(t, i, j)``: step 0 is the input, step ``t`` the stencil of
step ``t - 1``. ``storage_fold`` keeps two steps on one process; ``distribute(i)`` splits the
rows over the ranks. ``dist.build`` runs the step loop itself: before each step, every rank
receives exactly the rows of step ``t - 1`` its block reads from its neighbours (derived for
that step from the access relations: here one row each way, its border columns left out), and
keeps the two live steps of its block only. Rank 0 prints the plan of every step, the reasons of
rank 1's messages and the error against NumPy and against one process.
"""

from __future__ import annotations

import sys
import time

import numpy as np

import tessel
from tessel import distributed as dist
from tessel import te

try:
    from examples.distributed_heat import reference
except ImportError:  # run as a script from examples/
    from distributed_heat import reference


def heat_time(steps: int, n: int, m: int, block: int | None = None):
    """``h[t] = 0.6 h[t-1] + 0.1 (north + south + west + east)`` inside, ``h[t-1]`` on the border,
    ``h[0] = A``: ``steps`` steps after the input, two kept (``storage_fold``), rows distributed."""
    A = te.placeholder((n, m), name="A", dtype="float64")

    def step(h, t, i, j):
        inside = te.all(i > 0, i < n - 1, j > 0, j < m - 1)
        return te.if_then_else(inside, 0.6 * h[t - 1, i, j] + 0.1 * (h[t - 1, i - 1, j] + h[t - 1, i + 1, j]
                                                                     + h[t - 1, i, j - 1] + h[t - 1, i, j + 1]),
                               h[t - 1, i, j])

    h = te.recurrence((steps + 1, n, m), [te.define(lambda h, t, i, j: A[i, j], where=lambda t, i, j: t == 0),
                                          te.define(step, where=lambda t, i, j: t >= 1)], name="h")
    s = te.create_schedule(h.op)
    s[h].storage_fold(h.op.axis[0], 2)  # one process keeps two steps; each rank two of its block
    s[h].distribute(h.op.axis[1], **({"block": block} if block else {}))
    _, ji = s[h].split(h.op.axis[2], 8)
    s[h].vectorize(ji)
    return s, [A, h]


def one_process(s, args, a: np.ndarray) -> np.ndarray:
    """The last step as ``tessel.build`` computes it on one process (the folded storage's plane)."""
    A, h = args
    folded = s[h].storage.buffer
    out = np.zeros(tuple(int(x) for x in folded.shape))
    tessel.build(s, [A, folded])(a, out)
    return out[(int(h.shape[0]) - 1) % out.shape[0]]


def main(n: int = 258, m: int = 256, steps: int = 20) -> float | None:
    comm = dist.world()
    s, args = heat_time(steps, n, m)
    k = dist.build(s, args, comm)
    g = np.random.default_rng(0).random((n, m)) if comm.rank == 0 else None
    a = k.scatter("A", g)
    h = k.empty("h")
    k(a, h)  # builds every rank's step kernels: not timed
    start = time.perf_counter()
    k(a, h)
    took = time.perf_counter() - start
    out = k.gather(h)
    if comm.rank != 0:
        return None
    plan = k.plan({})
    print(plan)
    print(plan.explain(1 if comm.size > 1 else 0))
    err = float(np.abs(out - reference(g, steps)).max())
    same = np.array_equal(out, one_process(s, args, g))
    print(f"{comm.size} rank(s), {n}x{m}, {steps} steps: {1e3 * took / steps:.3f} ms/step, max error {err:.2e}, "
          f"{'bit for bit' if same else 'NOT'} one process's values")
    return err


if __name__ == "__main__":
    main(*[int(x) for x in sys.argv[1:4]])
