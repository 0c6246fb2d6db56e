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

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import islpy as isl

from ..arith.budget import gave_up
from ..ir import expr as E
from ..ir.functor import StructKey, collect, free_vars, structural_equal, substitute
from ..ir.names import shown
from ..schedule import relations as R
from ..schedule.commands import seen_by_caller
from ..schedule.kinds import INLINE, SCOPE
from ..schedule.stage import Stage
from ..te.tensor import ComputeOp
from ..tunables import current
from .context import context_conditions
from .space import Converter, Namer, NotAffine, bounded, pw_to_map, set_space

if TYPE_CHECKING:
    from ..bound.infer import BoundContext


class _Vars:
    """The tessel variables the sets speak of, each an isl parameter named by the adapter's
    :class:`Namer` (a user's name never reaches isl), and the way back from a name."""

    def __init__(self) -> None:
        self.namer = Namer()
        self.var: dict[str, E.Var] = {}

    def name(self, v: E.Var) -> str:
        n = self.namer.name(v, v.name, "v_")
        self.var[n] = v
        return n

    def over(self, exprs: Sequence[E.PrimExpr]) -> Converter:
        """A converter whose parameters are the variables ``exprs`` use (and nothing else)."""
        seen: dict[int, E.Var] = {}
        for e in exprs:
            # in the order they occur: a set's order follows object addresses, and the
            # parameters' order is the order of the terms isl writes back (replays must agree)
            for v in collect(e, lambda n: isinstance(n, E.Var)):
                seen.setdefault(id(v), v)
        order = list(seen.values())
        return Converter(set_space([], [self.name(v) for v in order]), {}, {v: k for k, v in enumerate(order)})

    def within(self, v: E.PrimExpr, lo: E.PrimExpr, extent: E.PrimExpr, lower: bool = True) -> isl.Set:
        """``lo <= v < lo + extent`` (the upper side only without ``lower``); raises NotAffine."""
        conv = self.over([v, lo, extent])
        x, a = conv.aff(v), conv.aff(lo)
        out = x.lt_set(a.add(conv.aff(extent)))
        return (out.intersect(a.le_set(x)) if lower else out).params()

    def image(self, values: Sequence[E.PrimExpr]) -> isl.Set:
        """``{ P[values] }`` over the variables they use; raises NotAffine."""
        conv = self.over(values)
        return pw_to_map([conv.aff(v) for v in values], isl.Set.universe(conv.space), "P").range()


def universe() -> isl.Set:
    return isl.Set.universe(isl.Space.params_alloc(isl.DEFAULT_CONTEXT, 0))


def drop(s: isl.Set, keep: set[str] | None = None, remove: set[str] | None = None) -> isl.Set:
    """``s`` with the parameters in ``remove`` (or every one not in ``keep``) projected out:
    existentially quantified, as a loop that does not enclose the question is."""
    for k in reversed(range(s.dim(isl.dim_type.param))):
        name = s.get_dim_name(isl.dim_type.param, k)
        if (remove is not None and name in remove) or (keep is not None and name not in keep):
            s = s.project_out(isl.dim_type.param, k, 1)
    return s


@dataclass(eq=False)
class StageSets:
    """What runs of one stage: ``body`` (its statement instances, over its enclosing loops and
    its leaf loops, as parameters) and, for what is attached inside it, the instances of its
    leaf loops up to each one; ``exact`` when they come from the exact region, not the box.

    A reduction has two statements: its init runs once per output element, over ``init`` (the
    body without the reduction loops' ranges), even where its sum is empty; its update runs
    over ``body``. Its loops outside the ``first`` reduction loop run the init's instances.

    The box (``context`` and what follows from it) is built on first use (``make``): a stage's
    context is its host's loops, whose context is their host's, so in a chain of N stages each
    computed inside the next the sets have up to 2N parameters; a stage whose box intervals
    prove exact, with readers that do not ask, never builds them (N^2 isl work avoided)."""

    path: list[str]
    leaves: list[str]
    ranges: list[isl.Set]  # per leaf loop, its range (InferBound's)
    make: Callable[[], tuple[isl.Set, isl.Set, isl.Set]] | None = None  # context, dbox, rbox
    red: set[str] = field(default_factory=set)  # its reduction loops (those its init does not run)
    exact: bool = False
    loops: dict[int, isl.Set] = field(default_factory=dict)
    first: int = 0  # the position of the first reduction loop (the number of leaves: none)
    _sets: tuple[isl.Set, ...] = ()  # context, dbox, rbox, body, init (None: ``body``)

    @classmethod
    def fixed(cls, context: isl.Set, ranges: list[isl.Set], body: isl.Set) -> StageSets:
        """Sets given, nothing to build."""
        return cls([], [], ranges, lambda: (context, body, universe()))

    def box(self) -> tuple[isl.Set, isl.Set]:
        """The interval box: of the data-parallel loops (in the context), of the reduction loops."""
        self._force()
        return self._sets[1], self._sets[2]

    @property
    def context(self) -> isl.Set:
        """The instances of the loops enclosing the stage."""
        self._force()
        return self._sets[0]

    @property
    def body(self) -> isl.Set:
        self._force()
        return self._sets[3]

    @property
    def init(self) -> isl.Set | None:
        """A reduction's data-parallel instances (None: ``body``)."""
        self._force()
        return self._sets[4]

    def _force(self) -> None:
        """Build the box under the region budget (read first after the plan, by lowering, it is
        outside the stage's own); past it, the stage is read as running its box and reading
        anything, the same fallback as a stage whose exact analysis gave up."""
        if self.make is None:
            return
        start = time.perf_counter()
        answered, sets = bounded(current().region_operations, self.make)
        self.make = None  # only now: an outer budget running out inside leaves it to build later
        if not answered or sets is None:
            where = f"the loops {', '.join(self.leaves)}" if self.leaves else "a stage"
            gave_up("exact region", f"the interval box of {where}", time.perf_counter() - start,
                    "the stage is read as running its box and reading anything")
            sets = (universe(), universe(), universe())
        context, dbox, rbox = sets
        self._sets = (context, dbox, rbox, dbox, None)
        self.set(dbox)

    def set(self, starts: isl.Set, box: bool = False) -> None:
        """The stage runs ``starts`` of its data-parallel instances (and, a reduction, its
        reduction loops' ranges at each); ``box``: ``starts`` is its box from now on."""
        self._force()
        context, dbox, rbox = self._sets[:3]
        body = starts.intersect(rbox).coalesce() if self.red else starts
        self._sets = (context, starts if box else dbox, rbox, body, starts if self.red else None)
        self.loops.clear()

    def starts(self) -> isl.Set:
        """Where the outputs are set: the init's instances of a reduction, else the body's."""
        return self.body if self.init is None else self.init

    def loops_upto(self, k: int) -> isl.Set:
        """Instances of the leaf loops ``0..k`` (the context of a stage attached at loop k)."""
        if k < 0:
            return self.context
        if k not in self.loops:
            if self.exact:
                whole = self.body if k >= self.first else self.starts()
                self.loops[k] = drop(whole, remove=set(self.leaves[k + 1:]))
            else:
                got = self.context
                for r in self.ranges[:k + 1]:
                    got = got.intersect(r)
                self.loops[k] = got
        return self.loops[k]


@dataclass
class ExactPlan:
    """The exact analysis of one schedule: per stage, its sets; what changed and what stayed
    intervals (and why)."""

    names: _Vars
    stages: dict[int, StageSets] = field(default_factory=dict)
    changed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: stages whose declared domain (``where=``) their exact loops follow (no guard needed)
    domains: set[int] = field(default_factory=set)
    #: what holds of the symbolic sizes at any call (at least zero, the user's ``s.assume``)
    sizes: isl.Set = field(default_factory=lambda: universe())

    def exact(self, st: Stage) -> StageSets | None:
        info = self.stages.get(id(st))
        return info if info is not None and info.exact else None

    def covers_domain(self, st: Stage) -> bool:
        """Whether ``st``'s loops run exactly its declared domain (else lowering guards it)."""
        return id(st) in self.domains and self.exact(st) is not None

    def report(self) -> str:
        """Which stages compute their exact region, and why some keep InferBound's box."""
        lines = [f"stage {n}: computes the exact region its readers need, not its box" for n in self.changed]
        return "\n".join(lines + self.notes) if lines or self.notes else "every region is already exact"


def regions(sch) -> ExactPlan:
    """The exact analysis of schedule ``sch`` as ``lower`` would make it now: ``.report()``
    says which stages compute less than InferBound's box, and why the others keep it."""
    from ..bound.infer import run_infer_bound

    return plan(run_infer_bound(sch, check=False))


def plan(ctx: BoundContext) -> ExactPlan:
    """The exact sets of every stage of the schedule InferBound has bounded (``ctx``)."""
    out = ExactPlan(_Vars())
    for cond in context_conditions(ctx.sch):
        try:
            out.sizes = out.sizes.intersect(out.names.over([cond]).set(cond).params())
        except NotAffine:  # a promise isl cannot state is left out, which only assumes less
            continue
    for st in reversed(ctx.order):
        if st.attach_type == INLINE or st.is_placeholder:
            continue
        start = time.perf_counter()
        try:
            ops = current().region_operations
            answered, _ = bounded(ops, lambda st=st: _stage(ctx, out, st))
            why = None if answered else f"past the budget of {ops} isl operations"
        except isl.Error as e:  # isl refused a set: this stage runs its box, read as reading anything
            why = f"isl: {str(e).splitlines()[0][:120]}"
        if why is not None:
            if not why.startswith("isl"):
                gave_up("exact region", f"stage {shown(st.name)}", time.perf_counter() - start,
                        f"stage {shown(st.name)} keeps its interval box")
            out.stages[id(st)] = StageSets.fixed(universe(), [universe() for _ in st.leaf_iter_vars], universe())
            if st.name in out.changed:
                out.changed.remove(st.name)
            out.notes.append(f"stage {st.name}: keeps its interval box ({why})")
    return out


def _runs_backwards_over_a_sum(st: Stage) -> bool:
    """A recurrence's definition that runs an axis backwards and reduces over a range written
    over its axes (nussinov's ``k in (i, j)``): its declared domain, cut exactly, gave loops of
    the mirrored rows (values read outside the tensor); it keeps the interval box."""
    op = st.op
    if not getattr(op, "definitions", ()) or not op.is_reduction:
        return False
    return any(op.reindex(iv, iv.var) is not iv.var for iv in op.axis)


def _stage(ctx: BoundContext, out: ExactPlan, st: Stage) -> None:
    names = out.names
    value = {iv: iv.var for iv in st.leaf_iter_vars}
    R.pass_up_index(st.relations, ctx.rmap, value)
    why = "" if isinstance(st.op, ComputeOp) else f"a {type(st.op).__name__} is not analysed"
    ranges: list[isl.Set] = []
    roots = {iv.var: value[iv] for iv in st.op.root_iter_vars if iv in value and iv not in st.leaf_iter_vars}
    for iv in st.leaf_iter_vars:
        r = ctx.rmap[iv]  # in the loops: a bound following a split axis (reduce_axis((0, i)))
        r = E.Range(substitute(r.min, roots), substitute(r.extent, roots)) if roots else r
        try:
            ranges.append(names.within(iv.var, r.min, r.extent))
        except NotAffine as e:  # left out, which only makes the set larger
            why = why or f"the range of loop {iv.name} is not affine ({e.reason})"
            ranges.append(universe())
    checks = _guards(ctx, st, value, names)
    if any(c is None for c in checks):
        why = why or "an index of its loops is not affine"
    # a reduction's loops do not bound its data-parallel loops: an empty sum still sets its init
    # (a loop that reaches an output index, a fused one too, sets the init as well)
    outs = set().union(*(free_vars(value[iv]) for iv in st.op.axis if iv in value))
    red = {names.name(iv.var) for iv in st.leaf_iter_vars if iv.is_reduce and iv.var not in outs}
    def box() -> tuple[isl.Set, isl.Set, isl.Set]:
        context = _context(out, st)
        dbox, rbox = context, universe()
        for c in ranges + [c for c in checks if c is not None]:
            if mentions(c, red):
                rbox = rbox.intersect(c)
            else:
                dbox = dbox.intersect(c)
        return context, dbox, rbox

    first = next((k for k, iv in enumerate(st.leaf_iter_vars) if iv.is_reduce), len(st.leaf_iter_vars))
    info = out.stages[id(st)] = StageSets([names.name(iv.var) for iv in reversed(ctx.paths[st])],
                                          [names.name(iv.var) for iv in st.leaf_iter_vars], ranges, box,
                                          red, first=first)
    if st.op.where is not None and not _runs_backwards_over_a_sum(st):
        declared = _declared(out, st, value, info.box()[0])
        if declared is not None:
            info.set(declared, box=True)
    if getattr(st.op, "definitions", ()):  # a recurrence's definition runs whole: its points read each other
        return
    if seen_by_caller(st) or not ctx.consumers[st] or why:
        if why and not seen_by_caller(st) and ctx.consumers[st]:
            out.notes.append(f"stage {st.name}: keeps its interval box ({why})")
        return
    if _shifted_box(ctx, out, st):
        return  # intervals prove the box exact: no set is built (a chain of N stages asked isl N^2 work)
    try:
        needed = _needed(ctx, out, st, set(info.path))
        at = names.image([value[iv] for iv in st.op.axis])
    except NotAffine as e:
        out.notes.append(f"stage {st.name}: keeps its interval box ({e.reason})")
        return
    dbox, _ = info.box()
    exact = at.intersect(needed).params().intersect(dbox)
    if dbox.is_subset(exact):
        return  # the box is exact already: the interval loop nest stays as it is
    exact = exact.coalesce()
    if _slice_only(dbox, exact, set(info.leaves)):
        out.notes.append(f"stage {st.name}: keeps its interval box (the exact region saves only a slice of it, "
                         "and its loops would not be rectangular)")
        return
    extra = sum(1 for bs in exact.get_basic_sets() for c in bs.get_constraints() if not _implied(dbox, c))
    limit = current().region_constraints
    if extra > limit:
        fallback = f"stage {st.name} keeps its interval box"
        gave_up("exact region", f"stage {shown(st.name)} ({extra} constraints beyond its box)", 0.0, fallback)
        out.notes.append(f"stage {st.name}: keeps its interval box (its exact region has {extra} constraints beyond "
                         f"the box, past the budget of {limit})")
        return
    info.set(exact)
    info.exact = True
    if st.name not in out.changed:
        out.changed.append(st.name)


def mentions(s: isl.Set, names: set[str]) -> bool:
    """Whether ``s`` constrains one of the variables ``names`` (its parameters are only the
    variables a condition speaks of, so naming one is constraining it)."""
    return any(s.get_dim_name(isl.dim_type.param, k) in names for k in range(s.dim(isl.dim_type.param)))


def _shifted_box(ctx: BoundContext, out: ExactPlan, st: Stage) -> bool:
    """Whether ``st``'s box is what its one reader needs, by intervals alone: the reader runs
    the box of its own axes (no split, no exact set of its own) and reads ``st`` at one place,
    each index its own axis plus a constant, so the image of its box is a box, InferBound's; and
    ``st`` sits inside that reader (or the reader at the root), so no context cuts the box."""
    readers = ctx.consumers[st]
    if len(readers) != 1:
        return False
    c = readers[0]
    info = out.stages.get(id(c))
    if not isinstance(c.op, ComputeOp) or info is None or info.exact or c.relations or c.op.where is not None:
        return False
    if c.op.reduce_axis:
        return False  # its init runs at other instances than its sum (issue 29, defect 5)
    if c.attach_type == SCOPE and st.attach_stage is not c:
        return False  # the reader's own instances follow a context the intervals do not see
    axes = {iv.var for iv in c.op.root_iter_vars}
    places = {StructKey(load) for body in ctx.bodies[c.op] for load in collect(body, lambda n: isinstance(
        n, E.ProducerLoad) and n.producer in st.op.outputs)}
    if len(places) != 1:
        return False
    load = next(iter(places)).node
    used = []
    for index in load.indices:
        terms = index.a if isinstance(index, E.Add) and isinstance(index.b, E.IntImm) else index
        if not (isinstance(terms, E.Var) and terms in axes):
            return False
        used.append(terms)
    return len(set(used)) == len(used)


def _slice_only(box: isl.Set, exact: isl.Set, leaves: set[str]) -> bool:
    """Whether the box computes more than ``exact`` only on a slice (every piece of the surplus
    fixes one of the stage's own loops, as the corners a 5-point stencil leaves out of a strip
    do) while ``exact`` couples two of those loops in a constraint the box does not have. The
    loops of such a set bound each loop by a min/max of several others, which costs more (in
    the code and in every later pass that reasons about those bounds) than the slice saves."""
    if not any(_couples(c, leaves) and not _implied(box, c) for bs in exact.get_basic_sets() for c in bs.get_constraints()):
        return False
    for bs in box.subtract(exact).get_basic_sets():
        if not any(c.is_equality() and _couples(c, leaves, 1) for c in bs.detect_equalities().get_constraints()):
            return False
    return True


def _implied(box: isl.Set, c: isl.Constraint) -> bool:
    """Whether every point of ``box`` satisfies constraint ``c``."""
    return box.is_subset(isl.Set.from_basic_set(isl.BasicSet.universe(c.get_space()).add_constraint(c)))


def _couples(c: isl.Constraint, leaves: set[str], least: int = 2) -> bool:
    """Whether constraint ``c`` involves at least ``least`` of the loops named in ``leaves``."""
    n = sum(1 for k in range(c.get_space().dim(isl.dim_type.param))
            if c.get_space().get_dim_name(isl.dim_type.param, k) in leaves
            and not c.get_coefficient_val(isl.dim_type.param, k).is_zero())
    return n >= least


def _declared(out: ExactPlan, st: Stage, value: dict, box: isl.Set) -> isl.Set | None:
    """``box`` cut to ``st``'s declared domain (``where=``), its loops then made to follow it:
    None where it declares none, or the condition is not affine (lowering then guards it)."""
    op = st.op
    if op.where is None or any(iv not in value for iv in op.root_iter_vars):
        return None
    cond = substitute(op.where, {iv.var: op.reindex(iv, value[iv]) for iv in op.root_iter_vars})
    try:
        conv = out.names.over([cond])
        got = box.intersect(conv.set(cond).params()).coalesce()
    except NotAffine as e:
        out.notes.append(f"stage {st.name}: its domain is checked point by point ({e.reason})")
        return None
    out.domains.add(id(st))
    if not box.is_subset(got):
        out.stages[id(st)].exact = True
        out.changed.append(st.name)
    return got


def _guards(ctx: BoundContext, st: Stage, value: dict, names: _Vars) -> list[isl.Set | None]:
    """What the interval loop nest checks before running the stage's body (ScheduleOps'
    ``bound_checks``): each split's parent below the end of its range, and each root axis
    whose range is not its domain inside the domain. None: a check that is not affine."""
    out: list[isl.Set | None] = []
    roots = {iv.var: value[iv] for iv in st.op.root_iter_vars if iv in value and iv not in st.leaf_iter_vars}
    for rel in st.relations:
        for g in rel.guards(ctx.rmap, value):
            ext = substitute(g.extent, roots) if roots else g.extent
            out.append(_try(lambda g=g, ext=ext: names.within(g.index, g.min, ext, lower=False)))
    for iv in st.op.root_iter_vars:
        r = ctx.rmap.get(iv)
        if iv.dom is None or r is None or iv not in value or _same_range(r, iv.dom):
            continue
        out.append(_try(lambda iv=iv: names.within(value[iv], iv.dom.min, iv.dom.extent)))
    return out


def _same_range(a: E.Range, b: E.Range) -> bool:
    return structural_equal(a.min, b.min) and structural_equal(a.extent, b.extent)


def _try(make) -> isl.Set | None:
    try:
        return make()
    except NotAffine:
        return None


def _context(out: ExactPlan, st: Stage) -> isl.Set:
    """The instances of the loops enclosing ``st``: those of its attach stage up to the loop
    it is attached at (at the root, what is known of the sizes)."""
    if st.attach_type != SCOPE or st.attach_stage is None:
        return out.sizes
    parent = out.stages.get(id(st.attach_stage))
    if parent is None:
        return out.sizes
    k = next(k for k, iv in enumerate(st.attach_stage.leaf_iter_vars) if iv is st.attach_ivar)
    return parent.loops_upto(k)


def _needed(ctx: BoundContext, out: ExactPlan, st: Stage, keep: set[str]) -> isl.Set:
    """The union of what every consumer reads of ``st``'s outputs, over the loops enclosing
    ``st`` (and the symbolic sizes); raises NotAffine where a read is not affine."""
    names = out.names
    mine = set(st.op.outputs)
    needed: isl.Set | None = None
    for c in ctx.consumers[st]:
        cinfo = out.stages.get(id(c))
        if not isinstance(c.op, ComputeOp):
            raise NotAffine(f"its reader {c.name} is a {type(c.op).__name__}, whose reads are not analysed")
        if cinfo is None:
            raise NotAffine(f"its reader {c.name} was not analysed")
        value = {iv: iv.var for iv in c.leaf_iter_vars}
        R.pass_up_index(c.relations, ctx.rmap, value)
        roots = {iv.var: value[iv] for iv in c.op.root_iter_vars if iv in value}
        for load, in_init in _reads(ctx.bodies[c.op]):
            if load.producer not in mine:
                continue
            try:
                one = names.image([substitute(i, roots) for i in load.indices])
            except NotAffine as e:
                raise NotAffine(f"{c.name} reads {load.producer.name} at an index that is not affine: {e.reason}") from None
            one = one.intersect_params(cinfo.starts() if in_init else cinfo.body)
            one = drop(one, keep | _sizes(one, names, ctx))
            needed = one if needed is None else needed.union(one)
    if needed is None:
        raise NotAffine("no reader reads it")
    return needed.coalesce()


def _reads(bodies) -> list[tuple[E.ProducerLoad, bool]]:
    """Every read of ``bodies``, and whether it is a reduction's init's (read once per output
    element, where the init runs, not once per reduction step)."""
    out: list[tuple[E.ProducerLoad, bool]] = []
    for body in bodies:
        inits = body.init if isinstance(body, E.Reduce) else ()
        rest = (*body.source, body.condition) if isinstance(body, E.Reduce) else (body,)
        for part, in_init in [(e, True) for e in inits] + [(e, False) for e in rest]:
            out.extend((ld, in_init) for ld in collect(part, lambda n: isinstance(n, E.ProducerLoad)))
    return out


def _sizes(s: isl.Set, names: _Vars, ctx: BoundContext) -> set[str]:
    """The parameters of ``s`` that are symbolic sizes, not loop variables (kept everywhere)."""
    loops = {id(iv.var) for iv in ctx.rmap}
    out = set()
    for k in range(s.dim(isl.dim_type.param)):
        n = s.get_dim_name(isl.dim_type.param, k)
        v = names.var.get(n)
        if v is not None and id(v) not in loops:
            out.add(n)
    return out


__all__ = ["ExactPlan", "StageSets", "drop", "mentions", "plan", "regions", "universe"]
