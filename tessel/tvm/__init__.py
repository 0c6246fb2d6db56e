"""TVM's spellings over tessel: ``import tessel.tvm as tvm``, or ``tessel tvm SCRIPT.py``.

A TVM tensor-expression program runs unchanged: ``tvm.te`` is tessel's TE, ``tvm.tir`` its
expressions, ``tvm.lower``/``tvm.build`` its driver (``"llvm"`` is the C target for this
machine), ``tvm.nd.array``/``tvm.device``/``tvm.cpu`` hold arrays in NumPy, a built module
times itself (``time_evaluator``) and exports a shared library that
``tvm.runtime.load_module`` loads in another process, ``tvm.testing.assert_allclose``
compares, ``tvm.contrib.tedd`` draws. ``tessel tvm SCRIPT.py`` runs a script whose
``import tvm`` then means this package, in that process only (:mod:`tessel.tvm.shim`).
The TVM-0.6-era top-level names of the seeds (``tvm.placeholder``, ``tvm.compute``,
``tvm.sum`` ...) answer here too, from :mod:`tessel.compat`.

``tvm.autotvm`` is AutoTVM's template API over tessel's tuner. What tessel does not offer (relay, topi, GPU devices, TensorIR schedules ...) raises
:class:`~tessel.errors.NotOfferedError` (an AttributeError), or
:class:`~tessel.errors.NotOfferedModuleError` on import, saying so and what to use.
"""

from __future__ import annotations

from . import (
           arith,
           autotvm,
           container,
           contrib,
           error,
           ir,
           nd,
           runtime,
           target,
           te,
           testing,
           tir,
           topi,
           transform,
)
from ._driver import IRModule, build, lower
from ._names import install_missing_modules, missing_names
from .nd import Device, cpu, cuda, device, gpu
from .runtime import convert

__all__ = ["Device", "IRModule", "arith", "autotvm", "build", "container", "contrib", "convert", "cpu", "cuda", "device", "gpu", "error", "ir", "lower", "nd",
           "runtime", "target", "te", "testing", "tir", "topi", "transform"]

# TVM's own errors at the top level (tvm.TVMError) and what tessel adds later (register_func ...)
__getattr__ = missing_names(__name__, ("tessel.tvm.error", "tessel"))
install_missing_modules()
