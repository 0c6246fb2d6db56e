"""Which code generator and which runtime each kind of target uses.

``tessel.build`` asks the target's backend for both instead of testing target names: a new
target (CUDA, say) registers its generator and loader here and needs no change in the driver.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..codegen.c import generate_c
from ..codegen.cuda import generate_cuda
from ..codegen.cuda_sim import generate_cuda_sim
from ..codegen.python import generate_python
from ..errors import BuildError
from ..passes.gpu import device_pipeline
from ..runtime.cuda import load_cuda
from ..runtime.cuda_sim import load_cuda_sim
from ..runtime.loader import load_c, load_python
from .target import Target


@dataclass(frozen=True)
class Backend:
    """``generate(func, target) -> Generated``; ``load(func, generated, target, finish) -> Kernel``.
    ``memo``: whether its generated code may be remembered on disk (it must be plain JSON)."""

    generate: Callable
    load: Callable
    memo: bool = False


_BACKENDS: dict[str, Backend] = {
    "c": Backend(generate_c, load_c, memo=True),
    "python": Backend(generate_python, load_python),
    "cuda": Backend(lambda func, target: generate_cuda(func, device_pipeline(func, target), target), load_cuda),
    # the same kernels run on the CPU with GPU semantics, races refused
    "cuda-sim": Backend(lambda func, target: generate_cuda_sim(func, device_pipeline(func, target), target),
                        load_cuda_sim),
}


def register_backend(kind: str, backend: Backend) -> None:
    _BACKENDS[kind] = backend


def backend(target: Target) -> Backend:
    found = _BACKENDS.get(target.kind)
    if found is None:
        raise BuildError(f"unknown target {target.kind!r}; valid targets: {', '.join(sorted(_BACKENDS))}")
    return found
