"""NumPy's BLAS and tessel's kernels on one thread pool: ``tessel.runtime.share_blas_threads()``.

A program that alternates a tessel kernel with NumPy's own matmul runs two thread pools on the
same cores: OpenBLAS's workers keep spinning for ~0.1 s after each call (its
``OPENBLAS_THREAD_TIMEOUT``), and the kernel's OpenMP threads then get a core only between
their yields. Measured on a 2-core Zen 4 (matmul 1024, 2 threads): alone 399 GFLOP/s, right
after each NumPy matmul 114 (0.29x); with OpenBLAS told to sleep at once
(``OPENBLAS_THREAD_TIMEOUT=4`` in the environment before NumPy loads) 384, with tessel's own
pool passive (``OMP_WAIT_POLICY=passive``) 198 and its kernel alone slower.

The environment is read once, when NumPy loads OpenBLAS, usually before tessel is imported.
OpenBLAS (0.3.27 on) has a control of its own that works at any time: a callback that runs its
parallel jobs instead of its pool. This module gives it one that runs them on OpenMP's pool,
the one tessel's kernels use: one set of threads, so nothing spins against anything (same
machine: 0.83x in that loop, and 0.98-1.08x of the kernel's speed alone in `python -m
benchmarks --only matmul --share-blas-threads`; NumPy's products bit for bit the same). It
changes how NumPy runs, so it is the user's choice (``share_blas_threads()``), undone by
``share_blas_threads(False)``, not a default. OpenMP's pool does not survive ``fork`` as
OpenBLAS's does (a process forked after a parallel region that uses OpenMP again may hang), so
the callback is taken off around every ``fork`` and a child's NumPy runs on OpenBLAS's own
pool, as it would have. Without OpenBLAS, or with one too old, it says so and does nothing.
"""

from __future__ import annotations

import ctypes
import os
import tempfile
import warnings
from pathlib import Path

from ..errors import TesselWarning
from .compiler import compile_shared, find_compiler

#: the setter's names: OpenBLAS's own, and the prefixed ones of the wheel NumPy bundles
SETTERS = ("openblas_set_threads_callback_function", "scipy_openblas_set_threads_callback_function64_",
           "scipy_openblas_set_threads_callback_function")

#: OpenBLAS's callback: run ``numjobs`` jobs (``jobdata``, ``size`` bytes apart) through ``dojob``,
#: all of them before returning when ``sync``; here on OpenMP's pool, one job per thread
SOURCE = """
#include <stddef.h>
typedef void (*tsl_dojob)(int thread_num, void *jobdata, int dojob_data);
void tsl_blas_jobs(int sync, tsl_dojob dojob, int numjobs, size_t size, void *jobdata, int dojob_data) {
  (void)sync;  /* an OpenMP loop returns when every job is done: always synchronous */
#pragma omp parallel for num_threads(numjobs) schedule(static, 1)
  for (int i = 0; i < numjobs; ++i) dojob(i, (char *)jobdata + (size_t)i * size, dojob_data);
}
"""

_state: dict[str, object] = {}


def _openblas() -> list[tuple[ctypes.CDLL, object]]:
    """The OpenBLAS libraries this process has loaded, with their callback setter."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return []
    paths = {line.split(None, 5)[-1] for line in maps.splitlines() if "openblas" in line.lower() and "/" in line}
    found = []
    for path in sorted(p for p in paths if p.startswith("/")):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        setter = next((getattr(lib, n) for n in SETTERS if hasattr(lib, n)), None)
        if setter is not None:
            found.append((lib, setter))
    return found


def _callback() -> ctypes.CDLL | None:
    """The callback, compiled once per process with OpenMP (None: the compiler has none)."""
    if "lib" not in _state:
        comp = find_compiler()
        if not comp.supports("openmp"):
            _state["lib"] = None
        else:
            with tempfile.TemporaryDirectory(prefix="tessel-blas-") as tmp:
                so = os.path.join(tmp, "blas_jobs.so")
                compile_shared(comp, SOURCE, so, [*comp.flags(openmp=True)], "blas_jobs")
                _state["lib"] = ctypes.CDLL(so)  # loaded: the file may go
    return _state["lib"]  # type: ignore[return-value]


def share_blas_threads(on: bool = True) -> bool:
    """Run NumPy's OpenBLAS jobs on the OpenMP pool tessel's kernels use (``on``), or on
    OpenBLAS's own pool again (``False``). Returns whether it took effect: False, with a
    warning saying why, when no OpenBLAS with the control is loaded (import NumPy first, and
    use OpenBLAS 0.3.27 or later) or the C compiler has no OpenMP."""
    libs = _openblas()
    if not libs:
        warnings.warn("share_blas_threads: no OpenBLAS with a threads callback is loaded in this process "
                      "(NumPy must be imported first, with OpenBLAS 0.3.27 or later); nothing changed",
                      TesselWarning, stacklevel=2)
        return False
    target = None
    if on:
        cb = _callback()
        if cb is None:
            warnings.warn("share_blas_threads: the C compiler has no OpenMP, so there is no pool to share; "
                          "nothing changed", TesselWarning, stacklevel=2)
            return False
        target = ctypes.cast(cb.tsl_blas_jobs, ctypes.c_void_p)
    _set(libs, target)
    _state["libs"], _state["on"] = libs, target
    if not _state.get("fork_hooks"):  # a child gets OpenBLAS's own pool, which survives fork
        os.register_at_fork(before=lambda: _set(_state["libs"], None),
                            after_in_parent=lambda: _set(_state["libs"], _state["on"]))
        _state["fork_hooks"] = True
    return True


def _set(libs: list[tuple[ctypes.CDLL, object]], target: object) -> None:
    for _, setter in libs:
        setter.argtypes = [ctypes.c_void_p]
        setter.restype = None
        setter(target)


__all__ = ["share_blas_threads"]
