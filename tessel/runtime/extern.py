"""Functions outside the kernel: the registry (``tessel.register_func``) and each kernel's table.

A kernel calls an outside function through a slot of a table it is handed at every call,
never by the function's name: the name is data (``"tvm.contrib.my_addone"`` is a fine name),
the C never contains it, and the same compiled kernel serves whatever is registered under the
name when it is loaded. A slot is filled, by name, from:

* a Python function given to ``register_func`` (NumPy-backed). The python target calls it
  directly; the C target calls back into Python through a ctypes callback. A packed call
  hands it NumPy arrays (views of the kernel's buffers, with ``.numpy()`` and ``.copyfrom()``
  as TVM's arrays have) and numbers; a plain (``call_extern``) call hands it numbers only.
* C: ``register_func(name, c_source=...)`` (compiled once, cached like kernels) or
  ``library=path`` (a shared library), with ``symbol=`` the C function (default: the name,
  which must then be a C identifier). A packed call uses TVM's convention (``tsl_value``
  values, type codes, count; DLPack tensors); a plain call passes pointers and numbers.
* for plain calls of an unregistered name: the C math library, for the names in
  :data:`LIBM_FUNCTIONS` only (``expf``, ``sqrt``...: functions of numbers to a number). Any
  other name is refused when the kernel is built, with the registered names listed: binding
  any symbol of the process would let ``call_extern("float32", "abort")`` (or ``exit``,
  ``free``) end or corrupt the process in the middle of a call.

An exception raised by a Python function stops nothing in C; the kernel finishes and the call
then raises it as a KernelRuntimeError naming the function (on both targets).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import BuildError, DefinitionError, KernelRuntimeError

_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}\Z")
_CTYPES = {"bool": ctypes.c_bool, "int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
           "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16, "uint32": ctypes.c_uint32,
           "uint64": ctypes.c_uint64, "float32": ctypes.c_float, "float64": ctypes.c_double,
           "handle": ctypes.c_void_p}


@dataclass
class Registered:
    """One registered function: Python (``py``) or C (``address`` in ``lib``)."""

    name: str
    py: Callable | None = None
    lib: Any = None
    address: int | None = None


_REGISTRY: dict[str, Registered] = {}
_LOCK = threading.Lock()


def c_identifier(symbol: object, what: str) -> str:
    """``symbol`` if it is a C identifier (what a symbol of a library must be), else refuse."""
    if not isinstance(symbol, str) or not _C_IDENTIFIER.match(symbol):
        raise DefinitionError(f"{what}: {symbol!r} is not a C identifier (letters, digits and _, not starting "
                              "with a digit); pass the C function's name as symbol=")
    return symbol


def register_func(func_name, f: Callable | None = None, override: bool = False, *, c_source: str | None = None,
                  library: str | os.PathLike | None = None, symbol: str | None = None):
    """Register ``f`` (a Python function) or a C function (``c_source=`` / ``library=``, with
    ``symbol=``) under ``func_name`` for ``call_packed``/``call_extern``. Without ``f`` and C,
    a decorator; ``register_func(f)`` registers ``f`` under its own name."""
    if callable(func_name) and f is None and c_source is None and library is None:
        f, func_name = func_name, func_name.__name__
    if not isinstance(func_name, str) or not func_name or "\0" in func_name:
        raise DefinitionError(f"register_func: the name must be a non-empty string, got {func_name!r}")
    if f is None and c_source is None and library is None:
        return lambda fn: register_func(func_name, fn, override)
    if sum(x is not None for x in (f, c_source, library)) != 1:
        raise DefinitionError(f"register_func({func_name!r}): give one of a Python function, c_source= or library=")
    if f is not None and not callable(f):
        raise DefinitionError(f"register_func({func_name!r}): {f!r} is not callable")
    with _LOCK:
        if func_name in _REGISTRY and not override:
            raise DefinitionError(f"register_func: {func_name!r} is already registered; pass override=True "
                                  "to replace it")
    entry = Registered(func_name, py=f) if f is not None else _c_entry(func_name, c_source, library, symbol)
    with _LOCK:
        _REGISTRY[func_name] = entry
    return f


def _c_entry(name: str, c_source: str | None, library, symbol: str | None) -> Registered:
    sym = c_identifier(symbol if symbol is not None else name, f"register_func({name!r})")
    if c_source is not None:
        from .cache import load_or_build
        from .compiler import find_compiler

        if not isinstance(c_source, str):
            raise DefinitionError(f"register_func({name!r}): c_source must be the C text, got {type(c_source).__name__}")
        comp = find_compiler()
        lib = load_or_build(c_source, name, sym, comp, comp.flags()).lib
    else:
        try:
            lib = ctypes.CDLL(os.fspath(library))
        except (OSError, TypeError) as e:
            raise BuildError(f"register_func({name!r}): cannot load the library {library!r}: {e}") from None
    return Registered(name, lib=lib, address=_symbol(lib, sym, name))


def _symbol(lib, sym: str, name: str) -> int:
    from .cache import _address

    try:
        return _address(lib, sym)
    except (AttributeError, OSError):
        raise BuildError(f"register_func({name!r}): the library has no function {sym!r}") from None


def remove_global_func(name: str) -> None:
    with _LOCK:
        if _REGISTRY.pop(name, None) is None:
            raise DefinitionError(f"remove_global_func: {name!r} is not registered")


def get_global_func(name: str, allow_missing: bool = False):
    """The Python function registered as ``name`` (a C one: its ``Registered`` entry)."""
    entry = _REGISTRY.get(name)
    if entry is None:
        if allow_missing:
            return None
        raise DefinitionError(f"no function is registered as {name!r}; use tessel.register_func")
    return entry.py if entry.py is not None else entry


def list_global_func_names() -> list[str]:
    return sorted(_REGISTRY)


# <math.h> functions of numbers to a number (double, and the float ones with ``f``): what a
# plain call may reach without being registered. Nothing that takes a pointer (frexp, modf).
_LIBM_DOUBLE = ("sin cos tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh exp exp2 expm1 log log2 "
                "log10 log1p logb pow sqrt cbrt hypot erf erfc tgamma lgamma ceil floor trunc round rint "
                "nearbyint fmod remainder fmin fmax fdim fabs copysign fma nextafter ldexp scalbn ilogb").split()
LIBM_FUNCTIONS = frozenset(_LIBM_DOUBLE + [f + "f" for f in _LIBM_DOUBLE])
_LIBM_ARITY = {**dict.fromkeys("atan2 pow hypot fmod remainder fmin fmax fdim copysign nextafter ldexp scalbn".split(), 2),
               "fma": 3}


def libm_signature(name: str) -> tuple[str, tuple[str, ...]]:
    """What the C math function ``name`` returns and takes (``hypotf``: float32 of two float32):
    a plain call passes its arguments as their own dtypes, so any other ones would reach the
    function as the wrong bits, a silently wrong value."""
    base = name[:-1] if name not in _LIBM_DOUBLE else name
    real = "float32" if base != name else "float64"
    args = [real] * _LIBM_ARITY.get(base, 1)
    if base in ("ldexp", "scalbn"):
        args[1] = "int32"
    return ("int32" if base == "ilogb" else real), tuple(args)


@functools.cache
def _system_libs() -> tuple:
    libs = [ctypes.CDLL(None)]
    m = ctypes.util.find_library("m")
    if m:
        libs.append(ctypes.CDLL(m))
    return tuple(libs)


def _system_symbol(name: str) -> int | None:
    if name not in LIBM_FUNCTIONS:
        return None
    from .cache import _address

    for lib in _system_libs():
        try:
            return _address(lib, name)
        except (AttributeError, OSError):
            continue
    return None


# ---- arrays across the boundary ---------------------------------------------------------------
class ExternArray(np.ndarray):
    """What a Python function receives for a buffer: a NumPy view of the kernel's memory, with
    TVM's ``numpy()`` (a copy), ``copyfrom(src)`` (write into it) and ``copyto(target)``."""

    def numpy(self) -> np.ndarray:
        return np.array(self)

    asnumpy = numpy

    def copyfrom(self, src) -> ExternArray:
        src = src.numpy() if hasattr(src, "numpy") and not isinstance(src, np.ndarray) else src
        self[...] = np.asarray(src).reshape(self.shape)
        return self

    def copyto(self, target):
        """Write this array into ``target`` (an array, or anything with TVM's ``copyfrom``)."""
        if hasattr(target, "copyfrom"):
            return target.copyfrom(np.asarray(self))
        target[...] = self
        return target


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class TslValue(ctypes.Union):
    _fields_ = [("v_int64", ctypes.c_int64), ("v_float64", ctypes.c_double), ("v_handle", ctypes.c_void_p)]


_DL_CODES = {0: "int", 1: "uint", 2: "float", 6: "bool"}
_PACKED = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.POINTER(TslValue), ctypes.POINTER(ctypes.c_int32), ctypes.c_int32)


def array_from_dl(t: DLTensor) -> ExternArray:
    """A NumPy view of the memory a DLTensor describes (strides in elements; none: compact)."""
    code = _DL_CODES.get(t.dtype.code)
    if code is None:
        raise KernelRuntimeError(f"an array of DLPack type code {t.dtype.code} has no NumPy equivalent")
    dt = np.dtype(bool) if code == "bool" else np.dtype(f"{code}{t.dtype.bits}")
    shape = [t.shape[k] for k in range(t.ndim)]
    strides = [t.strides[k] for k in range(t.ndim)] if t.strides else _compact(shape)
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if all(n > 0 for n in shape) else 0
    raw = (ctypes.c_char * max(span * dt.itemsize, 1)).from_address(t.data + t.byte_offset)
    base = np.frombuffer(raw, dtype=dt, count=span)
    view = np.lib.stride_tricks.as_strided(base, shape, [s * dt.itemsize for s in strides])
    return view.view(ExternArray)


def _compact(shape: list[int]) -> list[int]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return out[::-1]


def dl_from_array(a: np.ndarray, keep: list) -> DLTensor:
    """A DLTensor for a NumPy view (its shape and stride arrays kept alive in ``keep``)."""
    code = {"i": 0, "u": 1, "f": 2, "b": 6}[a.dtype.kind]
    shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
    strides = (ctypes.c_int64 * max(a.ndim, 1))(*[s // a.itemsize for s in a.strides])
    keep += [shape, strides]
    return DLTensor(a.ctypes.data, DLDevice(1, 0), a.ndim, DLDataType(code, a.itemsize * 8, 1), shape, strides, 0)


def _plain(v):
    """A NumPy scalar as the Python number a user's function expects."""
    return v.item() if isinstance(v, np.generic) else v


# ---- one kernel's table ------------------------------------------------------------------------
class ExternTable:
    """The outside functions of one loaded kernel, in its slots' order: ``pointers`` (a C array
    of function addresses) for the c target, ``calls`` (Python callables) for the python one.
    ``pending`` holds exceptions raised by Python functions during a C call."""

    def __init__(self, sigs, target: str, kernel: str):
        self.kernel = kernel
        self.pending: list[tuple[str, BaseException]] = []
        self._keep: list = []
        entries = [self._entry(sig) for sig in sigs]
        if target == "c":
            addrs = [self._c_slot(sig, e) for sig, e in zip(sigs, entries)]
            self.pointers = (ctypes.c_void_p * max(len(addrs), 1))(*addrs)
        else:
            self.calls = [self._py_slot(sig, e) for sig, e in zip(sigs, entries)]

    def _entry(self, sig) -> Registered:
        entry = _REGISTRY.get(sig.name)
        if entry is not None:
            return entry
        addr = _system_symbol(sig.name) if sig.kind == "extern" else None
        if addr is not None and (sig.ret, tuple(sig.args)) != libm_signature(sig.name):
            ret, args = libm_signature(sig.name)
            raise BuildError(
                f"kernel {self.kernel!r}: call_extern({sig.ret!r}, {sig.name!r}, ...) with arguments of dtypes "
                f"({', '.join(sig.args)}), but the C function {sig.name} returns {ret} and takes "
                f"({', '.join(args)}): cast the arguments (x.astype(...), te.const(2.0, 'float64')) and the "
                "result's dtype to match")
        if addr is None:
            names = ", ".join(repr(n) for n in list_global_func_names()) or "none"
            libm = " or a C math function (expf, sqrt ...: tessel.runtime.extern.LIBM_FUNCTIONS)" \
                if sig.kind == "extern" else ""
            raise BuildError(
                f"kernel {self.kernel!r} calls {sig.name!r}, which is not registered (registered: {names}){libm}: "
                f"register it with tessel.register_func({sig.name!r}, f) (a Python function) or "
                f"register_func({sig.name!r}, c_source=..., symbol=...) / library=... (a C function)")
        return Registered(sig.name, address=addr)

    def _refuse_pointers(self, sig) -> None:
        if "handle" in sig.args:
            raise BuildError(f"kernel {self.kernel!r}: call_extern({sig.name!r}) passes pointers to a Python "
                             "function; pass buffers with call_packed, which gives Python NumPy arrays")

    def raise_pending(self) -> None:
        if self.pending:
            name, err = self.pending[0]
            self.pending.clear()
            raise KernelRuntimeError(f"kernel {self.kernel!r}: the function {name!r} it calls raised "
                                     f"{type(err).__name__}: {err}") from err

    # ---- c target: addresses -------------------------------------------------------------
    def _c_slot(self, sig, entry: Registered) -> int:
        self._keep.append(entry)  # its library stays loaded while the kernel lives, even if re-registered
        if entry.py is None:
            return entry.address
        if sig.kind == "packed":
            cb = _PACKED(functools.partial(self._packed_callback, entry))
        else:
            self._refuse_pointers(sig)
            cb = ctypes.CFUNCTYPE(_ctype(sig.ret, sig), *[_ctype(a, sig) for a in sig.args])(
                functools.partial(self._extern_callback, entry, np.dtype(_np_name(sig.ret))))
        self._keep.append(cb)
        return ctypes.cast(cb, ctypes.c_void_p).value

    def _packed_callback(self, entry: Registered, values, codes, n: int) -> int:
        try:
            args = []
            for k in range(n):
                v, c = values[k], codes[k]
                if c == 7:
                    args.append(array_from_dl(ctypes.cast(v.v_handle, ctypes.POINTER(DLTensor)).contents))
                else:
                    args.append(v.v_float64 if c == 2 else v.v_handle if c == 3 else v.v_int64)
            entry.py(*args)
            return 0
        except BaseException as err:  # it must not unwind through C
            self.pending.append((entry.name, err))
            return -1

    def _extern_callback(self, entry: Registered, ret: np.dtype, *args):
        try:
            out = entry.py(*args)
            return ret.type(0 if out is None else out).item()  # a function called for its effect gives 0
        except BaseException as err:  # it must not unwind through C
            self.pending.append((entry.name, err))
            return 0

    # ---- python target: callables --------------------------------------------------------
    def _py_slot(self, sig, entry: Registered) -> Callable:
        ret = np.dtype(_np_name(sig.ret))
        if entry.py is not None:
            if sig.kind == "extern":
                self._refuse_pointers(sig)
            return functools.partial(self._py_call, entry, sig.kind, ret)
        if sig.kind == "packed":
            return functools.partial(self._c_packed_call, entry)
        fn = ctypes.CFUNCTYPE(_ctype(sig.ret, sig), *[_ctype(a, sig) for a in sig.args])(entry.address)
        self._keep.append(fn)
        return functools.partial(self._c_extern_call, fn, ret)

    def _py_call(self, entry: Registered, kind: str, ret: np.dtype, *args):
        try:
            if kind == "packed":
                entry.py(*[a.view(ExternArray) if isinstance(a, np.ndarray) else _plain(a) for a in args])
                return np.int32(0)
            out = entry.py(*[_plain(a) for a in args])
            return ret.type(0 if out is None else out)
        except Exception as err:
            raise KernelRuntimeError(f"kernel {self.kernel!r}: the function {entry.name!r} it calls raised "
                                     f"{type(err).__name__}: {err}") from err

    def _c_packed_call(self, entry: Registered, *args):
        keep: list = []
        values = (TslValue * max(len(args), 1))()
        codes = (ctypes.c_int32 * max(len(args), 1))()
        for k, a in enumerate(args):
            if isinstance(a, np.ndarray):
                dl = dl_from_array(a, keep)
                keep.append(dl)
                values[k].v_handle, codes[k] = ctypes.addressof(dl), 7
            elif hasattr(a, "address"):
                values[k].v_handle, codes[k] = a.address, 3
            elif isinstance(a, float | np.floating):
                values[k].v_float64, codes[k] = float(a), 2
            else:
                values[k].v_int64, codes[k] = int(a), 0
        status = ctypes.cast(entry.address, _PACKED)(values, codes, len(args))
        if status:
            raise KernelRuntimeError(f"kernel {self.kernel!r}: the packed function {entry.name!r} returned {status}")
        return np.int32(0)

    @staticmethod
    def _c_extern_call(fn, ret: np.dtype, *args):
        out = fn(*[a.address if hasattr(a, "address") else _plain(a) for a in args])
        return ret.type(0 if out is None else out)


def _np_name(dt: str) -> str:
    return "bool" if dt == "bool" else ("uint64" if dt == "handle" else dt)


def _ctype(dt: str, sig) -> type:
    t = _CTYPES.get(dt)
    if t is None:
        raise BuildError(f"call of {sig.name!r}: values of dtype {dt} cannot cross into an outside function")
    return t
