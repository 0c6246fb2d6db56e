"""What seed 004's commands buy: ``python -m benchmarks.poly_commands``.

    python -m benchmarks.poly_commands [--quick] [--repeat N] [--out results]

Three rows, each a ratio of two tessel kernels computing the same values, measured in one
process in interleaved blocks (``benchmarks.timing.rounds``: every variant in every round,
the order reversed each round, untimed calls for 50 ms first), medians of the timed calls:

* **blur, fused by ``after`` + ``shift``** vs the two stages as separate nests: the vertical
  pass reads rows of the horizontal pass two rows after they are written, while they are still
  in cache, instead of streaming the whole intermediate image back from memory; the shift is
  the one ``tessel.check.legalize_fusion`` computes (the intermediate is still a full image). A
  third variant also folds the intermediate to a circular buffer of 3 rows (``storage_fold``;
  ``(n + 2) * n * 4`` bytes of scratch become ``3 * n * 4``), so it never leaves the cache.
* **wavefront recurrence** ``h[i, j] = f(h[i-1, j], h[i, j-1])`` in 64 x 64 tiles, the tile
  loops skewed by ``tessel.check.wavefront`` with the inner tile loop parallel, on 2 threads vs 1
  (the same kernel; on a loaded machine the second thread may cost more than it brings).
* **triangular kernel** (``where=j < i``: loops over the triangle only) vs the same kernel over
  the full square with the condition as a guard in every iteration.

Every variant's output is checked against NumPy before anything is timed. Writes
``results/poly_commands.md``.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .timing import rounds


def _blur(h: int, w: int, variant: str):
    import tessel
    from tessel import te

    A = te.placeholder((h + 2, w + 2), name="A")
    bx = te.compute((h + 2, w), lambda i, j: (A[i, j] + A[i, j + 1] + A[i, j + 2]) / 3, name="bx")
    by = te.compute((h, w), lambda i, j: (bx[i, j] + bx[i + 1, j] + bx[i + 2, j]) / 3, name="by")
    s = te.create_schedule(by.op)
    if variant != "unfused":
        tessel.check.legalize_fusion(s, by, bx, by.op.axis[1]).apply(s)
    if variant == "fused+fold":
        s[bx].storage_fold(bx.op.axis[0], 3)  # rows i .. i + 2 are live at once
    f = tessel.build(s, [A, by])
    a = np.random.default_rng(0).random((h + 2, w + 2), dtype=np.float32)
    out = np.empty((h, w), np.float32)
    x = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / 3
    want = (x[:-2] + x[1:-1] + x[2:]) / 3
    return (lambda: f(a, out)), (lambda: out), want


def run(h: int, w: int, repeat: int) -> list[tuple[str, float, int]]:
    """The blur's three schedules on an ``h x w`` image: (name, median seconds, bytes of
    intermediate storage), each checked against NumPy first."""
    out = []
    for name, variant, scratch in (("unfused", "unfused", (h + 2) * w * 4), ("after + shift", "fused", (h + 2) * w * 4),
                                   ("after + shift + storage_fold", "fused+fold", 3 * w * 4)):
        call, result, want = _blur(h, w, variant)
        call()
        np.testing.assert_allclose(result(), want, rtol=1e-5, atol=1e-6, err_msg=name)
        times, _ = rounds({name: (call,)}, max(repeat, 1), None)
        out.append((name, statistics.median(times[name]), scratch))
    return out


def _wavefront(n: int, threads: int):
    import tessel
    from tessel import te

    X = te.placeholder((n, n), name="X")

    def step(h, i, j):
        return te.if_then_else(te.all(i > 0, j > 0), (h[i - 1, j] + h[i, j - 1]) * 0.5 + X[i, j] * 0.25, X[i, j])

    h = te.recurrence((n, n), [te.define(step)], name="h")
    s = te.create_schedule(h.op)
    # a wavefront of 64 x 64 tiles: each parallel iteration is a whole tile, not one element
    io, ii = s[h].split(h.op.axis[0], factor=64)
    jo, ji = s[h].split(h.op.axis[1], factor=64)
    s[h].reorder(io, jo, ii, ji)
    tessel.check.wavefront(s, h, io, jo).apply(s)
    f = tessel.build(s, [X, h])
    x = np.random.default_rng(1).random((n, n), dtype=np.float32)
    out = np.empty((n, n), np.float32)
    ref = x.astype(np.float64)
    for i in range(1, n):  # row by row: each row is a prefix recurrence along j
        row = ref[i]
        up = ref[i - 1]
        for j in range(1, n):
            row[j] = (up[j] + row[j - 1]) * 0.5 + x[i, j] * 0.25
    return (lambda: f(x, out, num_threads=threads)), (lambda: out), ref.astype(np.float32)


def _triangle(n: int, guarded: bool):
    import tessel
    from tessel import te

    A = te.placeholder((n, n), name="A")

    def body(i, j):
        return te.exp(A[i, j]) * 0.5 + A[j, i]

    if guarded:
        T = te.compute((n, n), lambda i, j: te.if_then_else(j < i, body(i, j), 0.0), name="T")
    else:
        T = te.compute((n, n), body, name="T", where=lambda i, j: j < i)
    s = te.create_schedule(T.op)
    s[T].parallel(T.op.axis[0])
    f = tessel.build(s, [A, T])
    a = np.random.default_rng(2).random((n, n), dtype=np.float32)
    out = np.zeros((n, n), np.float32)
    want = np.tril(np.exp(a) * 0.5 + a.T, -1)
    return (lambda: f(a, out)), (lambda: out), want


def _row(name: str, size: str, variants: dict[str, Callable], repeat: int, what: str) -> str:
    runners = {}
    for label, make in variants.items():
        run, result, want = make()
        run()
        np.testing.assert_allclose(result(), want, rtol=1e-4, atol=1e-4, err_msg=f"{name}: {label}")
        runners[label] = (run,)
    times, _ = rounds(runners, repeat, None)
    med = {k: statistics.median(v) for k, v in times.items()}
    base, *others = list(variants)
    cells = [f"{k}: {med[k] * 1e3:.2f} ms" for k in variants]
    ratios = [f"{base} / {k} = {med[base] / med[k]:.2f}x" for k in others]
    return f"| {name} | {size} | {'; '.join(cells)} | {'; '.join(ratios)} | {what} |"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes")
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--out", default="results")
    opts = ap.parse_args(argv)
    n_blur = 512 if opts.quick else 3072
    n_wave = 256 if opts.quick else 2048
    n_tri = 512 if opts.quick else 3072
    rows = ["| kernel | size | median per call | ratio | what it shows |", "|---|---|---|---|---|"]
    rows.append(_row("blur 3x3 (two passes)", f"{n_blur}^2 f32", {
        "unfused": lambda: _blur(n_blur, n_blur, "unfused"),
        "after+shift": lambda: _blur(n_blur, n_blur, "fused"),
        "after+shift+fold": lambda: _blur(n_blur, n_blur, "fused+fold"),
    }, opts.repeat, "fusion without recomputation: the intermediate read back while in cache"))
    rows.append(_row("wavefront recurrence", f"{n_wave}^2 f32", {
        "1 thread": lambda: _wavefront(n_wave, 1),
        "2 threads": lambda: _wavefront(n_wave, 2),
    }, opts.repeat, "tiles skewed (1, 1) by tessel.check.wavefront, inner tile loop parallel"))
    rows.append(_row("triangle j < i", f"{n_tri}^2 f32", {
        "full square + guard": lambda: _triangle(n_tri, True),
        "where= (exact loops)": lambda: _triangle(n_tri, False),
    }, opts.repeat, "half the iterations, no test per iteration"))
    text = "\n".join(rows)
    print(text)
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "poly_commands.md").write_text("# seed 004's commands: what they buy\n\n" + text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
