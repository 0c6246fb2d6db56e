"""What Tiramisu's fusion commands buy on a blur: ``python -m benchmarks.poly_commands``.

    python -m benchmarks.poly_commands [--quick] [--repeat N] [--out results]

The 3x3 box blur as two stages (``bx`` along rows, ``by`` along columns of ``bx``), three
schedules, each built for the C target and checked against NumPy before it is timed:

* **unfused**: ``bx`` computed whole, then ``by`` (one full intermediate image written and read
  back: the memory traffic fusion removes);
* **after + shift**: ``by``'s row ``y`` runs two rows later, in the loop that computes ``bx``'s
  row ``y`` (rows are read while still in cache; the intermediate is still a full image);
* **after + shift + storage_fold**: the same, with ``bx`` in a circular buffer of three rows
  (the intermediate never leaves the cache).

Writes ``results/poly_commands.md``: the median of ``--repeat`` calls per schedule, and the
bytes of intermediate storage each allocates.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np


def _schedules(h: int, w: int):
    from tessel import te

    def blur():
        A = te.placeholder((h + 2, w + 2), name="A")
        bx = te.compute((h + 2, w), lambda y, x: (A[y, x] + A[y, x + 1] + A[y, x + 2]) / 3, name="bx")
        by = te.compute((h, w), lambda y, x: (bx[y, x] + bx[y + 1, x] + bx[y + 2, x]) / 3, name="by")
        return A, bx, by

    A, bx, by = blur()
    yield "unfused", te.create_schedule(by.op), [A, by], (h + 2) * w * 4
    for fold in (False, True):
        A, bx, by = blur()
        s = te.create_schedule(by.op)
        s[by].shift(by.op.axis[0], 2)
        s[by].after(s[bx], by.op.axis[0])
        if fold:
            s[bx].storage_fold(bx.op.axis[0], 3)
        yield ("after + shift + storage_fold" if fold else "after + shift"), s, [A, by], (3 if fold else h + 2) * w * 4


def run(h: int, w: int, repeat: int) -> list[tuple[str, float, int]]:
    import tessel

    a = np.random.default_rng(0).uniform(-1, 1, (h + 2, w + 2)).astype("float32")
    bxr = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / 3
    ref = (bxr[:-2] + bxr[1:-1] + bxr[2:]) / 3
    rows = []
    for name, s, args, scratch in _schedules(h, w):
        f = tessel.build(s, args, target="c")
        out = np.empty((h, w), "float32")
        f(a, out)
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5, err_msg=name)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            f(a, out)
            times.append(time.perf_counter() - t0)
        rows.append((name, statistics.median(times), scratch))
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a 512 x 512 image instead of 2048 x 2048")
    ap.add_argument("--repeat", type=int, default=21)
    ap.add_argument("--out", default="results")
    ns = ap.parse_args(argv)
    h = w = 512 if ns.quick else 2048
    rows = run(h, w, ns.repeat)
    lines = [f"# blur {h} x {w}, float32, C target (median of {ns.repeat} calls)", "",
             "| schedule | ms | intermediate storage (KiB) |", "| --- | ---: | ---: |"]
    lines += [f"| {name} | {t * 1e3:.3f} | {scratch // 1024} |" for name, t, scratch in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    out = Path(ns.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "poly_commands.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
