"""A stage stored at one loop and computed at a deeper one (nvFuser's separate allocation and
compute points): ``Placement.store``.

Two things need it, both nvFuser's and both seed 003's loop sharing taken one loop further:

* **Two reductions sharing one reduction loop** (nvFuser's ReductionMultiConsumer): ``t2 =
  max(t1[i, r])`` and ``t3 = min(t1[i, r])`` with ``t1`` computed inside the reduction loop.
  ``t1`` is then computed once per ``(i, r)`` only if ``t3`` runs its update inside ``t2``'s
  loop ``r``; its init cannot run there (it would start the minimum over on every ``r``), so
  ``t3`` is *stored* at the loop around ``r`` (the row loop both share), where its init runs,
  and *computed* (its update) at ``t2``'s ``r``. :func:`share_reduction_loop` makes that
  placement when a position primitive finds two readers of a stage running its loop as two
  reduction loops.
* **``compute_with``** (nvFuser's ComputeWith1): a stage computed inside a reader's loops
  deeper than its position, its storage kept at the position so its other readers still see
  all of it (:func:`compute_with`).

Either way the stage's outer loops are its hosts' (``Placement.shared``, exactly, as lowering
requires), its storage is the slice of the loops outside the store point
(``bound.shared.stored_leaves``), and its readers outside the compute loop run after that loop
(``bound.infer.stage_order``), inside the storage (the schedule tree's ``storage``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ScheduleError
from ..ir import expr as E
from ..ir.stmt import LoopKind
from .kinds import ROOT, SCOPE, Placement

if TYPE_CHECKING:
    from .schedule import Schedule
    from .stage import Stage


def real_loop(sch: Schedule, loop: E.IterVar) -> E.IterVar:
    """The loop of the lowered code ``loop`` is: a shared loop of a stage whose loops are its
    host's is that host's (followed until a stage runs it as its own)."""
    for _ in range(len(sch.stages)):
        owner = sch.stage_of_iter_var(loop)
        if owner is None or owner.attach_type != SCOPE or loop not in owner.shared_loops:
            break
        loop = owner.shared_loops[loop]
    return loop


def shares_host_loops(st: Stage, once: bool = True) -> bool:
    """Whether ``st`` is attached by a position primitive at a loop it shares: its shared loops are
    still its outer loops, and it is attached at the last of them, which the others enclose (a
    split or fuse of them since, a reorder of the host that moves one inside the attach point, or
    a TE compute_at, ends the sharing). ``once``: and no other host loop encloses that point,
    so it computes its slice of each iteration once (a host loop reordered or split around it
    afterwards would run all of it again on every iteration: an output stored many times over)."""
    k = len(st.shared_loops)
    leaves = st.leaf_iter_vars
    if st.attach_type != SCOPE or not k or k > len(leaves) or any(iv not in st.shared_loops for iv in leaves[:k]):
        return False
    at, host = st.attach_ivar, st.attach_stage
    if st.shared_loops[leaves[k - 1]] is not at:
        return False
    if host is None or not any(at is x for x in host.leaf_iter_vars):
        return True
    around = host_loops_around(host, at)
    if not all(any(v is iv or v is lent for iv, lent in around) for v in st.shared_loops.values()):
        return False  # a shared loop reordered inside the attach point: it no longer encloses the stage
    return not once or all(any(iv is v or lent is v for v in st.shared_loops.values()) for iv, lent in around)


def exact_share(st: Stage, leaf: E.IterVar, host: Stage, loop: E.IterVar) -> bool:
    """Whether ``st``'s loop ``leaf`` runs over exactly the values of ``host``'s ``loop`` (both
    over their whole domains): then ``st`` can take its values from ``host``'s loop."""
    from ..arith import Analyzer
    from .dataflow import loop_ranges

    a = loop_ranges(st, st.op.root_iter_vars).get(leaf)
    b = loop_ranges(host, host.op.root_iter_vars).get(loop)
    ana = Analyzer()
    return a is not None and b is not None and ana.can_prove_equal(a.extent, b.extent) \
        and ana.can_prove_equal(a.min, b.min)


def normalize_pos(st: Stage, pos, what: str) -> int:
    n = len(st.leaf_iter_vars)
    if isinstance(pos, bool) or not isinstance(pos, int):
        raise ScheduleError(f"stage {st.name}: {what} position must be an int (or an IterVar for TVM's "
                            f"compute_at), got {pos!r}")
    p = pos + n + 1 if pos < 0 else pos
    if not 0 <= p <= n:
        raise ScheduleError(f"stage {st.name}: {what} position {pos} is out of range: {st.name} has {n} loops "
                            f"({st._leaf_names()}), so a position is in [{-n - 1}, {n}]")
    return p


def host_loops_around(host: Stage, at: E.IterVar) -> list[tuple[E.IterVar, E.IterVar]]:
    """``host``'s loops down to ``at``, each with the loop it really is: the loop of the host's
    own host it shares (when the host computes its slice there once), else itself. A stage
    sharing a reduction loop with a host that shares its outer loops (``share_reduction_loop``)
    names the outer ones by the loop they really are."""
    leaves = host.leaf_iter_vars[:next(j for j, x in enumerate(host.leaf_iter_vars) if x is at) + 1]
    lends = host.attach_type == SCOPE and shares_host_loops(host)
    return [(x, host.shared_loops.get(x, x) if lends else x) for x in leaves]


def share_reduction_loop(x: Stage, xl: E.IterVar, h: Stage, hl: E.IterVar) -> bool:
    """Make ``x`` compute its reduction loop ``xl`` as ``h``'s reduction loop ``hl``, its init
    (and storage) at the loop around it; True when done. Both must be the first loop after the
    loops the two already share (the same loops, exactly), over the same values; ``x`` a
    reduction whose value is its accumulator (no ``finish``), in a serial loop."""
    sch = x.schedule
    if x is h or not (xl.is_reduce and hl.is_reduce) or not _plain_reduction(x):
        return False
    p = next((k for k, iv in enumerate(x.leaf_iter_vars) if iv is xl), None)
    if p is None or any(iv.is_reduce for iv in x.leaf_iter_vars[:p]) or not any(hl is iv for iv in h.leaf_iter_vars):
        return False
    around = [lent for _, lent in host_loops_around(h, hl)][:-1]
    mine = [x.shared_loops.get(iv) for iv in x.leaf_iter_vars[:p]]
    if len(around) != p or any(m is None for m in mine):
        return False
    if any(real_loop(sch, m) is not real_loop(sch, a) for m, a in zip(mine, around)):
        return False
    if p == 0 and not (x.attach_type == ROOT and h.attach_type == ROOT):
        return False
    if p and (x.attach_type != SCOPE or real_loop(sch, x.attach_ivar) is not real_loop(sch, around[-1])):
        return False
    if x.leaf_kind(xl) not in (LoopKind.SERIAL, LoopKind.UNROLLED) or not exact_share(x, xl, h, hl):
        return False
    store = (real_loop(sch, around[-1]),) if p else ()
    shared = (*zip(x.leaf_iter_vars[:p], mine), (xl, hl))
    x.placement = Placement(SCOPE, h, hl, shared, x.compute_at_pos, store)
    return True


def init_outside(st: Stage, need: int, loops: list[E.IterVar]) -> tuple[E.IterVar, ...] | None:
    """Where a reader that is not moved keeps its storage and init when the first ``need`` of its
    loops will be the host's ``loops`` and one of them is its reduction loop (nvFuser's
    Issue329: ``t3 = sum(t1[i, r3])`` beside ``t2 = sum(t1[i, r2])``, t1 inside ``r2``): the
    loop above its first reduction loop (the root when that is its first loop). None when it
    has none among them or is not a plain reduction (its update would need more than an init)."""
    red = next((k for k, iv in enumerate(st.leaf_iter_vars[:need]) if iv.is_reduce), None)
    if red is None or not _plain_reduction(st) \
            or st.leaf_kind(st.leaf_iter_vars[red]) not in (LoopKind.SERIAL, LoopKind.UNROLLED):
        return None
    return (real_loop(st.schedule, loops[red - 1]),) if red else ()


def _plain_reduction(st: Stage) -> bool:
    """A te.compute reduction whose stored value is its accumulator (no ``finish`` step after
    the loop), so its init and update are all there is to place."""
    from ..te.tensor import ComputeOp

    op = st.op
    return isinstance(op, ComputeOp) and op.is_reduction and getattr(op.body[0], "finish", None) is None \
        and st.store_predicate is None and not st.commands and st.storage is None


def compute_with(st: Stage, pos: int, reader: Stage | None = None) -> Stage:
    """``s[T].compute_with(pos, reader)``: T's first ``pos`` loops computed as ``reader``'s, its
    storage kept where it is (its position's loop, or the root). Returns the reader chosen.

    nvFuser's ``computeWith``: the stage is computed in the reader's loops deeper than its
    position, so its values are made where that reader uses them, while its other readers
    (after that reader's loops, inside the storage) still see all of them. Without ``reader``,
    the first of its readers in the stage order whose loops it can follow (nvFuser resolves it
    the same way, at lowering). Refused, naming the loop, where the loops do not match one for
    one over the same values, where it would leave a reader inside the reader's loops before
    its values are made, or where a reader outside the storage would need them."""
    from .axis_map import Graph

    p = normalize_pos(st, pos, "compute_with")
    p0 = st.compute_at_pos
    if p <= p0:
        raise ScheduleError(f"stage {st.name}: compute_with({pos}) must be deeper than its position {p0} "
                            f"(compute_at already computes it in its readers' first {p0} loops)")
    _own_loops(st, p0)
    g = Graph(st.schedule)
    readers = g.consumers[id(st)]
    if reader is not None and not any(reader is c for c in readers):
        raise ScheduleError(f"stage {st.name}: compute_with reader {reader.name} does not read {st.name}; its "
                            f"readers are {', '.join(c.name for c in readers) or 'none'}")
    why: dict[str, str] = {}
    for c in [reader] if reader is not None else readers:
        loops, problem = _matching_loops(g, st, c, p)
        if problem is None:
            problem = _others_after(g, st, c, readers)
        if problem is None:
            # as nvFuser: every reader it could be computed with keeps those loops (no split)
            fixed = [(o, _matching_loops(g, st, o, p)[0] if o is not c else loops) for o in readers]
            _place_with(st, c, loops, p, p0)
            for other, lps in fixed:
                if lps:
                    k = next(j for j, x in enumerate(other.leaf_iter_vars) if x is lps[-1])
                    other.max_producer_pos = max(other.max_producer_pos, k + 1)
            return c
        why[c.name] = problem
    raise ScheduleError(f"stage {st.name}: compute_with({pos}) finds no reader to compute it with: "
                        + "; ".join(f"{k}: {v}" for k, v in why.items())
                        + f". Lower the position (its loops {st._leaf_names()}) or name another reader")


def _own_loops(st: Stage, p0: int) -> None:
    """The stage must be at the root or share its first ``p0`` loops with a host, exactly."""
    if st.is_placeholder or st.attach_type not in (ROOT, SCOPE):
        raise ScheduleError(f"stage {st.name} is {'an input' if st.is_placeholder else 'inlined'}: it has no "
                            "loops to compute with a reader")
    if st.placement.store is not None:
        raise ScheduleError(f"stage {st.name} is already computed apart from its storage; compute_at it again "
                            "first")
    exact = p0 == 0 and st.attach_type == ROOT
    if p0 and shares_host_loops(st, once=False):
        exact = all(iv in st.shared_loops for iv in st.leaf_iter_vars[:p0])
    if not exact:
        raise ScheduleError(f"stage {st.name} runs loops of its own around its position (computed at "
                            f"{st.attach_stage.name if st.attach_stage else 'the root'} by a TE compute_at, or "
                            f"its loops are not its host's); compute_with needs it at the root or placed by a "
                            f"position primitive whose loops it shares exactly")


def _matching_loops(g, st: Stage, c: Stage, p: int) -> tuple[list[E.IterVar], str | None]:
    """``c``'s loops that are ``st``'s first ``p``, one for one and in order, over the same
    values; or why not."""
    from .transform_replay import leaf_images

    img = leaf_images(st, c, dict(g.map(st, c).p2c))
    loops: list[E.IterVar] = []
    first = img.get(st.leaf_iter_vars[0])
    # at the root, it may go inside leading loops of the reader over axes it lacks (broadcast
    # loops, nvFuser's ComputeWith3): recomputed there, the same values stored again
    at = next((j for j, x in enumerate(c.leaf_iter_vars) if x is first), 0) if st.compute_at_pos == 0 else 0
    if any(any(x is v for v in img.values()) for x in c.leaf_iter_vars[:at]):
        at = 0
    for k, iv in enumerate(st.leaf_iter_vars[:p]):
        got = img.get(iv)
        if at + k >= len(c.leaf_iter_vars) or got is not c.leaf_iter_vars[at + k]:
            return [], (f"{st.name}'s loop {iv.name} is not {c.name}'s loop {at + k} "
                        f"({c.leaf_iter_vars[at + k].name if at + k < len(c.leaf_iter_vars) else 'none'}): "
                        f"replay {c.name}'s loops onto {st.name} first (s.propagate)")
        if not exact_share(st, iv, c, got):
            return [], f"{st.name}'s loop {iv.name} and {c.name}'s {got.name} do not run over the same values"
        if c.leaf_kind(got) not in (LoopKind.SERIAL, LoopKind.UNROLLED) and k >= st.compute_at_pos:
            return [], f"{c.name}'s loop {got.name} is {c.leaf_kind(got)}"
        mine = st.shared_loops.get(iv)
        if mine is not None and real_loop(st.schedule, mine) is not real_loop(st.schedule, got):
            return [], f"{st.name} already shares its loop {iv.name} with another loop than {c.name}'s {got.name}"
        loops.append(got)
    return loops, None


def _others_after(g, st: Stage, c: Stage, readers: list[Stage]) -> str | None:
    """Every other reader must run after ``c``'s loops: not inside them, not read by ``c``."""
    from .axis_map import reaches

    for r in readers:
        if r is c:
            continue
        if reaches(g, r, c):
            return f"{r.name} reads {st.name} and runs before {c.name} (which reads {r.name})"
        at = r
        while at.attach_type == SCOPE and at.attach_stage is not None and at is not c:
            at = at.attach_stage
        if at is c:
            return f"{r.name} reads {st.name} inside {c.name}'s loops, before all of it is made"
    return None


def _place_with(st: Stage, c: Stage, loops: list[E.IterVar], p: int, p0: int) -> None:
    sch = st.schedule
    store = (real_loop(sch, st.attach_ivar),) if p0 else ()
    shared = tuple((iv, st.shared_loops.get(iv, loops[k])) for k, iv in enumerate(st.leaf_iter_vars[:p]))
    st.placement = Placement(SCOPE, c, loops[-1], shared, p0, store)


def share_by_image(g, st: Stage, host: Stage) -> bool:
    """An output ``st`` that reads stages computed in ``host``'s loops but has no loop over the
    same values as them (nvFuser's AdvancedComputeAt7: t4's rows, t7's fused row x column-pair
    loop) runs in ``host``'s loop and computes, in each iteration, the box of its domain that
    iteration covers: its axes tied to the host's root axes through what they read take the
    host's range there, the others run whole. Iterations overlap where a box does (a row
    spanning two chunks of the fused loop is computed in both, the same values stored twice, as
    nvFuser's predicated loop does); together they cover its domain, because the host, at the
    root, runs over all of its own and the tied axes have the same extents. True when placed."""
    moved = [p for p in g.producers[id(st)] if p.attach_type == SCOPE and real_loop(st.schedule, p.attach_ivar)
             in host.leaf_iter_vars]
    if not st.is_output or not moved or st.commands or st.storage is not None or not hasattr(st.op, "axis"):
        return False
    at = max(host.leaf_iter_vars.index(real_loop(st.schedule, p.attach_ivar)) for p in moved)
    pairs: dict[int, tuple[E.IterVar, E.IterVar]] = {}
    for p in moved:
        for a, h in _tied_axes(g, p, st, host):
            if id(a) in pairs and pairs[id(a)][1] is not h:
                return False  # one axis tied to two of the host's: no one box
            pairs[id(a)] = (a, h)
    if not pairs or not all(_same_domain(a, h) for a, h in pairs.values()):
        return False
    st.placement = Placement(SCOPE, host, host.leaf_iter_vars[at], (), st.compute_at_pos, None,
                             tuple(pairs.values()))
    return True


def _tied_axes(g, p: Stage, st: Stage, host: Stage) -> list[tuple[E.IterVar, E.IterVar]]:
    """(``st``'s root axis, ``host``'s root axis) that read the same root axis of ``p``: along
    ``st``'s read of ``p``, and along a path of reads from ``p`` down to ``host``."""
    mine = g.map(p, st).p2c
    todo: list[tuple[Stage, dict]] = [(p, {id(r): r for r in p.op.root_iter_vars})]
    seen = {id(p)}
    while todo:
        x, cur = todo.pop()
        if x is host:
            return [(mine[r], cur[id(r)]) for r in p.op.root_iter_vars if r in mine and id(r) in cur]
        for y in g.consumers[id(x)]:
            if id(y) in seen or not (host is y or any(host is z for z in g.downstream(y))):
                continue
            seen.add(id(y))
            step = g.map(x, y).p2c
            todo.append((y, {k: step[v] for k, v in cur.items() if v in step}))
    return []


def _same_domain(a: E.IterVar, h: E.IterVar) -> bool:
    from ..arith import Analyzer

    ana = Analyzer()
    return a.dom is not None and h.dom is not None and ana.can_prove_equal(a.dom.min, h.dom.min) \
        and ana.can_prove_equal(a.dom.extent, h.dom.extent)


__all__ = ["compute_with", "host_loops_around", "init_outside", "real_loop", "share_by_image", "share_reduction_loop"]
