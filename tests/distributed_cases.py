"""The distributed programs the tests run, each with its NumPy reference, as SPMD functions of a
communicator: ``run_case(name, comm, ...)`` gives rank 0 the max error against NumPy.

Run in-process by tests/distributed/test_kernel.py (ranks as threads) and, as a script, under
``mpirun -np K python tests/distributed_cases.py`` by tests/distributed/test_comm.py: the same
code, so what the simulator checks is what MPI runs.
"""

from __future__ import annotations

import sys

import numpy as np

import tessel
from examples.distributed_heat import heat as heat2d
from examples.distributed_heat import reference as heat2d_ref
from examples.distributed_heat_time import heat_time as heat2d_time
from examples.distributed_heat_time import one_process
from examples.distributed_matmul import column_sums as total
from examples.distributed_matmul import matmul
from tessel import distributed as dist
from tessel import te

__all__ = ["heat2d", "heat2d_ref", "heat2d_time", "matmul", "one_process", "scan2_time", "total"]  # the tests' names for the examples' programs


def heat3d(n: int, m: int, p: int, block: int | None = None):
    A = te.placeholder((n, m, p), name="A", dtype="float64")
    inside = lambda i, j, k: te.all(i > 0, i < n - 1, j > 0, j < m - 1, k > 0, k < p - 1)  # noqa: E731
    B = te.compute((n, m, p), lambda i, j, k: te.if_then_else(
        inside(i, j, k), 0.4 * A[i, j, k] + 0.1 * (A[i - 1, j, k] + A[i + 1, j, k] + A[i, j - 1, k]
                                                   + A[i, j + 1, k] + A[i, j, k - 1] + A[i, j, k + 1]),
        A[i, j, k]), name="B")
    s = te.create_schedule(B.op)
    s[B].distribute(B.op.axis[0], **({"block": block} if block else {}))
    return s, [A, B]


def heat3d_ref(a: np.ndarray, steps: int) -> np.ndarray:
    for _ in range(steps):
        b = a.copy()
        c = a[1:-1, 1:-1, 1:-1]
        b[1:-1, 1:-1, 1:-1] = 0.4 * c + 0.1 * (a[:-2, 1:-1, 1:-1] + a[2:, 1:-1, 1:-1] + a[1:-1, :-2, 1:-1]
                                                + a[1:-1, 2:, 1:-1] + a[1:-1, 1:-1, :-2] + a[1:-1, 1:-1, 2:])
        a = b
    return a


def jacobi1d_time(steps: int, n: int, block: int | None = None):
    """A 1-D three-point average over time as one recurrence (two steps kept), its points distributed."""
    A = te.placeholder((n,), name="A", dtype="float64")
    h = te.recurrence((steps + 1, n), [
        te.define(lambda h, t, i: A[i], where=lambda t, i: t == 0),
        te.define(lambda h, t, i: te.if_then_else(te.all(i > 0, i < n - 1),
                                                  (h[t - 1, i - 1] + h[t - 1, i] + h[t - 1, i + 1]) / 3.0,
                                                  h[t - 1, i]), where=lambda t, i: t >= 1)], name="h")
    s = te.create_schedule(h.op)
    s[h].storage_fold(h.op.axis[0], 2)
    s[h].distribute(h.op.axis[1], **({"block": block} if block else {}))
    return s, [A, h]


def scan2_time(steps: int, n: int, block: int | None = None, shift: int = 0):
    """A te.scan of two states: ``u`` a three-point stencil of the last step plus a little of
    ``v``, ``v`` accumulating this step's ``u`` (at ``i - shift``), their points distributed."""
    X = te.placeholder((n,), name="X", dtype="float64")
    U = te.placeholder((steps + 1, n), name="U", dtype="float64")
    V = te.placeholder((steps + 1, n), name="V", dtype="float64")
    iu = te.compute((1, n), lambda _, i: X[i], name="iu")
    iv = te.compute((1, n), lambda _, i: X[i] * 2.0, name="iv")
    uu = te.compute((steps + 1, n), lambda t, i: te.if_then_else(
        te.all(i > 0, i < n - 1), 0.5 * (U[t - 1, i - 1] + U[t - 1, i + 1]) + 0.1 * V[t - 1, i], U[t - 1, i]),
        name="uu")
    vv = te.compute((steps + 1, n), lambda t, i: V[t - 1, i] + 0.25 * uu[t, te.max(i - shift, 0)], name="vv")
    su, sv = te.scan([iu, iv], [uu, vv], [U, V], name="sc")
    s = te.create_schedule(su.op)
    s[su.op].distribute(su.op.spatial_axis_[0], **({"block": block} if block else {}))
    return s, [X, su, sv]


def _scan_loop(comm, size, steps: int, target: str, block: int | None):
    """Both states' last step against one process's ``tessel.build`` (0.0 when bit for bit)."""
    x = np.random.default_rng(12).random(size)
    s, (X, su, sv) = scan2_time(steps, *size, block=block)
    k = dist.build(s, [X, su, sv], comm, target=target)
    dx, wu, wv = k.scatter("X", x if comm.rank == 0 else None), k.empty(su.name), k.empty(sv.name)
    k(dx, wu, wv)
    got = (k.gather(wu), k.gather(wv))
    if got[0] is None:
        return None
    want = [np.zeros((steps + 1, *size)) for _ in range(2)]
    tessel.build(s, [X, su, sv])(x, *want)
    return float(max(np.abs(g - w[-1]).max() for g, w in zip(got, want)))


def _grid(comm, size, target: str):
    """The heat step on a 2-D grid of ranks (its rows and columns distributed), against one
    process (0.0 when bit for bit)."""
    g = np.random.default_rng(13).random(size)
    s, (A, B) = heat2d(*size)
    s[B].distribute(B.op.axis[1])
    k = dist.build(s, [A, B], comm, target=target)
    a, b = k.scatter("A", g if comm.rank == 0 else None), k.empty("B")
    k(a, b)
    out = k.gather(b)
    if out is None:
        return None
    want = np.zeros(size)
    tessel.build(s, [A, B], target=target)(g, want)
    return float(np.abs(out - want).max())


def _time_loop(comm, make, shape, steps: int, target: str, block: int | None):
    """The last step of a recurrence over time run by the distributed step loop, against one
    process's ``tessel.build`` of the same schedule: rank 0 gets the max difference (0.0 when
    bit for bit)."""
    g = np.random.default_rng(11).random(shape)
    s, args = make(steps, *shape, block=block)
    k = dist.build(s, args, comm, target=target)
    a = k.scatter("A", g if comm.rank == 0 else None)
    h = k.empty("h")
    k(a, h)
    out = k.gather(h)
    return None if out is None else float(np.abs(out - one_process(s, args, g)).max())


def _stencil(comm, make, ref, shape, steps: int, target: str, overlap: bool, block: int | None):
    g = np.random.default_rng(7).random(shape)
    s, args = make(*shape, block=block)
    k = dist.build(s, args, comm, target=target, overlap=overlap)
    a = k.scatter("A", g if comm.rank == 0 else None)
    b = k.empty_like(a, "B")
    for _ in range(steps):
        k(a, b)
        a, b = b, a
    out = k.gather(a)
    return None if out is None else float(np.abs(out - ref(g, steps)).max())


def run_case(name: str, comm, size: tuple[int, ...], target: str = "c", deterministic: bool = False,
             overlap: bool = False, block: int | None = None):
    """Rank 0: the max error against NumPy; other ranks: None. ``block``: block-cyclic."""
    rng = np.random.default_rng(3)
    if name == "heat2d":
        return _stencil(comm, heat2d, heat2d_ref, size, 3, target, overlap, block)
    if name == "heat3d":
        return _stencil(comm, heat3d, heat3d_ref, size, 2, target, overlap, block)
    if name == "heat2d_time":
        return _time_loop(comm, heat2d_time, size, 4, target, block)
    if name == "jacobi1d_time":
        return _time_loop(comm, jacobi1d_time, size, 5, target, block)
    if name == "heat2d_grid":
        return _grid(comm, size, target)
    if name == "scan2_time":
        return _scan_loop(comm, size, 4, target, block)
    if name == "matmul":
        n, kk, m = size
        a, b = rng.random((n, kk)), rng.random((kk, m))
        s, args = matmul(n, kk, m, block=block)
        k = dist.build(s, args, comm, target=target)
        da, db = k.scatter("A", a if comm.rank == 0 else None), k.scatter("B", b if comm.rank == 0 else None)
        dc = k.empty("C")
        k(da, db, dc)
        out = k.gather(dc)
        return None if out is None else float(np.abs(out - a @ b).max())
    if name == "sum":
        x = rng.random(size)
        s, args = total(*size, block=block)
        k = dist.build(s, args, comm, target=target, deterministic=deterministic)
        dx, ds = k.scatter("X", x if comm.rank == 0 else None), k.empty("S")
        k(dx, ds)
        out = k.gather(ds)
        return None if out is None else float(np.abs(out - x.sum(axis=0)).max())
    raise ValueError(name)


CASES = [("heat2d", (13, 9)), ("heat2d", (3, 6)), ("heat3d", (7, 5, 6)), ("matmul", (7, 5, 6)),
         ("matmul", (2, 3, 4)), ("sum", (11, 5)), ("sum", (3, 4)),
         ("heat2d_time", (13, 9)), ("heat2d_time", (3, 6)), ("jacobi1d_time", (11,)),
         ("scan2_time", (9,)), ("heat2d_grid", (9, 7))]
#: the stencils again, their blocks' cores computed while the halos travel
OVERLAP = [("heat2d", (13, 9)), ("heat2d", (3, 6)), ("heat3d", (7, 5, 6))]
#: block-cyclic: (name, size, block size)
CYCLIC = [("heat2d", (13, 9), 2), ("heat2d", (3, 6), 1), ("heat3d", (7, 5, 6), 3), ("matmul", (7, 5, 6), 2),
          ("sum", (11, 5), 2), ("heat2d_time", (13, 9), 2)]


def main() -> int:
    """Every case on this process's world (under mpirun: MPI); rank 0 prints one line each."""
    comm = dist.world()
    bad = 0
    runs = ([(n, z, False, None) for n, z in CASES] + [(n, z, True, None) for n, z in OVERLAP]
            + [(n, z, False, b) for n, z, b in CYCLIC])
    for name, size, overlap, block in runs:
        err = run_case(name, comm, size, overlap=overlap, block=block)
        if comm.rank == 0:
            exact = name.endswith(("_time", "_grid"))  # against one process: bit for bit
            ok = err is not None and (err == 0.0 if exact else err < 1e-9)
            bad += not ok
            how = " overlap" if overlap else f" block={block}" if block else ""
            print(f"{name} {size}{how} ranks={comm.size} err={err} {'ok' if ok else 'WRONG'}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
