"""Code a schedule brings along for its calls: TVM's ``pragma(x, "import_llvm", ir)`` and
``pragma(x, "import_c", source)``, the way a tensorize tutorial supplies its micro-kernel.

The code is compiled once (LLVM IR with clang, C with the compiler tessel builds with) into a
shared library under tessel's cache directory, named by a hash of the code, and every function
it defines becomes a registered function (``register_func(name, library=...)``): a kernel's
``call_extern("gemv_update", ...)`` finds it by name as it finds any other. Unlike TVM, which
links the code into the one module, the functions are then registered for the whole process
(a later registration of the same name replaces them, as ``override=True`` does).
"""

from __future__ import annotations

import hashlib
import os
import shutil

from ..errors import BuildError, ScheduleError
from .compiler import find_compiler, run_tool
from .extern import register_func
from .files import cache_dir

IMPORTED_CODE = {"import_llvm": ("ll", "LLVM IR"), "import_c": ("c", "C")}


def import_code(key: str, code, what: str) -> list[str]:
    """Compile ``code`` (the pragma ``key``'s language) and register the functions it defines;
    their names, in order."""
    suffix, language = IMPORTED_CODE[key]
    if not isinstance(code, str) or not code.strip():
        raise ScheduleError(f"{what}): the value must be the {language} text of the functions, got {code!r:.60}")
    digest = hashlib.sha256(f"{key}\0{code}".encode()).hexdigest()[:24]
    root = cache_dir() / "imported"
    root.mkdir(parents=True, exist_ok=True)
    src, lib = root / f"{digest}.{suffix}", root / f"{digest}.so"
    if not lib.exists():
        src.write_text(code)
        _compile(key, os.fspath(src), os.fspath(lib), what)
    names = _defined_functions(os.fspath(lib), what)
    if not names:
        raise ScheduleError(f"{what}): the {language} code defines no function")
    for name in names:
        register_func(name, library=lib, override=True)
    return names


def _compile(key: str, src: str, lib: str, what: str) -> None:
    if key == "import_llvm":
        clang = shutil.which("clang")
        if clang is None:
            raise BuildError(f"{what}): LLVM IR is compiled with clang, which is not on PATH")
        argv = [clang, "-x", "ir"]
    else:
        argv = [*find_compiler().argv, "-x", "c"]
    tmp = f"{lib}.{os.getpid()}.tmp"
    res = run_tool([*argv, "-O2", "-shared", "-fPIC", src, "-o", tmp], what=f"{what}): compiling")
    if res.returncode != 0:
        raise BuildError(f"{what}): the code does not compile:\n{(res.stderr or res.stdout).strip()[:2000]}")
    os.replace(tmp, lib)  # whole, or not at all: another process may be loading it


def _defined_functions(lib: str, what: str) -> list[str]:
    nm = shutil.which("nm")
    if nm is None:
        raise BuildError(f"{what}): the functions of the library are listed with nm, which is not on PATH")
    res = run_tool([nm, "-D", "--defined-only", lib], what=f"{what}): listing the functions")
    if res.returncode != 0:
        raise BuildError(f"{what}): nm cannot read the library it built: {res.stderr.strip()}")
    names = []
    for line in res.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "T" and not parts[2].startswith("_"):
            names.append(parts[2])
    return names


__all__ = ["IMPORTED_CODE", "import_code"]
