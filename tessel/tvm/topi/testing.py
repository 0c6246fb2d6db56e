"""``tvm.topi.testing``: NumPy references for topi's operators, and the schedule a test should use
for a target, as TVM's operator tests call them.

The references are written directly from each operator's definition (loops over the window,
NumPy's reductions), independent of the ``te.compute`` they check.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import cuda, generic, nn


def softmax_python(a_np: np.ndarray, axis: int = 1) -> np.ndarray:
    """``exp(a - max) / sum(exp(a - max))`` along ``axis``."""
    shifted = np.exp(a_np - np.max(a_np, axis=axis, keepdims=True))
    return shifted / np.sum(shifted, axis=axis, keepdims=True)


def _pads(padding, kh: int, kw: int) -> tuple[int, int, int, int]:
    return nn.get_pad_tuple(padding, (kh, kw))


def conv2d_nchw_python(a_np: np.ndarray, w_np: np.ndarray, stride, padding, groups: int = 1) -> np.ndarray:
    """Input [N, C, H, W], filter [F, C/groups, KH, KW] -> [N, F, OH, OW], one window at a time."""
    n, c, h, w = a_np.shape
    f, cg, kh, kw = w_np.shape
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    top, left, bottom, right = _pads(padding, kh, kw)
    padded = np.zeros((n, c, h + top + bottom, w + left + right), a_np.dtype)
    padded[:, :, top:top + h, left:left + w] = a_np
    oh, ow = (h + top + bottom - kh) // sh + 1, (w + left + right - kw) // sw + 1
    out = np.zeros((n, f, oh, ow), np.result_type(a_np, w_np))
    per_group = f // groups
    for y in range(oh):
        for x in range(ow):
            win = padded[:, :, y * sh:y * sh + kh, x * sw:x * sw + kw]
            for g in range(groups):
                fs = slice(g * per_group, (g + 1) * per_group)
                out[:, fs, y, x] = np.einsum("nchw,fchw->nf", win[:, g * cg:(g + 1) * cg], w_np[fs])
    return out


def conv2d_nhwc_python(a_np: np.ndarray, w_np: np.ndarray, stride, padding, groups: int = 1) -> np.ndarray:
    """Input [N, H, W, C], filter [KH, KW, C/groups, F] -> [N, OH, OW, F]."""
    out = conv2d_nchw_python(a_np.transpose(0, 3, 1, 2), w_np.transpose(3, 2, 0, 1), stride, padding, groups)
    return out.transpose(0, 2, 3, 1)


def _is_gpu(target) -> bool:
    return str(getattr(getattr(target, "kind", None), "name", target)).split(" ")[0] == "cuda"


def get_injective_schedule(target) -> Callable:
    """topi's injective schedule for ``target``: CUDA's binds threads, the CPU's is the plain one."""
    return cuda.schedule_injective if _is_gpu(target) else generic.schedule_injective


get_broadcast_schedule = get_elemwise_schedule = get_injective_schedule


def get_conv2d_nchw_implement(target) -> tuple[Callable, Callable]:
    """``(compute, schedule)`` of conv2d NCHW for ``target``."""
    return nn.conv2d_nchw, cuda.schedule_conv2d_nchw if _is_gpu(target) else generic.schedule_conv2d_nchw


__all__ = ["conv2d_nchw_python", "conv2d_nhwc_python", "get_broadcast_schedule", "get_conv2d_nchw_implement",
           "get_elemwise_schedule", "get_injective_schedule", "softmax_python"]
