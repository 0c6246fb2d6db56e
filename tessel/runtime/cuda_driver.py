"""Launching CUDA kernels through the driver API (``libcuda``, by ctypes): no toolkit at run time.

A call copies the arrays to the device, launches the module's kernels in order with the grid
and block of each (evaluated from the call's sizes), waits, and copies the outputs back. The
global temporaries the host side allocates are device allocations for the call. Every driver
call is checked; a failure says which call and the driver's name for the error. Where there
is no driver or no device, :class:`~tessel.errors.NoDeviceError` says so and points at
``target="cuda-sim"``, which runs the same device IR on the CPU.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import threading

import numpy as np

from ..errors import KernelRuntimeError, NoDeviceError
from .args import eval_int

_LOCK = threading.Lock()
_STATE: dict = {}


def _driver() -> ctypes.CDLL:
    """libcuda with a current context on device 0 (made once per process)."""
    with _LOCK:
        if "lib" in _STATE:
            return _STATE["lib"]
        if "error" in _STATE:
            raise NoDeviceError(_STATE["error"])
        name = ctypes.util.find_library("cuda") or "libcuda.so.1"
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            _STATE["error"] = ("no CUDA driver (libcuda) on this machine, so the kernel cannot run here; its "
                               "source, .ptx, .resources and .sass_stats can still be inspected, and "
                               "target='cuda-sim' runs the same kernels on the CPU")
            raise NoDeviceError(_STATE["error"]) from None
        count = ctypes.c_int(0)
        if lib.cuInit(0) != 0 or lib.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
            _STATE["error"] = ("the CUDA driver reports no usable device, so the kernel cannot run here; "
                               "use target='cuda-sim' to run it on the CPU")
            raise NoDeviceError(_STATE["error"])
        dev, ctx = ctypes.c_int(0), ctypes.c_void_p()
        _check(lib, lib.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
        _check(lib, lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
        _STATE["ctx"] = ctx
        _STATE["lib"] = lib
        return lib


def _check(lib: ctypes.CDLL, status: int, what: str) -> None:
    if status != 0:
        text = ctypes.c_char_p()
        lib.cuGetErrorName(status, ctypes.byref(text))
        name = text.value.decode() if text.value else f"error {status}"
        raise KernelRuntimeError(f"CUDA driver call {what} failed: {name}")


def _functions(lib: ctypes.CDLL, module) -> list[ctypes.c_void_p]:
    """The module's kernels as driver functions (the cubin loaded once per module object)."""
    cached = getattr(module, "_cu_functions", None)
    if cached is not None:
        return cached
    handle = ctypes.c_void_p()
    _check(lib, lib.cuModuleLoadData(ctypes.byref(handle), ctypes.c_char_p(module.cubin)), "cuModuleLoadData")
    out = []
    for sym in module.symbols:
        fn = ctypes.c_void_p()
        _check(lib, lib.cuModuleGetFunction(ctypes.byref(fn), handle, sym.encode()), f"cuModuleGetFunction({sym})")
        out.append(fn)
    module._cu_module, module._cu_functions = handle, out
    return out


def _alloc(lib: ctypes.CDLL, nbytes: int, held: list) -> ctypes.c_uint64:
    ptr = ctypes.c_uint64(0)
    _check(lib, lib.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(max(nbytes, 1))), "cuMemAlloc")
    held.append(ptr)
    return ptr


_SCALAR = {"int32": ctypes.c_int32, "int64": ctypes.c_int64, "int16": ctypes.c_int16, "int8": ctypes.c_int8,
           "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64, "uint16": ctypes.c_uint16, "uint8": ctypes.c_uint8,
           "float32": ctypes.c_float, "float64": ctypes.c_double, "bool": ctypes.c_bool}


def run_kernels(module, arrays: tuple[np.ndarray, ...], sizes: list[int]) -> None:
    """Copy in, launch every kernel of ``module`` in order, synchronize, copy the outputs out."""
    lib = _driver()
    _check(lib, lib.cuCtxSetCurrent(_STATE["ctx"]), "cuCtxSetCurrent")
    fns = _functions(lib, module)
    func = module.func
    env = {id(v): x for v, x in zip(module._spec.vars, sizes)}
    held: list[ctypes.c_uint64] = []
    try:
        dev: dict[int, ctypes.c_uint64] = {}
        for buf, a in zip(func.params, arrays):
            dev[id(buf)] = _alloc(lib, a.nbytes, held)
            host = np.ascontiguousarray(a)
            _check(lib, lib.cuMemcpyHtoD_v2(dev[id(buf)], host.ctypes.data_as(ctypes.c_void_p),
                                            ctypes.c_size_t(a.nbytes)), "cuMemcpyHtoD")
        for kernel in module.kernels:
            for t in kernel.temporaries:
                if id(t) not in dev:
                    n = math.prod(eval_int(d, env, func.name) for d in t.shape)
                    dev[id(t)] = _alloc(lib, n * max(t.dtype.bits // 8, 1), held)
        plan = getattr(module, "host", None) or tuple(("launch", k) for k in range(len(module.kernels)))
        _host(plan, env, func.name, lambda k: _launch(lib, module, module.kernels[k], fns[k], dev, env))
        _check(lib, lib.cuCtxSynchronize(), "cuCtxSynchronize (a kernel failed while running)")
        for k in module._spec.outputs:
            a = arrays[k]
            out = np.empty_like(a, order="C")
            _check(lib, lib.cuMemcpyDtoH_v2(out.ctypes.data_as(ctypes.c_void_p), dev[id(func.params[k])],
                                            ctypes.c_size_t(a.nbytes)), "cuMemcpyDtoH")
            a[...] = out
    finally:
        for ptr in held:
            lib.cuMemFree_v2(ptr)


def _host(plan: tuple, env: dict, name: str, launch) -> None:
    """Run the host's program (``passes.gpu.kernel.host_plan``): launches, and loops around
    them whose variable each launch inside receives as a scalar."""
    for step in plan:
        if step[0] == "launch":
            launch(step[1])
            continue
        _, var, lo, ext, inner = step
        first = eval_int(lo, env, name)
        for value in range(first, first + eval_int(ext, env, name)):
            env[id(var)] = value
            _host(inner, env, name, launch)


def _launch(lib: ctypes.CDLL, module, kernel, fn, dev: dict, env: dict) -> None:
    values: list = [ctypes.c_uint64(dev[id(b)].value) for b in kernel.params]
    values += [_SCALAR[str(v.dtype)](env[id(v)]) for v in kernel.scalars]
    argv = (ctypes.c_void_p * max(len(values), 1))(*[ctypes.cast(ctypes.byref(x), ctypes.c_void_p) for x in values])
    grid = [eval_int(e, env, module.name) for e in kernel.grid]
    block = [eval_int(e, env, module.name) for e in kernel.block]
    if min(grid) <= 0:
        return  # an empty launch (a zero size): nothing to do, and the driver would refuse it
    _check(lib, lib.cuLaunchKernel(fn, *(ctypes.c_uint(x) for x in grid), *(ctypes.c_uint(x) for x in block),
                                   ctypes.c_uint(0), ctypes.c_void_p(0), argv, ctypes.c_void_p(0)),
           f"cuLaunchKernel({kernel.name})")


__all__ = ["run_kernels"]
