"""``python -m benchmarks.distributed``: distributed kernels on 1-4 MPI ranks.

    python -m benchmarks.distributed [--ranks 1,2,3,4] [--quick]
    python -m benchmarks.distributed --per-step     # a step's cost on one process, time loop vs Python loop

Launches ``mpirun -np P`` of itself for each rank count (one rank in this process when
``mpirun`` or mpi4py is missing) and prints one table: a 2-D heat stencil over time at a fixed
grid (strong scaling; as a Python loop of one-step calls, with overlap, and as one recurrence
over time whose steps the runtime runs) and at fixed rows per rank (weak scaling), a distributed column sum (an
Allreduce) and a row-distributed matmul. Per row: milliseconds per call or step (the slowest rank),
the share of it spent exchanging halos or in the Allreduce (the slowest rank's), elements
received per call by the exact plan against a whole-row halo exchange, and the max error
against NumPy. On a machine with fewer cores than ranks (``--oversubscribe``) the ranks share
cores, so the times measure overhead and contention, not scaling: read the volumes and the
communication share there, and scaling only on a machine with a core per rank.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

import tessel
from examples.distributed_heat import heat as heat_program
from examples.distributed_heat import reference
from examples.distributed_heat_time import heat_time
from examples.distributed_matmul import column_sums, matmul
from tessel import distributed as dist


def _timed(comm, k, call, calls: int) -> dict:
    call()  # builds the rank's kernel and grows the ghost zones: not timed
    for key in k.stats:
        k.stats[key] = 0
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    wall = time.perf_counter() - t0
    comm_s = k.stats["exchange_s"] + k.stats["allreduce_s"]
    slow = comm.allgather((wall, comm_s / wall if wall else 0.0))
    return {"ms": 1e3 * max(w for w, _ in slow) / calls, "comm": max(f for _, f in slow)}


def heat(comm, n: int, m: int, steps: int, overlap: bool = False) -> dict:
    s, args = heat_program(n, m)
    k = dist.build(s, args, comm, overlap=overlap)
    g = np.random.default_rng(0).random((n, m)) if comm.rank == 0 else None
    a = k.scatter("A", g)
    b = k.empty_like(a, "B")
    pair = [a, b]

    def step():
        k(pair[0], pair[1])
        pair.reverse()

    row = _timed(comm, k, step, steps)
    out = k.gather(pair[0])
    p = k.plan({})
    row.update(exact=p.volume(), rows=p.whole_row_volume())
    if comm.rank == 0:
        row["err"] = float(np.abs(out - reference(g, steps + 1)).max())
    return row


def heat_in_program(comm, n: int, m: int, steps: int) -> dict:
    """The same stencil written as one recurrence over time: one call runs every step (the
    runtime drives the loop, one exact halo exchange a step); per step, to compare with the
    Python loop of calls above."""
    s, args = heat_time(steps, n, m)
    k = dist.build(s, args, comm)
    g = np.random.default_rng(0).random((n, m)) if comm.rank == 0 else None
    a, w = k.scatter("A", g), k.empty("h")
    row = _timed(comm, k, lambda: k(a, w), 1)
    row["ms"] /= steps
    out = k.gather(w)
    p = k.plan({})
    row.update(exact=p.volume(1), rows=p.of(1).whole_row_volume())
    if comm.rank == 0:
        row["err"] = float(np.abs(out - reference(g, steps)).max())
    return row


def one_process(n: int, m: int, steps: int) -> dict:
    s, args = heat_program(n, m)
    f = tessel.build(s, args)
    g = np.random.default_rng(0).random((n, m))
    pair = [g.copy(), np.empty_like(g)]
    f(pair[0], pair[1])
    t0 = time.perf_counter()
    for _ in range(steps):
        f(pair[0], pair[1])
        pair.reverse()
    ms = 1e3 * (time.perf_counter() - t0) / steps
    return {"ms": ms, "comm": 0.0, "exact": 0, "rows": 0, "err": float(np.abs(pair[0] - reference(g, steps)).max())}


def column_sum(comm, n: int, m: int, calls: int) -> dict:
    s, args = column_sums(n, m)
    k = dist.build(s, args, comm)
    x = np.random.default_rng(1).random((n, m)) if comm.rank == 0 else None
    dx, ds = k.scatter("X", x), k.empty("S")
    row = _timed(comm, k, lambda: k(dx, ds), calls)
    out = k.gather(ds)
    row.update(exact=0, rows=0)
    if comm.rank == 0:
        row["err"] = float(np.abs(out - x.sum(axis=0)).max())
    return row


def matmul_rows(comm, n: int, kk: int, m: int, calls: int) -> dict:
    s, args = matmul(n, kk, m)
    k = dist.build(s, args, comm)
    rng = np.random.default_rng(2)
    a, b = (rng.random((n, kk)), rng.random((kk, m))) if comm.rank == 0 else (None, None)
    da, db, dc = k.scatter("A", a), k.scatter("B", b), k.empty("C")
    row = _timed(comm, k, lambda: k(da, db, dc), calls)
    out = k.gather(dc)
    row.update(exact=0, rows=0)
    if comm.rank == 0:
        row["err"] = float(np.abs(out - a @ b).max())
    return row


def per_step(n: int = 258, m: int = 256, steps: int = 100, reps: int = 30) -> None:
    """The cost of a step on one process (``SelfComm``, no message): the recurrence's step loop
    against a Python loop of one-step calls, alternating, ``reps`` runs of ``steps`` steps each;
    the fastest and the median run, wall and the kernels alone, in ms per step."""
    comm = dist.SelfComm()
    g = np.random.default_rng(0).random((n, m))
    s, args = heat_time(steps, n, m)
    k = dist.build(s, args, comm)
    a, w = k.scatter("A", g), k.empty("h")
    s1, args1 = heat_program(n, m)
    k1 = dist.build(s1, args1, comm)
    pair = [k1.scatter("A", g)]
    pair.append(k1.empty_like(pair[0], "B"))
    k(a, w)
    k1(*pair)
    got: dict[str, list[float]] = {"in the program": [], "Python loop": [], "kernel, program": [], "kernel, loop": []}
    for _ in range(reps):
        for x in (k, k1):
            x.stats["compute_s"] = 0
        t0 = time.perf_counter()
        k(a, w)
        t1 = time.perf_counter()
        for _ in range(steps):
            k1(*pair)
            pair.reverse()
        t2 = time.perf_counter()
        got["in the program"].append(t1 - t0)
        got["Python loop"].append(t2 - t1)
        got["kernel, program"].append(k.stats["compute_s"])
        got["kernel, loop"].append(k1.stats["compute_s"])
    print(f"# heat {n}x{m}, {steps} steps, {reps} runs, one process (load average {os.getloadavg()[0]:.1f})")
    for name, xs in got.items():
        print(f"{name}: fastest {1e3 * min(xs) / steps:.4f} ms/step, median {1e3 * float(np.median(xs)) / steps:.4f}")


def child(quick: bool) -> None:
    comm = dist.world()
    p = comm.size
    n, steps = (258, 20) if quick else (2050, 50)
    rows = [("heat strong", f"{n}x{n - 2}", heat(comm, n, n - 2, steps)),
            ("heat strong, overlap", f"{n}x{n - 2}", heat(comm, n, n - 2, steps, overlap=True)),
            ("heat strong, time loop in the program", f"{n}x{n - 2}", heat_in_program(comm, n, n - 2, steps)),
            ("heat weak", f"{(128 if quick else 512) * p}x1024", heat(comm, (128 if quick else 512) * p, 1024, steps)),
            ("column sum", f"{n}x{n}", column_sum(comm, n, n, 10)),
            ("matmul rows", f"{n // 4}x256x256", matmul_rows(comm, n // 4, 256, 256, 5))]
    if p == 1:  # the same kernel built by tessel.build, called on whole arrays: what distributing costs
        rows.insert(0, ("heat strong, tessel.build", f"{n}x{n - 2}", one_process(n, n - 2, steps)))
    if comm.rank == 0:
        for name, size, row in rows:
            print(json.dumps({"kernel": name, "size": size, "ranks": p, **row}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", default="1,2,3,4")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--per-step", action="store_true",
                    help="only the cost of a step on one process: a time loop in the program against a Python loop")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.per_step:
        per_step()
        return
    if args.child:
        child(args.quick)
        return
    mpi = shutil.which("mpirun") and importlib.util.find_spec("mpi4py")
    results = []
    for p in [int(x) for x in args.ranks.split(",")] if mpi else [1]:
        cmd = ["mpirun", "--oversubscribe", "-np", str(p)] if mpi else []
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        got = subprocess.run([*cmd, sys.executable, "-m", "benchmarks.distributed", "--child"]
                             + (["--quick"] if args.quick else []), capture_output=True, text=True, env=env)
        if got.returncode:
            sys.exit(f"{p} rank(s) failed:\n{got.stderr[-3000:]}")
        results += [json.loads(ln) for ln in got.stdout.splitlines() if ln.startswith("{")]
    load = os.getloadavg()[0]
    print(f"# distributed kernels ({os.cpu_count()} cores, load average {load:.1f}; ranks share cores when more)")
    print("| kernel | size | ranks | ms/call | comm share | received/call exact | whole rows | max error |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['kernel']} | {r['size']} | {r['ranks']} | {r['ms']:.3f} | {100 * r['comm']:.0f}% | "
              f"{r['exact']} | {r['rows']} | {r.get('err', float('nan')):.1e} |")


if __name__ == "__main__":
    main()
