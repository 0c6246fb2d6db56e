"""What this machine can do at best: an FMA peak and a copy bandwidth, measured, not looked up.

The FMA microkernel keeps ``CHAINS`` independent vector accumulators (more than the FMA
latency times the number of FMA pipes, so the pipes never wait) updated with ``acc = acc *
x + y`` in a loop; it is compiled with the very flags tessel's kernels get and run on one
thread and on every thread. The copy is tessel's own ``C[i] = A[i]`` on 2^24 floats (64 MiB
each way), beside NumPy's ``copyto``; bandwidth counts the bytes read plus the bytes written.
"""

from __future__ import annotations

import ctypes
import os
import tempfile
import time
from dataclasses import dataclass

import numpy as np

CHAINS = 16
ITERS = 1 << 22


@dataclass
class Machine:
    cores: int
    vector_bytes: int
    fma_gflops_1t: float
    fma_gflops_all: float
    copy_gbs_1t: float
    copy_gbs_all: float
    numpy_copy_gbs: float


def _fma_source(lanes: int) -> str:
    # distinct starting values: identical chains would be merged by the compiler
    accs = ", ".join(f"a{k} = x + {k + 1}.0f * y" for k in range(CHAINS))
    body = " ".join(f"a{k} = a{k} * x + y;" for k in range(CHAINS))
    total = " + ".join(f"a{k}" for k in range(CHAINS))
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


def fma_peak(threads: int, vector_bytes: int) -> float:
    """GFLOP/s of fused multiply-adds on ``threads`` threads (all of them busy)."""
    from tessel.runtime.compiler import compile_shared, find_compiler

    comp = find_compiler()
    lanes = vector_bytes // 4
    with tempfile.TemporaryDirectory(prefix="tessel-peak-") as tmp:
        path = os.path.join(tmp, "peak.so")
        compile_shared(comp, _fma_source(lanes), path, comp.flags(openmp=True), "fma_peak")
        lib = ctypes.CDLL(path)
        fn = lib.tsl_fma_peak
        fn.argtypes = [ctypes.c_int64, ctypes.c_int32]
        fn.restype = ctypes.c_float
        fn(ITERS // 16, threads)  # wake the cores and the thread pool
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            fn(ITERS, threads)
            times.append(time.perf_counter() - t0)
    flops = 2.0 * ITERS * CHAINS * lanes * threads
    return flops / min(times) / 1e9  # the best run: the peak is what the machine *can* do


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


def measure(quick: bool = False) -> Machine:
    from tessel.target import host

    cores = os.cpu_count() or 1
    vb = host().vector_bytes
    n = 1 << (22 if quick else 24)
    return Machine(
        cores=cores, vector_bytes=vb,
        fma_gflops_1t=fma_peak(1, vb), fma_gflops_all=fma_peak(cores, vb),
        copy_gbs_1t=copy_bandwidth(1, n), copy_gbs_all=copy_bandwidth(cores, n),
        numpy_copy_gbs=numpy_copy_bandwidth(n),
    )
