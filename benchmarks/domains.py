"""What a declared domain saves: ``python -m benchmarks.domains [--n 384] [--repeat 5] [--out results]``.

One kernel, the lower triangle of ``A @ A.T`` (``L[i, j] = sum_k A[i, k] * A[j, k]`` for
``j <= i``), written three ways and built for the C target in one process:

* **triangle**: ``te.compute(..., where=lambda i, j: j <= i)``: loops over the triangle only
  (the inner bound follows ``i``), no guard;
* **square + guard**: the same sum over the full square with the condition as the
  reduction's ``where`` (TE's way without domains): every point of the square runs its loop,
  the guard tested at each step;
* **square**: the full product, no condition (twice the work, for scale).

Times are medians of ``--repeat`` calls after one warm-up; the table gives each one's ratio to
the triangle. The values inside the triangle are checked equal before timing.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np


def _kernels(n: int):
    import tessel
    from tessel import te

    A = te.placeholder((n, n), name="A")

    def tri_body(i, j):
        k = te.reduce_axis((0, n), name="k")
        return te.sum(A[i, k] * A[j, k], axis=k)

    def guarded_body(i, j):
        k = te.reduce_axis((0, n), name="k")
        return te.sum(A[i, k] * A[j, k], axis=k, where=j <= i)

    out = {}
    for name, body, where in (("triangle", tri_body, lambda i, j: j <= i), ("square + guard", guarded_body, None),
                              ("square", tri_body, None)):
        L = te.compute((n, n), body, name="L", where=where)
        s = te.create_schedule(L.op)
        out[name] = tessel.build(s, [A, L], target="c")
    return out


def _time(f, args, repeat: int) -> float:
    f(*args)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run(n: int, repeat: int) -> str:
    kernels = _kernels(n)
    a = np.random.default_rng(0).uniform(-1, 1, (n, n)).astype("float32")
    tri = np.tril(np.ones((n, n), bool))
    outs = {}
    for name, f in kernels.items():
        out = np.zeros((n, n), "float32")
        f(a, out)
        outs[name] = out
    for name, out in outs.items():
        np.testing.assert_allclose(out[tri], outs["triangle"][tri], rtol=1e-4, atol=1e-4, err_msg=name)
    secs = {name: _time(f, [a, np.zeros((n, n), "float32")], repeat) for name, f in kernels.items()}
    base = secs["triangle"]
    lines = [f"# Declared domains: lower triangle of A @ A.T, n = {n} (C target, median of {repeat})", "",
             "| kernel | ms | time / triangle |", "|---|---:|---:|"]
    lines += [f"| {name} | {t * 1e3:.2f} | {t / base:.2f} |" for name, t in secs.items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=384)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--out", default=None, help="a folder to write domains.md into")
    args = p.parse_args(argv)
    text = run(args.n, args.repeat)
    print(text)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "domains.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
