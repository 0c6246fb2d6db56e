"""Code generators: a lowered PrimFunc in, a callable Kernel out.

Targets are plug-ins keyed by name; each takes a PrimFunc and returns a
:class:`~tessel.runtime.module.Kernel`, so ``tessel.build`` never needs to know which backend ran.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from ..errors import BuildError
from ..ir.stmt import PrimFunc
from ..runtime.module import Kernel


def _build_c(func: PrimFunc) -> Kernel:
    from .c import build_c

    return build_c(func)


def _build_python(func: PrimFunc) -> Kernel:
    from .python import build_python

    return build_python(func)


TARGETS: dict[str, Callable[[PrimFunc], Kernel]] = {"c": _build_c, "python": _build_python}


def build_func(func: PrimFunc, target: str = "c") -> Kernel:
    """Compile one lowered PrimFunc for ``target`` ("c" or "python")."""
    builder = TARGETS.get(target)
    if builder is None:
        raise BuildError(f"unknown target {target!r}; valid targets: {', '.join(sorted(TARGETS))}")
    # generators recurse over expressions; unrolled reductions make long chains of additions
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 20000))
    try:
        return builder(func)
    except RecursionError:
        raise BuildError(
            f"kernel {getattr(func, 'name', func)!r}: an expression is nested too deeply to generate "
            "code for; unroll less or split the computation"
        ) from None
    finally:
        sys.setrecursionlimit(old)


__all__ = ["TARGETS", "Kernel", "build_func"]
