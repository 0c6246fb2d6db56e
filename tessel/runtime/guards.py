"""A kernel's index guards (seed 002) as one compiled check of the sizes of a call.

Index arithmetic over symbolic sizes keeps the sizes' dtype, so lowering records, for each such
computation that could leave it, its bounds in terms of the sizes alone
(:class:`~tessel.ir.stmt.IndexGuard`). A tiled, partitioned and unrolled kernel has hundreds
of them, sharing most of their subexpressions (the ranges of the loops). Walking them node by
node at every call would cost more than a small kernel's run, so they are compiled once into
a straight-line Python function of the sizes, exact in Python integers, each shared
subexpression computed once; and the sizes it accepted are remembered, since calls repeat them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from ..errors import BuildError, IndexOverflowError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.expr import fold_int

REMEMBERED = 64  # accepted size tuples kept (the oldest is forgotten first)
_INFIX = {E.Add: "+", E.Sub: "-", E.Mul: "*", E.LT: "<", E.LE: "<=", E.GT: ">", E.GE: ">=", E.EQ: "==",
          E.NE: "!=", E.And: "and", E.Or: "or"}
_CALLS = {E.Min: "min", E.Max: "max", E.FloorDiv: "_div", E.Div: "_div", E.FloorMod: "_div", E.Mod: "_div"}


def _div(cls: type, a: int, b: int) -> int:
    """Division and remainder as the kernels compute them: a zero divisor gives 0."""
    return fold_int(cls, a, b) or 0


class SizeGuards:
    def __init__(self, guards: Sequence[S.IndexGuard], size_vars: Sequence[E.Var], kernel: str):
        self.guards = tuple(guards)
        self.vars = tuple(size_vars)
        self.kernel = kernel
        self._first_bad = _compile(self.guards, self.vars, kernel)
        self._accepted: dict[tuple, None] = {}  # insertion order: the oldest first
        self._lock = threading.Lock()  # kernels are called from many threads; only misses take it

    def check(self, values: Sequence[int]) -> None:
        """Refuse sizes (in ``size_vars`` order) that take a guarded index out of its dtype."""
        key = tuple(values)
        if key in self._accepted:  # a lookup is atomic; only the changes below need the lock
            return
        bad = self._first_bad(key)
        if bad is not None:
            raise self._error(key, *bad)
        with self._lock:
            if len(self._accepted) >= REMEMBERED:
                del self._accepted[next(iter(self._accepted))]
            self._accepted[key] = None

    def _error(self, values: tuple, k: int, reach: int) -> IndexOverflowError:
        g = self.guards[k]
        sizes = ", ".join(f"{v.name}={x}" for v, x in zip(self.vars, values))
        narrow = [v.name for v in self.vars if v.dtype.bits < 64]
        if g.expr.dtype.element.bits >= 64 or not narrow:  # already the widest: no dtype helps
            return IndexOverflowError(
                f"kernel {self.kernel!r}: with {sizes}, {g.what} (`{g.expr}`) reaches {reach}, beyond the "
                f"{g.expr.dtype.element} the kernel counts it in: no machine holds that much; call the "
                "kernel with smaller sizes, or on smaller pieces"
            )
        return IndexOverflowError(
            f"kernel {self.kernel!r}: with {sizes}, {g.what} (`{g.expr}`) reaches {reach}, beyond the "
            f"{g.expr.dtype.element} it is computed in; index arithmetic over symbolic sizes keeps their dtype "
            f"(seed 002), so declare {', '.join(narrow)} int64 (te.var({narrow[0]!r}, dtype='int64')) and "
            "rebuild, or call the kernel on smaller pieces"
        )


def _compile(guards: Sequence[S.IndexGuard], size_vars: Sequence[E.Var],
             kernel: str) -> Callable[[tuple], tuple[int, int] | None]:
    """``f(sizes)``: ``(guard number, value reached)`` for the first guard the sizes break, else None."""
    position = {id(v): k for k, v in enumerate(size_vars)}
    names: dict[int, str] = {}
    lines: list[str] = []

    def value(e: E.PrimExpr) -> str:
        if isinstance(e, E.IntImm):
            return f"({e.value})"
        if isinstance(e, E.Var) and id(e) in position:
            return f"s[{position[id(e)]}]"
        if isinstance(e, E.Cast):  # the bounds are exact integers: a widening changes nothing
            return value(e.value)
        if isinstance(e, E.Not):
            return f"(not {value(e.a)})"
        if id(e) in names:
            return names[id(e)]
        if type(e) in _INFIX:
            text = f"{value(e.a)} {_INFIX[type(e)]} {value(e.b)}"
        elif type(e) in _CALLS:
            fn = _CALLS[type(e)]
            cls = f"E.{type(e).__name__}, " if fn == "_div" else ""
            text = f"{fn}({cls}{value(e.a)}, {value(e.b)})"
        else:
            raise BuildError(f"kernel {kernel!r}: an index guard uses `{e}`, which the argument check cannot compute")
        names[id(e)] = f"t{len(names)}"
        lines.append(f"    {names[id(e)]} = {text}")
        return names[id(e)]

    for k, g in enumerate(guards):
        el = g.expr.dtype.element
        taken = "".join(f"{value(c)} and " for c in g.when)  # the branch the guarded index is in
        for end, test in ((g.low, f"< {el.min_value()}"), (g.high, f"> {el.max_value()}")):
            if end is not None:
                v = value(end)
                lines.append(f"    if {taken}{v} {test}: return {k}, {v}")
    source = "def first_bad(s):\n" + "\n".join([*lines, "    return None"]) + "\n"
    with _LOCK:
        fn = _COMPILED.get(source)
    if fn is None:  # a build of the same program again (a symbolic kernel found in the memo) compiles nothing
        ns: dict = {"E": E, "_div": _div}
        exec(compile(source, f"<tessel index guards of {kernel}>", "exec"), ns)
        fn = ns["first_bad"]
        with _LOCK:
            if len(_COMPILED) >= REMEMBERED:
                del _COMPILED[next(iter(_COMPILED))]
            _COMPILED[source] = fn
    return fn


#: the guard functions compiled, by their source (the oldest first)
_COMPILED: dict[str, Callable[[tuple], tuple[int, int] | None]] = {}
_LOCK = threading.Lock()


__all__ = ["REMEMBERED", "SizeGuards"]
