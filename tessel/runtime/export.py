"""A compiled kernel as a shared library of its own, loadable by another process.

``export_library(kernel, path)`` compiles the kernel's C once more, with the same compiler and
flags, together with one extra symbol: ``tsl_export_meta``, a string holding the calling
contract as JSON (parameter names, dtypes and shapes over the size vars, which parameters are
outputs, the index guards of seed 002, whether the entry point takes a thread count) and the
source. ``load_module(path)`` needs no compiler and no schedule: it loads the library, reads
that string and rebuilds the :class:`~tessel.runtime.args.ArgSpec`, so a call is checked
exactly as the original kernel's was. One file travels, as with TVM's ``export_library``.

Shapes, sizes, guards and scalars are written as one tessel-ir document (:mod:`tessel.ir.serialize`,
the one serializer: each node once, so a size var is one variable wherever it appears; loading
builds only classes of its fixed table and never runs anything).
"""

from __future__ import annotations

import ctypes
import json
import os
from pathlib import Path

from ..errors import BuildError, TesselError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.names import c_bytes_literal
from ..ir.serialize import load_json, save_json
from .args import ArgSpec
from .cache import _address, _load
from .compiler import compile_shared
from .files import check_nesting, loads_json, scratch_dir
from .module import CKernel, Kernel

META_SYMBOL = "tsl_export_meta"
FORMAT = "tessel-export"
VERSION = 2  # 2: shapes, sizes and guards as one tessel-ir document


def _contract(kernel: CKernel) -> dict:
    func = kernel.func
    scalars = tuple(getattr(func, "scalar_args", ()))
    # shapes, sizes, guards and scalars as one tessel-ir document (ir.serialize: data only, each
    # variable once, so a size in a shape and in a guard is one variable again when loaded)
    ir = save_json((tuple(tuple(b.shape) for b in func.params), tuple(func.size_vars), tuple(func.guards),
                    tuple(v for _, v in scalars)))
    params = [{"name": b.name, "dtype": str(b.dtype)} for b in func.params]
    return {"format": FORMAT, "version": VERSION, "name": kernel.name, "symbol": kernel.symbol,
            "parallel": kernel.parallel, "serial_note": kernel.serial_note, "outputs": list(kernel.plan["outputs"]),
            "params": params, "scalar_positions": [pos for pos, _ in scalars], "ir": ir, "source": kernel.source}


def export_library(kernel: Kernel, path: str | os.PathLike) -> Path:
    """Write ``kernel`` (built for the C target) as the shared library ``path``; see the module doc."""
    if not isinstance(kernel, CKernel):
        raise BuildError(f"export_library: kernel {kernel.name!r} was built for the {kernel.target} target, whose "
                         "code lives in this process only; build it with target='c' (TVM's 'llvm') to export it")
    if not isinstance(path, str | os.PathLike):
        raise BuildError(f"export_library(path): path must be a file name, got {type(path).__name__}")
    out = Path(path)
    if not out.parent.is_dir():
        raise BuildError(f"export_library: cannot write {str(out)!r}: directory {str(out.parent)!r} does not exist")
    if getattr(kernel, "_externs", None):
        raise BuildError(f"export_library: kernel {kernel.name!r} calls functions outside it (te.extern, call_packed, "
                         "call_extern), which are found by name in the process that runs it; exporting such a "
                         "kernel is not offered yet: export the parts around the call instead")
    if kernel.compiler is None:  # loaded by load_module: the library already is what we would write
        _place(Path(kernel.lib_path), out)
        return out
    meta = json.dumps(_contract(kernel), ensure_ascii=True).encode("ascii")
    source = (f"{kernel.source}\n\n/* the calling contract, read back by tessel.runtime.load_module */\n"
              f"const char {META_SYMBOL}[] =\n{c_bytes_literal(meta)};\n")
    with scratch_dir("tessel-export-") as tmp:
        so = os.path.join(tmp, "kernel.so")
        compile_shared(kernel.compiler, source, so, list(kernel.compile_flags), kernel.name)
        _place(Path(so), out)
    return out


def _place(src: Path, out: Path) -> None:
    """Put the library at ``out`` in one step (a reader never sees half a file)."""
    staged = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        staged.write_bytes(src.read_bytes())
        os.replace(staged, out)
    except OSError as e:
        raise BuildError(f"export_library: cannot write {str(out)!r}: {e.strerror or e}") from None
    finally:
        if staged.exists():
            staged.unlink()


def load_module(path: str | os.PathLike) -> CKernel:
    """The kernel in a library written by :func:`export_library` (no compiler needed)."""
    where = os.fspath(path) if isinstance(path, str | os.PathLike) else path
    if not isinstance(where, str) or not os.path.isfile(where):
        raise BuildError(f"load_module: no such file: {where!r}")
    lib = _load(Path(os.path.abspath(where)), META_SYMBOL, openmp=True)
    if lib is None:
        raise BuildError(f"load_module({where!r}): not a library written by tessel's export_library (it does not "
                         f"load here, or has no {META_SYMBOL} symbol); export it again with kernel.export_library")
    try:
        meta = loads_json(ctypes.string_at(_address(lib, META_SYMBOL)), "the metadata")
    except ValueError as e:
        raise BuildError(f"load_module({where!r}): the library's metadata is damaged ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("version") != VERSION:
        found = (meta.get("format"), meta.get("version")) if isinstance(meta, dict) else (None, None)
        raise BuildError(f"load_module({where!r}): metadata of format {found[0]!r} version {found[1]!r}; this "
                         f"tessel reads {FORMAT!r} version {VERSION}: export it again")
    return _kernel(meta, lib, where)


# the contract's fields and their types; anything else is damage (or crafted), refused by name
_FIELDS: dict[str, type | tuple[type, ...]] = {
    "name": str, "symbol": str, "parallel": bool, "serial_note": (str, bool, type(None)), "outputs": list,
    "params": list, "scalar_positions": list, "ir": str, "source": str}


def _checked(meta: dict, where: str) -> dict:
    """``meta`` once every field has its type and every position points at a parameter."""
    def bad(what: str) -> BuildError:
        return BuildError(f"load_module({where!r}): the library's metadata is damaged ({what}); export it again")

    for key, kind in _FIELDS.items():
        if not isinstance(meta.get(key), kind):
            raise bad(f"field {key!r} is missing or not of type {getattr(kind, '__name__', kind)}")
    n = len(meta["params"])
    if not all(isinstance(p, dict) and isinstance(p.get("name"), str) and isinstance(p.get("dtype"), str)
               for p in meta["params"]):
        raise bad("a parameter is not a name and a dtype")
    for key in ("outputs", "scalar_positions"):
        if not all(type(k) is int and 0 <= k < n + len(meta["scalar_positions"]) for k in meta[key]):
            raise bad(f"{key!r} holds something other than parameter positions")
    if not all(k < n for k in meta["outputs"]):
        raise bad("an output position is not a parameter's")
    return meta


def _kernel(meta: dict, lib: ctypes.CDLL, where: str) -> CKernel:
    """The kernel a contract describes, over a loaded library."""
    func = _func(_checked(meta, where), where)
    outputs = {func.params[k] for k in meta["outputs"]}
    try:
        _address(lib, meta["symbol"])
    except (AttributeError, OSError, ValueError):
        raise BuildError(f"load_module({where!r}): the entry point {meta['symbol']!r} is missing") from None
    try:
        spec = ArgSpec(func, outputs)
    except (TesselError, ValueError, TypeError, AttributeError) as e:
        raise BuildError(f"load_module({where!r}): the library's metadata is damaged ({e})") from None
    return CKernel(func, meta["source"], spec, lib, meta["symbol"], os.path.abspath(where),
                   0.0, True, parallel=meta["parallel"], serial_note=meta["serial_note"])


def contract(kernel: Kernel) -> dict:
    """The calling contract of a C kernel already compiled to its library ``kernel.lib_path``, as
    JSON data: with :func:`load_contract`, another process runs that very library without
    compiling it again (the tuner's runner)."""
    if not isinstance(kernel, CKernel):
        raise BuildError(f"contract: kernel {kernel.name!r} was built for the {kernel.target} target, whose code "
                         "lives in this process only; build it with target='c'")
    return {**_contract(kernel), "lib_path": os.path.abspath(kernel.lib_path)}


def load_contract(meta: dict) -> CKernel:
    """The kernel :func:`contract` described, loaded from its library (in any process)."""
    where = meta.get("lib_path", "")
    lib = _load(Path(where), meta.get("symbol", ""), openmp=True)
    if lib is None:
        raise BuildError(f"load_contract: the library {where!r} does not load here (evicted from the cache?)")
    return _kernel(meta, lib, where)


def _func(meta: dict, where: str) -> S.PrimFunc:
    """The kernel's parameters, sizes and guards (its body stays in the library)."""
    try:
        shapes, size_vars, guards, scalars = load_json(check_nesting(meta["ir"], "its IR"))
        if not (len(shapes) == len(meta["params"]) and len(scalars) == len(meta["scalar_positions"])
                and all(isinstance(x, tuple) and all(isinstance(d, E.PrimExpr) for d in x) for x in shapes)
                and all(isinstance(v, E.Var) for v in (*size_vars, *scalars))
                and all(isinstance(g, S.IndexGuard) for g in guards)):
            raise ValueError("its IR is not shapes, sizes, guards and scalars of these parameters")
        params = [S.Buffer(p["name"], p["dtype"], list(shape)) for p, shape in zip(meta["params"], shapes)]
    except (TesselError, ValueError, TypeError) as e:
        raise BuildError(f"load_module({where!r}): the library's metadata is damaged ({e})") from None
    outputs = [params[k] for k in meta["outputs"]]
    scalar_args = list(zip(meta["scalar_positions"], scalars))
    return S.PrimFunc(meta["name"], params, size_vars, S.Evaluate(E.IntImm(0)), outputs, guards, scalar_args)


__all__ = ["export_library", "load_module"]
