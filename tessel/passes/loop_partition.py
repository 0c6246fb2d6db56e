"""Loop partitioning: the guards of non-divisible splits leave the hot loops.

ScheduleOps keeps a non-divisible split correct with an ``if`` around the body (``if
(i.outer*16 + i.inner < n)``). Inside a vectorized or unrolled loop that per-iteration test is
what stops the loop from becoming straight vector code, so this pass moves it out, in three
steps:

1. **Specialise small-size extents.** A loop whose extent is ``min(n, 16)`` (written so in a
   shape or a region; InferBound itself gives ``split(n, 16)``'s inner loop 16, as TVM does)
   is not of constant length, and the same ``min`` shows up as a coefficient in indices. The
   outermost loop using it is versioned:
   ``if (n >= 16) { the nest with 16 } else { the nest as it was }``; the ``else`` part only runs
   for inputs smaller than one vector, so it is left as it is (marked ``small_sizes``).
2. **Partition.** For a loop ``x`` whose body tests a condition ``a*x + r < 0`` (``r`` free of
   ``x``, ranging over the loops inside), the values of ``x`` for which it holds for every inner
   iteration form a prefix (``a > 0``) or a suffix (``a < 0``) of the loop. The loop is cut there:
   in the proved part the condition is replaced by ``true``; the other part keeps it. Of several
   such conditions the loop is cut at the tightest point, where all of them hold (a split of a
   split tests one condition per level); inside the tail piece loops are cut again, but inside
   a tail's tail only at constant points, so that symbolic sizes give code linear in the depth
   of a nest of splits.
   Beforehand a condition that does not depend on the loop around it moves out of that loop
   (``for j { if (i < n) S }`` is ``if (i < n) { for j { S } }``), so that it ends up on the loop
   whose variable it tests. A condition that a fused or split index makes nonlinear in ``x``
   (``y.c + f%3*3 < 7``: the last row tile of each channel, channels and row tiles fused)
   cannot be cut; the body is versioned on it instead (``if (f%3*3 + 2 < 7) {the tile
   without it} else {the tile with it}``): one test per iteration of ``x``.
   Last, with cuts of their own, the borders of guarded copies: a store of
   ``if_then_else(border test, load, 0)`` (a padded input) is made a branch between two stores
   (:mod:`.guarded_store`), cut where the border ends, even in a vectorized loop where that
   point is a constant; what no cut removed is folded back into the guarded store.
3. **Tighten.** A loop whose whole body is ``if (a*x + r < 0)`` runs over exactly the values
   that satisfy it instead: ``for (x, 0, min(16, n - i.outer*16))``. This is what becomes of
   the tail, so no loop tests a condition per iteration.

Only conditions on loop variables and sizes are touched: a condition reading data, or using
a variable bound by a ``let``, stays where it is. Nor is a loop cut or tightened at a point that
depends on a GPU thread index (``threadIdx.*``): the threads of a block would then run different
numbers of iterations, and a barrier inside the loop (``__syncthreads()``) could no longer be
reached by all of them; the guard stays inside the loop, where each thread tests it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, reduce

from ..arith import Analyzer, IntSet, eval_set
from ..arith.budget import minmax_terms, proof_budget
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import Mutator, StructKey, collect, free_vars, structural_equal, substitute
from ..ir.stmt import LoopKind
from ..tunables import current
from .guarded_store import is_guarded_store, merge_guarded_stores, split_guarded_stores
from .simplify import analyzer, simplify_stmt


def loop_partition(stmt: S.Stmt, assume: Sequence[E.PrimExpr] = ()) -> S.Stmt:
    """Specialise, partition and tighten (see the module docstring); simplifies the result.
    ``assume``: the user's assumptions about the sizes (``s.assume``), true whenever it runs."""
    with proof_budget("loop partition"):  # its many simplifications share one account
        return _loop_partition(stmt, assume)


def _loop_partition(stmt: S.Stmt, assume: Sequence[E.PrimExpr]) -> S.Stmt:
    memo: dict = {}  # the three simplifications see mostly the same expressions under the same loops
    stmt = _Specialize().visit(stmt)
    stmt = _Hoist().visit(simplify_stmt(stmt, assume=assume, memo=memo))
    threads = _thread_vars(stmt)
    stmt = _Partition(assume, threads).visit(stmt)
    stmt = _Hoist().visit(simplify_stmt(stmt, assume=assume, memo=memo))
    # the borders of guarded copies last, with cuts of their own: the tails' cuts come first;
    # not on a GPU, where each lane is a thread of its own and a guard costs no vector
    if not _has_thread_loops(stmt):
        stmt = _Partition(assume, threads, borders=True).visit(split_guarded_stores(stmt))
        stmt = _Hoist().visit(simplify_stmt(stmt, assume=assume, memo=memo))
    stmt = _Tighten(assume, threads).visit(stmt)
    return simplify_stmt(merge_guarded_stores(stmt), assume=assume, memo=memo)


SMALL = S.AttrKey.SMALL_SIZES  # on the branch a specialisation keeps for tiny inputs


def _has_thread_loops(stmt: S.Stmt) -> bool:
    return bool(collect(stmt, lambda n: isinstance(n, S.For) and n.kind == LoopKind.THREAD_BINDING,
                        statements_only=True))


def _thread_vars(stmt: S.Stmt) -> frozenset[E.Var]:
    """The variables of loops bound to ``threadIdx.*``: no cut or bound may depend on them."""
    loops = collect(stmt, lambda n: isinstance(n, S.For) and n.kind == LoopKind.THREAD_BINDING
                    and n.thread_tag in S.THREAD_TAGS, statements_only=True)
    return frozenset(loop.loop_var for loop in loops)


# ---- conditions as `d < 0` -------------------------------------------------------------------
def conjuncts(cond: E.PrimExpr) -> list[E.PrimExpr]:
    if isinstance(cond, E.And):
        return conjuncts(cond.a) + conjuncts(cond.b)
    return [cond]


def _index_type(e: E.PrimExpr) -> bool:
    dt = e.dtype
    return dt.lanes == 1 and dt.is_int and dt.bits in (32, 64)


def negative_form(c: E.PrimExpr) -> E.PrimExpr | None:
    """``d`` with ``c`` equivalent to ``d < 0``, for integer comparisons; None otherwise."""
    if not isinstance(c, E.LT | E.LE | E.GT | E.GE) or not _index_type(c.a):
        return None
    if isinstance(c, E.LT):
        return E.sub(c.a, c.b)
    if isinstance(c, E.LE):
        return E.sub(E.sub(c.a, c.b), 1)
    if isinstance(c, E.GT):
        return E.sub(c.b, c.a)
    return E.sub(E.sub(c.b, c.a), 1)


@dataclass
class Linear:
    """``d == coeff*x + rest`` with a constant nonzero ``coeff``."""

    coeff: int
    rest: E.PrimExpr


def linear_in(d: E.PrimExpr, x: E.Var, ana: Analyzer) -> Linear | None:
    """``d`` as ``coeff*x + rest`` with ``coeff`` nonzero; None for a test of data or of no such form."""
    if collect(d, lambda n: isinstance(n, E.BufferLoad | E.Let | E.Call)):
        return None
    got = ana.linear_in(d, x)
    return Linear(*got) if got is not None and got[0] else None


def split_point(lin: Linear, rmax: E.PrimExpr) -> tuple[E.PrimExpr, bool]:
    """Where ``coeff*x + rmax < 0`` starts (suffix) or stops (prefix) holding; True for a prefix."""
    a = lin.coeff
    if a > 0:  # x < ceil(-rmax / a)
        return E.floordiv(E.sub(E.const(a - 1, rmax.dtype), rmax), E.const(a, rmax.dtype)), True
    return E.add(E.floordiv(rmax, E.const(-a, rmax.dtype)), 1), False  # x > rmax / -a


# ---- 1. specialisation of min(X, C) extents --------------------------------------------------
def _min_terms(s: S.Stmt) -> list[E.Min]:
    """``min(X, C)`` extents of loops in ``s`` whose X only uses variables bound outside ``s``."""
    binders = collect(s, lambda n: isinstance(n, S.For | S.LetStmt), statements_only=True)
    loops = [n for n in binders if isinstance(n, S.For)]
    inner = {n.loop_var if isinstance(n, S.For) else n.var for n in binders}
    out: list[E.Min] = []
    for f in loops:
        for m in collect(f.extent, lambda n: isinstance(n, E.Min)):
            x, c = (m.a, m.b) if isinstance(m.b, E.IntImm) else (m.b, m.a)
            if not isinstance(c, E.IntImm) or c.value <= 1 or isinstance(x, E.IntImm):
                continue
            fv = free_vars(x)
            if not fv or fv & inner or collect(x, lambda n: isinstance(n, E.BufferLoad)):
                continue
            if not any(structural_equal(m, o) for o in out):
                out.append(m)
    return out


class _ReplaceExpr(Mutator):
    def __init__(self, old: E.PrimExpr, new: E.PrimExpr):
        self.key = StructKey(old)
        self.new = new

    def generic_visit(self, node):
        if isinstance(node, E.PrimExpr) and StructKey(node) == self.key:
            return self.new
        return super().generic_visit(node)


class _Specialize(Mutator):
    statements_only = True  # expressions are read off the statements it rewrites, never walked

    def __init__(self) -> None:
        self.done: list[E.Min] = []

    def visit_For(self, s: S.For):
        terms = [t for t in _min_terms(s) if not any(structural_equal(t, d) for d in self.done)]
        if not terms or len(self.done) >= current().max_specializations:
            return self.generic_visit(s)
        t = terms[0]
        self.done.append(t)
        x, c = (t.a, t.b) if isinstance(t.b, E.IntImm) else (t.b, t.a)
        fast = _ReplaceExpr(t, E.cast(c, t.dtype)).visit(s)
        slow = S.AttrStmt(t, SMALL, E.cast(c, t.dtype), self.visit(s))
        return S.IfThenElse(E.ge(x, E.cast(c, x.dtype)), self.visit(fast), slow)


# ---- hoisting loop-invariant conditions --------------------------------------------------------------
class _Hoist(Mutator):
    """Move conditions outwards: out of loops that they do not depend on, out of allocations and
    ``produce`` markers, and out of sequences whose every statement tests them."""

    statements_only = True  # expressions are read off the statements it rewrites, never walked

    def visit_AttrStmt(self, s: S.AttrStmt):
        if s.key == SMALL:
            return s
        body = self.visit(s.body)
        if isinstance(body, S.IfThenElse) and body.else_case is None:
            return S.IfThenElse(body.condition, S.AttrStmt(s.node, s.key, s.value, body.then_case))
        return s if body is s.body else S.AttrStmt(s.node, s.key, s.value, body)

    def visit_Allocate(self, s: S.Allocate):
        body = self.visit(s.body)
        if isinstance(body, S.IfThenElse) and body.else_case is None:
            return S.IfThenElse(body.condition, S.Allocate(s.buffer, body.then_case))
        return s if body is s.body else S.Allocate(s.buffer, body)

    def visit_SeqStmt(self, s: S.SeqStmt):
        parts = [self.visit(x) for x in s.seq]
        if all(isinstance(x, S.IfThenElse) and x.else_case is None for x in parts):
            common = [c for c in conjuncts(parts[0].condition)
                      if all(any(structural_equal(c, d) for d in conjuncts(x.condition)) for x in parts[1:])]
            if common:
                keys = {StructKey(c) for c in common}
                inner = []
                for x in parts:
                    rest = [c for c in conjuncts(x.condition) if StructKey(c) not in keys]
                    inner.append(S.IfThenElse(E.all_(*rest), x.then_case) if rest else x.then_case)
                return S.IfThenElse(E.all_(*common), S.seq(*inner))
        return S.seq(*parts)

    def visit_For(self, s: S.For):
        body = self.visit(s.body)
        if isinstance(body, S.IfThenElse) and body.else_case is None:
            parts = conjuncts(body.condition)
            inv = [c for c in parts if s.loop_var not in free_vars(c)]
            if inv:
                rest = [c for c in parts if s.loop_var in free_vars(c)]
                inner = S.IfThenElse(E.all_(*rest), body.then_case) if rest else body.then_case
                return S.IfThenElse(E.all_(*inv), S.For(s.loop_var, s.min, s.extent, s.kind, inner, s.thread_tag))
        return s if body is s.body else S.For(s.loop_var, s.min, s.extent, s.kind, body, s.thread_tag)


# ---- 2. partitioning ---------------------------------------------------------------------------
@dataclass
class _Site:
    cond: E.PrimExpr                  # one conjunct of an IfThenElse condition
    loops: tuple[S.For, ...]          # the loops between the cut loop and the condition
    opaque: set[E.Var]                # variables bound by lets on the way

    @cached_property
    def doms(self) -> dict[E.Var, IntSet]:
        return _ranges(self.loops)


def _ranges(loops: Sequence[S.For]) -> dict[E.Var, IntSet]:
    """The loops' ranges, made only for a condition that may be cut on (most are not, for most
    of the loops around them: each loop of a nest looks at every condition inside it)."""
    return {f.loop_var: IntSet.interval(f.min, E.sub(E.add(f.min, f.extent), 1)) for f in loops}


def _sites(body: S.Stmt, borders: bool = False) -> list[_Site]:
    """The conjuncts of the conditions in ``body``; with ``borders``, only those of the
    branches between two stores that :mod:`.guarded_store` made of a guarded read."""
    out: list[_Site] = []

    def walk(s, loops: tuple, opaque: set) -> None:
        """``loops``: the loops on the way, whose ranges are made only where a condition is."""
        if isinstance(s, S.SeqStmt):
            for x in s.seq:
                walk(x, loops, opaque)
        elif isinstance(s, S.For):
            walk(s.body, (*loops, s), opaque)
        elif isinstance(s, S.IfThenElse):
            if not borders or is_guarded_store(s):
                out.extend(_Site(c, loops, opaque) for c in conjuncts(s.condition))
            walk(s.then_case, loops, opaque)
            if s.else_case is not None:
                walk(s.else_case, loops, opaque)
        elif isinstance(s, S.LetStmt):
            walk(s.body, loops, opaque | {s.var})
        elif isinstance(s, S.Allocate | S.AttrStmt):
            walk(s.body, loops, opaque)

    walk(body, (), set())
    return out


class _ProveConjunct(Mutator):
    """Replace one conjunct of the IfThenElse conditions by ``true``."""

    statements_only = True  # expressions are read off the statements it rewrites, never walked

    def __init__(self, cond: E.PrimExpr):
        self.key = StructKey(cond)

    def visit_IfThenElse(self, s: S.IfThenElse):
        parts = conjuncts(s.condition)
        keep = [c for c in parts if StructKey(c) != self.key]
        then = self.visit(s.then_case)
        els = self.visit(s.else_case) if s.else_case is not None else None
        cond = E.all_(*keep) if keep else E.const(True)
        if len(keep) == len(parts):
            cond = s.condition
        return S.IfThenElse(cond, then, els)


class _Partition(Mutator):
    statements_only = True  # expressions are read off the statements it rewrites, never walked

    def __init__(self, assume: Sequence[E.PrimExpr] = (), threads: frozenset = frozenset(),
                 borders: bool = False) -> None:
        self.ana = analyzer(assume)
        self.budget = current().max_partitions  # cuts left (tessel.tunables says why)
        self.max_tail_depth = current().max_tail_depth
        self.minmax_terms = current().minmax_terms
        self.threads = threads
        self.borders = borders
        self.tails = 0  # tail pieces around the loop being visited

    def visit_AttrStmt(self, s: S.AttrStmt):
        return s if s.key == SMALL else self.generic_visit(s)

    def visit_For(self, s: S.For, skip: frozenset = frozenset()):
        if self.ana.can_prove(E.le(s.extent, 0)):
            return s  # a piece that never runs (simplify drops it): no cut is spent on it
        # a vectorized loop is not cut on its own variable: both parts would have symbolic
        # extents, and tightening gives its tail one loop instead; but a border of a padded copy
        # is cut at a constant point
        if s.kind != LoopKind.THREAD_BINDING and (s.kind != LoopKind.VECTORIZED or self.borders) and self.budget > 0:
            cut = self._cut(s, skip)
            if cut is None and not self.borders:
                cut = self._unswitch(s, skip)
            if cut is not None:
                return cut
        # inside, the loop's range is known: a cut point of an inner loop that depends on it
        # becomes a constant in a piece of one iteration (the tail tile of a split)
        with self.ana.scoped_bind(s.loop_var, E.Range(s.min, s.extent)):
            body = self.visit(s.body)
        return s if body is s.body else S.For(s.loop_var, s.min, s.extent, s.kind, body, s.thread_tag)

    def _cut(self, s: S.For, skip: frozenset) -> S.Stmt | None:
        """Cut ``s`` where a condition of its body starts (or stops) holding for every inner
        iteration. Of the conditions that hold on part of the loop, the cut is made at the
        tightest point, where all of them hold: the nested splits of one axis test one
        condition per level (``i.o*27 + ... < n``, ``i.o*3 + ... < (n + 8)//9``, ...), and cut
        at the tightest the loop has one piece without tests and one tail, instead of a piece
        per level, each a nest of its own."""
        x = s.loop_var
        cuts: list[tuple[StructKey, E.PrimExpr, bool, _ProveConjunct]] = []
        for site in _sites(s.body, self.borders):
            key = StructKey(site.cond)
            if key in skip:
                continue
            if isinstance(s.body, S.IfThenElse) and s.body.else_case is None and not site.loops and any(
                    c is site.cond for c in conjuncts(s.body.condition)):
                continue  # the whole body is guarded: tightening the loop is better than cutting it
            point = self._point(s, site)
            if point is None:
                continue
            p, prefix = point
            lo, hi = s.min, E.add(s.min, s.extent)
            proved = _ProveConjunct(site.cond)
            if self.ana.can_prove(E.ge(p, hi) if prefix else E.le(p, lo)):
                # it holds on the whole loop: no cut, nothing duplicated
                return self.visit_For(proved.visit(s), skip)
            if self.ana.can_prove(E.le(p, lo) if prefix else E.ge(p, hi)):
                skip = skip | {key}  # it holds nowhere in the loop: cutting gains nothing
                continue
            cuts.append((key, p, prefix, proved))
        if not cuts:
            return None
        if self.borders and collect(s.body, lambda n: isinstance(n, S.Allocate), statements_only=True):
            return None  # a border is not worth an allocation in each piece
        key, p, prefix, proved = self._tightest(cuts)
        if self.tails >= self.max_tail_depth and not isinstance(p, E.IntImm):
            return None  # a corner of symbolic size: tightened, not cut (see _tail)
        self.budget -= 1
        lo, hi = s.min, E.add(s.min, s.extent)
        first = S.For(x, lo, self.ana.simplify(E.sub(p, lo)), s.kind, s.body, s.thread_tag)
        second = S.For(x, p, self.ana.simplify(E.sub(hi, p)), s.kind, s.body, s.thread_tag)
        # the proved part gets a fresh loop variable; the other keeps x, so that `key` still
        # names the condition it must not be cut on again
        if prefix:
            first = _fresh(proved.visit(first))
            return S.seq(self.visit(first), self._tail(second, skip | {key}))
        second = _fresh(proved.visit(second))
        return S.seq(self._tail(first, skip | {key}), self.visit(second))

    def _point(self, s: S.For, site) -> tuple[E.PrimExpr, bool] | None:
        """Where ``site``'s condition starts to fail for some inner iteration (``prefix``: it
        holds before the point) or starts to hold for all (not ``prefix``); None: not a
        condition a cut can serve."""
        x = s.loop_var
        d = negative_form(site.cond)
        if d is None or free_vars(d) & site.opaque or x not in free_vars(d):
            return None
        if minmax_terms(d, s.extent) > self.minmax_terms:
            return None  # past the budget: each cut would nest the bounds deeper (see arith.budget)
        lin = linear_in(self.ana.simplify(d), x, self.ana)
        if lin is None:
            return None
        rmax = eval_set(lin.rest, site.doms, self.ana).max_value
        if rmax is None or free_vars(rmax) & (set(site.doms) | {x}):
            return None
        p, prefix = split_point(lin, rmax)
        if free_vars(p) & self.threads:
            return None  # the threads of a block would leave the loop at different iterations
        lo, hi = s.min, E.add(s.min, s.extent)
        p = self.ana.simplify(E.max_(lo, E.min_(hi, E.cast(p, lo.dtype))))
        if s.kind == LoopKind.VECTORIZED and not (isinstance(p, E.IntImm) and isinstance(s.extent, E.IntImm)):
            return None
        return p, prefix

    def _tail(self, s: S.For, skip: frozenset) -> S.Stmt:
        """The piece of a cut loop where a condition does not hold everywhere: a few iterations
        (a split's last tile). Inside a tail the loops are cut again (the last row tile of a
        matmul still has whole column tiles), but inside a tail's tail (a corner) only at
        constant points: a symbolic corner's tests are tightened into loop bounds later, so
        that a nest of splits over symbolic sizes is not copied once per level and condition
        (with constant sizes every piece is cut to constant extents, as before)."""
        self.tails += 1
        try:
            return self.visit_For(s, skip)
        finally:
            self.tails -= 1

    def _tightest(self, cuts: list) -> tuple:
        """Of the cut points of one direction as the first, the one the others are proved not
        to pass (the least of prefixes, the greatest of suffixes); else the first."""
        prefix = cuts[0][2]
        same = [c for c in cuts if c[2] == prefix]
        for c in same:
            if all(o is c or self.ana.can_prove(E.le(c[1], o[1]) if prefix else E.ge(c[1], o[1])) for o in same):
                return c
        return cuts[0]

    def _unswitch(self, s: S.For, skip: frozenset) -> S.Stmt | None:
        """Version the body of ``s`` on a condition that a fused or split index makes nonlinear
        in ``x`` (``y.c + f%3*3 < 7``, the partial last row tile in a fused loop): where it holds
        for every inner iteration, the body runs without it (``if (f%3*3 + 2 < 7) {tile}
        else {tile, guarded}``). A test per iteration of ``x``, not per inner iteration."""
        x = s.loop_var
        for site in _sites(s.body):
            key = StructKey(site.cond)
            d = negative_form(site.cond)
            if key in skip or d is None or not site.loops or free_vars(d) & (site.opaque | self.threads):
                continue
            if collect(d, lambda n: isinstance(n, E.BufferLoad | E.Let | E.Call)) or not collect(
                    d, lambda n: isinstance(n, E.FloorMod | E.FloorDiv) and x in free_vars(n)):
                continue
            rmax = eval_set(d, site.doms, self.ana).max_value
            if rmax is None or free_vars(rmax) & set(site.doms) or x not in free_vars(rmax):
                continue
            holds = self.ana.simplify(E.lt(rmax, E.const(0, rmax.dtype)))
            if isinstance(holds, E.IntImm):
                continue  # known either way: the cut or the tightening of an inner loop decides
            self.budget -= 1
            body = S.IfThenElse(holds, _ProveConjunct(site.cond).visit(s.body), s.body)
            return self.visit_For(S.For(x, s.min, s.extent, s.kind, body, s.thread_tag), skip | {key})
        return None


def _fresh(loop: S.For) -> S.For:
    v = E.Var(loop.loop_var.name, loop.loop_var.dtype)
    return S.For(v, loop.min, loop.extent, loop.kind, substitute(loop.body, {loop.loop_var: v}), loop.thread_tag)


# ---- 3. tightening -------------------------------------------------------------------------------
class _Tighten(Mutator):
    statements_only = True  # expressions are read off the statements it rewrites, never walked

    def __init__(self, assume: Sequence[E.PrimExpr] = (), threads: frozenset = frozenset()) -> None:
        self.ana = analyzer(assume)
        self.threads = threads

    def visit_AttrStmt(self, s: S.AttrStmt):
        return s if s.key == SMALL else self.generic_visit(s)

    def visit_For(self, s: S.For):
        if s.kind != LoopKind.THREAD_BINDING:
            s = self._trim(s)
        with self.ana.scoped_bind(s.loop_var, E.Range(s.min, s.extent)):
            body = self.visit(s.body)
        if s.kind == LoopKind.THREAD_BINDING or not isinstance(body, S.IfThenElse) or body.else_case is not None:
            return s if body is s.body else S.For(s.loop_var, s.min, s.extent, s.kind, body, s.thread_tag)
        x = s.loop_var
        lo, hi = s.min, E.add(s.min, s.extent)
        keep: list[E.PrimExpr] = []
        for c in conjuncts(body.condition):
            d = negative_form(c)
            lin = None
            if d is not None and x in free_vars(d) and not free_vars(d) & self.threads:
                lin = linear_in(self.ana.simplify(d), x, self.ana)
            if lin is None:
                keep.append(c)
                continue
            p, prefix = split_point(lin, lin.rest)
            p = E.cast(p, lo.dtype)
            if prefix:
                hi = E.min_(hi, p)
            else:
                lo = E.max_(lo, p)
        if len(keep) == len(conjuncts(body.condition)):
            return S.For(x, s.min, s.extent, s.kind, body, s.thread_tag)
        inner = body.then_case if not keep else S.IfThenElse(E.all_(*keep), body.then_case)
        lo = self.ana.simplify(lo)
        return S.For(x, lo, self.ana.simplify(E.sub(hi, lo)), s.kind, inner, s.thread_tag)

    def _trim(self, s: S.For) -> S.For:
        """Drop the iterations at either end in which no statement of the body runs (see
        ``_live``): the empty last panel of a partial tile group."""
        live_lo, live_hi = _live(s, self.ana, self.threads)
        lo, hi = s.min, E.add(s.min, s.extent)
        changed = False
        if live_hi is not None and not self.ana.can_prove(E.ge(live_hi, hi)):
            hi, changed = E.min_(hi, E.cast(live_hi, lo.dtype)), True
        if live_lo is not None and not self.ana.can_prove(E.le(live_lo, lo)):
            lo, changed = E.max_(lo, E.cast(live_lo, lo.dtype)), True
        if not changed:
            return s
        lo = self.ana.simplify(lo)
        extent = self.ana.simplify(E.sub(hi, lo))
        if s.kind in (LoopKind.UNROLLED, LoopKind.VECTORIZED) and isinstance(s.extent, E.IntImm) and not isinstance(extent, E.IntImm):
            return s  # a run-time extent would cost the unrolling (a register tile) to save a guard
        return S.For(s.loop_var, lo, extent, s.kind, s.body, s.thread_tag)


def _positive(extent: E.PrimExpr) -> list[E.PrimExpr]:
    """Conditions that hold whenever a loop of this extent runs at all (``min(a, b) > 0`` is
    ``a > 0`` and ``b > 0``)."""
    if isinstance(extent, E.Min):
        return _positive(extent.a) + _positive(extent.b)
    return [] if isinstance(extent, E.IntImm) else [E.gt(extent, E.const(0, extent.dtype))]


@dataclass
class _Effect:
    conds: list[E.PrimExpr]           # what must hold for it to run: guards, inner loops' extents > 0
    loops: tuple[S.For, ...]          # the loops between the trimmed loop and it
    opaque: set[E.Var]                # variables bound by lets on the way

    @cached_property
    def doms(self) -> dict[E.Var, IntSet]:
        return _ranges(self.loops)


def _effects(body: S.Stmt) -> list[_Effect] | None:
    """The statements of ``body`` that change something, with what guards them; None when one
    is of a kind not understood here (nothing is then trimmed)."""
    out: list[_Effect] = []

    def walk(s, conds: list, loops: tuple, opaque: set) -> bool:
        if isinstance(s, S.SeqStmt):
            return all(walk(x, conds, loops, opaque) for x in s.seq)
        if isinstance(s, S.For):
            return walk(s.body, conds + _positive(s.extent), (*loops, s), opaque)
        if isinstance(s, S.IfThenElse):  # the else part runs under no condition known here
            return walk(s.then_case, conds + conjuncts(s.condition), loops, opaque) and (
                s.else_case is None or walk(s.else_case, conds, loops, opaque))
        if isinstance(s, S.LetStmt):
            return walk(s.body, conds, loops, opaque | {s.var})
        if isinstance(s, S.Allocate | S.AttrStmt):
            return walk(s.body, conds, loops, opaque)
        if isinstance(s, S.Evaluate) and isinstance(s.value, E.IntImm):
            return True
        if not isinstance(s, S.BufferStore | S.Evaluate):
            return False
        out.append(_Effect(conds, loops, opaque))
        return True

    return out if walk(body, [], (), set()) else None


def _live(s: S.For, ana: Analyzer, threads: frozenset) -> tuple[E.PrimExpr | None, E.PrimExpr | None]:
    """``(lo, hi)``: no statement of the body runs for ``x < lo`` nor for ``x >= hi`` (None: no
    such bound). A statement under ``a*x + r < 0`` (a guard, or an inner loop's extent being
    positive) runs for some inner iteration only while ``a*x + min(r) < 0``; a bound that
    depends on a thread index is not used (the threads of a block must run the same iterations)."""
    x = s.loop_var
    effects = _effects(s.body)
    if not effects:
        return None, None
    his: list[E.PrimExpr | None] = []
    los: list[E.PrimExpr | None] = []
    for eff in effects:
        hi = lo = None
        for c in eff.conds:
            d = negative_form(c)
            if d is None or x not in free_vars(d) or free_vars(d) & (eff.opaque | threads):
                continue
            lin = linear_in(ana.simplify(d), x, ana)
            rmin = eval_set(lin.rest, eff.doms, ana).min_value if lin is not None else None
            if rmin is None or free_vars(rmin) & (set(eff.doms) | {x} | threads):
                continue
            p, prefix = split_point(lin, rmin)
            if prefix:
                hi = p if hi is None else E.min_(hi, p)
            else:
                lo = p if lo is None else E.max_(lo, p)
        his.append(hi)
        los.append(lo)
    hi = None if any(v is None for v in his) else ana.simplify(reduce(E.max_, his))
    lo = None if any(v is None for v in los) else ana.simplify(reduce(E.min_, los))
    return lo, hi


__all__ = ["conjuncts", "linear_in", "loop_partition", "negative_form"]
