"""The polyhedral view of a schedule (seed 004): statements, domains, accesses, one time space.

Derived from the same facts lowering uses (InferBound's ranges, the relation algebra, the
attachments), so it describes the loop nest tessel actually emits:

* a **statement** per compute stage (two for a reduction: its ``init`` and its ``update``);
  its instances are points of a parametric integer set whose dimensions are the loops that
  enclose the stage (the attach path, outermost first) followed by the stage's own root axes,
  and whose parameters are the symbolic sizes. An enclosing loop that runs once per iteration
  of the loops around it is no dimension: it stands for its one value (``runs_once``);
* its **accesses**: one relation per read and per write, from an instance to an element of
  the tensor's storage. A tensor computed inside a loop is realized afresh in every iteration
  of that loop, so its storage is indexed by the enclosing loops' values first (what lets two
  iterations of a parallel loop own separate copies). An access whose index is not
  quasi-affine is kept approximate (any element along that dimension) with the reason;
* its **schedule**: a map into one time space, Tiramisu's 2d+1 encoding: a static position
  (the statement's place among its siblings) before and after every loop's coordinates,
  padded with zeros. Loop coordinates come from ``Relation.time_down`` (splits and fuses),
  so loop order is lexicographic order. A loop that runs once has no coordinate and no
  position of its own: its body joins the level around it, so the time space grows with the
  loops that repeat, not with the depth of the nest.

``build(sch)`` makes a :class:`Model`; ``model.text()`` shows it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl

from ..bound.infer import BoundContext, run_infer_bound
from ..ir import expr as E
from ..ir.functor import free_vars, substitute
from ..schedule.commands import has_commands
from ..schedule.kinds import INLINE, SCOPE
from ..schedule.schedule import Schedule
from ..schedule.stage import Stage
from ..te.tensor import ComputeOp
from .accesses import Access, add_accesses
from .commands import apply_commands, loop_values
from .context import context_of, size_vars
from .space import DIM, Converter, Namer, NotAffine, pw_to_map, set_space
from .text import model_text


@dataclass(eq=False)
class Loop:
    """One loop of the emitted nest: ``iter_var`` of ``stage``, at time dimensions
    ``[pos, pos + width)``; none (width 0) for a loop that runs once per iteration of the loops
    around it. An IterVar may give two loops (a reduction's init and update)."""

    stage: Stage
    iter_var: E.IterVar
    pos: int
    width: int
    kind: str

    @property
    def name(self) -> str:
        return self.iter_var.name


@dataclass(eq=False)
class Statement:
    name: str                 # isl tuple name (safe, unique)
    stage: Stage
    role: str                 # "compute", "init" or "update"
    dim_vars: list[E.Var]     # the domain's dimensions: enclosing loops, then root axes
    domain: isl.Set
    loops: list[Loop]
    schedule: isl.Map | None = None
    accesses: list[Access] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: converts expressions over ``dim_vars`` (and the sizes) into this statement's space
    converter: Converter | None = field(default=None, repr=False)

    @property
    def reads(self) -> list[Access]:
        return [a for a in self.accesses if not a.write]

    @property
    def writes(self) -> list[Access]:
        return [a for a in self.accesses if a.write]

    def label(self) -> str:
        return self.stage.name if self.role == "compute" else f"{self.stage.name} ({self.role})"


@dataclass(eq=False)
class Model:
    sch: Schedule
    namer: Namer
    params: dict[E.Var, str]
    context: isl.Set
    statements: list[Statement]
    loops: list[Loop]
    time_dims: int
    #: stages the model leaves out (another kind of operation, a loop it cannot place), why
    unmodelled: dict[str, str]
    ranges: dict[E.IterVar, E.Range]

    def loops_of(self, stage: Stage, iv: E.IterVar) -> list[Loop]:
        return [lp for lp in self.loops if lp.stage is stage and lp.iter_var is iv]

    def statements_in(self, loop: Loop) -> list[Statement]:
        return [s for s in self.statements if any(lp is loop for lp in s.loops)]

    def empty_statements(self) -> list[Statement]:
        """Statements with no instance for any sizes the context allows (they never run)."""
        return [s for s in self.statements if s.domain.intersect_params(self.context).is_empty()]

    def unread_stages(self) -> list[str]:
        """Stages that are not outputs and whose values no statement of another stage reads."""
        out = []
        for st in self.sch.stages:
            mine = [s for s in self.statements if s.stage is st]
            if st.is_output or not mine:
                continue
            names = {a.relation.get_tuple_name(DIM.out) for s in mine for a in s.writes}
            read = any(a.relation.get_tuple_name(DIM.out) in names and
                       not a.relation.intersect_params(self.context).is_empty()
                       for s in self.statements if s.stage is not st for a in s.reads)
            if not read:
                out.append(st.name)
        return out

    def text(self) -> str:
        return model_text(self)

    __str__ = text


# ---- the tree of loops and statements lowering emits --------------------------------------------
@dataclass(eq=False)
class _Node:
    """A loop (``stage``/``iter_var`` set) or a statement (``stmt`` set) of the emitted tree."""

    stage: Stage | None = None
    iter_var: E.IterVar | None = None
    stmt: Statement | None = None
    body: list[_Node] = field(default_factory=list)


@dataclass(eq=False)
class _Around:
    """The loops around a stage (other stages' loops, outermost first): those that repeat, the
    values of those that run once, and the ids of all."""

    kept: list[tuple[Stage, E.IterVar]]
    once: dict[E.Var, E.PrimExpr]
    ids: set[int]


def _declared(conv: Converter, op, notes: list[str]) -> isl.Set:
    """The operation's declared domain (``where=``) over its root axes; the whole space, and a
    note, where the condition is not affine (lowering then checks it at every point)."""
    if op.where is None:
        return isl.Set.universe(conv.space)
    try:
        return conv.set(op.where)
    except NotAffine as err:
        notes.append(f"the declared domain is approximated: {err.reason}")
        return isl.Set.universe(conv.space)


class _Builder:
    def __init__(self, sch: Schedule, ctx: BoundContext):
        self.sch, self.ctx, self.rmap = sch, ctx, ctx.rmap
        self.namer = Namer()
        self.params = self._params()
        self.pnames = [self.params[v] for v in self.params]
        self.unmodelled: dict[str, str] = {}
        self.children: dict[tuple[int, int], list[Stage]] = {}
        for st in ctx.order:
            if st.attach_type == SCOPE and not st.is_placeholder:
                self.children.setdefault((id(st.attach_stage), id(st.attach_ivar)), []).append(st)
        self.statements: list[Statement] = []
        self.commanded = has_commands(sch)
        self._one: dict[int, E.PrimExpr | None] = {}
        self._around: dict[int, _Around] = {}
        self._loop_of = {iv.var: (st, iv) for st in sch.stages for iv in st.leaf_iter_vars}

    def runs_once(self, st: Stage, iv: E.IterVar) -> bool:
        """Whether ``st``'s loop ``iv`` has one iteration per iteration of the loops around it
        (InferBound gives it extent 1): its value is fixed by theirs, so it takes no time
        dimension (``_place``), no dimension of the domains inside it (``stage_statements``)
        and no storage dimension (``accesses._scope_values``: one copy per iteration of the
        loops around it already). Only loops of stages computed inside another: a root stage's
        loops are those the fusion and wavefront solvers place by dimension. Whether the
        schedule has commands does not matter here: the legality checks compare the instances
        of one statement under two schedules (the program's order and the one given), so a
        statement has the same dimensions in both."""
        return self.one_value(st, iv) is not None

    def one_value(self, st: Stage, iv: E.IterVar) -> E.PrimExpr | None:
        """The value of ``st``'s loop ``iv`` if it runs once: the start of its range, over the
        loops outside it that repeat (those that run once replaced by their own values) and the
        sizes; None if it repeats, or if that value is not affine (then it is a dimension like
        any loop). Kept per loop, so every statement and storage inside it agrees."""
        key = id(iv)
        if key not in self._one:
            self._one[key] = None
            r = self.rmap.get(iv)
            if st.attach_type == SCOPE and r is not None and isinstance(r.extent, E.IntImm) and \
                    r.extent.value == 1 and len(self.time_values(st).get(iv) or ()) == 1:
                self._one[key] = self._affine_value(r.min)
        return self._one[key]

    def _affine_value(self, start: E.PrimExpr) -> E.PrimExpr | None:
        loops = {v: self._loop_of[v] for v in free_vars(start) if v in self._loop_of}
        sub = {v: self.one_value(*loops[v]) for v in loops}
        start = substitute(start, {v: x for v, x in sub.items() if x is not None})
        dims = sorted((v for v in free_vars(start) if v in self._loop_of), key=lambda v: v.name)
        space = set_space([f"d{k}" for k in range(len(dims))], self.pnames)
        try:
            Converter(space, {v: k for k, v in enumerate(dims)}, {v: k for k, v in enumerate(self.params)}).aff(start)
        except NotAffine:
            return None
        return start

    def around(self, st: Stage) -> _Around:
        """The loops around ``st``, made from its parent's (a chain of N stages each computed
        inside the next asks this of N stages, and each has up to 2N loops around it)."""
        chain, s = [], st
        while id(s) not in self._around:
            chain.append(s)
            if s.attach_type != SCOPE or s.attach_stage is None or any(x is s.attach_stage for x in chain):
                self._around[id(s)] = _Around([], {}, set())
                chain.pop()
                break
            s = s.attach_stage
        for s in reversed(chain):
            up, parent = self._around[id(s.attach_stage)], s.attach_stage
            k = next(i for i, iv in enumerate(parent.leaf_iter_vars) if iv is s.attach_ivar)
            new = parent.leaf_iter_vars[: k + 1]
            values = {iv.var: self.one_value(parent, iv) for iv in new}
            self._around[id(s)] = _Around(up.kept + [(parent, iv) for iv in new if values[iv.var] is None],
                                          {**up.once, **{v: x for v, x in values.items() if x is not None}},
                                          up.ids | {id(iv) for iv in new})
        return self._around[id(st)]

    def _params(self) -> dict[E.Var, str]:
        """Symbolic sizes: free variables of shapes, domains and ranges that are no loop."""
        ranges = [x for r in self.rmap.values() for x in (r.min, r.extent)]
        return {v: self.namer.name(v, v.name, "p_") for v in size_vars(self.sch, ranges)}

    # ---- statements ------------------------------------------------------------------------
    def stage_statements(self, st: Stage) -> list[Statement]:
        op = st.op
        around = self.around(st)
        roles = [("compute", list(op.root_iter_vars))]
        if op.reduce_axis:
            roles = [("init", list(op.axis)), ("update", list(op.root_iter_vars))]
            if _finished(op):  # the reduced value finished once complete, over the data axes as the init
                roles.append(("finish", list(op.axis)))
        out = []
        for role, roots in roles:
            hint = st.name if role == "compute" else f"{st.name}_{role}"
            name = self.namer.name((st, role), hint, "S_")
            dims = [iv.var for _, iv in around.kept] + [iv.var for iv in roots]
            space = set_space([self.namer.name(v, v.name) for v in dims], self.pnames, name)
            conv = Converter(space, {v: k for k, v in enumerate(dims)}, {v: k for k, v in enumerate(self.params)},
                             values=around.once)
            dom = isl.Set.universe(conv.space)
            notes: list[str] = []
            for _, iv in around.kept:
                dom = dom.intersect(self._in_range(conv, iv.var, self.rmap[iv], dom, notes))
            for iv in roots:
                if iv.dom is not None:
                    dom = dom.intersect(self._in_range(conv, iv.var, iv.dom, dom, notes))
                dom = dom.intersect(self._in_range(conv, iv.var, self.rmap[iv], dom, notes))
            dom = dom.intersect(_declared(conv, op, notes))
            conv.domain = dom
            stmt = Statement(name, st, role, dims, dom, [], notes=notes, converter=conv)
            out.append(stmt)
        return out

    def _in_range(self, conv: Converter, v: E.Var, r: E.Range, known: isl.Set, notes: list[str]) -> isl.Set:
        """``v`` in ``r`` (over ``known``, the constraints so far); the whole space, and a note,
        when the range is not quasi-affine (the domain is then larger than what runs)."""
        conv.domain = known
        try:
            x, lo, ext = conv.aff(v), conv.aff(r.min), conv.aff(r.extent)
        except NotAffine as err:
            notes.append(f"the range of {v.name} is approximated: {err.reason}")
            return isl.Set.universe(conv.space)
        return x.ge_set(lo).intersect(x.lt_set(lo.add(ext)))

    # ---- the emitted tree --------------------------------------------------------------------
    def tree(self) -> list[_Node]:
        root: list[_Node] = []
        for st in self.ctx.order:
            if st.is_placeholder or st.attach_type in (INLINE, SCOPE):
                continue
            root.extend(self.pipeline(st))
        return root

    def pipeline(self, st: Stage) -> list[_Node]:
        if not isinstance(st.op, ComputeOp):
            self.unmodelled[st.name] = f"{type(st.op).__name__} operations are not modelled"
            return []
        stmts = self.stage_statements(st)
        self.statements.extend(stmts)
        leaves = st.leaf_iter_vars
        if len(stmts) == 1:
            return self.nest(st, leaves, [_Node(stmt=stmts[0])])
        first = next((k for k, iv in enumerate(leaves) if iv.is_reduce), len(leaves))
        ends: list[list[_Node]] = []
        for stmt in (stmts[0], *stmts[2:]):  # the init, and the finish over the same loops after the update
            nodes = [_Node(stmt=stmt)]
            for iv in reversed([iv for iv in leaves[first:] if not iv.is_reduce]):
                nodes = [_Node(st, iv, body=nodes)]
            ends.append(nodes)
        update = self.nest(st, leaves[first:], [_Node(stmt=stmts[1])])
        return self.nest(st, leaves[:first], ends[0] + update + (ends[1] if len(ends) > 1 else []))

    def nest(self, st: Stage, leaves: list[E.IterVar], inner: list[_Node]) -> list[_Node]:
        if not leaves:
            return inner
        iv = leaves[0]
        body: list[_Node] = []
        for child in self.children.get((id(st), id(iv)), []):
            body.extend(self.pipeline(child))
        return [_Node(st, iv, body=body + self.nest(st, leaves[1:], inner))]

    def time_values(self, st: Stage) -> dict:
        """Each loop of ``st`` as its root axes' values over time (``pass_down_time``, with the
        commands given before a split), made once per stage."""
        cache = self.__dict__.setdefault("_tv", {})
        if id(st) not in cache:
            value = {iv: (st.op.reindex(iv, iv.var),) for iv in st.op.root_iter_vars}
            loop_values(st, self.rmap, value)
            cache[id(st)] = value
        return cache[id(st)]


def build(sch: Schedule, ctx: BoundContext | None = None) -> Model:
    """The polyhedral model of ``sch`` as it would be lowered now (``ctx``: InferBound's result,
    computed when not given)."""
    ctx = ctx if ctx is not None else run_infer_bound(sch, check=False)
    b = _Builder(sch, ctx)
    roots = b.tree()
    loops: list[Loop] = []
    vectors: dict[int, list] = {}
    _place(b, roots, [], [], loops, vectors)
    apply_commands(sch, b.statements, vectors)  # Tiramisu's commands, composed onto the TE nest's map
    width = max((len(v) for v in vectors.values()), default=1)
    for stmt in b.statements:
        vec = vectors.get(id(stmt))
        if vec is None:
            continue
        conv = stmt.converter
        assert conv is not None
        vals = [conv.const(x) if isinstance(x, int) else x for x in vec] + [conv.const(0)] * (width - len(vec))
        stmt.schedule = pw_to_map(vals, stmt.domain, "T", [f"t{k}" for k in range(width)])
    for stmt in b.statements:
        add_accesses(b, stmt)
    good = [s for s in b.statements if s.schedule is not None]
    for s in b.statements:
        if s.schedule is None:
            b.unmodelled.setdefault(s.stage.name, "; ".join(s.notes) or "no schedule")
    return Model(sch, b.namer, b.params, context_of(b), good, loops, width, b.unmodelled, ctx.rmap)


def _place(b: _Builder, body: list[_Node], vec: list, path: list[Loop], loops: list[Loop], vectors: dict,
           seq: list[int] | None = None) -> None:
    """Give every statement its time vector and every loop its dimensions (a walk of the tree).
    ``seq``: the next static position at this level. A loop that runs once per iteration of the
    loops around it (``_Builder.runs_once``) takes no dimension: its body joins the level it is
    in, in order, so the time space grows with the loops that repeat, not with the depth of the
    nest (a chain of stages each computed inside the next nests 2 loops a stage, all but 2 of
    them running once). Not with commands: they act on the 2d+1 layout (a loop's coordinates at
    odd positions, the orders' static ones at even)."""
    seq = [0] if seq is None else seq
    for node in body:
        if node.stmt is not None:
            stmt = node.stmt
            stmt.loops = list(path)
            vals = _statement_vector(b, stmt, [*vec, seq[0]], path)
            seq[0] += 1
            if vals is not None:
                vectors[id(stmt)] = vals
            continue
        assert node.stage is not None and node.iter_var is not None
        kind = node.stage.leaf_kind(node.iter_var)
        if not b.commanded and b.runs_once(node.stage, node.iter_var):  # commands act on the 2d+1 layout
            lp = Loop(node.stage, node.iter_var, len(vec), 0, kind)  # no dimension: none carried
            loops.append(lp)
            _place(b, node.body, vec, [*path, lp], loops, vectors, seq)
            continue
        width = _loop_width(b, node)
        lp = Loop(node.stage, node.iter_var, len(vec) + 1, width, kind)
        loops.append(lp)
        _place(b, node.body, vec + [seq[0]] + [lp] * width, [*path, lp], loops, vectors)
        seq[0] += 1


def _loop_width(b: _Builder, node: _Node) -> int:
    value = b.time_values(node.stage)
    got = value.get(node.iter_var)
    return len(got) if got else 1


def _statement_vector(b: _Builder, stmt: Statement, vec: list, path: list[Loop]) -> list | None:
    """``vec`` (static positions and Loop placeholders) with each loop's coordinates as
    functions of the statement's dimensions; None (and a note) where one is not quasi-affine."""
    conv = stmt.converter
    assert conv is not None
    out: list = []
    k = 0
    while k < len(vec):
        x = vec[k]
        if isinstance(x, int):
            out.append(x)
            k += 1
            continue
        lp: Loop = x
        try:
            if lp.stage is stmt.stage:
                coords = b.time_values(lp.stage).get(lp.iter_var)
                if coords is None:
                    raise NotAffine(f"loop {lp.name} has no quasi-affine position in {stmt.stage.name}'s axes "
                                    "(a split of loops fused over a symbolic extent)")
                out.extend(conv.aff(c) for c in coords)
            else:
                if lp.width != 1:
                    raise NotAffine(f"it is computed inside loop {lp.name} of {lp.stage.name}, a fuse of "
                                    "loops of symbolic extent")
                out.append(conv.aff(lp.iter_var.var))
        except NotAffine as err:
            stmt.notes.append(f"{stmt.label()} has no exact schedule: {err.reason}")
            return None
        k += lp.width
    return out


__all__ = ["Access", "Loop", "Model", "Statement", "build"]


def _finished(op) -> bool:
    """Whether ``op``'s reduction has a ``finish`` (``E.Reduce``): a third statement."""
    body = getattr(op, "body", ())
    return bool(body) and isinstance(body[0], E.Reduce) and body[0].finish is not None
