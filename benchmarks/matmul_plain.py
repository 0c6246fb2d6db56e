"""fp32 matmul with a plain tiled schedule: GFLOP/s beside NumPy, cold build and cached load.

    python benchmarks/matmul_plain.py [--n 1024] [--repeat 5]

The schedule a user writes first (tile, split k, parallel): what issue "Native code" measures.
The fast schedule (register tiles, packing, vectors) is python -m benchmarks --only matmul.

The cold build compiles into a fresh cache directory; the cached load is a new process that
builds the same kernel and finds it on disk (what a user sees the second time they run).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import tessel
from tessel import te


def schedule(n: int, parallel: bool = True):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 32, 256)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(xo, yo, ko, xi, ki, yi)
    if parallel:
        s[C].parallel(xo)
    return s, [A, B, C]


def median_time(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--load-only", action="store_true", help=argparse.SUPPRESS)
    opts = ap.parse_args()
    n = opts.n
    s, args = schedule(n)
    if opts.load_only:
        t0 = time.perf_counter()
        f = tessel.build(s, args)
        print(f"{(time.perf_counter() - t0) * 1e3:.1f} {int(f.cache_hit)}")
        return
    cache = tempfile.mkdtemp(prefix="tessel-bench-")
    os.environ["TESSEL_CACHE_DIR"] = cache
    t0 = time.perf_counter()
    f = tessel.build(s, args)
    cold = time.perf_counter() - t0
    out = subprocess.run([sys.executable, __file__, "--n", str(n), "--load-only"], capture_output=True,
                         text=True, env=os.environ, check=True).stdout.split()
    load_ms, hit = float(out[0]), out[1] == "1"

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n), "float32"), rng.standard_normal((n, n), "float32")
    c = np.empty((n, n), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-3)
    flops = 2.0 * n**3
    t_tessel = median_time(lambda: f(a, b, c), opts.repeat)
    t_numpy = median_time(lambda: a @ b, opts.repeat)
    print(f"fp32 matmul {n}x{n}x{n}, tile 32x256, k split by 4, parallel outer ({os.cpu_count()} cores)")
    print(f"{'':10} {'ms/call':>10} {'GFLOP/s':>10} {'vs NumPy':>9}")
    print(f"{'tessel':10} {t_tessel * 1e3:10.2f} {flops / t_tessel / 1e9:10.1f} {t_numpy / t_tessel:9.2f}x")
    print(f"{'NumPy':10} {t_numpy * 1e3:10.2f} {flops / t_numpy / 1e9:10.1f} {1.0:9.2f}x")
    print(f"cold build: {cold * 1e3:.0f} ms; cached load in a new process: {load_ms:.1f} ms (cache hit: {hit})")


if __name__ == "__main__":
    main()
