"""A compiled kernel as a shared library of its own, loadable by another process.

``export_library(kernel, path)`` compiles the kernel's C once more, with the same compiler and
flags, together with one extra symbol: ``tsl_export_meta``, a string holding the calling
contract as JSON (parameter names, dtypes and shapes over the size vars, which parameters are
outputs, the index guards of seed 002, whether the entry point takes a thread count) and the
source. ``load_module(path)`` (``loader.py``) needs no compiler and no schedule: it loads the
library, reads that string and rebuilds the :class:`~tessel.runtime.args.ArgSpec`, so a call is checked
exactly as the original kernel's was. One file travels, as with TVM's ``export_library``.

Shapes, sizes, guards and scalars are written as one tessel-ir document (:mod:`tessel.ir.serialize`,
the one serializer: each node once, so a size var is one variable wherever it appears; loading
builds only classes of its fixed table and never runs anything).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import BuildError
from ..ir.names import c_bytes_literal
from ..ir.serialize import save_json
from .compiler import compile_shared
from .files import scratch_dir

if TYPE_CHECKING:
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


def export_library(kernel: Kernel, path: str | os.PathLike, object_only: bool = False) -> Path:
    """Write ``kernel`` (built for the C target) as the shared library ``path``; see the module doc.
    ``object_only``: an object file instead, carrying the same contract, for the system's linker
    to make a library of (TVM's ``save`` then ``tvm.contrib.cc.create_shared``)."""
    if not kernel.exportable:
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
    if kernel.compiler is None and not object_only:  # loaded by load_module: the library is what we would write
        _place(Path(kernel.lib_path), out)
        return out
    if kernel.compiler is None:
        raise BuildError(f"save: kernel {kernel.name!r} was loaded from a library, whose object code is gone; "
                         "export it with export_library instead")
    meta = json.dumps(_contract(kernel), ensure_ascii=True).encode("ascii")
    source = (f"{kernel.source}\n\n/* the calling contract, read back by tessel.runtime.load_module */\n"
              f"const char {META_SYMBOL}[] =\n{c_bytes_literal(meta)};\n")
    with scratch_dir("tessel-export-") as tmp:
        so = os.path.join(tmp, "kernel.o" if object_only else "kernel.so")
        compile_shared(kernel.compiler, source, so, list(kernel.compile_flags), kernel.name, object_only)
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


def contract(kernel: Kernel) -> dict:
    """The calling contract of a C kernel already compiled to its library ``kernel.lib_path``, as
    JSON data: with :func:`loader.load_contract`, another process runs that very library without
    compiling it again (the tuner's runner)."""
    if not kernel.exportable:
        raise BuildError(f"contract: kernel {kernel.name!r} was built for the {kernel.target} target, whose code "
                         "lives in this process only; build it with target='c'")
    return {**_contract(kernel), "lib_path": os.path.abspath(kernel.lib_path)}


__all__ = ["contract", "export_library"]
