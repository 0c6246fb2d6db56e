"""InferBound (seed 000): a Range for every IterVar of every stage.

Stages are visited consumers first, in an order taken from the read graph (``stage_order``),
never from their position in ``sch.stages``. For each stage, InferRootBound gathers what every
consumer requests of its outputs (phases 1-4) and PassDownDomain gives the derived loops their
ranges. What is specific to a kind of operation (which regions of its inputs a region of its
loops reads, how its loops' ranges follow from the requests) is asked of the operation itself
(``te/operation.py``), so a new kind of operation needs no change here.
Where the seed is silent the behaviour of TVM TE v0.14 is followed (a split's inner loop gets
the factor, and is tightened to its parent's extent only where that is provably smaller).

One deliberate difference from TVM: when a stage is *not* attached inside a consumer, TVM
relaxes every loop on the consumer's attach path; here only the loops that do not also enclose
the stage are relaxed. A loop enclosing both runs one value at a time for both, so the request
for that value is exact; TVM's answer is a superset, ours is never smaller than what is read.

Loops bound to threads follow TVM exactly (``schedule/threads.py``): whether such a loop is
relaxed depends only on the producer's storage scope and the thread's rank (a shared buffer
covers every threadIdx value of its block wherever it is attached, a local one its own thread),
and a loop that is not relaxed stands for the thread's variable, which the lowered loop binds.
"""

from __future__ import annotations

import heapq

from ..arith import Analyzer, IntSet, eval_set
from ..errors import InternalError, ScheduleError
from ..ir import expr as E
from ..ir.functor import substitute
from ..schedule.commands import seen_by_caller
from ..schedule.dataflow import py_name
from ..schedule.graph import attach_path, consumers, effective_bodies
from ..schedule.kinds import INLINE, ROOT, SCOPE
from ..schedule.schedule import Schedule
from ..schedule.stage import Stage
from ..schedule.storage_point import real_loop
from ..schedule.threads import bind_map, relaxes, storage_scope
from ..te.operation import Request
from .check import check_reads_in_bounds
from .propagate import pass_down_domain, pass_up_domain
from .shared import identified, image_request, shared_request, slice_only, stored_leaves

#: ``err.rule`` of InferBound's refusal of a reader it cannot bound (see ``_require_ranges``)
UNBOUNDED_READER = "unbounded-reader"


class BoundContext:
    """Everything InferBound derives, kept for lowering (which needs the same facts)."""

    def __init__(self, sch: Schedule):
        self.sch = sch
        self.bodies = effective_bodies(sch)
        self.consumers = consumers(sch, self.bodies)
        self.paths = {st: attach_path(st) for st in sch.stages if st.attach_type != INLINE}
        self.order = stage_order(sch, self.consumers)
        self.rmap: dict[E.IterVar, E.Range] = {}
        self.analyzer = Analyzer()
        for cond in sch.assumption_exprs():  # the user's promises (s.assume), checked at every call
            self.analyzer.assume(cond)
        # stages whose outer loops are a host's loops (seed 003): their storage box per root axis
        self.boxes: dict[Stage, dict[E.IterVar, E.Range]] = {}
        # thread semantics (schedule/threads.py): each bound loop's thread axis, each stage's scope
        self.binds = bind_map(sch.stages)
        self.scopes = {st: storage_scope(st, self.paths[st], self.binds) for st in self.paths}


def stage_order(sch: Schedule, cons: dict[Stage, list[Stage]]) -> list[Stage]:
    """The stages producers first: after every stage it reads, and before the stage it is
    computed at (whose loops must have ranges before its requests can be evaluated).

    The order comes from the read graph, not from the position in ``sch.stages``; the
    position only breaks ties, so a list already in dataflow order is kept as it is. If the
    attachments contradict the reads (an illegal schedule), the earliest stage left goes next.
    """
    pos = {id(st): k for k, st in enumerate(sch.stages)}
    before: dict[int, set[int]] = {id(st): set() for st in sch.stages}  # what must come first
    for prod, readers in cons.items():
        for c in readers:
            before[id(c)].add(id(prod))
    for st in sch.stages:
        if st.attach_type == SCOPE and st.attach_stage is not None and id(st.attach_stage) in before:
            before[id(st.attach_stage)].add(id(st))
            if st.placement.store is not None:  # stored outside the loop it is computed at: its
                for c in cons.get(st, ()):  # readers there run after that loop has computed it all
                    if c is not st.attach_stage and id(c) in before:
                        before[id(c)].add(id(st.attach_stage))
    # Kahn's algorithm with the ready stages in a heap by position (linear, not quadratic, in
    # the number of stages: a chain may have a thousand)
    after: dict[int, list[int]] = {k: [] for k in before}
    for k, firsts in before.items():
        for f in firsts:
            after[f].append(k)
    waiting = {k: len(v) for k, v in before.items()}
    ready = [pos[k] for k, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    order: list[Stage] = []
    done: set[int] = set()
    while len(order) < len(sch.stages):
        if ready:
            st = sch.stages[heapq.heappop(ready)]
        else:  # the attachments contradict the reads: the earliest stage left goes next
            st = next(x for x in sch.stages if id(x) not in done)
        order.append(st)
        done.add(id(st))
        for k in after[id(st)]:
            waiting[k] -= 1
            if waiting[k] == 0 and k not in done:
                heapq.heappush(ready, pos[k])
    return order


def infer_bound(sch: Schedule) -> dict[E.IterVar, E.Range]:
    """Ranges of every IterVar of every (non-inlined) stage of ``sch``."""
    return run_infer_bound(sch).rmap


def run_infer_bound(sch: Schedule, check: bool = True) -> BoundContext:
    """InferBound's ranges and the facts lowering reuses; ``check`` refuses reads that
    intervals place outside their tensor (the polyhedral check replaces it when lowering)."""
    ctx = BoundContext(sch)
    if check:
        check_reads_in_bounds(sch, ctx.bodies)
    for st in reversed(ctx.order):  # consumers first (seed 000)
        if st.attach_type == INLINE or st.is_placeholder:
            continue
        _infer_root_bound(ctx, st)
        pass_down_domain(st, ctx.rmap, ctx.analyzer)
        for t in st.env_thread_axes:  # a scan's launch threads run over their declared range
            _set_range(ctx, t, t.dom)
        _bind_threads(ctx, st)
    return ctx


def _bind_threads(ctx: BoundContext, st: Stage) -> None:
    """Let the thread axes of ``st``'s bound loops range as the loops do: regions of stages
    that are private to a thread are written in the thread's variable (TVM's ``bind_map``)."""
    for iv in st.leaf_iter_vars:
        thread = ctx.binds.get(iv)
        r = ctx.rmap.get(iv)
        if thread is not None and r is not None:
            ctx.analyzer.bind(thread.var, thread.dom if thread.dom is not None else r)


def _set_range(ctx: BoundContext, iv: E.IterVar, r: E.Range) -> None:
    ctx.rmap[iv] = r
    ctx.analyzer.bind(iv.var, r)


def _infer_root_bound(ctx: BoundContext, st: Stage) -> None:
    """Phases 1-4: each consumer's requests (its operation propagates them to its inputs),
    gathered by this stage's operation into ranges of its root loops."""
    op = st.op
    readers = ctx.consumers[st]
    if identified(st, ctx.consumers, ctx.bodies, lambda host: _lends_loops(ctx, host, st)):
        box = op.gather_bound(st, [shared_request(st, ctx.analyzer, leaves=stored_leaves(st))], ctx.analyzer)
        ctx.boxes[st] = dict(box)
        for iv in op.root_iter_vars:
            _set_range(ctx, iv, op.root_domain(st, iv))
        return
    if st.attach_type == SCOPE and st.placement.store is not None:
        _stored_apart_lost(st)
    # the box one iteration of its host covers (with whatever its readers there ask for)
    image = st.attach_type == SCOPE and bool(st.placement.image)
    exact = not image and slice_only(st, ctx.consumers, ctx.bodies)  # its readers read exactly its slice
    # an output, and a stage stored in place in the caller's tensor when at the root (inside a
    # loop its region is its readers': see poly.bounds.check_in_place_coverage)
    whole = not image and (st.is_output or not readers or (seen_by_caller(st) and st.attach_type == ROOT))
    shares = shared_request(st, ctx.analyzer, lambda loop: _loop_value(ctx, loop)) if whole or exact else None
    shares = image_request(st, ctx.analyzer) if image else shares
    exact = exact and shares is not None
    if whole and shares is None:
        for iv in op.root_iter_vars:
            _set_range(ctx, iv, op.root_domain(st, iv))
        return
    requests: list[Request] = [shares] if shares is not None else []
    inside = {id(iv) for iv in ctx.paths[st]}
    for c in () if exact else readers:
        dom_map = _consumer_root_sets(ctx, c, inside, ctx.scopes[st])
        requests.extend(c.op.propagate_bounds(ctx.bodies[c.op], dom_map, op, ctx.analyzer))
    for iv, r in op.gather_bound(st, requests, ctx.analyzer):
        _set_range(ctx, iv, r)
    missing = [iv.name for iv in op.root_iter_vars if iv not in ctx.rmap]
    if missing:
        raise InternalError(f"stage {st.name}: {type(op).__name__}.gather_bound gave no range for {', '.join(missing)}")


def _stored_apart_lost(st: Stage) -> None:
    """A stage stored at one loop and computed at a deeper one (compute_with, a shared reduction
    loop) is lowered only while its loops are exactly its hosts' and its readers read only its
    slice; a later split, reorder or compute_at of a host ended that."""
    host = st.attach_stage
    fix = f"s[{py_name(st.name)}].compute_root()"  # always legal: its readers all run after it
    raise ScheduleError(f"stage {st.name} is computed in {host.name}'s loop {st.attach_ivar.name} and stored "
                        f"outside it, which needs its loops to be exactly {host.name}'s and its readers to read "
                        f"only the slice each iteration makes; that no longer holds (a host's loops changed "
                        f"since): place it again, or compute it at the root: {fix}", fix=fix)


def _lends_loops(ctx: BoundContext, host: Stage, st: Stage) -> bool:
    """Whether ``host``'s loops run over its whole domain with their own variables, so ``st``
    can take its loops' values from them: a host at the root over all of it, or, for a stage
    stored apart from where it is computed (``Placement.store``), a host whose outer loops are
    its own host's (``ctx.boxes``: its other loops then run whole)."""
    if host.attach_type == ROOT:
        return _whole_domain(ctx, host)
    return host in ctx.boxes and st.placement.store is not None


def _whole_domain(ctx: BoundContext, st: Stage) -> bool:
    """Whether a (root) stage's loops run over its whole domain: a host whose readers asked for
    more or less than that runs its loops over a region, and its loop values are not its axes'."""
    ana = ctx.analyzer
    for iv in st.op.root_iter_vars:
        r = ctx.rmap.get(iv)
        if r is None or iv.dom is None or not (ana.can_prove_equal(r.min, iv.dom.min)
                                               and ana.can_prove_equal(r.extent, iv.dom.extent)):
            return False
    return True


def _loop_value(ctx: BoundContext, loop: E.IterVar) -> E.Var | None:
    """The variable a loop's value is in the lowered code: its own at the root, its host's when
    its stage shares it (seed 003), None when it runs over a region rather than its domain."""
    owner = ctx.sch.stage_of_iter_var(loop)
    if owner is None or not any(loop is x for x in owner.leaf_iter_vars):
        return None  # no longer a loop (split or fused since): nothing to take the value from
    if owner.attach_type == ROOT:
        return loop.var if _whole_domain(ctx, owner) else None
    if owner in ctx.boxes:  # a loop it shares is its host's; its own run over their whole range
        return _loop_value(ctx, owner.shared_loops[loop]) if loop in owner.shared_loops else loop.var
    return None


def _consumer_root_sets(ctx: BoundContext, c: Stage, inside: set[int], scope: str) -> dict[E.Var, IntSet]:
    """Phases 1-2: what one execution of the producer sees of the consumer's root indices.

    A loop bound to a thread is relaxed by the producer's storage ``scope`` alone, wherever the
    producer is attached (TVM's NeedRelax): storage shared by the thread's values covers them
    all, storage private to one thread covers the thread's own value (its variable)."""
    _require_ranges(ctx, c)
    relax, threads = _relax_sets(ctx, c, inside, scope)
    up, rebased = _leaf_sets(ctx, c, inside, scope, threads)
    pass_up_domain(c, ctx.rmap, up, ctx.analyzer)
    dom_map: dict[E.Var, IntSet] = {}
    for iv in c.op.root_iter_vars:  # a root no loop derives from (opaque) spans its range
        r = up[iv].cover_range(ctx.rmap[iv]) if iv in up else ctx.rmap[iv]
        if relax:
            lo = eval_set(r.min, relax).min_value
            hi = eval_set(E.sub(E.add(r.min, r.extent), 1), relax).max_value
            if rebased:  # back to the loop variables lowering has
                lo, hi = (None if x is None else ctx.analyzer.simplify(substitute(x, rebased)) for x in (lo, hi))
            dom_map[iv.var] = IntSet.interval(lo, hi)
        else:
            dom_map[iv.var] = IntSet.from_range(r)
    return dom_map


def _require_ranges(ctx: BoundContext, c: Stage) -> None:
    """Refuse, naming the stage and the loop, a reader whose loops have no range yet: its own or
    those of a stage it is computed in. That happens only when the attachments contradict the reads
    (a stage computed inside the loops of a stage that runs before what it reads, e.g. a stage
    attached to its own producer), where ``stage_order`` has no order to give."""
    for iv in [*ctx.paths.get(c, ()), *c.leaf_iter_vars, *c.op.root_iter_vars]:
        if iv in ctx.rmap:
            continue
        owner = ctx.sch.stage_of_iter_var(iv)
        at, hops = c, 0  # the stage whose attachment puts it inside ``owner``'s loops
        while at.attach_type == SCOPE and at.attach_stage is not None and at.attach_stage is not owner \
                and hops < len(ctx.sch.stages):
            at, hops = at.attach_stage, hops + 1
        where = f"{owner.name if owner else '?'}'s loop over {iv.name}"
        if at.attach_type == SCOPE and at.attach_stage is not None:
            text = (f"stage {at.name} is computed inside {at.attach_stage.name}'s loop over {at.attach_ivar.name}, "
                    f"but {at.name} reads {at.attach_stage.name} (directly or through other stages): {at.name} would "
                    f"run before the values it reads exist, and InferBound cannot give {where} a range; attach "
                    f"{at.name} to a stage that reads it, or compute it at the root: "
                    f"s[{py_name(at.name)}].compute_root()")
            err = ScheduleError(text, fix=f"s[{py_name(at.name)}].compute_root()")
        else:
            err = ScheduleError(f"stage {c.name}: InferBound has no range for {where} when it is needed (the "
                                f"attachments contradict the reads); compute_root the stages attached around it")
        err.rule = UNBOUNDED_READER  # type: ignore[attr-defined]
        raise err


def _relax_sets(ctx: BoundContext, c: Stage, inside: set[int], scope: str) -> tuple[dict[E.Var, IntSet], bool]:
    """The consumer's enclosing loops to relax, outermost first (an inner loop's range may be
    written in outer loop variables, which must be relaxed in it as well); and whether a loop
    that also encloses the producer is among them (a thread shared by the producer's storage)."""
    relax: dict[E.Var, IntSet] = {}
    threads = False
    for iv in reversed(ctx.paths[c]):
        thread = ctx.binds.get(iv)
        if (id(iv) in inside) if thread is None else not relaxes(scope, thread):
            continue
        pr = ctx.rmap[iv]
        if relax:
            got = IntSet.interval(eval_set(pr.min, relax).min_value,
                                  eval_set(E.sub(E.add(pr.min, pr.extent), 1), relax).max_value)
        else:
            got = IntSet.from_range(pr)
        relax[iv.var] = got
        if thread is not None:
            relax[thread.var] = got
            threads = threads or id(iv) in inside
    return relax, threads


def _leaf_sets(ctx: BoundContext, c: Stage, inside: set[int], scope: str,
               rebase: bool) -> tuple[dict[E.IterVar, IntSet], dict[E.Var, E.PrimExpr]]:
    """Phase 1: each of the consumer's loops as a set: a point where one execution of the
    producer sees one value, its range where it sees them all.

    A loop variable is the absolute index (lowering counts from zero and adds the minimum); when
    thread loops enclosing both stages are relaxed (``rebase``), a point loop's minimum, written
    in those threads, must be relaxed with them: the point is then ``rel + min`` over a fresh
    ``rel`` (TVM's normalized loop), which is mapped back to ``var - min`` afterwards."""
    up: dict[E.IterVar, IntSet] = {}
    rebased: dict[E.Var, E.PrimExpr] = {}
    shared = c.shared_loops if c in ctx.boxes else {}
    for iv in c.leaf_iter_vars:
        r = ctx.rmap[iv]
        thread = ctx.binds.get(iv)
        if iv in shared:  # the host's loop, which encloses the producer too
            up[iv] = IntSet.single_point(real_loop(ctx.sch, shared[iv]).var)
        elif E.is_const_int(ctx.analyzer.simplify(r.extent), 1):
            up[iv] = IntSet.single_point(r.min)
        elif thread is not None:  # the thread's variable counts from zero, as the loop does
            point = thread.var if E.is_const_int(r.min, 0) else E.add(E.cast(thread.var, r.min.dtype), r.min)
            up[iv] = IntSet.from_range(r) if relaxes(scope, thread) else IntSet.single_point(point)
        elif id(iv) in inside and rebase and not E.is_const_int(r.min, 0):
            rel = E.Var(iv.var.name + ".rel", iv.var.dtype)
            rebased[rel] = E.sub(iv.var, r.min)
            up[iv] = IntSet.single_point(E.add(rel, r.min))
        elif id(iv) in inside:
            up[iv] = IntSet.single_point(iv.var)
        else:
            up[iv] = IntSet.from_range(r)
    return up, rebased
