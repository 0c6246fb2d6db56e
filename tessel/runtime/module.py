"""Callable kernels: one face for every target.

A :class:`Kernel` is what ``tessel.build`` returns. Whatever runs underneath (a shared object
loaded with ctypes, or generated Python), a call first goes through the kernel's
:class:`~tessel.runtime.args.ArgSpec`, so a bad array is refused with the same
:class:`~tessel.errors.ArgumentError` on every target, before any code reads memory.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable

import numpy as np

from ..errors import ArgumentError, KernelRuntimeError
from ..ir import stmt as S
from .args import ArgSpec
from .cache import c_function
from .compiler import find_compiler
from .export import export_library


def _thread_count(value, what: str) -> int:
    """A thread count as given by a user (0 or None: the default, all cores)."""
    if value is None:
        return 0
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ArgumentError(f"{what} must be a whole number of threads, got {value!r}") from None
    if n < 0 or (n != value and not isinstance(value, str)):
        raise ArgumentError(f"{what} must be a whole number of threads >= 0 (0: all cores), got {value!r}")
    return n


def env_num_threads() -> int:
    """``$TESSEL_NUM_THREADS`` (read at every call, so a change takes effect at once); 0 if unset."""
    raw = os.environ.get("TESSEL_NUM_THREADS", "").strip()
    return _thread_count(raw, "$TESSEL_NUM_THREADS") if raw else 0


class Kernel:
    """A compiled PrimFunc. ``f(*arrays)`` runs it; outputs are written in place.

    Parallel loops use, in this order of precedence: ``f(..., num_threads=n)``, the count set by
    ``f.set_num_threads(n)``, ``$TESSEL_NUM_THREADS``, and otherwise every core (OpenMP's
    default, which ``$OMP_NUM_THREADS`` also sets). A kernel without parallel loops ignores them.
    """

    target = "?"
    #: whether the kernel's code is a shared library another process can load (the C target's)
    exportable = False
    threaded = True  # whether a call's thread count reaches the code (read from the environment if not given)

    def __init__(self, func: S.PrimFunc, source: str, spec: ArgSpec, finish: Callable | None = None):
        self._func = func
        self._finish = finish
        self.source = source
        self.name = func.name
        self._spec = spec
        self._num_threads = 0

    @property
    def func(self) -> S.PrimFunc:
        """The lowered kernel the code was generated from (completed on first use when the code
        came from the memo of generated code)."""
        if self._finish is not None:
            self._func, self._finish = self._finish(), None
        return self._func

    def set_num_threads(self, n: int | None) -> None:
        """Threads for this kernel's parallel loops from now on (0 or None: back to the default)."""
        self._num_threads = _thread_count(n, "set_num_threads(n)")

    @property
    def num_threads(self) -> int:
        """The thread count a call without ``num_threads=`` asks for (0: all cores)."""
        return self._num_threads or env_num_threads()

    @property
    def signature(self) -> str:
        """The parameters as ``name: dtype(shape)``, as argument errors quote them."""
        return self._spec.signature

    def __call__(self, *args: np.ndarray, num_threads: int | None = None) -> None:
        ptrs, sizes = self._spec.check(args)
        threads = _thread_count(num_threads, "num_threads") if num_threads is not None else 0
        if not threads and self.threaded:  # $TESSEL_NUM_THREADS only matters to parallel loops
            threads = self.num_threads
        self._run(self._spec.arrays(args), ptrs, sizes, threads)

    def _run(self, arrays: tuple[np.ndarray, ...], ptrs: list[int], sizes: list[int], threads: int) -> None:
        raise NotImplementedError

    def export_library(self, path) -> None:
        """Save the kernel as a shared library that ``tessel.runtime.load_module`` loads in any
        process (see :mod:`tessel.runtime.export`); the C target only."""
        export_library(self, path)

    def __repr__(self) -> str:
        note = getattr(self, "serial_note", None)
        extra = f" ({note})" if note else ""
        return f"<tessel.Kernel {self.name}({self._spec.signature}) target={self.target}{extra}>"


class PythonKernel(Kernel):
    """The reference target: generated Python over flat NumPy views."""

    target = "python"
    threaded = False  # one thread, whatever is asked

    def __init__(self, func: S.PrimFunc, source: str, spec: ArgSpec, impl: Callable, size_types: list):
        super().__init__(func, source, spec)
        self._impl = impl
        self._size_types = size_types

    def _run(self, arrays: tuple[np.ndarray, ...], ptrs: list[int], sizes: list[int], threads: int) -> None:
        flat = [a.reshape(-1) for a in arrays]
        typed = [t(v) for t, v in zip(self._size_types, sizes)]
        with np.errstate(all="ignore"):  # wraparound and inf/nan are the IR's semantics, not accidents
            self._impl(*flat, *typed)


class CKernel(Kernel):
    """A function in a shared object, called through ctypes with precomputed argument types."""

    target = "c"
    exportable = True

    def __init__(self, func: S.PrimFunc, source: str, spec: ArgSpec, lib: ctypes.CDLL, symbol: str,
                 lib_path: str, build_time_s: float, cache_hit: bool, parallel: bool = False,
                 finish: Callable | None = None, serial_note: str | bool | None = True, externs=None):
        super().__init__(func, source, spec, finish)
        self.lib_path = lib_path
        self.build_time_s = build_time_s
        self.cache_hit = cache_hit
        self.parallel = parallel  # the C function then takes the thread count as a last argument
        self.threaded = parallel
        self._lib = lib  # keeps the shared object loaded as long as the kernel lives
        self.symbol = symbol
        # why parallel loops run on one thread (None: they do not), shown by repr; True: ask the
        # compiler (a library loaded by load_module says it itself and needs no compiler)
        if serial_note is True:
            serial_note = find_compiler().serial_note(self.name) if parallel else None
        self.serial_note = serial_note or None
        self.compiler = None  # the Compiler and flags it was built with (set by the loader): export_library
        self.compile_flags: tuple[str, ...] = ()
        # sizes and integer scalars travel as int64, float scalars as double (see codegen.c)
        argtypes = [ctypes.c_void_p] * len(func.params) + [ctypes.c_double if v.dtype.is_float else ctypes.c_int64
                                                            for v in func.size_vars]
        self._externs = externs  # the table of outside functions (runtime.extern), passed after the sizes
        if externs is not None:
            argtypes.append(ctypes.c_void_p)
        self._cfunc = c_function(lib, symbol, ctypes.c_int32, argtypes + ([ctypes.c_int32] if parallel else []))

    def _run(self, arrays: tuple[np.ndarray, ...], ptrs: list[int], sizes: list[int], threads: int) -> None:
        table = [] if self._externs is None else [ctypes.addressof(self._externs.pointers)]
        status = self._cfunc(*ptrs, *sizes, *table, threads) if self.parallel else self._cfunc(*ptrs, *sizes, *table)
        if self._externs is not None:
            self._externs.raise_pending()
        if status == 2:
            raise KernelRuntimeError(f"kernel {self.name!r}: a packed function it calls returned an error")
        if status:
            raise KernelRuntimeError(
                f"kernel {self.name!r} could not allocate a temporary buffer (status {status}); "
                "the schedule asks for more memory than is available"
            )
