"""``python -m benchmarks.build_growth``: how a build's time and memory grow with the program.

Issue 31: a compiler whose analyses are exact must still build a program in time that grows
with the program, not explodes with it. Each family below is a program that grows with one
number (stages in a chain, depth of nested splits); each point is built cold in a child
process of its own (so its peak memory is its own), under a time limit, and the table prints
wall seconds, peak resident memory and, per family, the fitted growth exponent (the slope of
log time against log size between the last two points that finished). Nothing is asserted.
``deps-at`` is not a build: it times ``s.dependences()`` (the model and its exact dependences)
on the compute_at chain, whose statements sit inside every loop after them (all but the last
stage's loops run once, and take no dimension of the model).

    python -m benchmarks.build_growth [--limit 120] [--only chain-at] [--sizes 10,30,100,300,1000]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time

import tessel
from tessel import te

FAMILIES = ("chain-root", "chain-inline", "chain-at", "deps-at", "splits", "strip")
SIZES = {"chain-root": (10, 30, 100, 300, 1000), "chain-inline": (10, 30, 100, 300, 1000),
         "chain-at": (10, 30, 100, 300, 1000), "deps-at": (10, 25, 50, 100, 200), "splits": (1, 2, 4, 6, 8),
         "strip": (1,)}


def program(family: str, size: int):
    """The schedule and arguments of one point."""
    if family.startswith(("chain", "deps")):
        A = te.placeholder((64, 64), name="A")
        ts = [A]
        for k in range(size):
            ts.append(te.compute((64, 64), _step(ts[-1]), name=f"T{k}"))
        s = te.create_schedule(ts[-1].op)
        for k in range(1, size):
            if family == "chain-inline":
                s[ts[k]].compute_inline()
            elif family in ("chain-at", "deps-at"):
                s[ts[k]].compute_at(s[ts[k + 1]], s[ts[k + 1]].op.axis[1])
        return s, [A, ts[-1]]
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    if family == "splits":  # the row axis split `size` times, symbolic sizes
        B = te.compute((n, m), lambda i, j: A[i, j] * 2 + 1, name="B")
        s = te.create_schedule(B.op)
        axis = B.op.axis[0]
        for _ in range(size):
            axis, _inner = s[B].split(axis, factor=3)
        return s, [A, B]
    P = te.compute((n, m), lambda i, j: A[i, j] * A[i, j], name="P")  # issue 31's strip stencil
    S = te.compute((n - 2, m - 2), lambda i, j: P[i, j + 1] + P[i + 1, j] + P[i + 1, j + 1] + P[i + 1, j + 2]
                   + P[i + 2, j + 1], name="S")
    s = te.create_schedule(S.op)
    io, _ = s[S].split(S.op.axis[0], factor=16)
    s[P].compute_at(s[S], io)
    _, pi = s[P].split(P.op.axis[1], factor=16)
    s[P].vectorize(pi)
    return s, [A, S]


def _step(prev):
    return lambda i, j: prev[i, j] * 1.0001 + 1.0


def point(family: str, size: int) -> dict:
    """Build one point cold in this process; what it cost."""
    s, args = program(family, size)
    os.environ["TESSEL_CACHE_DIR"] = tempfile.mkdtemp(prefix="tessel-growth-")
    start = time.perf_counter()
    if family == "deps-at":
        s.dependences()
    else:
        tessel.build(s, args)
    return {"seconds": time.perf_counter() - start,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def _measure(family: str, size: int, limit: float) -> dict | None:
    """The point's figures; None past the limit; ``{"error": ...}`` when its build failed (the
    table goes on with the next family and the run's status says so)."""
    try:
        out = subprocess.run([sys.executable, "-m", "benchmarks.build_growth", "--point", family, str(size)],
                             capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return None
    if out.returncode != 0:
        lines = out.stderr.strip().splitlines()
        return {"error": lines[-1] if lines else f"exit status {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=float, default=120.0, help="seconds a point may take")
    ap.add_argument("--only", default=None, help="families whose name contains this text")
    ap.add_argument("--sizes", default=None, help="comma-separated sizes for every chosen family")
    ap.add_argument("--point", nargs=2, metavar=("FAMILY", "SIZE"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.point:
        print(json.dumps(point(args.point[0], int(args.point[1]))))
        return 0
    print(f"cold builds, one child process a point (limit {args.limit:.0f} s, load {os.getloadavg()[0]:.2f})")
    print(f"{'family':<14} {'size':>6} {'wall s':>9} {'peak MB':>9}")
    failed = 0
    for family in (f for f in FAMILIES if (args.only or "") in f):
        sizes = [int(x) for x in args.sizes.split(",")] if args.sizes else SIZES[family]
        done: list[tuple[int, float]] = []
        for size in sizes:
            got = _measure(family, size, args.limit)
            if got is None:
                print(f"{family:<14} {size:>6} {'> ' + format(args.limit, '.0f'):>9} {'-':>9}", flush=True)
                break  # larger sizes would take longer still
            if "error" in got:
                print(f"{family:<14} {size:>6} failed: {got['error']}", flush=True)
                failed += 1
                break
            done.append((size, got["seconds"]))
            print(f"{family:<14} {size:>6} {got['seconds']:9.2f} {got['peak_mb']:9.0f}", flush=True)
        if len(done) >= 2 and done[-1][0] != done[-2][0]:
            (a, ta), (b, tb) = done[-2:]
            print(f"{family:<14} growth ~ size^{math.log(tb / ta) / math.log(b / a):.2f} (between {a} and {b})")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
