"""tessel's demo: real kernels scheduled, lowered, compiled, checked against NumPy and timed.

Run it with ``python -m tessel.demo`` (``--target python`` runs the reference interpreter
instead of native code; ``--quiet`` skips the IR listings).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

import tessel
from tessel import te


def matmul(small: bool = False):
    n = 32 if small else 256
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 32, 32)
    ko, ki = s[C].split(k, factor=8)
    s[C].reorder(xo, yo, ko, xi, ki, yi)
    s[C].parallel(xo)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n), "float32"), rng.standard_normal((n, n), "float32")
    return f"matmul {n}x{n}x{n}, tiled 32x32, k split by 8", s, [A, B, C], [a, b], [a @ b], 2 * n**3


def blur(small: bool = False):
    n = 34 if small else 1024
    A = te.placeholder((n, n), name="A")
    Bx = te.compute((n, n - 2), lambda y, x: (A[y, x] + A[y, x + 1] + A[y, x + 2]) / 3.0, name="Bx")
    By = te.compute((n - 2, n - 2), lambda y, x: (Bx[y, x] + Bx[y + 1, x] + Bx[y + 2, x]) / 3.0, name="By")
    s = te.create_schedule(By.op)
    yo, _yi = s[By].split(By.op.axis[0], factor=32)
    s[Bx].compute_at(s[By], yo)
    s[By].parallel(yo)
    a = np.random.default_rng(1).standard_normal((n, n), "float32")
    bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / 3
    want = (bx[:-2] + bx[1:-1] + bx[2:]) / 3
    return f"3x3 separable blur {n}x{n}, row strips of 32", s, [A, By], [a], [want], 6 * (n - 2) ** 2


def softmax(small: bool = False):
    rows, cols = (16, 16) if small else (512, 512)
    A = te.placeholder((rows, cols), name="A")
    k1 = te.reduce_axis((0, cols), name="k1")
    M = te.compute((rows,), lambda i: te.max(A[i, k1], axis=k1), name="M")
    E = te.compute((rows, cols), lambda i, j: te.exp(A[i, j] - M[i]), name="E")
    k2 = te.reduce_axis((0, cols), name="k2")
    S = te.compute((rows,), lambda i: te.sum(E[i, k2], axis=k2), name="S")
    O = te.compute((rows, cols), lambda i, j: E[i, j] / S[i], name="O")
    s = te.create_schedule(O.op)
    for st in (M, E, S):
        s[st].compute_at(s[O], O.op.axis[0])
    s[O].parallel(O.op.axis[0])
    a = np.random.default_rng(2).standard_normal((rows, cols), "float32")
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return f"row softmax {rows}x{cols}, fused per row", s, [A, O], [a], [e / e.sum(axis=1, keepdims=True)], 5 * rows * cols


def auto_matmul(small: bool = False):
    """The same matmul from its definition alone: ``tessel.auto_schedule`` picks the register
    tile, the packing and the threads from this machine's Target (rules only, no search)."""
    from .autosched import auto_schedule_result

    n = 48 if small else 512
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    found = auto_schedule_result([C], budget=0)
    print(found.schedule.python())
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((n, n), "float32"), rng.standard_normal((n, n), "float32")
    return (f"matmul {n}x{n}x{n}, auto-scheduled (the schedule above, printed as Python)", found.schedule,
            list(found.args), [a, b], [a @ b], 2 * n**3)


KERNELS: list[Callable] = [matmul, blur, softmax, auto_matmul]


def _time(f, args, repeat: int = 5) -> float:
    f(*args)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        f(*args)
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tessel.demo", description=__doc__)
    ap.add_argument("--target", default="c", choices=["c", "python"])
    ap.add_argument("--quiet", action="store_true", help="do not print the lowered IR")
    opts = ap.parse_args(argv)
    small = opts.target == "python"
    for make in KERNELS:
        title, s, args, inputs, expected, flops = make(small)
        print("=" * 78)
        print(title)
        print("=" * 78)
        if not opts.quiet:
            print(tessel.lower(s, args, simple_mode=True))
        t0 = time.perf_counter()
        f = tessel.build(s, args, target=opts.target)
        build_s = time.perf_counter() - t0
        outs = [np.empty(e.shape, e.dtype) for e in expected]
        call = [*inputs, *outs]
        f(*call)
        err = max(float(np.max(np.abs(o - e))) for o, e in zip(outs, expected))
        ok = all(np.allclose(o, e, rtol=1e-4, atol=1e-4) for o, e in zip(outs, expected))
        secs = _time(f, call, repeat=1 if small else 5)
        print(f"check against NumPy: {'OK' if ok else 'MISMATCH'} (max abs error {err:.2e})")
        print(f"build {build_s * 1e3:.1f} ms; {secs * 1e3:.3f} ms per call; {flops / secs / 1e9:.2f} GFLOP/s\n")
        if not ok:
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
