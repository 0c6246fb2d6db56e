"""``tvm.runtime``: a built kernel as TVM's Module, and loading an exported one.

:class:`Module` wraps a :class:`tessel.runtime.module.Kernel`: calling it runs the kernel on
NDArrays or NumPy arrays (in place, as TVM's do), ``time_evaluator`` times it as TVM's does
(one discarded warm-up call, then ``repeat`` rounds of ``number`` calls), ``export_library``
writes a shared library that :func:`load_module` loads in any process.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import ArgumentError
from ..runtime import export as _export
from ..runtime.loader import load_module as _load_module
from ..runtime.module import Kernel
from ..te.intrin import const
from . import nd as _nd
from ._names import RefusesMissing, missing_names
from .nd import Device, NDArray

ENTRY_NAME = "__tvm_main__"


@dataclass(frozen=True)
class ProfileResult:
    """Seconds per call: ``mean`` over all rounds, ``results`` one mean per round."""

    mean: float
    median: float
    min: float
    max: float
    std: float
    results: tuple[float, ...]


def _unwrap(args: tuple) -> list:
    return [a._data if isinstance(a, NDArray) else a for a in args]


class DeviceModule(RefusesMissing):
    """The device half of a CUDA build (TVM's imported ``cuda`` module): its source and PTX."""

    _tvm_name = "tvm.runtime.Module"
    type_key = "cuda"

    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self.imported_modules: list = []

    def get_source(self, fmt: str = "") -> str:
        return getattr(self.kernel, "ptx", "") if fmt == "ptx" else self.kernel.source


class Module(RefusesMissing):
    """A compiled kernel under TVM's Module interface (one function; ``entry_name`` names it)."""

    _tvm_name = "tvm.runtime.Module"

    def __init__(self, kernel: Kernel, target=None):
        self.kernel = kernel
        self.target = target
        # device code: a CUDA build's kernels, as TVM's host module imports them (their source is
        # ``imported_modules[0].get_source()``); a CPU kernel has none
        self.imported_modules: list = [DeviceModule(kernel)] if kernel.target == "cuda" else []

    @property
    def entry_name(self) -> str:
        return ENTRY_NAME

    @property
    def type_key(self) -> str:
        return "llvm" if self.kernel.target == "c" else self.kernel.target

    def __call__(self, *args) -> None:
        self.kernel(*_unwrap(args))

    def get_function(self, name: str, query_imports: bool = False) -> Module:
        if name not in (ENTRY_NAME, self.kernel.name):
            raise ArgumentError(f"module has no function {name!r}; its kernel is {self.kernel.name!r} "
                                f"(also reachable as {ENTRY_NAME!r}, TVM's entry name)")
        return self

    __getitem__ = get_function

    def get_source(self, fmt: str = "") -> str:
        return self.kernel.source

    def save(self, file_name, fmt: str = "") -> None:
        """TVM's ``save``: the kernel as an object file (C target), with its calling contract, for
        ``tvm.contrib.cc.create_shared`` to link into a library that ``load_module`` reads."""
        if self.kernel.target != "c":
            raise ArgumentError(f"save: the {self.kernel.target} module has no object code to save; build for "
                                "'llvm' (tessel's C target)")
        _export.export_library(self.kernel, file_name, object_only=True)

    def export_library(self, file_name, fcompile=None, **kwargs) -> None:
        """Write the kernel as one shared library (C target only); ``tvm.runtime.load_module`` reads it."""
        if fcompile is not None or kwargs:
            raise ArgumentError("export_library: tessel compiles the library with the C compiler the kernel "
                                "was built with; fcompile and compiler options are not taken")
        _export.export_library(self.kernel, file_name)

    def time_evaluator(self, func_name: str, dev: Device | None = None, number: int = 10, repeat: int = 1,
                       min_repeat_ms: int = 0, **_ignored) -> Callable[..., ProfileResult]:
        """A function that runs the kernel on its arguments and returns the seconds per call."""
        self.get_function(func_name)
        if number < 1 or repeat < 1:
            raise ArgumentError(f"time_evaluator: number and repeat must be >= 1, got {number} and {repeat}")

        def evaluator(*args) -> ProfileResult:
            arrays = _unwrap(args)
            self.kernel(*arrays)  # warm-up: page faults, thread pool start, first-touch
            rounds, n = [], number
            for _ in range(repeat):
                while True:
                    t0 = time.perf_counter()
                    for _ in range(n):
                        self.kernel(*arrays)
                    spent = time.perf_counter() - t0
                    if spent * 1e3 >= min_repeat_ms or n >= 1 << 30:
                        break
                    n = max(n * 2, int(n * min_repeat_ms / max(spent * 1e3, 1e-3)) + 1)
                rounds.append(spent / n)
            std = statistics.pstdev(rounds) if len(rounds) > 1 else 0.0
            return ProfileResult(float(np.mean(rounds)), statistics.median(rounds), min(rounds), max(rounds),
                                 std, tuple(rounds))

        return evaluator

    def __repr__(self) -> str:
        return f"Module({self.kernel!r})"


def load_module(path, fmt: str = "") -> Module:
    """A module written by ``export_library``, in this or any process (no compiler needed)."""
    return Module(_load_module(path))


def convert(value):
    """``tvm.runtime.convert``: a Python number as an expression constant, and a dict or list
    as TVM's Map or Array of converted values (here Python's own containers, see
    :mod:`tessel.tvm.container`); an expression, tensor or other node is itself."""
    if isinstance(value, dict):
        return {k: convert(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [convert(v) for v in value]
    if isinstance(value, bool | int | float):
        return const(value)
    return value


def enabled(target: str) -> bool:
    """Whether tessel can build for ``target`` (the CPU kinds)."""
    return str(target).split()[0] in ("llvm", "c", "python", "cpu")


ndarray = _nd
__getattr__ = missing_names(__name__, ("tessel.tvm.nd",))
