"""PyTorch on the CPU (``pip install torch``): the library call a user would make instead of
compiling a kernel (``torch.mm``, ``conv2d``, ``softmax``, ``layer_norm``, ...), at the same
thread count, writing into a preallocated output where the operator takes one (``out=``, or
the ``out`` overload of the operator behind a public call that takes none: a 64 MiB result
allocated per call costs PyTorch its page faults, five times the softmax itself; layer_norm
has no such operator and allocates).
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from .peer_base import PeerRun, aligned_empty


def _torch_run(threads: int | None, op: Callable[[], object], result: Callable[[], np.ndarray]) -> PeerRun:
    import torch

    nt = threads or os.cpu_count() or 1

    def run() -> None:
        if torch.get_num_threads() != nt:  # a case on one thread may have run just before
            torch.set_num_threads(nt)
        op()

    torch.set_num_threads(nt)
    return PeerRun(run, result, 0.0)


def _t(a: np.ndarray):
    import torch

    return torch.from_numpy(a)  # shares the NumPy array's memory: no copy


def torch_matmul(a: np.ndarray, b: np.ndarray, threads: int | None = None) -> PeerRun:
    import torch

    out = aligned_empty((a.shape[0], b.shape[1]))
    ta, tb, to = _t(a), _t(b), _t(out)
    return _torch_run(threads, lambda: torch.mm(ta, tb, out=to), lambda: out)


def torch_blur(a: np.ndarray) -> PeerRun:
    """``avg_pool2d`` (3 x 3, stride 1) into an output made once (its ``out`` overload), for
    the reason given at softmax."""
    import torch

    h, w = a.shape
    out = aligned_empty((h - 2, w - 2))
    x, to = _t(a)[None, None], _t(out)[None, None]
    return _torch_run(None, lambda: torch.ops.aten.avg_pool2d.out(x, [3, 3], [1, 1], out=to), lambda: out)


def torch_conv2d(x: np.ndarray, w: np.ndarray) -> PeerRun:
    """``F.conv2d`` with the padding that keeps the size (1 for 3x3, 0 for 1x1)."""
    import torch.nn.functional as F

    tx, tw, box = _t(x), _t(w), [None]
    pad = w.shape[2] // 2
    return _torch_run(None, lambda: box.__setitem__(0, F.conv2d(tx, tw, padding=pad)), lambda: box[0].numpy())


def torch_depthwise(x: np.ndarray, w: np.ndarray) -> PeerRun:
    """``F.conv2d`` with one group per channel; ``w`` is ``[c, 3, 3]``, torch's ``[c, 1, 3, 3]``."""
    import torch.nn.functional as F

    tx, tw, box = _t(x), _t(w)[:, None], [None]
    c = x.shape[1]
    return _torch_run(None, lambda: box.__setitem__(0, F.conv2d(tx, tw, padding=1, groups=c)),
                      lambda: box[0].numpy())


def torch_softmax(a: np.ndarray) -> PeerRun:
    """``torch.softmax`` at its best: into an output made once (the operator's ``out``
    overload; the public call takes none). Allocating a fresh 64 MiB result each call, as
    ``torch.softmax(x, dim=1)`` does, ran at 6.6 GB/s against 33 into a kept output (4096 x
    4096, two threads): the page faults of the new pages, not the softmax."""
    import torch

    out = aligned_empty(a.shape)
    ta, to = _t(a), _t(out)
    return _torch_run(None, lambda: torch.ops.aten._softmax.out(ta, 1, False, out=to), lambda: out)


def torch_layernorm(a: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float) -> PeerRun:
    """``F.layer_norm``, which allocates its result: PyTorch has no layer norm that writes into
    a given output (``native_layer_norm.out`` is generated: it allocates, then copies)."""
    import torch.nn.functional as F

    ta, tg, tb, box = _t(a), _t(g), _t(b), [None]
    shape = (a.shape[1],)
    return _torch_run(None, lambda: box.__setitem__(0, F.layer_norm(ta, shape, tg, tb, eps)),
                      lambda: box[0].numpy())


def torch_add(a: np.ndarray, b: np.ndarray) -> PeerRun:
    import torch

    out = aligned_empty(a.shape)
    ta, tb, to = _t(a), _t(b), _t(out)
    return _torch_run(None, lambda: torch.add(ta, tb, out=to), lambda: out)


def torch_row_sum(a: np.ndarray) -> PeerRun:
    import torch

    out = aligned_empty((a.shape[0],))
    ta, to = _t(a), _t(out)
    return _torch_run(None, lambda: torch.sum(ta, dim=1, out=to), lambda: out)


def torch_argmax(a: np.ndarray) -> PeerRun:
    import torch

    out = aligned_empty((a.shape[0],), dtype="int64")  # torch's indices are int64
    ta, to = _t(a), _t(out)
    return _torch_run(None, lambda: to.copy_(torch.argmax(ta, dim=1)), lambda: out)
