"""From generated code to a callable kernel, per target: compile and load C, exec Python.

A code generator returns its source and calling convention (``tessel.codegen.Generated``:
read here by attribute, so the runtime does not depend on the generators); the target says
which compiler and flags to use.
"""

from __future__ import annotations

import linecache
from collections.abc import Callable
from itertools import count

import numpy as np

from ..errors import BuildError
from ..ir.names import comment
from ..ir.stmt import PrimFunc
from .args import ArgSpec
from .cache import load_or_build
from .compiler import find_compiler
from .extern import ExternTable
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
    flags = comp.flags(openmp=gen.openmp, guarded_loads=gen.guarded_loads, march=getattr(target, "mcpu", None))
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
