"""``tvm.topi.cuda``: topi's schedules for the cuda target.

``schedule_injective`` is TVM's: the injective stages the outputs read inlined into them, then
each stage still computed has its axes fused into one loop, split into blocks of ``THREADS``
threads (``blockIdx.x``, ``threadIdx.x``). ``schedule_conv2d_nchw`` is the same: one thread per output
element, its reduction a serial loop inside the thread (the padding inlined) -- correct on any
GPU, not tuned for one.
"""

from __future__ import annotations

from ...schedule.auto_inline import auto_inline_injective
from ...schedule.kinds import ROOT
from ...te import thread_axis
from ...te.tensor import Tensor
from ..te import create_schedule

#: threads per block of an injective kernel (TVM's default for CUDA)
THREADS = 64


def schedule_injective(outs):
    """A schedule of ``outs``: injective stages inlined, every stage still computed (the
    outputs, and what they read that cannot be inlined: a convolution, a reduction) one thread
    per element."""
    outs = [outs] if isinstance(outs, Tensor) else list(outs)
    s = create_schedule([t.op for t in outs])
    auto_inline_injective(s)
    for st in s.stages:
        if st.is_placeholder or st.attach_type != ROOT:
            continue
        axes = list(st.op.axis)
        fused = s[st.op].fuse(*axes) if len(axes) > 1 else axes[0]
        bx, tx = s[st.op].split(fused, factor=THREADS)
        s[st.op].bind(bx, thread_axis("blockIdx.x"))
        s[st.op].bind(tx, thread_axis("threadIdx.x"))
    return s


schedule_elemwise = schedule_broadcast = schedule_conv2d_nchw = schedule_injective

__all__ = ["THREADS", "schedule_broadcast", "schedule_conv2d_nchw", "schedule_elemwise", "schedule_injective"]
