"""GPU device passes: a lowered PrimFunc as kernels whose device IR a GPU generator (or the
simulator) reads. The contract both sides rely on is written in ``notes/gpu-interface.md``
(section gpu-cuda) and in :mod:`.kernel`'s note.

:func:`device_pipeline` runs, per kernel: the virtual-thread injection (when the ``vthread``
pass exists), cross-thread reductions to warp shuffles, warp-scope buffers to registers and
shuffles, then barrier insertion (skipped for a
target with the ``no_barriers`` feature, which is how a test shows the race detector catching
a missing barrier).
"""

from __future__ import annotations

import importlib

from ...ir import stmt as S
from .allreduce import lower_allreduce
from .kernel import BLOCK_TAGS, LAUNCH_TAGS, THREAD_TAGS, Kernel, check_launch, split_kernels
from .sync import barrier, insert_barriers, is_barrier
from .warp_memory import lower_warp_memory

NO_BARRIERS = "no_barriers"  # a target feature: leave barrier insertion out (tests of the race detector)


def _virtual_threads(kernel: Kernel) -> Kernel:
    """gpu-bound's virtual-thread injection (tessel/passes/virtual_thread.py), when present;
    until then ``vthread`` loops stay serial loops of each thread, which is what they mean."""
    try:
        mod = importlib.import_module("tessel.passes.virtual_thread")
    except ModuleNotFoundError:
        return kernel
    inject = getattr(mod, "inject_virtual_thread", None) or getattr(mod, "inject_virtual_threads", None)
    return kernel if inject is None else kernel.with_body(inject(kernel.body))


def device_pipeline(func: S.PrimFunc, target=None) -> list[Kernel]:
    """The kernels ``func`` launches, in order, each ready for a GPU generator."""
    no_barriers = target is not None and hasattr(target, "has") and target.has(NO_BARRIERS)
    out = []
    for kernel in split_kernels(func):
        check_launch(kernel)
        kernel = _virtual_threads(kernel)
        kernel = lower_allreduce(kernel)
        kernel = lower_warp_memory(kernel)
        if not no_barriers:
            kernel = insert_barriers(kernel)
        out.append(kernel)
    return out


__all__ = ["BLOCK_TAGS", "LAUNCH_TAGS", "NO_BARRIERS", "THREAD_TAGS", "Kernel", "barrier", "device_pipeline",
           "insert_barriers", "is_barrier", "lower_allreduce", "lower_warp_memory", "split_kernels"]
