"""From generated code to a callable kernel, per target: compile and load C, exec Python; and
from a library ``export_library`` wrote (``export.py``) to the kernel it holds, with no compiler.

A code generator returns its source and calling convention (``tessel.codegen.Generated``:
read here by attribute, so the runtime does not depend on the generators); the target says
which compiler and flags to use.
"""

from __future__ import annotations

import ctypes
import linecache
import os
from collections.abc import Callable
from itertools import count
from pathlib import Path

import numpy as np

from ..errors import BuildError, TesselError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.names import comment
from ..ir.serialize import load_json
from ..ir.stmt import PrimFunc
from .args import ArgSpec
from .cache import _address, _load, load_or_build
from .compiler import find_compiler
from .export import FORMAT, META_SYMBOL, VERSION
from .extern import ExternTable
from .files import check_nesting, loads_json
from .module import CKernel, PythonKernel

_COUNTER = count()


def load_c(func: PrimFunc, gen, target, finish: Callable | None = None) -> CKernel:
    """Compile (or take from the cache) and load the C of ``gen`` for ``func`` on ``target``.

    ``tessel.build`` also calls this with code it remembered for the kernel, ``func`` then
    being the kernel before its last passes and ``finish`` what completes it on demand (the
    parameters, which are all the calling convention needs, are the same)."""
    comp = find_compiler(getattr(target, "compiler", None))
    if gen.float16 and not comp.supports("float16"):
        raise BuildError(
            f"kernel {func.name!r} uses float16, but the C compiler {comp.path} has no _Float16 type; "
            "use a newer gcc/clang (gcc >= 12, clang >= 15 on x86-64), compute in float32, or build "
            "with target='python'"
        )
    spec = ArgSpec(func, {func.params[k] for k in gen.outputs})
    flags = comp.flags(openmp=gen.openmp, guarded_loads=gen.guarded_loads, march=getattr(target, "mcpu", None),
                       vectorized=gen.vectorized)
    flags += list(getattr(target, "flags", ()))
    table = ExternTable(gen.externs, "c", func.name) if gen.externs else None
    lib = load_or_build(gen.source, func.name, gen.symbol, comp, flags)
    kernel = CKernel(func, gen.source, spec, lib.lib, gen.symbol, lib.path, lib.seconds, lib.cache_hit,
                     parallel=gen.openmp, finish=finish, externs=table)
    kernel.plan = gen.plan()
    kernel.compiler, kernel.compile_flags = comp, tuple(flags)
    return kernel


def load_python(func: PrimFunc, gen, target=None, finish: Callable | None = None) -> PythonKernel:
    """Exec the Python of ``gen`` in its namespace and wrap its entry point as a kernel."""
    source = gen.source
    spec = ArgSpec(func, {func.params[k] for k in gen.outputs})
    filename = f"<tessel-python {comment(func.name, 60)} #{next(_COUNTER)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)  # readable tracebacks
    ns = dict(gen.namespace or {})
    if gen.externs:
        ns["_ext"] = ExternTable(gen.externs, "python", func.name).calls
    try:
        code = compile(source, filename, "exec")
        exec(code, ns)
    except (SyntaxError, RecursionError, MemoryError) as e:
        raise compile_refusal(func.name, source, e) from e
    size_types = [np.dtype("bool" if v.dtype.is_bool else str(v.dtype)).type for v in func.size_vars]
    return PythonKernel(func, source, spec, ns[gen.symbol], size_types)


def compile_refusal(name: str, source: str, err: BaseException) -> BuildError:
    """Why Python would not compile the generated code: an expression nested past its parser's
    limits (a long chain of inlined stages is one expression), else a bug in the generator,
    shown with the lines around the one it names."""
    text = str(err)
    if not isinstance(err, SyntaxError) or "too many nested" in text or "too complex" in text:
        return BuildError(
            f"kernel {comment(name, 60)!r}: an expression is nested deeper than Python's parser accepts "
            f"({type(err).__name__}: {text}); the python target writes each stored value as one expression. "
            "Build it with the C target, or store some of the inlined stages in between "
            "(s[T].compute_root() instead of compute_inline)")
    lines = source.splitlines()
    at = (err.lineno or 1) - 1
    shown = "\n".join(f"{k + 1:5d}  {lines[k][:200]}" for k in range(max(at - 3, 0), min(at + 4, len(lines))))
    return BuildError(f"python target produced invalid code for {comment(name, 60)!r}: {text}\n{shown}")


# ---- a library export_library wrote --------------------------------------------------------
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
