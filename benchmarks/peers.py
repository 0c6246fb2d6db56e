"""The same kernels in Halide (``pip install halide``), TVM (``pip install apache-tvm``,
TensorIR) and PyTorch on the CPU (``pip install torch``), gathered under one name: the
benchmark's cases look their builders up here (``peers.halide_blur``, ...).

Each compiler peer gets the algorithm exactly as tessel and NumPy compute it (same
expressions, same packed layouts where tessel's algorithm packs), defined once
(:mod:`.peers_halide`, :mod:`.peers_tvm`), and is scheduled two ways from that one
definition: by hand, with a schedule of the same kind as tessel's (the same tiling, vector
width, unrolling, producer placement and threading, in the peer's own vocabulary, the numbers
derived from the same Target: :data:`TARGET`), and automatically: Halide's autoschedulers
(``autoscheduler="Adams2019"``, ...) and TVM's MetaSchedule (``trials=N``). Where a peer has
a better-known idiom for a kernel (Halide's strip schedule for the blur), the hand schedule
uses it. PyTorch (:mod:`.peers_torch`) is the library a user would call instead.

A builder returns a :class:`PeerRun`: ``run()`` computes into preallocated buffers,
``result()`` hands the output back as NumPy, ``build_s`` is the compile time and ``tune_s``
the automatic scheduler's time. Nothing here imports a peer unless it is installed; a missing
peer is reported by :func:`available`, a contender that cannot run here raises
:class:`PeerUnavailable` with the reason.
"""

from __future__ import annotations

import importlib.util

from .peer_base import PARTIALS, TARGET, PeerRun, PeerUnavailable, V
from .peers_halide import (
    AUTOSCHEDULERS,
    halide_add,
    halide_blur,
    halide_conv2d,
    halide_depthwise,
    halide_layernorm,
    halide_matmul,
    halide_row_sum,
    halide_softmax,
)
from .peers_torch import (
    torch_add,
    torch_argmax,
    torch_blur,
    torch_conv2d,
    torch_depthwise,
    torch_layernorm,
    torch_matmul,
    torch_row_sum,
    torch_softmax,
)
from .peers_tvm import (
    metaschedule_missing,
    tvm_add,
    tvm_blur,
    tvm_conv2d,
    tvm_depthwise,
    tvm_layernorm,
    tvm_matmul,
    tvm_row_sum,
    tvm_softmax,
)

__all__ = ["AUTOSCHEDULERS", "PARTIALS", "TARGET", "V", "PeerRun", "PeerUnavailable", "available",
           "halide_add", "halide_blur", "halide_conv2d", "halide_depthwise", "halide_layernorm", "halide_matmul", "halide_row_sum",
           "halide_softmax", "metaschedule_missing", "torch_add", "torch_blur", "torch_conv2d", "torch_depthwise",
           "torch_layernorm",
           "torch_argmax", "torch_matmul", "torch_row_sum", "torch_softmax", "tvm_add", "tvm_blur", "tvm_conv2d", "tvm_depthwise", "tvm_layernorm",
           "tvm_matmul", "tvm_row_sum", "tvm_softmax"]


def available(peer: str) -> bool:
    module = {"halide": "halide", "tvm": "tvm", "torch": "torch"}[peer]
    return importlib.util.find_spec(module) is not None
