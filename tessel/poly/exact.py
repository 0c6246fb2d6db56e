"""Exact regions: each stage computes the set its consumers read, not the interval box around it.

InferBound (seed 000) gives a producer, per axis, the interval hull of what its consumers
request at its attach point. Two of seed 000's examples show what that costs: a consumer split
non-divisibly asks its producer for whole tiles past the end of its own domain, and two
consumers reading ``T[0:2, 0:2]`` and ``T[2:4, 2:4]`` make all 16 elements of ``T`` computed.
Here the same question is answered with integer sets (isl), as Tiramisu's compute_at does
(seed 004): the instances of a stage that run are a set over its enclosing loops and its own
loops; what a consumer needs of a producer is the image of the consumer's instances through
its read, with every loop that does not enclose the producer projected away; the producer then
runs exactly the instances whose output indices lie in the union of those needs.

Every variable is an isl *parameter* (the sets are parameter-only, ``[i, j, n] -> { : ... }``),
so the loops enclosing a producer are kept by name and every other loop is projected out by
name, with no bookkeeping of positions. Stages are visited consumers first (InferBound's
order), so a consumer's instance set is known when its producers are.

A stage's storage stays InferBound's box (``realize`` is unchanged) and so does its loop
structure: only the bounds of its loops (and, where a set is not a box, which loops run) come
from the exact set, through isl's AST generator (``astgen``). A stage whose exact set is its
box keeps the interval loop nest unchanged, so the listings of seed 000 are what they were.
Where the exact answer cannot be had (an index that is not quasi-affine, a stage that is not a
``te.compute``), the stage keeps its interval box and :attr:`ExactPlan.notes` says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import islpy as isl

from ..ir import expr as E
from ..ir.functor import collect, substitute
from ..schedule import relations as R
from ..schedule.stage import INLINE, SCOPE, Stage
from ..te.tensor import ComputeOp

if TYPE_CHECKING:
    from ..bound.infer import BoundContext


class _Names:
    """isl names for tessel variables (``v0``, ``v1``, ...): a user's name never reaches isl."""

    def __init__(self) -> None:
        self.of: dict[int, str] = {}
        self.var: dict[str, E.Var] = {}

    def __call__(self, v: E.Var) -> str:
        name = self.of.get(id(v))
        if name is None:
            name = self.of[id(v)] = f"v{len(self.of)}"
            self.var[name] = v
        return name


def affine(e: E.PrimExpr, names: _Names) -> str | None:
    """``e`` as isl quasi-affine text (floor division and modulo by constants, min and max),
    or None where it is not one (a product of variables, a data-dependent index, ...)."""
    if isinstance(e, E.Var):
        return names(e)
    if isinstance(e, E.IntImm):
        return f"({e.value})"
    if isinstance(e, E.Cast):
        return affine(e.value, names) if e.dtype.is_integer and e.value.dtype.is_integer else None
    if not isinstance(e, E.BinaryOp) or not e.dtype.is_integer:
        return None
    a, b = affine(e.a, names), affine(e.b, names)
    if a is None or b is None:
        return None
    if isinstance(e, E.Add | E.Sub):
        return f"({a} {'+' if isinstance(e, E.Add) else '-'} {b})"
    # isl reads a constant factor or divisor only bare, never parenthesized
    if isinstance(e, E.Mul):
        if isinstance(e.b, E.IntImm):
            return f"({e.b.value} * {a})"
        return f"({e.a.value} * {b})" if isinstance(e.a, E.IntImm) else None
    if isinstance(e, E.FloorDiv | E.FloorMod) and isinstance(e.b, E.IntImm) and e.b.value > 0:
        return f"floor({a} / {e.b.value})" if isinstance(e, E.FloorDiv) else f"({a} mod {e.b.value})"
    if isinstance(e, E.Min | E.Max):
        return f"{'min' if isinstance(e, E.Min) else 'max'}({a}, {b})"
    return None


def _params(text: str) -> list[str]:
    import re

    return sorted(set(re.findall(r"\bv\d+\b", text)), key=lambda s: int(s[1:]))


def param_set(constraints: list[str]) -> isl.Set:
    """``[...] -> { : c0 and c1 ... }`` over the variables the constraints name."""
    body = " and ".join(constraints) if constraints else "true"
    return isl.Set(f"[{', '.join(_params(body))}] -> {{ : {body} }}")


def drop(s: isl.Set, keep: set[str] | None = None, remove: set[str] | None = None) -> isl.Set:
    """``s`` with the parameters in ``remove`` (or every one not in ``keep``) projected out:
    existentially quantified, as a loop that does not enclose the question is."""
    for k in reversed(range(s.dim(isl.dim_type.param))):
        name = s.get_dim_name(isl.dim_type.param, k)
        if (remove is not None and name in remove) or (keep is not None and name not in keep):
            s = s.project_out(isl.dim_type.param, k, 1)
    return s


@dataclass
class StageSets:
    """What runs of one stage: ``body`` (its statement instances, over its enclosing loops and
    its leaf loops, as parameters) and, for what is attached inside it, the instances of its
    leaf loops up to each one; ``exact`` when they come from the exact region, not the box."""

    path: list[str]
    leaves: list[str]
    context: isl.Set  # the instances of the loops enclosing the stage
    ranges: list[list[str]]  # per leaf loop, its range (InferBound's) as constraints
    body: isl.Set
    exact: bool = False
    loops: dict[int, isl.Set] = field(default_factory=dict)

    def loops_upto(self, k: int) -> isl.Set:
        """Instances of the leaf loops ``0..k`` (the context of a stage attached at loop k)."""
        if k not in self.loops:
            if self.exact:
                self.loops[k] = drop(self.body, remove=set(self.leaves[k + 1:]))
            else:
                self.loops[k] = self.context.intersect(param_set([c for r in self.ranges[:k + 1] for c in r]))
        return self.loops[k]


@dataclass
class ExactPlan:
    """The exact analysis of one schedule: per stage, its sets; what changed and what stayed
    intervals (and why)."""

    names: _Names
    stages: dict[int, StageSets] = field(default_factory=dict)
    changed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def exact(self, st: Stage) -> StageSets | None:
        info = self.stages.get(id(st))
        return info if info is not None and info.exact else None

    def report(self) -> str:
        """Which stages compute their exact region, and why some keep InferBound's box."""
        lines = [f"stage {n}: computes the exact region its readers need, not its box" for n in self.changed]
        return "\n".join(lines + self.notes) if lines or self.notes else "every region is already exact"


def plan(ctx: BoundContext) -> ExactPlan:
    """The exact sets of every stage of the schedule InferBound has bounded (``ctx``)."""
    out = ExactPlan(_Names())
    for st in reversed(ctx.order):
        if st.attach_type == INLINE or st.is_placeholder:
            continue
        try:
            _stage(ctx, out, st)
        except isl.Error as e:  # isl refused a set: this stage runs its box, read as reading anything
            info = out.stages.get(id(st))
            if info is not None:
                info.exact = False
                info.body = param_set([])
            else:
                out.stages[id(st)] = StageSets([], [], param_set([]), [[] for _ in st.leaf_iter_vars], param_set([]))
            if st.name in out.changed:
                out.changed.remove(st.name)
            out.notes.append(f"stage {st.name}: keeps its interval box (isl: {str(e).splitlines()[0][:120]})")
    return out


def _stage(ctx: BoundContext, out: ExactPlan, st: Stage) -> None:
    names = out.names
    value = {iv: iv.var for iv in st.leaf_iter_vars}
    R.pass_up_index(st.relations, ctx.rmap, value)
    ranges = [_in_range(iv.var, ctx.rmap[iv], names) for iv in st.leaf_iter_vars]
    why = "" if isinstance(st.op, ComputeOp) else f"a {type(st.op).__name__} is not analysed"
    roots = {id(iv) for iv in st.op.root_iter_vars}
    guards: list[str] = []
    for iv, v in value.items():
        r = ctx.rmap.get(iv)
        cons = _in_range(v, r, names) if r is not None else []
        if id(iv) in roots and iv.dom is not None:
            cons += _in_range(v, iv.dom, names)
        if any(c is None for c in cons):
            why = why or f"the index or range of loop {iv.name} is not affine"
        guards.extend(c for c in cons if c is not None)
    ranges = [[c for c in r if c is not None] for r in ranges]
    context = _context(out, st)
    box = context.intersect(param_set([c for r in ranges for c in r] + guards))
    info = out.stages[id(st)] = StageSets([names(iv.var) for iv in reversed(ctx.paths[st])],
                                          [names(iv.var) for iv in st.leaf_iter_vars], context, ranges, box)
    if st.is_output or not ctx.consumers[st]:
        return
    needed, reason = _needed(ctx, out, st, set(info.path))
    point = [affine(value[iv], names) for iv in st.op.axis]
    if needed is None or why or any(p is None for p in point):
        out.notes.append(f"stage {st.name}: keeps its interval box ({why or reason or 'its index is not affine'})")
        return
    at = isl.Set(f"[{', '.join(_params(' '.join(point)))}] -> {{ P[{', '.join(point)}] }}")
    exact = at.intersect(needed).params().intersect(box)
    if box.is_subset(exact):
        return  # the box is exact already: the interval loop nest stays as it is
    info.body = exact.coalesce()
    info.exact = True
    out.changed.append(st.name)


def _in_range(v: E.PrimExpr, r: E.Range, names: _Names) -> list[str | None]:
    x, lo, ext = affine(v, names), affine(r.min, names), affine(r.extent, names)
    if x is None or lo is None or ext is None:
        return [None]  # an unknown constraint: left out, which only makes the set larger
    return [f"{lo} <= {x}", f"{x} < {lo} + {ext}"]


def _context(out: ExactPlan, st: Stage) -> isl.Set:
    """The instances of the loops enclosing ``st``: those of its attach stage up to the loop
    it is attached at (the universe at the root)."""
    if st.attach_type != SCOPE or st.attach_stage is None:
        return param_set([])
    parent = out.stages.get(id(st.attach_stage))
    if parent is None:
        return param_set([])
    k = next(k for k, iv in enumerate(st.attach_stage.leaf_iter_vars) if iv is st.attach_ivar)
    return parent.loops_upto(k)


def _needed(ctx: BoundContext, out: ExactPlan, st: Stage, keep: set[str]) -> tuple[isl.Set | None, str]:
    """The union of what every consumer reads of ``st``'s outputs, over the loops enclosing
    ``st`` (and the symbolic sizes); None and why where a read is not affine."""
    names = out.names
    mine = set(st.op.outputs)
    needed: isl.Set | None = None
    for c in ctx.consumers[st]:
        cinfo = out.stages.get(id(c))
        if not isinstance(c.op, ComputeOp):
            return None, f"its reader {c.name} is a {type(c.op).__name__}, whose reads are not analysed"
        if cinfo is None:
            return None, f"its reader {c.name} was not analysed"
        value = {iv: iv.var for iv in c.leaf_iter_vars}
        R.pass_up_index(c.relations, ctx.rmap, value)
        roots = {iv.var: value[iv] for iv in c.op.root_iter_vars if iv in value}
        for body in ctx.bodies[c.op]:
            for load in collect(body, lambda n: isinstance(n, E.ProducerLoad)):
                if load.producer not in mine:
                    continue
                idx = [affine(substitute(i, roots), names) for i in load.indices]
                if any(x is None for x in idx):
                    return None, f"{c.name} reads {load.producer.name}[{', '.join(map(str, load.indices))}], which is not affine"
                text = ", ".join(idx)
                one = isl.Set(f"[{', '.join(_params(text))}] -> {{ P[{text}] }}").intersect_params(cinfo.body)
                one = drop(one, keep | _sizes(one, names, ctx))
                needed = one if needed is None else needed.union(one)
    if needed is None:
        return None, "no reader reads it"
    return needed.coalesce(), ""


def _sizes(s: isl.Set, names: _Names, ctx: BoundContext) -> set[str]:
    """The parameters of ``s`` that are symbolic sizes, not loop variables (kept everywhere)."""
    loops = {id(iv.var) for iv in ctx.rmap}
    out = set()
    for k in range(s.dim(isl.dim_type.param)):
        n = s.get_dim_name(isl.dim_type.param, k)
        v = names.var.get(n)
        if v is not None and id(v) not in loops:
            out.add(n)
    return out


__all__ = ["ExactPlan", "StageSets", "affine", "drop", "param_set", "plan"]
