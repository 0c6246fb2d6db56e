"""What every peer module shares: the Target the peers' schedules are derived from, the
runner a builder returns, and the one exception that says a contender cannot run here.

Kept apart from :mod:`benchmarks.peers` (which gathers the builders) so that the Halide, TVM
and PyTorch modules can import it without importing one another.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tessel.target import host
from tessel.target.tiles import reduction_lanes

TARGET = host()  # the machine both tessel's and the peers' schedules are derived from
V = TARGET.vector_lanes("float32")  # the peers vectorize by the width tessel's kernels use
PARTIALS = reduction_lanes(TARGET)  # and keep as many partial results per row reduction


@dataclass
class PeerRun:
    """``run()`` computes into preallocated buffers, ``result()`` hands the output back as
    NumPy; ``build_s`` is the compile time and ``tune_s`` the time an automatic scheduler or
    tuner spent choosing the schedule (None for a hand schedule)."""

    run: Callable[[], None]
    result: Callable[[], np.ndarray]
    build_s: float
    tune_s: float | None = None


class PeerUnavailable(Exception):
    """A contender that cannot run on this machine (a plugin missing, a package absent): the
    message is the note the table shows in its place, so it says why in a few words."""


def divisor(n: int, at_most: int) -> int:
    """The largest divisor of ``n`` not above ``at_most`` (TensorIR guards tiles that do not divide)."""
    return max(d for d in range(1, max(at_most, 1) + 1) if n % d == 0)


def aligned_empty(shape: tuple[int, ...], align: int = 128, dtype: str = "float32") -> np.ndarray:
    """An array (float32 unless said) whose data starts on an ``align``-byte boundary, as Halide
    allocates its own buffers: code Li2018 schedules stores whole vectors to the output assuming
    that, and crashes (SIGSEGV) on a NumPy array that is only 16-byte aligned."""
    n, size = int(np.prod(shape)), np.dtype(dtype).itemsize
    raw = np.empty(n + align // size, dtype)
    start = (-raw.ctypes.data % align) // size
    return raw[start:start + n].reshape(shape)
