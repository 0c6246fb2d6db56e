"""ScheduleOps: the loop nest of every stage, producers placed where the schedule puts them.

The result speaks of te tensors (``realize`` / ``produce`` / ``T[i, j] = ...``), as the
listings of seed 000 do. A stage at the root is realized around itself and everything after
it; a stage computed at loop ``x`` of a consumer is realized inside ``x`` over only the region
InferBound found it needs there, and its loops count from zero with the region's minimum added
to its indices (seed 000, Ex. 4). Iterations past the end of a non-divisible split are
skipped by a guard, so no stage ever reads or writes outside its tensor or runs its body for
an index that does not exist.

With an exact plan (``tessel.poly.exact``, the default of ``lower``/``build``), a stage whose
exact region is smaller than its box keeps its loops, in their order and with their
annotations, but each loop's bounds (and which of its pieces run) come from isl's AST
generator over the exact set, one loop level at a time so that what is attached at a loop
stays inside it.
"""

from __future__ import annotations

from collections import ChainMap, defaultdict

import islpy as isl

from ..arith import IntSet, eval_set
from ..bound.infer import BoundContext
from ..bound.propagate import pass_up_index
from ..errors import LowerError, ScheduleError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.buffer import DimAlign
from ..ir.functor import Mutator, collect, free_vars, inline_lets, ir_transform, substitute
from ..ir.stmt import AttrKey, LoopKind
from ..poly.astgen import AstReader, condition, scan
from ..poly.exact import ExactPlan, StageSets, drop, mentions
from ..schedule.dataflow import py_name
from ..schedule.kinds import INLINE, SCOPE
from ..schedule.relations import Rebase
from ..schedule.stage import Stage
from ..schedule.storage_point import real_loop
from ..schedule.threads import relaxes
from .thread_nest import merge_nested_threads


def schedule_ops(ctx: BoundContext, exact: ExactPlan | None = None) -> S.Stmt:
    """The loop nest of every stage; ``exact``: the exact regions to compute (None: the boxes)."""
    # producers before consumers (the read graph's order, see BoundContext.order)
    attached: dict[tuple[int, int], list[Stage]] = defaultdict(list)
    for st in ctx.order:
        if st.attach_type == SCOPE:
            attached[(id(st.attach_stage), id(st.attach_ivar))].append(st)
    builder = _Builder(ctx, attached, exact)
    body: S.Stmt = S.Evaluate(0)
    for st in reversed(ctx.order):
        if not st.is_placeholder and st.attach_type == SCOPE and builder.stored_apart(st) == ():
            body = builder.storage(st, body)  # stored at the root, computed in a host's loops
        if st.is_placeholder or st.attach_type in (INLINE, SCOPE):
            continue
        body = builder.pipeline(st, body)
    body = inline_lets(body)
    body = _scan_states_in_place(ctx, _scan_inits_in_place(ctx, body))
    return merge_nested_threads(body) if ctx.binds else body


def _scan_inits_in_place(ctx: BoundContext, body: S.Stmt) -> S.Stmt:
    """A scan's init stage computes straight into the scan's output, as TVM lowers it: on a GPU
    the copy of the init into the output (``ScanOp.build_provide``) would be a loop on the host,
    which a GPU target has no code for, and on any target the init would be a temporary of its
    own (durbin's init row). Redirected, the copy stores each element onto itself and the
    simplifier drops it. Only where that is the same program: the output is the program's (the
    caller's array, bound wherever it is stored) or realized over a region fixed by the sizes
    alone (its storage is then moved out around the whole program, so that the init's stores are
    inside it), and nothing else reads the init. Folded too: the init's steps are the first
    ones, each kept at its own index (a fold keeps at least the init's steps). A caller's array
    as the init is copied; on a GPU refused, with the fix."""
    from ..te.scan import Redirect, ScanOp

    realizes: dict[int, list[S.ProducerRealize]] = defaultdict(list)
    for n in collect(body, lambda n: isinstance(n, S.ProducerRealize), statements_only=True):
        realizes[id(n.producer)].append(n)
    loop_vars = {id(n.loop_var) for n in collect(body, lambda n: isinstance(n, S.For), statements_only=True)}
    tmap, lifted = {}, []
    for st in ctx.order:
        op = st.op
        if not isinstance(op, ScanOp):
            continue
        for init, out in zip(op.init, op.outputs):
            init_stage = ctx.sch.stage_map.get(init.op)
            if init_stage is None or init_stage.is_placeholder:
                if ctx.binds and not st.env_thread_axes:  # the copy would be a host loop (it read the output,
                    # not init, before); under env_threads it runs in the scan's threads
                    raise LowerError(
                        f"scan {op.name}: its init {init.name} is the caller's array, which is copied into "
                        f"{out.name} before the steps, and on a GPU that copy has no thread to run it; copy it "
                        f"through a stage you bind: {py_name(init.name)}_c = te.compute({py_name(init.name)}.shape, "
                        f"lambda *i: {py_name(init.name)}(*i)), its axes bound to blockIdx.x / threadIdx.x, and "
                        f"give that stage to te.scan as the init")
                continue  # the caller's array: copied, never written
            readers = ctx.consumers.get(init_stage, ())
            if not (readers and all(r.op is op for r in readers)):
                continue
            found = realizes.get(id(out), [])
            if st.is_output and not found:
                tmap[init] = out
            elif len(found) == 1 and not any(id(v) in loop_vars for r in found[0].bounds for v in free_vars(r)):
                tmap[init] = out  # one storage, whose region the sizes fix: moved out around everything
                lifted.append(found[0])
    if not tmap:
        return body
    body = Redirect(tmap).visit(body)
    if lifted:
        gone = {id(r.producer) for r in lifted}  # by tensor: the redirect rebuilt the nodes
        body = ir_transform(body, None, lambda n: n.body if id(n.producer) in gone else None, ["ProducerRealize"])
        for r in lifted:
            body = S.ProducerRealize(r.producer, r.bounds, body, r.scope)
    return body


def _scan_states_in_place(ctx: BoundContext, body: S.Stmt) -> S.Stmt:
    """A scan's state kept in the caller's array (``store_in(Y, output=...)``,
    ``schedule/scan_storage.py``): every access of the state's output -- the init's copy or
    the init computed into it, the steps, the reads of its last step -- made one of ``Y`` at
    the state's own indices, the output's storage dropped. The rule is judged again here, on
    the finished schedule (a body stage moved into the update's loops after the command)."""
    from ..schedule.scan_storage import in_place_refusal

    homes: dict = {}
    for st in ctx.order:
        if not getattr(st, "scan_homes", ()):
            continue
        why = in_place_refusal(ctx.sch, st)
        if why is not None:
            raise ScheduleError(f"stage {st.name}: a state kept in the caller's array (store_in(..., output=)) is "
                                f"refused: {why}")
        for k, home in st.scan_homes:
            homes[id(st.op.outputs[k])] = home
    return _AtHome(homes).visit(body) if homes else body


class _AtHome(Mutator):
    def __init__(self, homes: dict):
        self.homes = homes

    def visit_ProducerRealize(self, s: S.ProducerRealize):
        return self.visit(s.body) if id(s.producer) in self.homes else self.generic_visit(s)

    def visit_ProducerStore(self, s: S.ProducerStore):
        s = self.generic_visit(s)
        home = self.homes.get(id(s.producer))
        return s if home is None else S.ProducerStore(home, s.value, s.indices[1:])

    def visit_ProducerLoad(self, e: E.ProducerLoad):
        e = self.generic_visit(e)
        home = self.homes.get(id(e.producer))
        return e if home is None else E.ProducerLoad(home, e.indices[1:])


def loop_builder(ctx: BoundContext) -> _Builder:
    """The loop builder of a bounded schedule, with nothing attached: for analyses that ask what
    a stage's loops cover (tensorize's regions) without building its nest."""
    return _Builder(ctx, {})


class _Builder:
    """The loop builder an operation's ``build_provide`` writes its loop nest through."""

    def __init__(self, ctx: BoundContext, attached: dict, exact: ExactPlan | None = None):
        self.ctx = ctx
        self.exact = exact
        self.rmap = ctx.rmap
        self.attached = attached
        self.iset = {iv.var: IntSet.from_range(r) for iv, r in ctx.rmap.items()}
        # stages stored at a host loop outside the loop they are computed at (Placement.store),
        # by that loop; and the init of such a reduction, made with its update, run there
        self.stored: dict[int, list[Stage]] = defaultdict(list)
        self.inits: dict[int, S.Stmt] = {}
        for st in ctx.order:
            where = self.stored_apart(st)
            if where:
                self.stored[id(where[0])].append(st)

    def stored_apart(self, st: Stage) -> tuple | None:
        """Where ``st``'s storage is made when not where it is computed (``Placement.store``):
        ``()`` the root, ``(loop,)`` a host loop; None otherwise. Only a stage whose outer loops
        are its hosts' (``ctx.boxes``) is split so: its loops are theirs, its storage their slice."""
        return st.placement.store if st.attach_type == SCOPE and st in self.ctx.boxes else None

    def hoists_init(self, st: Stage, first: int) -> bool:
        """Whether ``st``'s reduction loop ``first`` (its first) is a host's loop inside its
        storage: its init then runs with the storage, once, not on every iteration of that loop."""
        return self.stored_apart(st) is not None and st.leaf_iter_vars[first] in self._shared(st)

    def hoist_init(self, st: Stage, init: S.Stmt) -> None:
        self.inits[id(st)] = init

    def storage(self, st: Stage, rest: S.Stmt) -> S.Stmt:
        """The storage part of a stage stored apart: realized around ``rest`` (which holds the
        loop it is computed at), its hoisted init first."""
        init = self.inits.pop(id(st), None)
        inner = rest if init is None else S.seq(S.AttrStmt(st.op, AttrKey.PRODUCE, 0, init), rest)
        return self._realized(st, inner)

    def rename(self, var: E.Var, value: E.PrimExpr, body: S.Stmt) -> S.Stmt:
        """``body`` with ``var`` standing for ``value``: bound here, replaced in one walk once
        the whole nest is built (rewriting the body at every loop is quadratic in the depth of
        a chain of stages nested in one another)."""
        return S.Binding(var, value, body)

    # ---- one stage: realize { produce { loops }; rest } --------------------------------
    def pipeline(self, st: Stage, rest: S.Stmt) -> S.Stmt:
        op = st.op
        produce = S.AttrStmt(op, AttrKey.PRODUCE, 0, op.build_provide(self, st, self.ctx.bodies[op]))
        inner = S.seq(produce, rest)
        return inner if self.stored_apart(st) is not None else self._realized(st, inner)

    def _realized(self, st: Stage, inner: S.Stmt) -> S.Stmt:
        op = st.op
        box = self.ctx.boxes.get(st)  # a stage sharing a host's loops is stored over its slice
        if st.double_buffered:  # a hint for device code (TVM's double_buffer_scope), inside the storage
            inner = S.AttrStmt(op, AttrKey.DOUBLE_BUFFER_SCOPE, 1, inner)
        realize = op.build_realize(st, ChainMap(box, self.rmap) if box else self.rmap, inner)
        realize = _scoped(realize, op, self.ctx.scopes.get(st, st.scope))
        if getattr(st, "dim_align", None):  # storage_align: storage flattening pads the strides
            realize = S.AttrStmt(DimAlign(op.outputs, st.dim_align), AttrKey.BUFFER_DIM_ALIGN, 0, realize)
        return realize

    def _shared(self, st: Stage) -> dict[E.IterVar, E.IterVar]:
        """The loops of ``st`` that are a host's loops (seed 003): not emitted, taken from the host."""
        if st not in self.ctx.boxes:
            return {}
        return {leaf: real_loop(self.ctx.sch, loop) for leaf, loop in st.shared_loops.items()}

    def index_values(self, st: Stage) -> dict[E.IterVar, E.PrimExpr]:
        """Every IterVar of ``st`` as an expression of its leaf loop variables."""
        shared = self._shared(st)
        value = {iv: shared[iv].var if iv in shared else iv.var for iv in st.leaf_iter_vars}
        pass_up_index(st, self.rmap, value)
        return value

    def range_of(self, iv: E.IterVar) -> E.Range:
        return self.rmap[iv]

    @staticmethod
    def guarded(preds: list[E.PrimExpr], body: S.Stmt) -> S.Stmt:
        """``body`` run only where every predicate holds."""
        return _guard(preds, body)

    # ---- loops ---------------------------------------------------------------------------
    def nest(self, st: Stage, begin: int, end: int, body: S.Stmt) -> S.Stmt:
        info = self.exact.exact(st) if self.exact is not None else None
        if info is not None:
            return self._exact_nest(st, info, begin, end, body)
        shared = self._shared(st)
        for iv in reversed(st.leaf_iter_vars[begin:end]):
            body = self.attach(st, iv, body)
            body = body if iv in shared else self.loop(st, iv, body)
        return body

    def attach(self, st: Stage, iv: E.IterVar, body: S.Stmt) -> S.Stmt:
        """Place the stages computed at loop ``iv`` of ``st`` at the top of its body, inside the
        storage of those stored at it but computed deeper."""
        for child in reversed(self.attached.get((id(st), id(iv)), [])):
            body = self.pipeline(child, body)
        for child in reversed(self.stored.get(id(iv), [])):
            body = self.storage(child, body)
        return body

    def attached_at(self, st: Stage, iv: E.IterVar) -> bool:
        """Whether some stage is computed at loop ``iv`` of ``st``."""
        return bool(self.attached.get((id(st), id(iv))))

    def loop(self, st: Stage, iv: E.IterVar, body: S.Stmt) -> S.Stmt:
        r = self.leaf_range(st, iv)
        var = iv.var
        if not E.is_const_int(r.min, 0):  # counted from zero: TVM's normalize rebases such a leaf
            rebase = Rebase.of_leaf(iv, r)
            value = {rebase.rebased: rebase.rebased.var}
            rebase.index_up({iv: r}, value)  # r in the loops outside (leaf_range), not in root axes
            var = rebase.rebased.var
            body = self.rename(iv.var, value[iv], body)
        return self._annotated(st, iv, var, r.extent, body)

    def leaf_range(self, st: Stage, iv: E.IterVar) -> E.Range:
        """InferBound's range of leaf ``iv``, in the loops outside it: a reduction whose bounds
        follow an outer axis (``reduce_axis((0, i))``) has them in ``i``, which a split turns
        into an expression of its loops; a loop it depends on must enclose it."""
        r = self.rmap[iv]
        used = free_vars(r.min) | free_vars(r.extent)
        roots = [x for x in st.op.root_iter_vars if x.var in used and x not in st.leaf_iter_vars]
        if roots:
            value = self.index_values(st)
            sub = {x.var: value[x] for x in roots}
            r = E.Range(substitute(r.min, sub), substitute(r.extent, sub))
            used = free_vars(r.min) | free_vars(r.extent)
        leaves = st.leaf_iter_vars
        inner = [x for x in leaves[leaves.index(iv):] if x.var in used]
        if inner:
            raise ScheduleError(
                f"stage {st.name}: the bounds of loop {iv.name} ({r.min}, extent {r.extent}) depend on loop "
                f"{inner[0].name}, which runs inside it; reorder so that {inner[0].name} encloses {iv.name}")
        return r

    def _annotated(self, st: Stage, iv: E.IterVar, var: E.Var, extent: E.PrimExpr, body: S.Stmt) -> S.Stmt:
        """``for (var, 0, extent) body`` as leaf ``iv`` is annotated (kind, binding, pragmas)."""
        kind = st.leaf_kind(iv)
        attr = st.iter_var_attrs.get(iv)
        tag = attr.bind_thread.thread_tag if attr and attr.bind_thread is not None else ""
        if (kind == LoopKind.THREAD_BINDING and not tag) or kind == LoopKind.TENSORIZED:  # tensorized: a tile's scalar edge
            kind = LoopKind.SERIAL
        if attr is not None and attr.prefetch:
            body = S.seq(*prefetches(attr.prefetch, var, body), body)
        thread = self.ctx.binds.get(iv) if kind == LoopKind.THREAD_BINDING else None
        if thread is not None:  # the loop is the thread: its variable, or its own index only
            # storage private to the thread holds the thread's own slice of a data axis, its
            # region starting at the thread's index (the loop is then its offset there, 0); a
            # reduction axis has no region: bound to a thread it is a cross-thread reduction,
            # each thread's share at the thread's own index
            across = relaxes(self.ctx.scopes[st], thread) or iv.iter_type == E.IterVar.REDUCE
            value = thread.var if across else E.const(0, var.dtype)
            body = self.rename(var, E.cast(value, var.dtype), body)
            var = thread.var
        loop: S.Stmt = S.For(var, E.const(0, extent.dtype), extent, kind, body, tag)
        pragmas = attr.pragmas if attr else {}
        if "debug_skip_region" in pragmas:
            return S.AttrStmt(st.op, AttrKey.PRAGMA_DEBUG_SKIP_REGION, iv.var.name, S.Evaluate(0))
        if pragmas.get("auto_unroll_max_step"):
            loop = _auto_unroll(loop, pragmas["auto_unroll_max_step"], self.ctx.analyzer)
        for key, value in reversed(pragmas.items()):  # kept for readers of the IR (TVM's pragma_<key>)
            if key not in _APPLIED_PRAGMAS:
                loop = S.AttrStmt(iv, AttrKey.PRAGMA + key, value, loop)
        return loop

    def init_nest(self, st: Stage, loops: list[E.IterVar], body: S.Stmt) -> S.Stmt:
        """A reduction's init hoisted out of its first reduction loop: the data-parallel leaf
        ``loops`` inside it around ``body``, over the instances where the init runs (with an
        exact plan, its declared domain and its readers' needs; else the loops' ranges)."""
        info = self.exact.exact(st) if self.exact is not None else None
        if info is None:
            for iv in reversed(loops):
                body = self.loop(st, iv, body)
            return body
        leaves = st.leaf_iter_vars
        at = [leaves.index(iv) for iv in loops]
        init = info.starts()
        return self._exact_levels(st, info, at, lambda m: drop(init, remove={info.leaves[k] for k in at[m + 1:]}),
                                  info.loops_upto(info.first - 1), body, attach=False)

    def _exact_nest(self, st: Stage, info: StageSets, begin: int, end: int, body: S.Stmt) -> S.Stmt:
        """Leaf loops ``begin:end`` over the exact set: one loop level at a time, each from isl's
        AST of that loop's values given the loops outside it."""
        at = list(range(begin, end))
        return self._exact_levels(st, info, at, lambda m: info.loops_upto(at[m]), info.loops_upto(begin - 1), body)

    def _exact_levels(self, st: Stage, info: StageSets, at: list[int], level, outside: isl.Set, body: S.Stmt,
                      m: int = 0, attach: bool = True) -> S.Stmt:
        """The leaf loops at positions ``at[m:]`` around ``body``, loop ``at[k]`` over the values
        ``level(k)`` (a set over it and the loops outside it) allows; ``outside``: what is known
        of the loops around the first (where they run)."""
        if m == len(at):
            return body
        iv = st.leaf_iter_vars[at[m]]
        inner = self._exact_levels(st, info, at, level, outside, body, m + 1, attach)
        inner = self.attach(st, iv, inner) if attach else inner
        names = self.exact.names  # type: ignore[union-attr]
        here_set = level(m)
        here = here_set.find_dim_by_name(isl.dim_type.param, info.leaves[at[m]])
        if here < 0:  # the set does not constrain this loop: InferBound's range bounds it
            return self.loop(st, iv, inner)
        dom = isl.Set.from_params(here_set).move_dims(isl.dim_type.set, 0, isl.dim_type.param, here, 1)
        dom = dom.set_tuple_name("L")
        sched = isl.UnionMap.from_map(dom.identity().reset_tuple_id(isl.dim_type.out))

        def user(_name: str, args: list[E.PrimExpr]) -> S.Stmt:
            return substitute(inner, {iv.var: args[0]})

        def loop(_it: str, counter: E.Var, extent: E.PrimExpr, b: S.Stmt) -> S.Stmt:
            return self._annotated(st, iv, counter, extent, b)

        reader = AstReader(names.var, user, loop, {"c0": iv.var}, str(iv.var.dtype))
        if m:  # the loops outside, this stage's own, ran over the projection of this set
            return scan(sched, dom.params(), ["c0"], reader)
        # isl takes its context as known; the loops outside run over ``outside`` only (a
        # reader's guard, past a non-divisible split's end, wraps only the reader's statement;
        # a reduction's update runs where its init did, empty sums included): what the set says
        # of them beyond that is checked once around the loop, what it says of the sizes alone
        # is isl's to check (a loop over nothing needs no guard)
        extra = dom.params().gist(outside)
        if extra.plain_is_universe() or not mentions(extra, set(info.path) | set(info.leaves)):
            return scan(sched, outside, ["c0"], reader)
        return _guard([condition(extra, outside, reader)], scan(sched, dom.params(), ["c0"], reader))

    # ---- guards for non-divisible splits and regions beyond a tensor ---------------------
    def bound_checks(self, st: Stage, value: dict[E.IterVar, E.PrimExpr]) -> list[E.PrimExpr]:
        """The predicates under which ``st``'s body runs: the guards of its non-divisible splits
        and, where the realized region is smaller than an axis's domain, that axis's range."""
        ana = self.ctx.analyzer
        guards = [g for rel in st.relations for g in rel.guards(self.rmap, value)]
        preds: list[E.PrimExpr] = []

        def check(v: E.PrimExpr, lo: E.PrimExpr, ext: E.PrimExpr, lower: bool) -> None:
            off = ana.simplify(E.sub(v, lo))
            s = eval_set(off, self.iset)
            if lower and (s.min_value is None or not ana.can_prove(E.ge(s.min_value, 0))):
                preds.append(E.ge(off, 0))
            if s.max_value is None or not ana.can_prove(E.lt(s.max_value, ext)):
                preds.append(E.lt(off, ext))

        for g in guards:  # checked here even where the split is exact: its outputs may not be
            check(g.index, g.min, g.extent, lower=False)
        for iv in st.op.root_iter_vars:
            r = self.rmap[iv]
            if iv.dom is not None and not (ana.can_prove_equal(r.min, iv.dom.min) and ana.can_prove_equal(r.extent, iv.dom.extent)):
                check(value[iv], iv.dom.min, iv.dom.extent, lower=True)
        op = st.op
        if op.where is not None and not (self.exact is not None and self.exact.covers_domain(st)):
            # a declared domain the loops do not follow (isl could not): one guard per point
            preds.append(substitute(op.where, {iv.var: op.reindex(iv, value[iv]) for iv in op.root_iter_vars}))
        if getattr(st, "store_predicate", None) is not None:  # set_store_predicate: over the root axes
            preds.append(substitute(st.store_predicate, {iv.var: value[iv] for iv in st.op.root_iter_vars}))
        out: list[E.PrimExpr] = []
        roots = {x.var: value[x] for x in st.op.root_iter_vars if x in value and x not in st.leaf_iter_vars}
        for p in preds:
            p = substitute(p, roots) if roots else p  # a split reduction bounded by an outer axis
            if not any(_same(p, q) for q in out):
                out.append(p)
        return out


_APPLIED_PRAGMAS = ("auto_unroll_max_step", "unroll_explicit", "debug_skip_region")


def prefetches(requests, var: E.Var, body: S.Stmt) -> list[S.Stmt]:
    """``prefetch`` hints for the top of a loop over ``var``: for each
    (tensor, offset), the first element of ``tensor`` the body reads, ``offset`` iterations on,
    with the loops inside at their start. The indices are left as they come: past the end of
    a row is the next row, as a sweep over rows reads it (a row's pass prefetching the row
    after it), and storage flattening clamps the flat offset into the tensor (a hint never
    reads, but its address stays inside the array)."""
    out: list[S.Stmt] = []
    inner = {f.loop_var: f.min for f in collect(body, lambda n: isinstance(n, S.For), statements_only=True)}
    for tensor, offset in requests:
        loads = [ld for ld in collect(body, lambda n: isinstance(n, E.ProducerLoad)) if ld.producer is tensor]
        if not loads:
            continue
        idx = [substitute(i, {**inner, var: E.add(var, E.cast(offset, var.dtype))}) for i in loads[0].indices]
        at = E.Call("handle", "address_of", (E.ProducerLoad(tensor, idx), E.StringImm("r")))
        out.append(S.Evaluate(E.Call("int32", "prefetch", (at,))))
    return out


def _scoped(stmt: S.Stmt, op, scope: str) -> S.Stmt:
    """The realize of ``op``'s outputs in ``scope``: the one its place implies when the stage
    names none (local inside thread loops, shared inside block loops: schedule/threads.py)."""
    if not isinstance(stmt, S.ProducerRealize) or stmt.producer.op is not op or stmt.scope == scope:
        return stmt
    return S.ProducerRealize(stmt.producer, stmt.bounds, _scoped(stmt.body, op, scope), scope)


def _same(a, b) -> bool:
    from ..ir.functor import structural_equal

    return structural_equal(a, b)


def _guard(preds: list[E.PrimExpr], body: S.Stmt) -> S.Stmt:
    if not preds:
        return body
    return S.IfThenElse(E.all_(*preds), body)


__all__ = ["LowerError", "schedule_ops"]


def _auto_unroll(stmt: S.Stmt, max_steps: int, ana) -> S.Stmt:
    """``pragma(x, "auto_unroll_max_step", n)``: serial loops of constant extent in the nest
    whose iterations, counting those of the loops inside them, are at most ``n`` become
    ``unrolled``; the unroll pass then makes them straight-line code. Vectorized, parallel and
    bound loops keep their kind and count as one step (a vector statement is one step)."""

    def visit(s: S.Stmt) -> tuple[S.Stmt, int | None]:
        """The rewritten statement and its number of steps (None: not a constant)."""
        if isinstance(s, S.For):
            body, inner = visit(s.body)
            ext = ana.simplify(s.extent)
            if s.kind not in (LoopKind.SERIAL, LoopKind.UNROLLED):
                steps = inner
            else:
                steps = ext.value * inner if isinstance(ext, E.IntImm) and inner is not None else None
            kind = LoopKind.UNROLLED if s.kind == LoopKind.SERIAL and steps is not None and steps <= max_steps else s.kind
            if body is s.body and kind == s.kind:
                return s, steps
            return S.For(s.loop_var, s.min, s.extent, kind, body, s.thread_tag), steps
        if isinstance(s, S.SeqStmt):
            parts = [visit(x) for x in s.seq]
            counts = [c for _, c in parts]
            total = None if any(c is None for c in counts) else sum(counts)
            return S.seq(*[x for x, _ in parts]), total
        body = getattr(s, "body", None)
        if isinstance(body, S.Stmt) and isinstance(s, S.AttrStmt | S.LetStmt | S.Allocate | S.ProducerRealize):
            new, steps = visit(body)
            if new is body:
                return s, steps
            return _with_body(s, new), steps
        if isinstance(s, S.IfThenElse):
            then, a = visit(s.then_case)
            els, b = visit(s.else_case) if s.else_case is not None else (None, 0)
            steps = None if a is None or b is None else max(a, b)
            return S.IfThenElse(s.condition, then, els), steps
        return s, 1

    return visit(stmt)[0]


def _with_body(s: S.Stmt, body: S.Stmt) -> S.Stmt:
    fields = [body if f == "body" else getattr(s, f) for f in s._fields]
    return type(s)(*fields)
