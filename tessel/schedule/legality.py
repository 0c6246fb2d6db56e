"""Legality of a schedule, judged on the operational model of seed 001, with fixes.

The central rule is about the schedule tree (``tree.py``): a stage's values exist only inside
the node it hangs under, from the point where it is computed. So a producer must hang at a node
that encloses every one of its readers' loops -- equivalently, LCA(producer, reader) must be
the producer's own attach point (seed 001's LCA rule; Example 5 breaks it). Around it sit the
rules that make the tree well defined at all (no attachment cycle, no attachment to a stage
that is inlined or that does not read the producer, outputs stored in full at the root) and a
few rules beyond the tree for schedules TVM accepted and silently miscompiled (parallel or
vectorized reduction loops, rfactor of a reducer whose result depends on the order of
combination) and the rules of ``bind`` (``threads.py``: one stage binding two loops to one
thread, a thread's declared range and its one extent per kernel).

Every broken rule becomes a :class:`Violation`: its kind (:class:`ViolationKind`), the stages
and loops involved, one sentence in the model's terms saying which stage cannot be placed where
and why, and, where one exists, a fix as steps (``fixes.py``). A fix is only proposed after its
steps have been replayed onto a copy of the schedule and shown to remove the problem, so
applying it (``err.fix_steps.apply(s)``, or its code: ``exec(err.fix, {"s": s, **err.fix_names})``)
is safe. The code names stages and tensors by Python identifiers made from their names
(``B.local`` -> ``B_local``); ``fix_names`` maps each identifier to the tensor the user holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ScheduleError
from ..ir import expr as E
from ..ir.stmt import LoopKind
from .checking import checker
from .dataflow import loop_ranges
from .fixes import FixBuilder, Names, choose
from .graph import effective_bodies, effective_consumers, reaches
from .kinds import INLINE, ROOT, SCOPE
from .threads import thread_violations
from .tree import ScheduleTree, attach_fault
from .violation import Violation, ViolationKind

if TYPE_CHECKING:
    from .schedule import Schedule
    from .stage import Stage


# ---- the rules -----------------------------------------------------------------------------
def tree_violations(sch: Schedule, propose: bool = True) -> list[Violation]:
    """Every broken rule of the tree, the ones that keep the tree from being built first, and
    of ``bind`` on the loops as written; with none, InferBound and the polyhedral model can be
    built, and ``tessel.check`` judges the rest (thread extents, dependences)."""
    out: list[Violation] = []
    stages = [st for st in sch.stages if not st.is_placeholder]
    broken: set[int] = set()
    for st in stages:
        v = _check_output(sch, st, propose) or _check_attachment(sch, st, propose)
        if v is not None:
            out.append(v)
            broken.add(id(st))
    tree = ScheduleTree(sch)
    cons = effective_consumers(sch)
    bodies = effective_bodies(sch)
    for st in stages:
        if id(st) in broken or st.attach_type != SCOPE:
            continue
        v = _check_reader_relation(sch, st, cons, propose) or _check_init_attach(sch, st, bodies, propose)
        if v is not None:
            out.append(v)
            broken.add(id(st))
    for st in stages:
        v = None if id(st) in broken or st.attach_type == INLINE else _check_scan_body(sch, st, propose)
        if v is not None:
            out.append(v)
            broken.add(id(st))
    for st in stages:
        if id(st) in broken or st.attach_type == INLINE:
            continue
        for r in cons.get(st, []):
            if id(r) in tree.detached:
                continue
            v = _check_lca(sch, tree, st, r, cons, propose)
            if v is not None:
                out.append(v)
                break
    for st in stages:
        for iv, attr in st.iter_var_attrs.items():
            if attr.kind in (LoopKind.PARALLEL, LoopKind.VECTORIZED) and iv.is_reduce and any(iv is x for x in st.leaf_iter_vars):
                out.append(_reduction_annotation(sch, st, iv, attr.kind, propose))
    out.extend(thread_violations(sch, propose))
    return out


def _shares_host_loop(st: Stage) -> bool:
    """Attached by a position primitive at a loop it shares, inside no other (seed 003): it
    computes its own slice of every iteration, so an output is still stored in full, once."""
    from .storage_point import shares_host_loops

    return shares_host_loops(st)


def _by_image(st: Stage) -> bool:
    """Computed at a host loop over the box each iteration covers (``Placement.image``): still
    written in full, since the host at the root runs over all of its domain and the tied axes
    have the same extents (``storage_point.share_by_image``); the host must still be at the root
    with the attach loop among its loops."""
    host = st.attach_stage
    return bool(st.placement.image) and host is not None and host.attach_type == ROOT \
        and any(st.attach_ivar is iv for iv in host.leaf_iter_vars)


def _check_output(sch: Schedule, st: Stage, propose: bool) -> Violation | None:
    if not st.is_output or st.attach_type not in (INLINE, SCOPE) or _shares_host_loop(st) or _by_image(st):
        return None
    if st.attach_type == INLINE:
        why = (f"{st.name} is an output of the schedule but is marked inline: the caller receives all of "
               f"{st.name}, so it must be stored, and an inlined stage is never stored (its expression is "
               f"substituted into its readers)")
        kind = ViolationKind.INLINED_OUTPUT
    else:
        where = _loop_words(st.attach_stage, st.attach_ivar)
        why = (f"{st.name} is an output of the schedule but is attached inside {where}: the caller receives "
               f"all of {st.name}, so it must be computed in full, once, at the root; inside that loop it "
               f"would be recomputed on every iteration or only partly stored")
        kind = ViolationKind.ATTACHED_OUTPUT
    v = Violation(kind, st, why, _stages(st, st.attach_stage), _loops(st.attach_ivar))
    if not propose:
        return v
    from .compute_at_pos import regroup_fix

    names = Names(sch)
    cands = [regroup_fix(names, st), FixBuilder(names).compute_root(st)]
    return choose(sch, v, [c for c in cands if c is not None])


def _stages(*stages: Stage | None) -> tuple[Stage, ...]:
    out: list[Stage] = []
    for st in stages:
        if st is not None and not any(st is o for o in out):
            out.append(st)
    return tuple(out)


def _loops(*loops: E.IterVar | None) -> tuple[E.IterVar, ...]:
    return tuple(iv for iv in loops if iv is not None)


def _loop_words(st: Stage | None, iv: E.IterVar | None) -> str:
    return f"{st.name if st else '?'}'s loop over {iv.name if iv is not None else '?'}"


def _check_attachment(sch: Schedule, st: Stage, propose: bool) -> Violation | None:
    if st.attach_type != SCOPE:
        return None
    fault = attach_fault(st)
    if fault is None:
        return None
    fault_kind, why = fault
    names = Names(sch)
    tgt, iv = st.attach_stage, st.attach_ivar
    where = _loop_words(tgt, iv)
    candidates = [FixBuilder(names).compute_root(st)]
    involved = _stages(st, tgt)
    if fault_kind == "cycle":
        chain = [st.name]
        s = tgt
        while s is not None and s is not st and len(chain) < 32:
            chain.append(s.name)
            s = s.attach_stage
        if tgt is st:
            text = (f"{st.name} is attached inside its own loop over {iv.name if iv is not None else '?'}: "
                    f"{st.name} would have to exist before it is computed, so the schedule tree has no place for it")
            kind = ViolationKind.SELF_ATTACHMENT
        else:
            text = (f"{st.name} is attached inside {where}, but the attachments {' -> '.join(chain)} -> {st.name} "
                    f"form a cycle: each stage would have to run inside the next, so the schedule tree has no "
                    f"place for any of them")
            kind = ViolationKind.ATTACHMENT_CYCLE
            members: list[Stage] = []
            s = st
            while s is not None and not any(s is m for m in members):
                members.append(s)
                s = s.attach_stage
            candidates = [FixBuilder(names).compute_root(m) for m in members]
            involved = tuple(members)
    elif tgt is not None and tgt.attach_type == INLINE:
        text = (f"{st.name} is attached inside {where}, but {tgt.name} is inlined: its expression is "
                f"substituted into its readers and it has no loops, so there is nowhere to compute {st.name}")
        kind = ViolationKind.INLINED_TARGET
        candidates.append(FixBuilder(names).compute_root(tgt))
    elif tgt is not None and iv is not None and not any(iv is x for x in tgt.leaf_iter_vars):
        text = (f"{st.name} is attached at {where}, but {iv.name} is not one of {tgt.name}'s loops now "
                f"({tgt._leaf_names()}), so the schedule tree has no node for it")
        kind = ViolationKind.STALE_ATTACHMENT
        from .dataflow import descendants

        desc = descendants(tgt, [iv])
        leaves = [x for x in tgt.leaf_iter_vars if id(x) in desc]
        if leaves:
            candidates.insert(0, FixBuilder(names).compute_at(st, tgt, leaves[-1]))
    else:
        text = f"{st.name} is attached inside {where}, but {why}"
        kind = ViolationKind.BAD_ATTACHMENT
    v = Violation(kind, st, text, involved, _loops(iv))
    return choose(sch, v, candidates) if propose else v


def _check_reader_relation(sch: Schedule, st: Stage, cons: dict, propose: bool) -> Violation | None:
    """A stage may only be attached to a stage that reads it, directly or through others."""
    tgt = st.attach_stage
    assert tgt is not None and st.attach_ivar is not None
    if reaches(cons, st, tgt):
        return None
    # a stage sharing a host's loops need not be read by it (seed 003), unless it reads the host:
    # then it would run inside the loops of a stage it reads, before the values exist (fuzz F2)
    upstream = reaches(cons, tgt, st)
    if (_shares_host_loop(st) or _by_image(st)) and not upstream:
        return None
    readers = ", ".join(r.name for r in cons.get(st, [])) or "none"
    text = (f"{st.name} is attached inside {_loop_words(tgt, st.attach_ivar)}, but {tgt.name} does not read "
            f"{st.name}, directly or through other stages ({st.name}'s readers: {readers}); a stage can only be "
            f"computed inside the loops of a stage that consumes it, where it is needed")
    if upstream:
        text += (f"; worse, {st.name} reads {tgt.name} (directly or through other stages), so inside "
                 f"{tgt.name}'s loops it would run before the values it reads exist")
    v = Violation(ViolationKind.ATTACHED_TO_NON_CONSUMER, st, text, _stages(st, tgt), _loops(st.attach_ivar))
    if not propose:
        return v
    names = Names(sch)
    candidates = [FixBuilder(names).compute_root(st)]
    direct = cons.get(st, [])
    if len(direct) == 1 and direct[0].leaf_iter_vars and direct[0].attach_type != INLINE:
        r = direct[0]
        candidates.insert(0, FixBuilder(names).compute_at(st, r, r.leaf_iter_vars[0]))
    return choose(sch, v, candidates)


def _check_scan_body(sch: Schedule, st: Stage, propose: bool) -> Violation | None:
    """A stage of a scan's body outside the scan's loop: each step reads the step before, so
    the body runs inside that loop (found by lowering before; a tree rule now, so that the
    refusal comes with a verified fix)."""
    from ..te.scan import ScanOp

    for scan in sch.stages:
        if not isinstance(scan.op, ScanOp):
            continue
        body = {id(op) for op in scan.op.body_ops()}
        if id(st.op) not in body and id(st.origin_op) not in body:
            continue
        s: Stage | None = st
        while s is not None and s.attach_type == SCOPE:
            if s.attach_stage is scan:
                return None
            s = s.attach_stage
        axis = scan.op.scan_axis
        loop = axis if any(axis is x for x in scan.leaf_iter_vars) else scan.leaf_iter_vars[0]
        text = (f"stage {st.name} computes step t of scan {scan.name} from its earlier steps, so it must run "
                f"inside the scan's loop {loop.name}, but it is placed outside it")
        v = Violation(ViolationKind.SCAN_BODY_PLACEMENT, st, text, _stages(st, scan), _loops(loop))
        if not propose:
            return v
        return choose(sch, v, [FixBuilder(Names(sch)).compute_at(st, scan, loop)])
    return None


def _check_init_attach(sch: Schedule, st: Stage, bodies: dict, propose: bool) -> Violation | None:
    """A stage an init reads, attached where the init does not run: inside a reduction's first
    reduction loop (the init is hoisted out of that loop, so it would read the stage before it
    is computed) or inside a scan's loop (the init is copied into the output before the steps).
    A tree rule, judged here for every lowering: the commands' nest (``poly_ops``) places the
    init as the loop nest does, and their dependence check trusts the tree rules for stages no
    command moves (``poly.order.moved``)."""
    from ..te.scan import ScanOp
    from ..te.tensor import ComputeOp

    parent, iv = st.attach_stage, st.attach_ivar
    assert parent is not None and iv is not None
    pop = parent.op
    if isinstance(pop, ScanOp):
        if not any(t.op is st.op for t in pop.init):
            return None
        text = (f"stage {st.name} is the init of scan {parent.name}, which is copied into {parent.name} before "
                f"the scan's loop {iv.name} runs, but {st.name} is attached inside that loop")
        first = 0
    else:
        red = bodies.get(pop, pop.body)[0] if isinstance(pop, ComputeOp) and pop.is_reduction else None
        if not isinstance(red, E.Reduce):
            return None
        by_init = any(t.op is st.op for t in pop.read_tensors(tuple(red.init)))
        by_finish = red.finish is not None and any(t.op is st.op for t in pop.read_tensors((red.finish,)))
        if not (by_init or by_finish):
            return None
        leaves = parent.leaf_iter_vars
        first = next((k for k, x in enumerate(leaves) if x.is_reduce), len(leaves))
        if not any(iv is x for x in leaves[first:]):
            return None
        when = ("by the init of reduction {p}, which runs before" if by_init else
                "by what finishes reduction {p}'s value, which runs after").format(p=parent.name)
        text = (f"stage {st.name} is read {when} {parent.name}'s first reduction loop {leaves[first].name}, "
                f"but {st.name} is attached at loop {iv.name} inside it, where it is computed anew for each "
                f"reduction step and is not there outside; attach {st.name} at a loop of {parent.name} outside "
                f"{leaves[first].name}, or reorder so that {iv.name} encloses {leaves[first].name}, or compute it "
                f"at the root")
    v = Violation(ViolationKind.INIT_ATTACHMENT, st, text, _stages(st, parent), _loops(iv))
    if not propose:
        return v
    names = Names(sch)
    candidates = [FixBuilder(names).compute_root(st)]
    if first > 0:
        candidates.insert(0, FixBuilder(names).compute_at(st, parent, parent.leaf_iter_vars[first - 1]))
    return choose(sch, v, candidates)


def _check_lca(sch: Schedule, tree: ScheduleTree, st: Stage, r: Stage, cons: dict, propose: bool) -> Violation | None:
    """Seed 001's LCA rule: ``st``'s attach point (its storage's, when made outside it) must
    enclose where its reader ``r`` runs."""
    at = tree.storage(st)
    use = tree.innermost(r)
    if at.kind == "root" or ScheduleTree.dominates(at, use):
        return None
    assert at.stage is not None and at.iter_var is not None
    names = Names(sch)
    names.stage(st)  # named first, as the fix code names it first
    owner = at.stage
    loop = at.iter_var
    handle = names.axis(owner, loop)
    rplace = tree.placement(r)
    if rplace.kind == "root":
        rwhere = "at the root"
    else:
        rwhere = f"inside {rplace.where()}"
    rel = "above" if any(a is rplace for a in at.ancestors()) else "outside"
    new = "new " if r.created_by and r.created_by.startswith(("cache_read", "cache_write", "rfactor")) else ""
    lca = ScheduleTree.lca(tree.stage_node(st), tree.stage_node(r))
    text = (f"{st.name} is attached inside {owner.name}'s loop over {loop.name} ({handle}), but its {new}reader "
            f"{r.name} sits {rwhere}, {rel} that loop, so {r.name} would read {st.name} before it exists "
            f"(in the schedule tree LCA({st.name}, {r.name}) is {lca.where()}, above {st.name}'s attach point "
            f"{at.where()}; a producer must be computed at a node that encloses all of its readers)")
    v = Violation(ViolationKind.LCA, st, text, _stages(st, r, owner), _loops(loop))
    if not propose:
        return v
    # A reader the user placed keeps its place and the producer moves out to it; a reader still
    # at the root where a rewrite put it (seed 001's B.local) moves in to the producer's loop.
    move_reader = []
    if r is not owner and not r.is_output and reaches(cons, r, owner):
        move_reader.append(FixBuilder(names).compute_at(r, owner, loop))
    move_producer = []
    if r.attach_type == SCOPE and r.attach_stage is not None and r.attach_ivar is not None:
        move_producer.append(FixBuilder(names).compute_at(st, r.attach_stage, r.attach_ivar))
    candidates = move_producer + move_reader if move_producer else move_reader
    candidates.append(FixBuilder(names).compute_root(st))
    return choose(sch, v, candidates)


def _reduction_annotation(sch: Schedule, st: Stage, iv: E.IterVar, kind: str, propose: bool = True) -> Violation:
    verb = {LoopKind.PARALLEL: "parallelize", LoopKind.VECTORIZED: "vectorize"}[kind]
    out = st.op.outputs[0].name if st.op.outputs else st.name
    idx = ", ".join(a.name for a in st.op.axis)
    text = (f"stage {st.name}: cannot {verb} {iv.name}: it is a reduction loop, so all of its iterations "
            f"update the same element {out}[{idx}]; " + (
                "run in parallel they race on it and lose updates" if kind == LoopKind.PARALLEL else
                "a vector over it would write one element from every lane at once and keep only one") +
            f"{_dependence_words(sch, st, iv)}. {verb.capitalize()} a data-parallel loop instead, or rfactor "
            f"the reduction first so that the loop becomes a data-parallel axis of the factored stage")
    v = Violation(ViolationKind(f"{kind}-reduction"), st, text, (st,), (iv,))
    if not propose:
        return v
    names = Names(sch)
    names.stage(st)
    method = "parallel" if kind == LoopKind.PARALLEL else "vectorize"

    def start() -> FixBuilder:
        # set behind the primitives' back (they refuse it): the fix must take the annotation off first
        fix = FixBuilder(names)
        return fix.drop_annotation(st, iv) if iv in st.iter_var_attrs else fix

    data = [a for a in st.leaf_iter_vars if not a.is_reduce]
    rng = loop_ranges(st, st.op.axis)
    trivial = all(E.is_const_int(getattr(rng.get(a), "extent", None), 1) for a in data)
    candidates = [start().rfactor_then(st, iv, method)]
    if data:  # a data-parallel loop is the simpler fix, unless it runs once (a full reduction)
        pick = data[0] if kind == LoopKind.PARALLEL else data[-1]
        plain = [start().annotate(st, method, pick)]
        if kind == LoopKind.VECTORIZED and st.leaf_iter_vars[-1] is not pick:
            # a vector loop belongs innermost: move the data-parallel loop inside the reduction
            order = [a for a in st.leaf_iter_vars if a is not pick] + [pick]
            plain.insert(0, start().reorder(st, order).annotate(st, method, pick))
        candidates[len(candidates) if trivial else 0:0] = plain
    return choose(sch, v, candidates)


def _dependence_words(sch: Schedule, st: Stage, iv: E.IterVar) -> str:
    """`` (it carries the ...)`` from the polyhedral model, when it can be built."""
    words = checker().carried(sch, st, iv)
    return f" (it carries the {words})" if words else ""


def reduction_annotation_error(stage: Stage, iv: E.IterVar, kind: str) -> ScheduleError:
    """The error ``parallel``/``vectorize`` raise for a reduction loop (before changing anything)."""
    return _reduction_annotation(stage.schedule, stage, iv, kind).error()


__all__ = ["Violation", "ViolationKind", "reduction_annotation_error", "tree_violations"]
