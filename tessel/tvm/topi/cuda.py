"""``tvm.topi.cuda``: topi's schedules for the cuda target.

``schedule_injective`` is TVM's: each output's axes fused into one loop, split into blocks of
``THREADS`` threads (``blockIdx.x``, ``threadIdx.x``); the stages an output reads stay where
they are (inline them first to fuse them in).
"""

from __future__ import annotations

from ...te import thread_axis
from ...te.tensor import Tensor
from ..te import create_schedule

#: threads per block of an injective kernel (TVM's default for CUDA)
THREADS = 64


def schedule_injective(outs):
    """A schedule of ``outs`` with every output one thread per element."""
    outs = [outs] if isinstance(outs, Tensor) else list(outs)
    s = create_schedule([t.op for t in outs])
    for t in outs:
        fused = s[t].fuse(*s[t].op.axis) if len(t.op.axis) > 1 else t.op.axis[0]
        bx, tx = s[t].split(fused, factor=THREADS)
        s[t].bind(bx, thread_axis("blockIdx.x"))
        s[t].bind(tx, thread_axis("threadIdx.x"))
    return s


schedule_elemwise = schedule_broadcast = schedule_injective

__all__ = ["THREADS", "schedule_broadcast", "schedule_elemwise", "schedule_injective"]
