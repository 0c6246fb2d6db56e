"""Which code generator and which runtime each kind of target uses.

``tessel.build`` asks the target's backend for both instead of testing target names: a new
target (CUDA, say) registers its generator and loader here and needs no change in the driver.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

from ..codegen import Generated
from ..codegen.c import generate_c
from ..codegen.cuda import generate_cuda
from ..codegen.cuda_sim import generate_cuda_sim
from ..codegen.python import generate_python
from ..errors import BuildError, TesselWarning
from ..passes.gpu import device_pipeline
from ..passes.gpu.kernel import host_plan
from ..passes.gpu.serial import NotSerial, as_cpu
from ..passes.memory import hoist_allocations, promote_registers
from ..passes.simplify import simplify_stmt
from ..runtime.cuda import find_nvcc, load_cuda
from ..runtime.cuda_sim import load_cuda_sim
from ..runtime.loader import load_c, load_python
from .host import host
from .target import Target, as_target


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
    # compiled by nvcc, launched on the GPU; where there is none (or no nvcc), on the simulator
    "cuda": Backend(lambda func, target: generate_cuda(func, device_pipeline(func, target), target),
                    lambda *a, **k: _load_cuda(*a, **k)),
    # the same kernels run on the CPU with GPU semantics, races refused
    # the kernels compiled as CPU loops, or (feature "check") run thread by thread with races refused
    "cuda-sim": Backend(lambda func, target: _generate_sim(func, target), lambda *a, **k: _load_sim(*a, **k)),
}

#: the ``cuda-sim`` feature that runs the checking simulator (every thread a generator, races
#: and divergent barriers refused) instead of the kernels compiled as CPU loops
CHECK = "check"


def _generate_sim(func, target) -> Generated:
    """The kernels as CPU loops in C (``passes.gpu.serial``), or, with the ``check`` feature or
    for a kernel those loops cannot run (warp shuffles, a barrier under a thread's own
    condition), the checking simulator's Python, saying so."""
    kernels = device_pipeline(func, target)
    if not (target is not None and target.has(CHECK)):
        try:
            cpu = as_cpu(func, kernels)
            body = simplify_stmt(cpu.body)  # a block's unit thread loops (threadIdx.z of a 2-D block) go
            return generate_c(cpu.with_body(promote_registers(hoist_allocations(body))), target)
        except NotSerial as e:
            warnings.warn(f"{e}; it runs on the checking simulator (target 'cuda-sim -features=check')",
                          TesselWarning, stacklevel=4)
    return generate_cuda_sim(func, kernels, target)


#: the ``cuda`` feature that keeps a kernel on the GPU: a call with no device raises
#: ``NoDeviceError`` rather than running on the simulator
NO_SIMULATOR = "no_simulator"


def _load_cuda(func, gen: Generated, target, finish=None):
    """nvcc's module, whose calls run on the simulator where there is no device; with no nvcc
    at all, the simulator's kernel itself (saying so) -- unless the target has ``no_simulator``."""
    stay = target is not None and target.has(NO_SIMULATOR)

    def simulator():
        sim = as_target("cuda-sim")
        return _load_sim(func, _generate_sim(func, sim), sim)

    if not stay:
        try:
            find_nvcc()
        except BuildError as e:
            warnings.warn(f"kernel {func.name!r}: {str(e).split(';')[0]}, so it runs on the simulator (cuda-sim)",
                          TesselWarning, stacklevel=4)
            return simulator()
    module = load_cuda(func, gen, target, finish)
    module.host = host_plan(func)  # the launches in order, inside the host's loops (a scan's steps)
    if not stay:
        module.simulator = simulator
    return module


def _load_sim(func, gen: Generated, target, finish=None):
    """The fast simulator's code is C, loaded as the c target's; the checker's is Python."""
    if gen.kind == "c":  # compiled for this CPU, not for the GPU the target names
        kernel = load_c(func, gen, host(), finish)
        kernel.target = "cuda-sim"
        return kernel
    return load_cuda_sim(func, gen, target, finish)


def register_backend(kind: str, backend: Backend) -> None:
    _BACKENDS[kind] = backend


def backend(target: Target) -> Backend:
    found = _BACKENDS.get(target.kind)
    if found is None:
        raise BuildError(f"unknown target {target.kind!r}; valid targets: {', '.join(sorted(_BACKENDS))}")
    return found
