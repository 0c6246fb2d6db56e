"""The record of a named pass, for every list of them: the lowering's (``tessel.pipeline``) and
the GPU targets' per-kernel device passes (``passes.gpu.DEVICE_PASSES``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Pass:
    """One named step: ``run(ir, ctx)`` gives the IR after it (the lowering's: ``None`` before the
    first step, ``ctx`` its ``PassContext``; a device pass: a kernel and the target).
    ``made_by``: the functions that make its IR, for the architecture document;
    ``only_if_changed``: a trace shows the step only when it changed the IR."""

    name: str
    run: Callable[[Any, Any], Any]
    made_by: tuple[Callable, ...]
    only_if_changed: bool = False


__all__ = ["Pass"]
