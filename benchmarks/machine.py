"""What this machine can do at best: an FMA peak and a copy bandwidth, measured, not looked up.

The FMA microkernel keeps as many independent vector accumulators as the target's register
file holds beside its two operands (``tessel.target.tiles.fma_chains``: 14 on AVX2, 30 on
AVX-512), updated with ``acc = acc * x + y`` in a loop: enough chains that the pipes never
wait for a result, and not one more, because a chain that does not fit in a register spills
to the stack and the loop then measures loads and stores (16 chains on AVX2's 16 registers
measured 113 GFLOP/s where 14 measure about 197). It is compiled with the very flags
tessel's kernels get and run on one thread and on every thread; the best of several runs is
the peak, and no kernel may beat it (the table flags one that does: a mistake in the
harness). The same loop, run after each of tessel's blocks of calls (:func:`fma_yardstick`),
gives each compute-bound kernel the peak of its own rounds, its "% of peak". The copy is
tessel's own ``C[i] = A[i]`` on 2^24 floats (64 MiB each way), beside NumPy's ``copyto``;
bandwidth counts the bytes read plus the bytes written.
"""

from __future__ import annotations

import ctypes
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

ITERS = 1 << 22
YARD_ITERS = 1 << 20  # a quarter of the peak run: the yardstick is timed in every round


@dataclass
class Machine:
    cores: int
    vector_bytes: int
    vector_registers: int
    fma_chains: int
    caches: tuple[int, int, int]
    fma_gflops_1t: float
    fma_gflops_all: float
    copy_gbs_1t: float
    copy_gbs_all: float
    numpy_copy_gbs: float


def fma_source(target) -> str:
    """C for the peak loop on ``target``: one vector FMA per chain and step."""
    from tessel.target.tiles import fma_chains

    chains, lanes = fma_chains(target), target.vector_lanes("float32")
    # distinct starting values: identical chains would be merged by the compiler
    accs = ", ".join(f"a{k} = x + {k + 1}.0f * y" for k in range(chains))
    body = " ".join(f"a{k} = a{k} * x + y;" for k in range(chains))
    total = " + ".join(f"a{k}" for k in range(chains))
    return f"""
#include <stdint.h>
#ifdef _OPENMP
#include <omp.h>
#endif
typedef float vf __attribute__((vector_size({lanes * 4})));
static float one_thread(int64_t iters, float seed) {{
  vf x, y;
  for (int l = 0; l < {lanes}; ++l) {{ x[l] = 1.0f - seed * 1e-7f * l; y[l] = seed * 1e-9f; }}
  vf {accs};
  for (int64_t i = 0; i < iters; ++i) {{
    __asm__ volatile("" : "+v"(x));  /* keep the loop: x is unknown to the compiler each time */
    {body}
  }}
  vf s = {total};
  float r = 0.0f;
  for (int l = 0; l < {lanes}; ++l) r += s[l];
  return r;
}}
float tsl_fma_peak(int64_t iters, int32_t threads) {{
  float out = 0.0f;
#pragma omp parallel num_threads(threads) reduction(+: out)
  out += one_thread(iters, 1.0f);
  return out;
}}
"""


_PEAK_LOOPS: dict[str, object] = {}  # compiled peak loops by their C source: one compile per process


def _peak_loop(target) -> Callable[[int, int], float]:
    """The compiled peak loop for ``target`` (``tsl_fma_peak(iters, threads)``), compiled once."""
    from tessel.runtime.compiler import compile_shared, find_compiler

    src = fma_source(target)
    if src not in _PEAK_LOOPS:
        comp = find_compiler()
        with tempfile.TemporaryDirectory(prefix="tessel-peak-") as tmp:  # the loaded library outlives its file
            path = os.path.join(tmp, "peak.so")
            compile_shared(comp, src, path, comp.flags(openmp=True), "fma_peak")
            fn = ctypes.CDLL(path).tsl_fma_peak
        fn.argtypes = [ctypes.c_int64, ctypes.c_int32]
        fn.restype = ctypes.c_float
        _PEAK_LOOPS[src] = fn
    return _PEAK_LOOPS[src]


def _usable_cores() -> int:
    """The cores this process may run on: OpenMP's default thread count (the CPU affinity
    mask, which ``taskset`` or a container narrows; not ``os.cpu_count()``)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _loop_flops(target, iters: int, threads: int) -> float:
    from tessel.target.tiles import fma_chains

    return 2.0 * iters * fma_chains(target) * target.vector_lanes("float32") * threads


def fma_peak(threads: int, target) -> float:
    """GFLOP/s of fused multiply-adds on ``threads`` threads (all of them busy) on ``target``."""
    fn = _peak_loop(target)
    fn(ITERS // 16, threads)  # wake the cores and the thread pool
    times = []
    for _ in range(15):
        t0 = time.perf_counter()
        fn(ITERS, threads)
        times.append(time.perf_counter() - t0)
    return _loop_flops(target, ITERS, threads) / min(times) / 1e9  # the best run: what the machine *can* do


def fma_yardstick(threads: int | None, target=None) -> tuple[Callable[[], float], float]:
    """The peak loop as a contender's yardstick: a call of it (a quarter of the peak run's
    steps on each thread) on ``threads`` threads (None: as many as a kernel gets by default,
    the cores this process may run on), and the flops it does. Timed right after tessel's blocks, it
    gives the peak the cores delivered in the same rounds as the kernel: on a shared machine
    the peak itself moved from 102 to 204 GFLOP/s between blocks a second apart (another
    tenant on the cores), so a kernel's share of a peak taken minutes earlier measured the
    neighbours as much as the kernel."""
    from tessel.target import host

    target = target or host()
    nt = threads or _usable_cores()
    fn = _peak_loop(target)
    return (lambda: fn(YARD_ITERS, nt)), _loop_flops(target, YARD_ITERS, nt)


def copy_bandwidth(threads: int, n: int = 1 << 24, repeat: int = 9) -> float:
    """GB/s (read + write) of tessel's copy kernel."""
    import tessel
    from examples.fast_streams import copy

    s, args = copy(n)
    f = tessel.build(s, args)
    a = np.random.default_rng(0).standard_normal(n, "float32")
    out = np.empty_like(a)
    f(a, out, num_threads=threads)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f(a, out, num_threads=threads)
        times.append(time.perf_counter() - t0)
    return 2 * a.nbytes / float(np.median(times)) / 1e9


def numpy_copy_bandwidth(n: int = 1 << 24, repeat: int = 9) -> float:
    a = np.random.default_rng(0).standard_normal(n, "float32")
    out = np.empty_like(a)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        np.copyto(out, a)
        times.append(time.perf_counter() - t0)
    return 2 * a.nbytes / float(np.median(times)) / 1e9


def measure(quick: bool = False, peak_only: bool = False) -> Machine:
    """The machine's peaks; ``peak_only`` skips the bandwidths (reported as 0)."""
    from tessel.target import host
    from tessel.target.tiles import fma_chains

    cores = _usable_cores()
    t = host()
    n = 1 << (22 if quick else 24)
    return Machine(
        cores=cores, vector_bytes=t.vector_bytes, vector_registers=t.registers, fma_chains=fma_chains(t),
        caches=(t.l1d_bytes, t.l2_bytes, t.l3_bytes),
        fma_gflops_1t=fma_peak(1, t), fma_gflops_all=fma_peak(cores, t),
        copy_gbs_1t=0.0 if peak_only else copy_bandwidth(1, n),
        copy_gbs_all=0.0 if peak_only else copy_bandwidth(cores, n),
        numpy_copy_gbs=0.0 if peak_only else numpy_copy_bandwidth(n),
    )


def best_of(a: Machine, b: Machine) -> Machine:
    """Each peak the higher of two measurements (a shared machine only ever slows one down)."""
    return replace(a, **{k: max(getattr(a, k), getattr(b, k)) for k in
                         ("fma_gflops_1t", "fma_gflops_all", "copy_gbs_1t", "copy_gbs_all", "numpy_copy_gbs")})
