"""``tvm.contrib.cc``: the system's C compiler, as TVM's scripts call it to link saved modules.

``create_shared(output, objects)`` links object files (``Module.save``) into a shared library,
with the compiler tessel builds with (``$CC``, else ``cc``), so that ``tvm.runtime.load_module``
reads it; ``create_executable`` is not offered (tessel's kernels run from Python). Paths are
data: each is passed to the compiler as an absolute path, never as an option.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ...errors import BuildError
from ...runtime.compiler import find_compiler, run_tool


def _path(p, what: str) -> str:
    if not isinstance(p, str | os.PathLike):
        raise BuildError(f"tvm.contrib.cc.create_shared: {what} must be a file name, got {type(p).__name__}")
    return os.path.abspath(os.fspath(p))  # absolute: a name starting with "-" never reads as an option


def create_shared(output, objects: Sequence | str, options: Sequence[str] | None = None, cc: str | None = None,
                  cwd=None, ccache_env=None) -> None:
    """Link ``objects`` into the shared library ``output`` (OpenMP's runtime linked in, which a
    kernel with parallel loops needs)."""
    if options or cc is not None:
        raise BuildError("tvm.contrib.cc.create_shared: tessel links with the compiler it builds with ($CC); "
                         "options and cc are not taken")
    objs = [objects] if isinstance(objects, str | os.PathLike) else list(objects)
    comp = find_compiler()
    openmp = ["-fopenmp"] if comp.supports("openmp") else []
    cmd = [*comp.argv, "-shared", "-fPIC", *openmp, *(_path(o, "an object") for o in objs), "-o",
           _path(output, "output"), "-lm"]
    res = run_tool(cmd, what="tvm.contrib.cc.create_shared: linking")  # stopped past $TESSEL_CC_TIMEOUT
    if res.returncode != 0:
        raise BuildError(f"tvm.contrib.cc.create_shared: linking failed:\n{(res.stderr or res.stdout).strip()}")


__all__ = ["create_shared"]
