"""Callable kernels: one face for every target.

A :class:`Kernel` is what ``tessel.build`` returns. Whatever runs underneath (a shared object
loaded with ctypes, or generated Python), a call first goes through the kernel's
:class:`~tessel.runtime.args.ArgSpec`, so a bad array is refused with the same
:class:`~tessel.errors.ArgumentError` on every target, before any code reads memory.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

import numpy as np

from ..errors import TesselError
from ..ir import stmt as S
from .args import ArgSpec


class KernelRuntimeError(TesselError, RuntimeError):
    """A kernel failed while running (an out-of-bounds access seen by the python target,
    a temporary buffer the C kernel could not allocate)."""


class Kernel:
    """A compiled PrimFunc. ``f(*arrays)`` runs it; outputs are written in place."""

    target = "?"

    def __init__(self, func: S.PrimFunc, source: str, spec: ArgSpec):
        self.func = func
        self.source = source
        self.name = func.name
        self._spec = spec

    @property
    def signature(self) -> str:
        """The parameters as ``name: dtype(shape)``, as argument errors quote them."""
        return self._spec.signature

    def __call__(self, *args: np.ndarray) -> None:
        ptrs, sizes = self._spec.check(args)
        self._run(args, ptrs, sizes)

    def _run(self, arrays: tuple[np.ndarray, ...], ptrs: list[int], sizes: list[int]) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<tessel.Kernel {self.name}({self._spec.signature}) target={self.target}>"


class PythonKernel(Kernel):
    """The reference target: generated Python over flat NumPy views."""

    target = "python"

    def __init__(self, func: S.PrimFunc, source: str, spec: ArgSpec, impl: Callable, size_types: list):
        super().__init__(func, source, spec)
        self._impl = impl
        self._size_types = size_types

    def _run(self, arrays: tuple[np.ndarray, ...], ptrs: list[int], sizes: list[int]) -> None:
        flat = [a.reshape(-1) for a in arrays]
        typed = [t(v) for t, v in zip(self._size_types, sizes)]
        with np.errstate(all="ignore"):  # wraparound and inf/nan are the IR's semantics, not accidents
            self._impl(*flat, *typed)


class CKernel(Kernel):
    """A function in a shared object, called through ctypes with precomputed argument types."""

    target = "c"

    def __init__(self, func: S.PrimFunc, source: str, spec: ArgSpec, lib: ctypes.CDLL, symbol: str,
                 lib_path: str, build_time_s: float, cache_hit: bool):
        super().__init__(func, source, spec)
        self.lib_path = lib_path
        self.build_time_s = build_time_s
        self.cache_hit = cache_hit
        self._lib = lib  # keeps the shared object loaded as long as the kernel lives
        cfunc = getattr(lib, symbol)
        cfunc.argtypes = [ctypes.c_void_p] * len(func.params) + [ctypes.c_int64] * len(func.size_vars)
        cfunc.restype = ctypes.c_int32
        self._cfunc = cfunc

    def _run(self, arrays: tuple[np.ndarray, ...], ptrs: list[int], sizes: list[int]) -> None:
        status = self._cfunc(*ptrs, *sizes)
        if status:
            raise KernelRuntimeError(
                f"kernel {self.name!r} could not allocate a temporary buffer (status {status}); "
                "the schedule asks for more memory than is available"
            )
