"""What a TVM name that tessel does not offer answers: an error that says so and what to use.

Every module of :mod:`tessel.tvm` ends in ``__getattr__ = missing_names(__name__, ...)``: a name
the module does not define is first looked up where tessel keeps it (so a TE feature added to
``tessel.te`` appears under ``tvm.te`` with no change here), and otherwise raises
:class:`~tessel.errors.NotOfferedError`, whose message names the TVM spelling, says that
tessel does not offer it and, for the names TVM users reach for most, what to write instead.
It never carries Python's "did you mean" guess (that guess came from tessel's own names and
pointed TVM users at ``isnan`` when they wrote ``tvm.nd``).
"""

from __future__ import annotations

import importlib
import importlib.abc
import sys
import types
from collections.abc import Callable, Sequence

from ..errors import NotOfferedError, NotOfferedModuleError

_WHAT = ("tessel implements TVM's tensor-expression language: tvm.te (compute, schedules), tvm.tir "
         "expressions, tvm.lower/tvm.build, tvm.nd arrays on the CPU, tvm.runtime.load_module, "
         "tvm.testing.assert_allclose, tvm.contrib.tedd, tvm.autotvm templates and tuners")
_GRAPH = "it has no graph-level IR: write each operator with te.compute and build it with tvm.build"
_TUNE = ("its tuner speaks AutoTVM's template API (tvm.autotvm, tessel.tune); otherwise schedule by hand "
         "(split, tile, reorder, vectorize, parallel ...)")
_GPU = ("tessel's GPU target is CUDA: build for 'cuda' and hold the arrays on tvm.cuda(0) (the kernels run "
        "on the GPU, or on the simulator where there is none), or build for 'llvm' and use tvm.cpu(0)")
_ELSEWHERE = ("tessel has it under TVM's other spelling: te.scan, te.extern, te.gradient, te.decl_tensor_intrin, "
              "tvm.tir.call_packed / call_extern / call_pure_extern / decl_buffer / ir_builder, tvm.register_func")

# the last part of a dotted TVM name -> what to use instead
ADVICE: dict[str, str] = {
    "relay": _GRAPH, "relax": _GRAPH, "frontend": _GRAPH, "graph_executor": _GRAPH, "graph_runtime": _GRAPH,
    "auto_scheduler": _TUNE, "meta_schedule": _TUNE,
    "script": "it has no TVMScript: write te.compute and a te schedule",
    "Schedule": "TensorIR schedules are not offered: use te.create_schedule(op) and the stage primitives",
    "PrimFunc": "tvm.lower(s, args) returns a module whose ['main'] is tessel's lowered kernel",
    "rpc": "kernels run in this process; there is no RPC: export with export_library and load the file "
           "where it runs (tvm.runtime.load_module)",
    "micro": "there is no microTVM: export_library writes a shared library for this machine",
    "rocm": _GPU, "opencl": _GPU, "cl": _GPU, "metal": _GPU, "vulkan": _GPU,
    "vpi": _GPU, "hexagon": _GPU, "webgpu": _GPU, "ext_dev": _GPU, "nvptx": _GPU,
    "hybrid": "there is no hybrid script: write te.compute",
    "scan": _ELSEWHERE, "extern": _ELSEWHERE, "gradient": _ELSEWHERE, "decl_tensor_intrin": _ELSEWHERE,
    "register_func": _ELSEWHERE, "call_packed": _ELSEWHERE, "call_extern": _ELSEWHERE, "call_pure_extern": _ELSEWHERE,
    "decl_buffer": _ELSEWHERE,
    "save": "write the kernel with export_library (one shared library that carries its calling contract) and "
            "load it with tvm.runtime.load_module",
    "import_module": _GPU,
    "ir_builder": _ELSEWHERE,
}


def message(qualname: str) -> str:
    """Why ``qualname`` (``tvm.relay``, ``tvm.tir.Schedule``) is missing, and what to use."""
    leaf = qualname.rsplit(".", 1)[-1]
    advice = ADVICE.get(leaf)
    tail = f"; {advice}" if advice else f" ({_WHAT}; dir() of a module lists what it offers)"
    return f"tessel does not offer {qualname}{tail}"


def not_offered(qualname: str) -> NotOfferedError:
    return NotOfferedError(message(qualname))


def not_offered_module(qualname: str) -> NotOfferedModuleError:
    return NotOfferedModuleError(message(qualname))


_ABSENT = object()
_Feature = type(annotations)  # ``from __future__ import annotations`` leaves one in every module


def lookup(name: str, places: Sequence[str]) -> object:
    """``name`` from the first of the modules ``places`` (dotted names) that has it publicly."""
    if name.startswith("_"):
        return _ABSENT
    for place in places:
        try:
            mod = importlib.import_module(place)
        except ImportError:
            continue
        found = getattr(mod, name, _ABSENT)
        if found is not _ABSENT and not isinstance(found, types.ModuleType | _Feature):
            return found
    return _ABSENT


def missing_names(module: str, places: Sequence[str] = (), hidden: frozenset[str] = frozenset()) -> Callable:
    """A module ``__getattr__``: forward to ``places`` (except ``hidden`` names), else refuse.

    ``module`` is the module's own ``__name__``; messages spell it the TVM way (``tvm.te``).
    A plain module is given an empty ``__path__``: ``import tvm.te.hybrid`` then reaches the
    finder of missing modules (a NotOfferedModuleError that says what to write) instead of
    Python's "'tessel.tvm.te' is not a package"."""
    tvm_name = "tvm" + module.removeprefix("tessel.tvm")
    mod = sys.modules.get(module)
    if mod is not None and "__path__" not in vars(mod):
        mod.__path__ = []  # type: ignore[attr-defined]

    def __getattr__(name: str):
        if name.startswith("__") and name.endswith("__"):  # protocol probes (copy, inspect, import)
            raise AttributeError(f"module {tvm_name!r} has no attribute {name!r}")
        if name not in hidden:
            found = lookup(name, places)
            if found is not _ABSENT:
                return found
        if not name.startswith("_"):  # a submodule not imported yet (tvm.contrib.tedd)
            try:
                return importlib.import_module(f"{module}.{name}")
            except ImportError:
                pass
        raise not_offered(f"{tvm_name}.{name}")

    return __getattr__


class MissingModules(importlib.abc.MetaPathFinder):
    """Last on ``sys.meta_path``: a ``tessel.tvm.X`` no other finder found is a TVM module tessel
    does not offer, so ``from tvm import relay`` says that instead of "cannot import name"."""

    def find_spec(self, fullname: str, path=None, target=None):
        if fullname.startswith("tessel.tvm."):
            raise not_offered_module("tvm" + fullname.removeprefix("tessel.tvm"))
        return None


def install_missing_modules() -> None:
    if not any(isinstance(f, MissingModules) for f in sys.meta_path):
        sys.meta_path.append(MissingModules())


def not_offered_here(name: str) -> NotOfferedError:
    """``import tessel as tvm; tvm.nd``: the TVM spellings live in ``tessel.tvm``."""
    if name in ADVICE:
        return not_offered(f"tvm.{name}")
    return NotOfferedError(
        f"tessel has no {name!r} at its top level: tvm.{name} is one of TVM's spellings, which live in "
        f"tessel.tvm; write `import tessel.tvm as tvm`, or run the script unchanged with "
        f"`tessel tvm SCRIPT.py` (its `import tvm` then means tessel.tvm)")


class RefusesMissing:
    """Base of the TVM-shaped classes (Module, NDArray, Target, IRModule): an attribute TVM's
    class has and this one lacks is refused like a missing module name."""

    _tvm_name = "tvm.object"

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        raise not_offered(f"{self._tvm_name}.{name}")
