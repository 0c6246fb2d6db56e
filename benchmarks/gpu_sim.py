"""``python -m benchmarks.gpu_sim``: the GPU examples on the CPU, through both simulators.

Per example of ``examples/gpu`` and size, one row: the build time and the time of one call on
the fast simulator (``target="cuda-sim"``: the kernels compiled as CPU loops,
``passes/gpu/serial.py``) and on the checking simulator (``cuda-sim -features=check``: every
thread a generator, races and divergent barriers refused), each result compared with NumPy,
and NumPy's own time for the same product (a peer measured in the same run). A kernel the fast
simulator cannot run as loops (warp shuffles) is marked: it ran on the checker too. The
checking simulator is skipped past ``--check-max`` elements of output (it runs each thread in
Python).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import tessel
from examples.gpu import gemm, row_reduce
from tessel.errors import TesselWarning

FAST, CHECK = "cuda-sim", "cuda-sim -features=check"


def _gemm(n: int):
    s, args = gemm.schedule(n, n, n)
    rng = np.random.default_rng(n)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    return f"gemm {n}^3 (shared tiles, vthreads, cooperative fetch)", s, args, [a, b], lambda: a.T @ b, n * n


def _rows(n: int):
    s, args = row_reduce.schedule(n, 1000)
    x = np.random.default_rng(n).random((n, 1000), dtype=np.float32)
    return f"row sums {n} x 1000 (warp shuffles)", s, args, [x], lambda: x.sum(axis=1), n


CASES = {"gemm": _gemm, "rows": _rows}


def _time(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _run(target: str, s, args, inputs, want, repeat: int) -> tuple[float, float, str]:
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", TesselWarning)
        f = tessel.build(s, args, target=target)
    built = time.perf_counter() - start
    out = np.zeros(want.shape, want.dtype)
    ran = _time(lambda: f(*inputs, out), repeat)
    ok = np.allclose(out, want, rtol=1e-4, atol=1e-3)
    note = ("" if ok else "WRONG ") + ("(on the checker: " + str(said[0].message).split(":")[1].strip() + ")"
                                        if said and target == FAST else "")
    return built, ran, note


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gemm", default="64,256", help="GEMM sizes")
    ap.add_argument("--rows", default="64", help="row-sum row counts")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--check-max", type=int, default=64 * 64, help="largest output the checking simulator runs")
    opts = ap.parse_args(argv)
    rows = []
    print("| kernel | fast build s | fast run s | check build s | check run s | NumPy s | notes |")
    print("|---|---|---|---|---|---|---|")
    for kind, sizes in (("gemm", opts.gemm), ("rows", opts.rows)):
        for n in [int(x) for x in sizes.split(",") if x]:
            title, s, args, inputs, ref, elems = CASES[kind](n)
            want = ref()
            numpy_s = _time(ref, opts.repeat)
            fb, fr, fnote = _run(FAST, s, args, inputs, want, opts.repeat)
            if elems <= opts.check_max:
                cb, cr, cnote = _run(CHECK, s, args, inputs, want, 1)
                check = (f"{cb:.2f}", f"{cr:.3f}")
            else:
                cb = cr = None
                cnote, check = "", ("—", "—")
            row = {"kernel": title, "fast_build_s": fb, "fast_run_s": fr, "check_build_s": cb, "check_run_s": cr,
                   "numpy_s": numpy_s, "notes": " ".join(x for x in (fnote, cnote) if x)}
            rows.append(row)
            print(f"| {title} | {fb:.2f} | {fr:.4f} | {check[0]} | {check[1]} | {numpy_s:.5f} | {row['notes']} |")
    return rows


if __name__ == "__main__":
    main()
