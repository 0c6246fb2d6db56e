"""Code generators: a lowered PrimFunc in, source text and its calling convention out.

A generator never compiles or loads anything (it does not import the runtime): it returns a
:class:`Generated`, and the runtime of the same target turns that into a callable kernel.
Which generator and runtime a target uses is the target's business
(:mod:`tessel.target.backends`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..deep import recursion_limit
from ..errors import BuildError
from ..ir.stmt import PrimFunc


@dataclass(frozen=True)
class Generated:
    """What a generator hands the runtime: the source and how to call it.

    ``symbol`` is the entry point in ``source``; ``outputs`` the indices of the parameters the
    code writes. The C target adds how to compile (``openmp``: parallel loops; ``guarded_loads``:
    memory read under a condition; ``float16``: needs ``_Float16``; ``vectorized``: holds
    vector code of tessel's own, so -O2 is enough); the python target the globals its code
    runs with (``namespace``)."""

    kind: str
    name: str
    symbol: str
    source: str
    outputs: tuple[int, ...]
    openmp: bool = False
    guarded_loads: bool = False
    float16: bool = False
    vectorized: bool = False
    externs: tuple = ()  # the outside functions it calls: ExternSig per slot of its table
    namespace: Mapping | None = field(default=None, compare=False, repr=False)

    def plan(self) -> dict:
        """The JSON form remembered by the memo of generated code (C only: no namespace)."""
        return {"source": self.source, "symbol": self.symbol, "name": self.name, "openmp": self.openmp,
                "guarded_loads": self.guarded_loads, "float16": self.float16, "vectorized": self.vectorized,
                "outputs": list(self.outputs),
                "externs": [x.as_json() for x in self.externs]}

    @classmethod
    def from_plan(cls, kind: str, plan: Mapping) -> Generated:
        from .common import ExternSig

        return cls(kind, plan["name"], plan["symbol"], plan["source"], tuple(plan["outputs"]),
                   bool(plan["openmp"]), bool(plan["guarded_loads"]), bool(plan["float16"]),
                   bool(plan["vectorized"]), tuple(ExternSig.from_json(x) for x in plan.get("externs", ())))


def generate(generator: Callable, func: PrimFunc, target) -> Generated:
    """Run one generator on ``func``, turning an expression nested too deeply into a BuildError."""
    # generators recurse over expressions; unrolled reductions make long chains of additions
    try:
        with recursion_limit(20000):
            return generator(func, target)
    except RecursionError:
        raise BuildError(
            f"kernel {getattr(func, 'name', func)!r}: an expression is nested too deeply to generate "
            "code for; unroll less or split the computation"
        ) from None


__all__ = ["Generated", "generate"]
