"""Which loops of a kernel carry a dependence through memory, so that the C compiler's own
auto-vectorizer is kept off them.

tessel's C for a recurrence, a scan or an in-place stencil is right as a sequential program,
but at ``-O3`` the C compiler may vectorize it anyway, relying on its own dependence analysis,
and that analysis has bugs: GCC 12 at ``-O3 -march=native`` vectorizes the outer loop of
``for i < 7, j < 7: A[i*10+j+11] = A[i*10+j] + A[i*10+j+22]`` and gets other values than at
``-O2``. tessel knows these loops exactly, so it does not hand them over: the generator
marks each one (see ``CStmtWriter.visit_For``) and leaves every other loop to the vectorizer.

A loop ``v`` *carries* a dependence here when its body writes a buffer that it also reads
(or writes) at another index expression, and two different iterations ``v`` and ``v + d``
(``d >= 1``; either access first) may touch one element: the difference of the two flat
indices, with the loops inside ``v`` running over their ranges independently on each side
and the loops outside shared, is not proved nonzero by the :class:`~tessel.arith.Analyzer`
(its bounds on affine sums are exact intervals, symbolic sizes included). An index it cannot
reason about (data-dependent, a vector that is not a ramp) counts as carrying: a loop kept
scalar needlessly costs speed, a vectorized one that should not be costs the values.

A buffer read and written at the *same* index expression (``C[i, j] += ...``: a reduction
into its element, matmul's and every sum's) is the pattern every vectorizer handles, and is
left to it, as is a loop whose two indices do not vary inside it at all (each iteration
touches the same two elements).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..arith import Analyzer
from ..ir import expr as E
from ..ir import op as O
from ..ir import stmt as S
from ..ir.functor import StructKey, Visitor, free_vars, structural_equal, substitute, uses_var


@dataclass(frozen=True)
class _Access:
    """A load or store: its flat index (lets substituted; a ramp's lane as ``lane`` over
    ``[0, lanes)``; None when it is a vector of no known form) and the loops around it."""

    buffer: S.Buffer
    index: E.PrimExpr | None
    shown: str
    store: bool
    loops: tuple[S.For, ...]
    lane: tuple[E.Var, int] | None = None


def carrying_loops(func: S.PrimFunc) -> dict[int, str]:
    """``id(loop) -> why`` for every loop of ``func`` that carries a dependence (see the module)."""
    walk = _Accesses()
    walk.visit(func.body)
    sizes = {v for b in func.params for d in b.shape for v in free_vars(d)}
    facts = [E.GE(v, E.IntImm(0, v.dtype)) for v in sizes] + [c for _, c in func.assumptions]
    out: dict[int, str] = {}
    for loop, outer in walk.loops:
        under = [a for a in walk.accesses if loop in a.loops]
        why = _carried(loop, outer, under, facts)
        if why:
            out[id(loop)] = why
    return out


class _Accesses(Visitor):
    """Every load and store with its loops, and every loop with the loops outside it."""

    def __init__(self) -> None:
        self.accesses: list[_Access] = []
        self.loops: list[tuple[S.For, tuple[S.For, ...]]] = []
        self.stack: list[S.For] = []
        self.env: dict[E.Var, E.PrimExpr] = {}

    def visit_For(self, s: S.For) -> None:
        self.visit(s.min)
        self.visit(s.extent)
        self.loops.append((s, tuple(self.stack)))
        self.stack.append(s)
        self.visit(s.body)
        self.stack.pop()

    def _let(self, var: E.Var, value, body) -> None:
        self.visit(value)
        self.env[var] = substitute(value, self.env) if self.env else value
        self.visit(body)
        del self.env[var]

    def visit_LetStmt(self, s: S.LetStmt) -> None:
        self._let(s.var, s.value, s.body)

    def visit_Let(self, e: E.Let) -> None:
        self._let(e.var, e.value, e.body)

    def visit_BufferStore(self, s: S.BufferStore) -> None:
        self._record(s.buffer, s.indices[0], True)
        self.generic_visit(s)

    def visit_BufferLoad(self, e: E.BufferLoad) -> None:
        self._record(e.buffer, e.indices[0], False)
        self.generic_visit(e)

    def _record(self, buf: S.Buffer, idx: E.PrimExpr, store: bool) -> None:
        shown = str(idx)
        idx = substitute(idx, self.env) if self.env else idx
        lane = None
        if isinstance(idx, E.Broadcast):
            idx = idx.value
        elif isinstance(idx, E.Ramp):
            var = E.Var("lane", idx.base.dtype)
            lane = (var, idx.lanes)
            idx = O.add(idx.base, O.mul(idx.stride, var))
        if idx.dtype.lanes != 1:
            idx = None
        self.accesses.append(_Access(buf, idx, shown, store, tuple(self.stack), lane))


def _carried(loop: S.For, outer: tuple[S.For, ...], under: list[_Access], facts: list) -> str | None:
    """Why ``loop`` carries a dependence through one of the ``under`` accesses (None: it carries none)."""
    by_buffer: dict[int, list[_Access]] = {}
    for a in under:
        by_buffer.setdefault(id(a.buffer), []).append(a)
    inner = {id(a_loop.loop_var) for a in under for a_loop in a.loops[a.loops.index(loop):]}
    for accs in by_buffer.values():
        stores = _distinct([a for a in accs if a.store])
        if not stores:
            continue
        others = _distinct(accs)
        for s in stores:
            for a in others:
                if a is s or (a.index is not None and s.index is not None and structural_equal(a.index, s.index)):
                    continue
                if not (_varies(s, inner) or _varies(a, inner)):
                    continue
                if _may_meet(loop, outer, s, a, facts) or _may_meet(loop, outer, a, s, facts):
                    what = "written" if a.store else "read"
                    return f"{s.buffer.name} is written at [{s.shown}] and {what} at [{a.shown}] in another iteration"
    return None


def _distinct(accs: list[_Access]) -> list[_Access]:
    """One access per index and loop nest (an unrolled body repeats them)."""
    seen: dict[tuple, _Access] = {}
    for a in accs:
        key = (StructKey(a.index) if a.index is not None else id(a), tuple(map(id, a.loops)), a.store)
        seen.setdefault(key, a)
    return list(seen.values())


def _varies(a: _Access, inner: set[int]) -> bool:
    return a.index is None or a.lane is not None or uses_var(a.index, lambda v: id(v) in inner)


def _may_meet(loop: S.For, outer: tuple[S.For, ...], x: _Access, y: _Access, facts: list) -> bool:
    """Whether ``x`` in iteration ``v`` and ``y`` in iteration ``v + d`` (``d >= 1``) of
    ``loop`` may touch one element, the loops inside ``loop`` free on each side."""
    if x.index is None or y.index is None:
        return True
    ana = Analyzer()
    for c in facts:
        ana.assume(c)
    for lp in outer:
        ana.bind(lp.loop_var, E.Range(lp.min, lp.extent))
    v = loop.loop_var
    ana.bind(v, E.Range(loop.min, loop.extent))
    d = E.Var("d", v.dtype)
    ana.bind(d, E.Range(E.IntImm(1, v.dtype), O.sub(loop.extent, E.IntImm(1, loop.extent.dtype))))
    xi = _side(ana, loop, x, {})
    yi = _side(ana, loop, y, {v: O.add(v, d)})
    if xi.dtype != yi.dtype:
        xi, yi = O.cast(xi, "int64"), O.cast(yi, "int64")
    diff = O.sub(xi, yi)
    zero = E.IntImm(0, diff.dtype)
    return not (ana.can_prove(E.GT(diff, zero)) or ana.can_prove(E.LT(diff, zero)))


def _side(ana: Analyzer, loop: S.For, a: _Access, vmap: dict) -> E.PrimExpr:
    """``a``'s index on one side: the loops inside ``loop`` (and a ramp's lane) as variables
    of this side alone, over their ranges, ``vmap`` applied."""
    vmap = dict(vmap)
    for lp in a.loops[a.loops.index(loop) + 1:]:
        fresh = E.Var(lp.loop_var.name, lp.loop_var.dtype)
        ana.bind(fresh, E.Range(substitute(lp.min, vmap), substitute(lp.extent, vmap)))
        vmap[lp.loop_var] = fresh
    if a.lane is not None:
        var, lanes = a.lane
        fresh = E.Var("lane", var.dtype)
        ana.bind(fresh, E.Range(E.IntImm(0, var.dtype), E.IntImm(lanes, var.dtype)))
        vmap[var] = fresh
    return substitute(a.index, vmap)


__all__ = ["carrying_loops"]
