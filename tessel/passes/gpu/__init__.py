"""GPU device passes: a lowered PrimFunc as kernels whose device IR a GPU generator (or the
simulator) reads. The contract both sides rely on is written in ``notes/gpu-interface.md``
(section gpu-cuda) and in :mod:`.kernel`'s note.

:func:`device_pipeline` splits the function into its kernels and runs :data:`DEVICE_PASSES` on
each, in order: the launch's limits checked, the virtual-thread injection, cross-thread
reductions to warp shuffles, warp-scope buffers to registers and shuffles, then barrier
insertion (skipped for a target with the ``no_barriers`` feature, which is how a test shows the
race detector catching a missing barrier).
"""

from __future__ import annotations

from ...ir import stmt as S
from ..base import Pass
from ..virtual_thread import inject_virtual_threads
from .allreduce import lower_allreduce
from .kernel import BLOCK_TAGS, LAUNCH_TAGS, THREAD_TAGS, Kernel, check_launch, split_kernels
from .sync import barrier, insert_barriers, is_barrier
from .warp_memory import lower_warp_memory

NO_BARRIERS = "no_barriers"  # a target feature: leave barrier insertion out (tests of the race detector)


def _checked(kernel: Kernel, target) -> Kernel:
    check_launch(kernel)
    return kernel


def _barriers(kernel: Kernel, target) -> Kernel:
    no_barriers = target is not None and hasattr(target, "has") and target.has(NO_BARRIERS)
    return kernel if no_barriers else insert_barriers(kernel)


#: what each kernel goes through, in order, between the split and a GPU generator
DEVICE_PASSES: tuple[Pass, ...] = (
    Pass("check_launch", _checked, (check_launch,)),
    Pass("virtual_threads", lambda k, t: k.with_body(inject_virtual_threads(k.body)), (inject_virtual_threads,)),
    Pass("lower_allreduce", lambda k, t: lower_allreduce(k), (lower_allreduce,)),
    Pass("lower_warp_memory", lambda k, t: lower_warp_memory(k), (lower_warp_memory,)),
    Pass("insert_barriers", _barriers, (insert_barriers,)),
)


def device_pipeline(func: S.PrimFunc, target=None) -> list[Kernel]:
    """The kernels ``func`` launches (``split_kernels``), in order, each through
    :data:`DEVICE_PASSES` (read when it runs), ready for a GPU generator."""
    out = []
    for kernel in split_kernels(func):
        for p in DEVICE_PASSES:
            kernel = p.run(kernel, target)
        out.append(kernel)
    return out


__all__ = ["BLOCK_TAGS", "DEVICE_PASSES", "LAUNCH_TAGS", "NO_BARRIERS", "THREAD_TAGS", "Kernel", "barrier", "device_pipeline",
           "insert_barriers", "is_barrier", "lower_allreduce", "lower_warp_memory", "split_kernels"]
