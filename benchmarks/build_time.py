"""``python -m benchmarks.build_time``: what a cold build costs, split into tessel's CPU and the C compiler's.

Each kernel is built into a fresh cache directory with the in-memory memo cleared, so nothing
is found from an earlier build: the build a tuner candidate pays. Printed per kernel: the wall
time, tessel's own CPU time (``time.process_time`` of this process: lowering, passes, code
generation) and the C compiler's (the CPU time of the child processes, ``RUSAGE_CHILDREN``),
the best of ``--repeat`` builds, and the size of the generated C. CPU time is what load on a
shared machine distorts least; nothing here is asserted.

    python -m benchmarks.build_time [--repeat 3] [--only NAME] [--profile NAME]

``--profile NAME`` runs one kernel's cold build under cProfile and prints the top functions
by cumulative and by own time instead of the table.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import resource
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import tessel
from tessel import te
from tessel.runtime.cache import clear_memory_cache


@dataclass
class Kernel:
    name: str
    build: Callable[[], object]   # a cold build, from the definition to the loaded kernel


def _fast_matmul(n: int) -> Callable[[], object]:
    from examples.fast_matmul import matmul

    def run():
        s, args = matmul(n)
        return tessel.build(s, args)
    return run




def _candidate() -> object:
    """A candidate of benchmarks/tune.py's template as the tuner builds it in its child process
    (its loop features from a lowering, then the build)."""
    from benchmarks.tune import matmul
    from tessel.tune.measure import _build_child
    from tessel.tune.task import Task

    task = Task(matmul, (256,))
    want = {"tile_i": 8, "tile_j": 32, "tile_k": 8}
    space = task.config_space
    for index in range(len(space)):
        cfg = space.get(index)
        sizes = {k: cfg[k].size[-1] for k in want}
        if sizes == want and cfg["parallel"].val and cfg["unroll_k"].anns[0] == "unroll":
            return _build_child(task, cfg, None)
    raise RuntimeError("the candidate's config is not in the template's space")


def _auto(definition: str, *sizes: int) -> Callable[[], object]:
    """``auto_schedule`` of a bare definition (the rules alone), then the build."""
    def run():
        from benchmarks import definitions
        from tessel.autosched import auto_schedule

        d = getattr(definitions, definition)(*sizes)
        s = auto_schedule(d.outputs, budget=0)
        return tessel.build(s, d.params + d.outputs)
    return run


def _example(module: str, fn: str, *sizes: int) -> Callable[[], object]:
    def run():
        import importlib

        s, args = getattr(importlib.import_module(f"examples.{module}"), fn)(*sizes)
        return tessel.build(s, args)
    return run


def _conv2d(kernel: int) -> Callable[[], object]:
    def run():
        from examples.fast_conv2d import conv2d

        s, args = conv2d(1, 64, 64, 56, 56, kernel=kernel)
        return tessel.build(s, args)
    return run


KERNELS = [
    Kernel("add 2^24 (examples/fast_streams)", _example("fast_streams", "add", 1 << 24)),
    Kernel("row sum 4096 (examples/fast_streams)", _example("fast_streams", "row_sum", 4096, 4096)),
    Kernel("softmax 4096 (examples/fast_rows)", _example("fast_rows", "softmax", 4096, 4096)),
    Kernel("layernorm 4096 (examples/fast_rows)", _example("fast_rows", "layernorm", 4096, 4096)),
    Kernel("argmax 4096 (examples/fast_rows)", _example("fast_rows", "argmax", 4096, 4096)),
    Kernel("blur 4096 (examples/fast_blur)", _example("fast_blur", "blur", 4096, 4096)),
    Kernel("matmul 512 (examples/fast_matmul)", _fast_matmul(512)),
    Kernel("matmul 1024 (examples/fast_matmul)", _fast_matmul(1024)),
    Kernel("matmul 2048 (examples/fast_matmul)", _fast_matmul(2048)),
    Kernel("matmul 1000 (examples/fast_matmul)", _fast_matmul(1000)),
    Kernel("conv2d 64->64 56x56 (examples/fast_conv2d)", _conv2d(3)),
    Kernel("conv2d 1x1 64->64 56x56 (examples/fast_conv2d)", _conv2d(1)),
    Kernel("conv2d depthwise 64 56x56 (examples/fast_conv2d)", _example("fast_conv2d", "depthwise", 1, 64, 56, 56)),
    Kernel("tuner candidate (benchmarks/tune, 256)", _candidate),
    Kernel("auto_schedule matmul 1024, budget 0", _auto("matmul", 1024)),
    Kernel("auto_schedule conv2d 3x3 64 56x56, budget 0", _auto("conv2d", 64, 64, 56, 56)),
    Kernel("auto_schedule layernorm 4096, budget 0", _auto("layernorm", 4096, 4096)),
]


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


@contextmanager
def _fresh() -> Iterator[str]:
    """A new cache directory, and nothing remembered in memory (the generated code, the
    schedules found legal, the analyses); afterwards the directory is removed and the caller's
    ``TESSEL_CACHE_DIR`` given back (a later build must not look in a directory that is gone)."""
    from tessel.driver import forget_lowerings
    from tessel.poly.analysis import forget

    before = os.environ.get("TESSEL_CACHE_DIR")
    d = tempfile.mkdtemp(prefix="tessel-build-time-")
    os.environ["TESSEL_CACHE_DIR"] = d
    clear_memory_cache()
    forget()
    forget_lowerings()
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)
        if before is None:
            os.environ.pop("TESSEL_CACHE_DIR", None)
        else:
            os.environ["TESSEL_CACHE_DIR"] = before


def cold(k: Kernel) -> tuple[float, float, float]:
    """One cold build: (wall, tessel CPU, compiler CPU) in seconds."""
    with _fresh():
        w0, p0, c0 = time.perf_counter(), time.process_time(), _children_cpu()
        k.build()
        return time.perf_counter() - w0, time.process_time() - p0, _children_cpu() - c0


def _warm_up() -> None:
    """Imports, the compiler's probes and the first use of isl, once, outside every measurement
    (a tuner's candidates are built by a process that has built before): a small kernel with a
    reduction, a cached temporary and parallel, vector and unroll annotations."""
    A = te.placeholder((16, 16), name="A")
    k = te.reduce_axis((0, 16), name="k")
    B = te.compute((16, 16), lambda i, j: te.sum(A[i, k] * A[k, j], axis=k), name="B")
    s = te.create_schedule(B.op)
    BL = s.cache_write(B, "local")
    io, _ = s[B].split(B.op.axis[0], factor=4)
    s[B].parallel(io)
    s[B].vectorize(B.op.axis[1])
    s[BL].compute_at(s[B], io)
    s[BL].unroll(s[BL].op.axis[0])
    with _fresh():
        tessel.build(s, [A, B])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default=None, help="kernels whose name contains this text")
    ap.add_argument("--profile", default=None, help="profile the kernel whose name contains this text")
    ap.add_argument("--lines", type=int, default=35)
    args = ap.parse_args(argv)
    _warm_up()
    chosen = [k for k in KERNELS if (args.profile or args.only or "") in k.name]
    if args.profile:
        for k in chosen[:1]:
            cold(k)  # imports of the kernel's own modules
            prof = cProfile.Profile()
            with _fresh():
                prof.enable()
                k.build()
                prof.disable()
            for key in ("cumulative", "tottime"):
                pstats.Stats(prof).sort_stats(key).print_stats(args.lines)
        return 0
    print(f"cold builds, best of {args.repeat} (load: {os.getloadavg()[0]:.2f})")
    print(f"{'kernel':<45} {'wall s':>7} {'tessel CPU s':>13} {'cc CPU s':>9}")
    walls: list[float] = []
    for k in chosen:
        runs = [cold(k) for _ in range(args.repeat)]
        wall = min(r[0] for r in runs)
        ours = min(r[1] for r in runs)
        cc = min(r[2] for r in runs)
        print(f"{k.name:<45} {wall:7.3f} {ours:13.3f} {cc:9.3f}", flush=True)
        walls.append(wall)
    if walls:
        print(f"median wall {statistics.median(walls):.3f} s, slowest {max(walls):.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
