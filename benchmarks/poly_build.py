"""What the polyhedral analysis (seed 004) costs a build: ``python -m benchmarks.poly_build``.

    python -m benchmarks.poly_build [--quick] [--out results]

For each benchmark kernel (tessel's schedule from ``examples/``) it measures, in one process:

* **cold build**: ``tessel.build`` into a fresh cache directory, with the analysis as every
  build runs it (the exact out-of-bounds check always; the model and the dependences of the
  annotated loops when a loop is parallel, vectorized or unrolled), and the seconds of it spent
  in the analysis: what the analysis added to the build;
* **analysis**: the same analysis alone, on a fresh copy of the schedule with nothing cached
  (the exact bounds check, then the model and every dependence), and its share of the build;
* **cached build**: the same program built again from fresh objects (what a second run of a
  program does: the generated code comes from the disk cache), and whether that build ran the
  analysis again (it must not: verdicts are shared by the schedule's content).

Writes ``results/poly_build.md``. Times are medians of ``--repeat`` runs (default 3).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from .kernels import cases


def _analysis_alone(case) -> tuple[float, int]:
    """Seconds of the exact bounds check + model + dependences on fresh objects; dependences found."""
    from tessel.poly import analysis as A

    s, _ = case.tessel()
    A._CLEAN.clear()
    t0 = time.perf_counter()
    found = A.analysis(s)
    found.check_bounds()
    deps = found.dependences
    return time.perf_counter() - t0, len(deps)


def _builds(case) -> tuple[float, float, float, bool]:
    import tessel
    from tessel.poly import analysis as A
    from tessel.runtime.cache import clear_memory_cache

    os.environ["TESSEL_CACHE_DIR"] = tempfile.mkdtemp(prefix="tessel-poly-bench-")
    clear_memory_cache()
    A._CLEAN.clear()
    s, args = case.tessel()
    spent = sum(A.SECONDS.values())
    t0 = time.perf_counter()
    tessel.build(s, args)
    cold = time.perf_counter() - t0
    added = sum(A.SECONDS.values()) - spent
    clear_memory_cache()
    before = dict(A.RUNS)
    s, args = case.tessel()
    t0 = time.perf_counter()
    tessel.build(s, args)
    cached = time.perf_counter() - t0
    return cold, added, cached, A.RUNS != before


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the small sizes")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default="results")
    opts = ap.parse_args(argv)
    rows = ["| kernel | size | threads | cold build (ms) | of which analysis (ms) | share | full analysis "
            "alone (ms) | dependences | cached build (ms) | analysis in cached build |", "|" + "---|" * 10]
    for case in cases(opts.quick):
        colds, added, caches, alone, again = [], [], [], [], False
        ndeps = 0
        for _ in range(opts.repeat):
            cold, spent, cached, ran = _builds(case)
            colds.append(cold)
            added.append(spent)
            caches.append(cached)
            again = again or ran
            t, ndeps = _analysis_alone(case)
            alone.append(t)
        c, d, a, k = (statistics.median(x) for x in (colds, added, alone, caches))
        rows.append(f"| {case.kernel} | {case.size} | {case.threads or 'all'} | {c * 1e3:.0f} | {d * 1e3:.1f} "
                    f"| {100 * d / c:.1f}% | {a * 1e3:.1f} | {ndeps} | {k * 1e3:.1f} | {'yes' if again else 'no'} |")
        print(rows[-1], flush=True)
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "poly_build.md").write_text("\n".join(rows) + "\n")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
