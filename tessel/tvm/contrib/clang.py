"""``tvm.contrib.clang``: LLVM IR from C or C++ with the system's clang, as TVM's tensorize
tutorial makes its micro-kernel (then handed to ``pragma(x, "import_llvm", ir)``, which
tessel compiles and registers: runtime/imported.py).

``create_llvm(inputs, output=None)``: each input is source text, or the name of a file that
exists; the IR of all of them (one module per input, concatenated as TVM does) is returned and
written to ``output`` when given. Paths are data: passed as absolute paths, never as options;
the compiler is ``clang++`` (``cc=`` may name another clang on PATH).
"""

from __future__ import annotations

import os
import shutil
import tempfile

from ...errors import BuildError
from ...runtime.compiler import run_tool


def create_llvm(inputs, output=None, options=None, cc: str = "clang++") -> str:
    if options:
        raise BuildError("tvm.contrib.clang.create_llvm: options are not taken; tessel compiles with -O2")
    if not (isinstance(cc, str) and os.path.basename(cc).startswith("clang")):
        raise BuildError(f"tvm.contrib.clang.create_llvm: cc must name clang (clang, clang++), got {cc!r}")
    tool = shutil.which(cc)
    if tool is None:
        raise BuildError(f"tvm.contrib.clang.create_llvm: {cc!r} is not on PATH")
    inputs = [inputs] if isinstance(inputs, str | os.PathLike) else list(inputs)
    parts = []
    with tempfile.TemporaryDirectory(prefix="tessel-clang-") as tmp:
        for k, x in enumerate(inputs):
            if not isinstance(x, str | os.PathLike):
                raise BuildError(f"tvm.contrib.clang.create_llvm: input {k} must be source text or a file name")
            path = os.fspath(x)
            if not os.path.isfile(path):
                path = os.path.join(tmp, f"input{k}.cc")
                with open(path, "w") as f:
                    f.write(os.fspath(x))
            out = os.path.join(tmp, f"output{k}.ll")
            res = run_tool([tool, "-S", "-emit-llvm", "-O2", os.path.abspath(path), "-o", out],
                           what="tvm.contrib.clang.create_llvm")
            if res.returncode != 0:
                raise BuildError(f"tvm.contrib.clang.create_llvm: clang failed:\n{(res.stderr or res.stdout).strip()}")
            with open(out) as f:
                parts.append(f.read())
    code = "\n".join(parts)
    if output is not None:
        with open(os.path.abspath(os.fspath(output)), "w") as f:
            f.write(code)
    return code


__all__ = ["create_llvm"]
