"""The IterVar relations a stage records, and the one algebra over them (seeds 000 and 001).

A stage's relations are replayable facts, not instructions. Each record knows its own
arithmetic, so this module is the only place that asks what kind a relation is:

* ``pass_down``: the ranges of the loops it makes from the ranges of its inputs (seed 000,
  PassDownDomain). InferBound and the dataflow rewrites both use it, so a loop a rewrite makes
  has the extent lowering will give it.
* ``pass_up_domain``: index *sets* of its outputs to an index set of its inputs (seed 000,
  PassUpDomain). The result covers every input index the output sets reach; it is exact when
  the outputs' sets are their whole ranges, or single points.
* ``index_up`` / ``index_down``: index *expressions* across the relation (leaf loop variables to
  root indices, what lowering substitutes into a body; root indices to where they land among
  the derived loops, what cache_write's copy reads).
* ``time_down``: where each root index falls in the loops made from it, as a tuple of
  expressions whose lexicographic order is the loops' execution order (the polyhedral view's
  schedule, seed 004): a fuse whose inner extent is not a constant keeps its two loops as two
  coordinates instead of multiplying by a symbolic extent.
* ``guards``: what must hold for an index passed up to exist (a non-divisible split runs past
  its parent's end).
* ``replay``: the same relation made over other IterVars through an axis map, for applying one
  stage's loop structure to another (computeAt by position, schedule replay).

Relations are keyed by IterVar object (IterVars compare by identity in dictionaries). A new
kind is a new subclass of ``Relation``; nothing outside this module needs to learn about it.
Tiramisu's loop commands (shift, skew by any unimodular matrix, interchange, reverse) are
``LoopMap`` relations: a map of a stage's loops in place, whose one piece of integer arithmetic
(``matrix``, ``offset``, ``places``) gives every method above; the polyhedral model composes
them onto the time-space map with it (``tessel.poly.commands``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import ClassVar

from ..arith import Analyzer, IntSet, eval_set
from ..errors import InternalError
from ..ir import expr as E

RangeMap = Mapping[E.IterVar, E.Range]
#: a loop's position in execution order: coordinates compared lexicographically
TimeValue = tuple[E.PrimExpr, ...]
ThreadBound = Callable[[E.IterVar], bool]


def ceildiv(a: E.PrimExpr, b: E.PrimExpr) -> E.PrimExpr:
    """``ceil(a / b)`` for ``b > 0``; ``a + b - 1`` may pass the dtype (a factor near 2**31) and
    is kept exact (index_dtype widens it), never wrapped (issue 29, defect 7)."""
    return E.floordiv(E.binary_exact(E.Sub, E.binary_exact(E.Add, a, b), 1), b)


def _plus_min(e: E.PrimExpr, r: E.Range) -> E.PrimExpr:
    """``e + min(r)``, leaving out a zero minimum so that indices stay as written."""
    return e if E.is_const_int(r.min, 0) else E.add(e, r.min)


def _divides(ext: E.PrimExpr, f: E.PrimExpr) -> bool:
    return isinstance(ext, E.IntImm) and isinstance(f, E.IntImm) and f.value > 0 and ext.value % f.value == 0


def _matches(s: IntSet, r: E.Range, ana: Analyzer) -> bool:
    """The set is exactly the loop's whole range (seed 000, PassUpDomain case 1)."""
    if s.is_everything() or s.min_value is None or s.max_value is None:
        return False
    return ana.can_prove_equal(s.min_value, r.min) and ana.can_prove_equal(
        s.max_value, E.sub(E.add(r.min, r.extent), 1))


def _fresh(like: E.IterVar, name: str, dtype=None, dom: E.Range | None = None) -> E.IterVar:
    return E.IterVar(dom, E.Var(name, dtype or like.dtype), like.iter_type)


def _never_bound(iv: E.IterVar) -> bool:
    return False


@dataclass(frozen=True)
class Cut:
    """When a split's factor (or nparts) larger than its parent is cut down to the parent.

    Seed 000's PassDownDomain gives the inner loop the factor; TVM v0.14 does too, unless it can
    prove the parent shorter (then the loop runs once, over the parent, instead of running past
    its end under a guard). So a symbolic parent keeps the factor and its tail is guarded: a
    ``min(n, 16)`` extent would make every later pass see a loop of unknown length. Never cut
    on a loop bound to a thread (the launch fixes its count) nor for an empty parent.
    ``analyzer`` is InferBound's (it knows the ranges of the loops around, e.g. a stage computed
    at a tile); without one (the dataflow rewrites, whose extents become tensor shapes) only
    constants are compared.
    """

    thread_bound: ThreadBound = _never_bound
    analyzer: Analyzer | None = None

    def __call__(self, loop: E.IterVar, ext: E.PrimExpr, amount: E.PrimExpr) -> E.PrimExpr:
        if self.thread_bound(loop) or E.is_const_int(ext, 0):
            return amount
        if self.analyzer is not None:
            return ext if self.analyzer.can_prove(E.lt(ext, amount)) else amount
        both = isinstance(ext, E.IntImm) and isinstance(amount, E.IntImm)
        return ext if both and ext.value < amount.value else amount


@dataclass(frozen=True)
class Guard:
    """An index passed up must lie in ``[min, min + extent)`` of loop ``iter_var``.

    ``needed`` is False when the relation alone proves it for in-range outputs (a split whose
    constant factor divides its constant parent exactly); a caller that checks the outputs
    separately may skip those, a caller that proves things itself may check them anyway.
    """

    iter_var: E.IterVar
    index: E.PrimExpr
    min: E.PrimExpr
    extent: E.PrimExpr
    needed: bool

    def predicate(self) -> E.PrimExpr:
        end = self.extent if E.is_const_int(self.min, 0) else E.add(self.min, self.extent)
        return E.lt(self.index, end)


class Relation:
    """One hyper-edge of the IterVar-relation DAG: ``inputs`` -> ``outputs``."""

    kind: ClassVar[str] = "relation"
    input_roles: ClassVar[tuple[str, ...]] = ()
    output_roles: ClassVar[tuple[str, ...]] = ()

    @property
    def inputs(self) -> tuple[E.IterVar, ...]:
        raise NotImplementedError

    @property
    def outputs(self) -> tuple[E.IterVar, ...]:
        raise NotImplementedError

    def params(self) -> dict[str, E.PrimExpr]:
        """The relation's parameters beyond its IterVars, for views (``{"factor": 4}``)."""
        return {}

    def pass_down(self, rmap: RangeMap, cut: Cut) -> list[tuple[E.IterVar, E.Range]]:
        """Ranges of the outputs, given the inputs' ranges in ``rmap``."""
        raise NotImplementedError

    def pass_up_domain(self, rmap: RangeMap, up: dict[E.IterVar, IntSet], ana: Analyzer) -> None:
        """Set ``up`` of the inputs from ``up`` of the outputs (over-approximating)."""
        raise NotImplementedError

    def index_up(self, rmap: RangeMap, value: dict[E.IterVar, E.PrimExpr]) -> None:
        """Set ``value`` of the inputs from ``value`` of the outputs (when all are known)."""
        raise NotImplementedError

    def index_down(self, rmap: RangeMap, value: dict[E.IterVar, E.PrimExpr]) -> None:
        """Set ``value`` of the outputs from ``value`` of the inputs (when all are known)."""
        raise NotImplementedError

    def guards(self, rmap: RangeMap, value: Mapping[E.IterVar, E.PrimExpr]) -> list[Guard]:
        """The checks an index passed up through this relation needs (after ``index_up``)."""
        return []

    def time_down(self, rmap: RangeMap, value: dict[E.IterVar, TimeValue]) -> None:
        """Set ``value`` of the outputs (execution-order coordinates) from ``value`` of the
        inputs; an output left unset has no such expression (the caller reports it)."""
        raise NotImplementedError

    def replay(self, axis_map: dict[E.IterVar, E.IterVar]) -> Relation:
        """This relation over ``axis_map[input]``; outputs not in the map are made fresh and added."""
        raise NotImplementedError

    def _mapped_inputs(self, axis_map: Mapping[E.IterVar, E.IterVar]) -> list[E.IterVar]:
        missing = [iv.name for iv in self.inputs if iv not in axis_map]
        if missing:
            # the caller (computeAt, schedule replay) maps every root before replaying a chain
            raise InternalError(f"replay of a {self.kind}: the axis map gives no loop for {', '.join(missing)}")
        return [axis_map[iv] for iv in self.inputs]

    def _output(self, axis_map: dict[E.IterVar, E.IterVar], old: E.IterVar, make: Callable[[], E.IterVar]) -> E.IterVar:
        if old not in axis_map:
            axis_map[old] = make()
        return axis_map[old]


@dataclass(frozen=True, eq=False)
class Split(Relation):
    """``parent = outer * extent(inner) + inner + min(parent)``; ``nparts`` fixes the outer extent."""

    parent: E.IterVar
    outer: E.IterVar
    inner: E.IterVar
    factor: E.PrimExpr | None
    nparts: E.PrimExpr | None

    kind: ClassVar[str] = "split"
    input_roles: ClassVar[tuple[str, ...]] = ("",)
    output_roles: ClassVar[tuple[str, ...]] = ("outer", "inner")

    @property
    def inputs(self) -> tuple[E.IterVar, ...]:
        return (self.parent,)

    @property
    def outputs(self) -> tuple[E.IterVar, ...]:
        return (self.outer, self.inner)

    def params(self) -> dict[str, E.PrimExpr]:
        return {"factor": self.factor} if self.factor is not None else {"nparts": self.nparts}

    def pass_down(self, rmap: RangeMap, cut: Cut) -> list[tuple[E.IterVar, E.Range]]:
        ext = rmap[self.parent].extent
        if self.factor is not None:
            return [(self.inner, E.Range(0, cut(self.inner, ext, self.factor))),
                    (self.outer, E.Range(0, ceildiv(ext, self.factor)))]
        return [(self.outer, E.Range(0, cut(self.outer, ext, self.nparts))),
                (self.inner, E.Range(0, ceildiv(ext, self.nparts)))]

    def pass_up_domain(self, rmap: RangeMap, up: dict[E.IterVar, IntSet], ana: Analyzer) -> None:
        so, si = up[self.outer], up[self.inner]
        pr = rmap[self.parent]
        if _matches(so, rmap[self.outer], ana) and _matches(si, rmap[self.inner], ana):
            up[self.parent] = IntSet.from_range(pr)
            return
        f = rmap[self.inner].extent  # the inner loop's extent, not the factor (seed 000)
        e = E.add(E.add(E.mul(self.outer.var, f), self.inner.var), pr.min)
        up[self.parent] = eval_set(e, {self.outer.var: so, self.inner.var: si})

    def index_up(self, rmap: RangeMap, value: dict[E.IterVar, E.PrimExpr]) -> None:
        if self.outer in value and self.inner in value:
            f = rmap[self.inner].extent
            value[self.parent] = _plus_min(E.add(E.mul(value[self.outer], f), value[self.inner]), rmap[self.parent])

    def index_down(self, rmap: RangeMap, value: dict[E.IterVar, E.PrimExpr]) -> None:
        if self.parent in value:
            off = E.sub(value[self.parent], rmap[self.parent].min)
            f = rmap[self.inner].extent
            value[self.outer] = E.floordiv(off, f)
            value[self.inner] = E.floormod(off, f)

    def time_down(self, rmap: RangeMap, value: dict[E.IterVar, TimeValue]) -> None:
        p = value.get(self.parent)
        if p is None or len(p) != 1:
            return
        off = E.sub(p[0], rmap[self.parent].min)
        # the factor, not the inner extent: a factor cut down to its parent (min(n, 16)) puts
        # every index in the same place, and stays a constant
        f = self.factor if self.factor is not None else rmap[self.inner].extent
        value[self.outer] = (E.floordiv(off, f),)
        value[self.inner] = (E.floormod(off, f),)

    def guards(self, rmap: RangeMap, value: Mapping[E.IterVar, E.PrimExpr]) -> list[Guard]:
        if self.parent not in value or self.outer not in value or self.inner not in value:
            return []
        pr = rmap[self.parent]
        f = rmap[self.inner].extent
        exact = _divides(pr.extent, f) and _divides(E.mul(rmap[self.outer].extent, f), pr.extent)
        return [Guard(self.parent, value[self.parent], pr.min, pr.extent, not exact)]

    def replay(self, axis_map: dict[E.IterVar, E.IterVar]) -> Split:
        (p,) = self._mapped_inputs(axis_map)
        outer = self._output(axis_map, self.outer, lambda: _fresh(self.outer, p.name + ".outer", p.dtype))
        inner = self._output(axis_map, self.inner, lambda: _fresh(self.inner, p.name + ".inner", p.dtype))

        def amount(a: E.PrimExpr | None) -> E.PrimExpr | None:
            return None if a is None else a if a.dtype == p.dtype else E.cast(a, p.dtype)

        return Split(p, outer, inner, amount(self.factor), amount(self.nparts))


@dataclass(frozen=True, eq=False)
class Fuse(Relation):
    """``fused = (outer - min(outer)) * extent(inner) + (inner - min(inner))``."""

    outer: E.IterVar
    inner: E.IterVar
    fused: E.IterVar

    kind: ClassVar[str] = "fuse"
    input_roles: ClassVar[tuple[str, ...]] = ("outer", "inner")
    output_roles: ClassVar[tuple[str, ...]] = ("",)

    @property
    def inputs(self) -> tuple[E.IterVar, ...]:
        return (self.outer, self.inner)

    @property
    def outputs(self) -> tuple[E.IterVar, ...]:
        return (self.fused,)

    def pass_down(self, rmap: RangeMap, cut: Cut) -> list[tuple[E.IterVar, E.Range]]:
        # exact: a fused extent beyond the loop's dtype is widened later (index_dtype), not wrapped
        ext = E.binary_exact(E.Mul, rmap[self.outer].extent, rmap[self.inner].extent)
        return [(self.fused, E.Range(0, ext))]

    def pass_up_domain(self, rmap: RangeMap, up: dict[E.IterVar, IntSet], ana: Analyzer) -> None:
        sf = up[self.fused]
        ro, ri = rmap[self.outer], rmap[self.inner]
        if _matches(sf, rmap[self.fused], ana):
            up[self.outer], up[self.inner] = IntSet.from_range(ro), IntSet.from_range(ri)
        elif sf.is_single_point():
            v = sf.point_value()
            up[self.outer] = IntSet.single_point(E.add(E.floordiv(v, ri.extent), ro.min))
            up[self.inner] = IntSet.single_point(E.add(E.floormod(v, ri.extent), ri.min))
        elif sf.min_value is None or sf.max_value is None:  # unbounded: its rows, and every column
            fv = E.Var("fused", self.fused.dtype)
            up[self.outer] = eval_set(E.add(E.floordiv(fv, ri.extent), ro.min), {fv: sf})
            up[self.inner] = IntSet.from_range(ri)
        else:  # a run of fused indices: the rows it touches, as TVM's PassUpDomain of a fuse
            lo, hi = sf.min_value, sf.max_value  # the quotient by an extent (never negative) is monotone
            up[self.outer] = IntSet.interval(E.add(E.floordiv(lo, ri.extent), ro.min),
                                             E.add(E.floordiv(hi, ri.extent), ro.min))
            span = ana.simplify(E.add(E.sub(hi, lo), 1))
            if ana.can_prove(E.eq(E.floormod(ri.extent, span), 0)) and ana.can_prove(E.eq(E.floormod(lo, span), 0)):
                # aligned runs that divide a row never cross one: just their columns (``span`` of them)
                first = E.add(E.floormod(lo, ri.extent), ri.min)
                up[self.inner] = IntSet.interval(first, E.add(first, E.sub(span, 1)))
            else:
                up[self.inner] = IntSet.from_range(ri)

    def index_up(self, rmap: RangeMap, value: dict[E.IterVar, E.PrimExpr]) -> None:
        if self.fused in value:
            v = value[self.fused]
            ro, ri = rmap[self.outer], rmap[self.inner]
            value[self.outer] = E.add(E.floordiv(v, ri.extent), ro.min)
            value[self.inner] = E.add(E.floormod(v, ri.extent), ri.min)

    def index_down(self, rmap: RangeMap, value: dict[E.IterVar, E.PrimExpr]) -> None:
        if self.outer in value and self.inner in value:
            ro, ri = rmap[self.outer], rmap[self.inner]
            value[self.fused] = E.add(E.mul(E.sub(value[self.outer], ro.min), ri.extent),
                                      E.sub(value[self.inner], ri.min))

    def time_down(self, rmap: RangeMap, value: dict[E.IterVar, TimeValue]) -> None:
        o, i = value.get(self.outer), value.get(self.inner)
        if o is None or i is None:
            return
        ext = rmap[self.inner].extent
        if len(o) == 1 and len(i) == 1 and isinstance(ext, E.IntImm):
            ro, ri = rmap[self.outer], rmap[self.inner]
            value[self.fused] = (E.add(E.mul(E.sub(o[0], ro.min), ext), E.sub(i[0], ri.min)),)
        else:  # (outer, inner) runs in the fused loop's order without a symbolic product
            value[self.fused] = o + i

    def replay(self, axis_map: dict[E.IterVar, E.IterVar]) -> Fuse:
        o, i = self._mapped_inputs(axis_map)
        dtype = o.dtype if o.dtype.bits >= i.dtype.bits else i.dtype
        fused = self._output(axis_map, self.fused, lambda: _fresh(self.fused, f"{o.name}.{i.name}.fused", dtype))
        return Fuse(o, i, fused)


@dataclass(frozen=True, eq=False)
class Rebase(Relation):
    """``parent = rebased + min(parent)``: the same loop, counted from zero.

    Lowering makes one (without recording it) for every leaf loop whose range does not start
    at zero, where TVM's normalize step records it: a stage computed at a consumer's loop runs
    over its region ``[m, m + e)`` as ``for x in [0, e)`` with ``x + m`` in its indices.
    """

    parent: E.IterVar
    rebased: E.IterVar

    kind: ClassVar[str] = "rebase"
    input_roles: ClassVar[tuple[str, ...]] = ("",)
    output_roles: ClassVar[tuple[str, ...]] = ("",)

    @staticmethod
    def of_leaf(leaf: E.IterVar, r: E.Range) -> Rebase:
        """A fresh loop variable of the same name counting ``leaf``'s range ``r`` from zero."""
        return Rebase(leaf, E.IterVar(E.Range(0, r.extent), E.Var(leaf.var.name, leaf.var.dtype), leaf.iter_type))

    @property
    def inputs(self) -> tuple[E.IterVar, ...]:
        return (self.parent,)

    @property
    def outputs(self) -> tuple[E.IterVar, ...]:
        return (self.rebased,)

    def pass_down(self, rmap: RangeMap, cut: Cut) -> list[tuple[E.IterVar, E.Range]]:
        return [(self.rebased, E.Range(0, rmap[self.parent].extent))]

    def pass_up_domain(self, rmap: RangeMap, up: dict[E.IterVar, IntSet], ana: Analyzer) -> None:
        sr = up[self.rebased]
        pr = rmap[self.parent]
        if _matches(sr, rmap[self.rebased], ana):
            up[self.parent] = IntSet.from_range(pr)
        else:
            up[self.parent] = eval_set(E.add(self.rebased.var, pr.min), {self.rebased.var: sr})

    def index_up(self, rmap: RangeMap, value: dict[E.IterVar, E.PrimExpr]) -> None:
        if self.rebased in value:
            value[self.parent] = E.add(value[self.rebased], rmap[self.parent].min)

    def index_down(self, rmap: RangeMap, value: dict[E.IterVar, E.PrimExpr]) -> None:
        if self.parent in value:
            value[self.rebased] = E.sub(value[self.parent], rmap[self.parent].min)

    def time_down(self, rmap: RangeMap, value: dict[E.IterVar, TimeValue]) -> None:
        p = value.get(self.parent)
        if p is not None and len(p) == 1:
            value[self.rebased] = (E.sub(p[0], rmap[self.parent].min),)

    def replay(self, axis_map: dict[E.IterVar, E.IterVar]) -> Rebase:
        (p,) = self._mapped_inputs(axis_map)
        return Rebase(p, self._output(axis_map, self.rebased, lambda: _fresh(self.rebased, p.name + ".rb", p.dtype)))


@dataclass(frozen=True, eq=False)
class Singleton(Relation):
    """A loop of extent one made out of nothing (fusing zero axes)."""

    iter_var: E.IterVar

    kind: ClassVar[str] = "singleton"
    output_roles: ClassVar[tuple[str, ...]] = ("",)

    @property
    def inputs(self) -> tuple[E.IterVar, ...]:
        return ()

    @property
    def outputs(self) -> tuple[E.IterVar, ...]:
        return (self.iter_var,)

    def pass_down(self, rmap: RangeMap, cut: Cut) -> list[tuple[E.IterVar, E.Range]]:
        return [(self.iter_var, E.Range(0, 1))]

    def pass_up_domain(self, rmap: RangeMap, up: dict[E.IterVar, IntSet], ana: Analyzer) -> None:
        return None

    def index_up(self, rmap: RangeMap, value: dict[E.IterVar, E.PrimExpr]) -> None:
        return None

    def index_down(self, rmap: RangeMap, value: dict[E.IterVar, E.PrimExpr]) -> None:
        value[self.iter_var] = E.const(0, self.iter_var.dtype)

    def time_down(self, rmap: RangeMap, value: dict[E.IterVar, TimeValue]) -> None:
        value[self.iter_var] = (E.const(0, self.iter_var.dtype),)

    def replay(self, axis_map: dict[E.IterVar, E.IterVar]) -> Singleton:
        iv = self.iter_var
        return Singleton(self._output(axis_map, iv, lambda: _fresh(iv, iv.name, dom=E.Range(0, 1))))


# ---- loop maps: Tiramisu's loop commands as relations ------------------------------------------
def _affine(row: tuple[int, ...], xs: list[E.PrimExpr], c: int = 0) -> E.PrimExpr:
    """``sum(row[l] * xs[l]) + c``, leaving out zero terms and unit factors."""
    out: E.PrimExpr | None = None
    for k, x in zip(row, xs):
        if k == 0:
            continue
        term = x if k == 1 else E.mul(x, k)
        out = term if out is None else E.add(out, term)
    out = E.const(0, xs[0].dtype) if out is None else out
    return E.add(out, c) if c else out


class LoopMap(Relation):
    """A unimodular affine map of a stage's loops in place (seed 004's loop commands): the
    loops keep their IterVars (a user's handle names the loop that carries its values), their
    values become ``matrix * values + offset``, and loop ``k`` then runs where loop
    ``places[k]`` ran (an interchange moves loops; a skew, a shift or a reverse does not).

    A subclass says what the command means (its fields, ``matrix``, ``offset``, ``places``,
    ``text``); the arithmetic is all here, once. Because inputs and outputs are the same
    IterVars, ``rmap`` holds the ranges before the map and ``pass_down`` the ranges after
    (bounding boxes: a skewed nest is not a box, ``guards`` keep an index inside its loop).
    ``reshapes``: changes the shape of a loop nest, so stages sharing the loops are given it
    one call after the other; a shift only offsets one stage against the others.
    """

    reshapes: ClassVar[bool] = True

    @property
    def inputs(self) -> tuple[E.IterVar, ...]:
        return tuple(v for v in vars(self).values() if isinstance(v, E.IterVar))

    @property
    def outputs(self) -> tuple[E.IterVar, ...]:
        return self.inputs

    @property
    def matrix(self) -> tuple[tuple[int, ...], ...]:
        n = len(self.inputs)
        return tuple(tuple(int(r == c) for c in range(n)) for r in range(n))

    @property
    def offset(self) -> tuple[int, ...]:
        return (0,) * len(self.inputs)

    @property
    def places(self) -> tuple[int, ...]:
        return tuple(range(len(self.inputs)))

    def text(self) -> str:
        raise NotImplementedError

    def inverse(self) -> tuple[tuple[int, ...], ...]:
        """``matrix``'s inverse (integer: the matrix is unimodular); 1x1 and 2x2 as written."""
        m = self.matrix
        if len(m) == 1:
            return ((m[0][0],),)  # +-1
        (a, b), (c, e) = m
        det = a * e - b * c  # +-1
        return ((e * det, -b * det), (-c * det, a * det))

    def params(self) -> dict[str, E.PrimExpr]:
        return {k: E.const(v) for k, v in vars(self).items() if isinstance(v, int)}

    def _apply(self, xs: list[E.PrimExpr]) -> list[E.PrimExpr]:
        return [_affine(row, xs, c) for row, c in zip(self.matrix, self.offset)]

    def _unapply(self, ys: list[E.PrimExpr]) -> list[E.PrimExpr]:
        back = [E.sub(y, c) if c else y for y, c in zip(ys, self.offset)]
        return [_affine(row, back) for row in self.inverse()]

    def pass_down(self, rmap: RangeMap, cut: Cut) -> list[tuple[E.IterVar, E.Range]]:
        ins = [rmap[iv] for iv in self.inputs]
        out = []
        for iv, row, c in zip(self.inputs, self.matrix, self.offset):
            lo = [r.min if k > 0 else E.sub(E.add(r.min, r.extent), 1) for k, r in zip(row, ins)]
            span = [E.mul(E.sub(r.extent, 1), abs(k)) for k, r in zip(row, ins) if k]
            ext = span[0] if span else E.const(0, iv.dtype)
            for x in span[1:]:
                ext = E.add(ext, x)
            out.append((iv, E.Range(_affine(row, lo, c), E.add(ext, 1))))
        return out

    def pass_up_domain(self, rmap: RangeMap, up: dict[E.IterVar, IntSet], ana: Analyzer) -> None:
        free = [E.Var(iv.name, iv.dtype) for iv in self.inputs]
        sets = {v: up[iv] for v, iv in zip(free, self.inputs)}
        for iv, e in zip(self.inputs, self._unapply(list(free))):
            up[iv] = eval_set(e, sets)

    def index_up(self, rmap: RangeMap, value: dict[E.IterVar, E.PrimExpr]) -> None:
        if all(iv in value for iv in self.inputs):
            for iv, e in zip(self.inputs, self._unapply([value[iv] for iv in self.inputs])):
                value[iv] = e

    def index_down(self, rmap: RangeMap, value: dict[E.IterVar, E.PrimExpr]) -> None:
        if all(iv in value for iv in self.inputs):
            for iv, e in zip(self.inputs, self._apply([value[iv] for iv in self.inputs])):
                value[iv] = e

    def time_down(self, rmap: RangeMap, value: dict[E.IterVar, TimeValue]) -> None:
        got = [value.get(iv) for iv in self.inputs]
        if any(g is None or len(g) != 1 for g in got):
            for iv in self.inputs:  # a loop fused over a symbolic extent: no single coordinate
                value.pop(iv, None)
            return
        for iv, e in zip(self.inputs, self._apply([g[0] for g in got])):
            value[iv] = (e,)

    def guards(self, rmap: RangeMap, value: Mapping[E.IterVar, E.PrimExpr]) -> list[Guard]:
        box = all(sum(1 for k in row if k) == 1 for row in self.matrix)  # a box maps onto a box
        return [Guard(iv, value[iv], rmap[iv].min, rmap[iv].extent, not box)
                for iv in self.inputs if iv in value and iv in rmap]

    def replay(self, axis_map: dict[E.IterVar, E.IterVar]) -> LoopMap:
        mapped = iter(self._mapped_inputs(axis_map))
        return type(self)(**{k: next(mapped) if isinstance(v, E.IterVar) else v for k, v in vars(self).items()})


@dataclass(frozen=True, eq=False)
class Shift(LoopMap):
    """``axis -> axis + amount``: the iteration runs ``amount`` steps later."""

    axis: E.IterVar
    amount: int

    kind: ClassVar[str] = "shift"
    reshapes: ClassVar[bool] = False

    @property
    def offset(self) -> tuple[int, ...]:
        return (self.amount,)

    def text(self) -> str:
        return f"shift({self.axis.name}, {self.amount})"


@dataclass(frozen=True, eq=False)
class Reverse(LoopMap):
    """``axis -> -axis``: the loop runs backwards."""

    axis: E.IterVar

    kind: ClassVar[str] = "reverse"

    @property
    def matrix(self) -> tuple[tuple[int, ...], ...]:
        return ((-1,),)

    def text(self) -> str:
        return f"reverse({self.axis.name})"


@dataclass(frozen=True, eq=False)
class Interchange(LoopMap):
    """The two loops swap places; each keeps its values (its name follows them)."""

    first: E.IterVar
    second: E.IterVar

    kind: ClassVar[str] = "interchange"

    @property
    def places(self) -> tuple[int, ...]:
        return (1, 0)

    def text(self) -> str:
        return f"interchange({self.first.name}, {self.second.name})"


@dataclass(frozen=True, eq=False)
class Skew(LoopMap):
    """``(outer, inner) -> (a*outer + b*inner, c*outer + e*inner)``, ``a*e - b*c = +-1``; the two
    loops are consecutive, ``outer`` then names the outer loop."""

    outer: E.IterVar
    inner: E.IterVar
    a: int
    b: int
    c: int
    e: int

    kind: ClassVar[str] = "skew"

    @property
    def matrix(self) -> tuple[tuple[int, ...], ...]:
        return ((self.a, self.b), (self.c, self.e))

    def text(self) -> str:
        rest = "" if (self.c, self.e) == unimodular_completion(self.a, self.b) else f", {self.c}, {self.e}"
        return f"skew({self.outer.name}, {self.inner.name}, {self.a}, {self.b}{rest})"


def unimodular_completion(a: int, b: int) -> tuple[int, int]:
    """``(c, e)`` with ``a*e - b*c == 1``, ``|c|`` smallest (then ``e >= 0`` preferred), so that
    ``(a, b)`` with ``a == 1`` keeps the inner loop as it was: ``(c, e) == (0, 1)``."""
    g, x, y = _egcd(a, b)  # a*x + b*y == g == ±1
    e0, c0 = x * g, -y * g  # a*e0 - b*c0 == 1
    # all solutions: e = e0 + t*b, c = c0 + t*a
    best: tuple[int, int] | None = None
    for t in range(-abs(c0) - 2, abs(c0) + 3):
        c, e = c0 + t * a, e0 + t * b
        key = (abs(c), e < 0, abs(e))
        if best is None or key < (abs(best[0]), best[1] < 0, abs(best[1])):
            best = (c, e)
    assert best is not None and a * best[1] - b * best[0] == 1
    return best


def _egcd(a: int, b: int) -> tuple[int, int, int]:
    x0, y0, x1, y1 = 1, 0, 0, 1
    while b:
        q, a, b = a // b, b, a - (a // b) * b
        x0, x1 = x1, x0 - q * x1
        y0, y1 = y1, y0 - q * y1
    return a, x0, y0


# ---- a stage's chain of relations --------------------------------------------------------------
def bound_to_thread(iter_var_attrs: Mapping[E.IterVar, object], relations: Iterable[Relation] = ()) -> ThreadBound:
    """Whether a loop is bound to a thread, from a stage's annotations (for ``Cut``); with the
    stage's ``relations``, also a loop some bound loop is made from (TVM's dominating thread: a
    split made to match a thread count keeps its extent even when a later split is bound)."""
    marked = {iv for iv, a in iter_var_attrs.items() if getattr(a, "bind_thread", None) is not None}
    for rel in reversed(list(relations)):
        if any(o in marked for o in rel.outputs):
            marked.update(rel.inputs)

    def bound(iv: E.IterVar) -> bool:
        return iv in marked

    return bound


def pass_down_domain(relations: Iterable[Relation], rmap: dict[E.IterVar, E.Range],
                     put: Callable[[E.IterVar, E.Range], None] | None = None,
                     cut: Cut = Cut(),
                     missing: Callable[[Relation, E.IterVar], None] | None = None) -> None:
    """Give every loop made by ``relations`` its range (seed 000, PassDownDomain).

    ``put`` stores a range (InferBound simplifies and binds it; by default it is just stored).
    A relation whose inputs have no range is skipped, or reported to ``missing``.
    """
    for rel in relations:
        absent = next((iv for iv in rel.inputs if iv not in rmap), None)
        if absent is not None:
            if missing is not None:
                missing(rel, absent)
            continue
        for iv, r in rel.pass_down(rmap, cut):
            if put is None:
                rmap[iv] = r
            else:
                put(iv, r)


def pass_up_domain(relations: list[Relation], rmap: RangeMap, up: dict[E.IterVar, IntSet], ana: Analyzer) -> None:
    """Extend ``up`` (leaf -> index set) to every input of ``relations`` (seed 000, PassUpDomain)."""
    for rel in reversed(relations):
        if all(iv in up for iv in rel.outputs):
            rel.pass_up_domain(rmap, up, ana)


def pass_up_index(relations: list[Relation], rmap: RangeMap, value: dict[E.IterVar, E.PrimExpr]) -> list[Guard]:
    """Extend ``value`` (leaf -> index) to the inputs of ``relations``; return the guards the
    passed-up indices need, in the order of ``relations``."""
    guards: list[Guard] = []
    for rel in reversed(relations):
        rel.index_up(rmap, value)
        guards[:0] = rel.guards(rmap, value)
    return guards


def pass_down_index(relations: Iterable[Relation], rmap: RangeMap, value: dict[E.IterVar, E.PrimExpr]) -> None:
    """Extend ``value`` (root -> index) to the loops made from the roots: where an index lands."""
    for rel in relations:
        rel.index_down(rmap, value)


def pass_down_time(relations: Iterable[Relation], rmap: RangeMap, value: dict[E.IterVar, TimeValue]) -> None:
    """Extend ``value`` (root -> its coordinates) to the loops made from the roots, in
    execution-order coordinates (see ``Relation.time_down``)."""
    for rel in relations:
        rel.time_down(rmap, value)


def replay(relations: Iterable[Relation], axis_map: dict[E.IterVar, E.IterVar]) -> list[Relation]:
    """``relations`` made over the IterVars ``axis_map`` gives for their roots; ``axis_map``
    grows by every output (fresh IterVars unless the map already names them)."""
    return [rel.replay(axis_map) for rel in relations]


__all__ = ["Cut", "Fuse", "Guard", "Interchange", "LoopMap", "Rebase", "Relation", "Reverse", "Shift", "Singleton", "Skew", "Split", "TimeValue", "bound_to_thread", "ceildiv", "pass_down_domain",
           "pass_down_index", "pass_down_time", "pass_up_domain", "pass_up_index", "replay",
           "unimodular_completion"]
