"""Transform replay (seed 003's replayPasC / replayCasP): one stage's loops made like another's.

``replay_producer_as_consumer(P, C, pos)`` rebuilds P's loops so that its outer loops are the
images of C's first ``pos`` loops: the same splits (same factors), fuses and order, made over
the axes of P that C's reads say correspond (``axis_map.py``). ``replay_consumer_as_producer``
is the mirror image. Both

* skip what the target cannot have: transformations of axes the target lacks (a consumer's
  broadcast axis), and forward through a fuse with such an axis (``fuse(i, b)`` maps to ``i``);
* keep the target's own transformations of the axes the reference's first ``pos`` loops do not
  touch, placed after the replayed loops;
* change nothing when the target already matches (an earlier replay, or the user's own
  identical splits), so what an earlier call fixed stays as it was;
* return the matched position: how many of the target's leading loops are the images.

The replayed relations are ordinary relation records (``Relation.replay``), so the result is a
plain TE stage that InferBound and lowering read as if the user had typed the splits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ScheduleError
from ..ir import expr as E
from ..ir.functor import structural_equal
from .relations import Relation

if TYPE_CHECKING:
    from .stage import Stage

IVMap = dict[E.IterVar, E.IterVar]


class FixedLoopsError(ScheduleError):
    """A replay would rebuild loops an earlier position primitive shared with other stages."""

    def __init__(self, message: str, target: Stage):
        super().__init__(message)
        self.target = target


@dataclass
class ReplayResult:
    """The matched position, the reference loop index of each of the target's first ``pos``
    loops, and whether the target was rebuilt (False: it already matched)."""

    pos: int
    ref_index: list[int]
    replayed: bool
    images: IVMap


def _same_params(a: Relation, b: Relation) -> bool:
    pa, pb = a.params(), b.params()
    return pa.keys() == pb.keys() and all(structural_equal(pa[k], pb[k]) for k in pa)


def leaf_images(ref: Stage, target: Stage, root_map: IVMap) -> IVMap:
    """Pair ref's loops with the target's existing ones: a target relation of the same kind over
    the paired inputs with equal parameters pairs its outputs (best effort; stops where the two
    histories differ). A target fuse of an image with axes the ref lacks (broadcast axes) counts
    as that image, as in nvFuser's loop map (``_forwarding``)."""
    m = dict(root_map)
    fwd = _forwarding(target, root_map)
    for rel in ref.relations:
        mapped = [i for i in rel.inputs if i in m]
        if mapped and len(mapped) < len(rel.inputs) and len(rel.outputs) == 1:
            m[rel.outputs[0]] = m[mapped[0]]  # forward through a fuse with an axis the target lacks
        if not rel.inputs or len(mapped) < len(rel.inputs):
            continue
        ins = [m[i] for i in rel.inputs]
        for t in target.relations:
            if type(t) is type(rel) and len(t.inputs) == len(ins) and _same_params(t, rel) \
                    and all(any(a is c for c in _chain(b, fwd)) for a, b in zip(t.inputs, ins)):
                for o, to in zip(rel.outputs, t.outputs):
                    m[o] = to
                break
    for k, v in list(m.items()):
        m[k] = _chain(v, fwd)[-1]
    return m


def _forwarding(target: Stage, root_map: IVMap) -> dict[int, E.IterVar]:
    """nvFuser's broadcast forwarding: a target fuse of exactly one loop made from axes the ref
    maps with loops made only from axes it lacks (its broadcast axes, of any extent) stands for
    that loop. Sharing such a loop computes the ref again for every broadcast value, which
    nvFuser accepts; the region a stage computes inside it is what InferBound gives."""
    lacking = {id(r) for r in target.op.root_iter_vars} - {id(v) for v in root_map.values()}
    fwd: dict[int, E.IterVar] = {}
    for rel in target.relations:
        if rel.inputs and all(id(i) in lacking for i in rel.inputs):
            lacking.update(id(o) for o in rel.outputs)
            continue
        linked = [i for i in rel.inputs if id(i) not in lacking]
        if len(rel.outputs) == 1 and len(rel.inputs) >= 2 and len(linked) == 1:
            fwd[id(linked[0])] = rel.outputs[0]
    return fwd


def _chain(iv: E.IterVar, fwd: dict[int, E.IterVar]) -> list[E.IterVar]:
    """``iv`` and the fused loops it is forwarded to, innermost relation last."""
    out = [iv]
    while id(out[-1]) in fwd:
        out.append(fwd[id(out[-1])])
    return out


def _count(ref_leaves: list[E.IterVar], target_leaves: list[E.IterVar], m: IVMap, linked: set[int],
           prefix: bool = False) -> tuple[int, list[int]]:
    """How many leading target loops are images of ``ref_leaves`` (in order; a ref loop the
    target has no image of is skipped); -1 when an image is not where it should be, or with
    ``prefix`` the count so far (the matched prefix, without replay)."""
    q, index = 0, []
    for j, leaf in enumerate(ref_leaves):
        img = m.get(leaf)
        if img is None and id(leaf) in linked:  # the target has the axis, not yet this loop of it
            return (q, index) if prefix else (-1, [])
        if img is None:
            continue
        if q < len(target_leaves) and target_leaves[q] is img:
            q += 1
            index.append(j)
        elif any(img is x for x in target_leaves[:q]):
            continue  # forwarded: two ref loops with one image (fuse with a broadcast axis)
        else:
            return (q, index) if prefix else (-1, [])
    return q, index


def matched_prefix(ref: Stage, target: Stage, root_map: IVMap, ref_count: int) -> list[int]:
    """For the target's leading loops that already are images of ``ref``'s first ``ref_count``
    loops (in order, without replay), the index of the ref loop each one is."""
    m = leaf_images(ref, target, root_map)
    return _count(ref.leaf_iter_vars[:ref_count], target.leaf_iter_vars, m, _linked(ref, root_map), prefix=True)[1]


def _linked(ref: Stage, root_map: IVMap) -> set[int]:
    """Ids of ref's loops made from axes the target has (a fuse with a broadcast axis included,
    which forwards to the axis): those need an image there."""
    out = {id(r) for r in root_map}
    for rel in ref.relations:
        if rel.inputs and any(id(i) in out for i in rel.inputs):
            out.update(id(o) for o in rel.outputs)
    return out


def _ancestors(st: Stage, leaves: list[E.IterVar]) -> tuple[list[Relation], set[int]]:
    """The relations that make ``leaves`` (in the stage's order) and every IterVar they touch."""
    want = {id(x) for x in leaves}
    needed: list[Relation] = []
    for rel in reversed(st.relations):
        if any(id(o) in want for o in rel.outputs):
            needed.append(rel)
            want |= {id(i) for i in rel.inputs}
    needed.reverse()
    return needed, want


def _replay_one(target: Stage, rel: Relation, m: IVMap) -> Relation:
    """``rel`` made over the target's loops ``m[input]``; new loops take the kind (and, for a
    reduction, the domain) of the target's loop they come from, not of the reference's."""
    scratch = dict(m)
    probe = rel.replay(scratch)
    kinds = {iv.is_reduce for iv in probe.inputs}
    if len(kinds) > 1:
        raise ScheduleError(
            f"stage {target.name}: cannot replay a {rel.kind} of {', '.join(i.name for i in rel.inputs)}: on "
            f"{target.name} it would join a reduction loop with an ordinary one "
            f"({', '.join(i.name for i in probe.inputs)}); use a lower position")
    doms = target._reduce_doms(probe)
    like = probe.inputs[0] if probe.inputs else None
    for old, tmp in zip(rel.outputs, probe.outputs):
        if old in m:
            continue
        if like is None:
            m[old] = tmp
            target.all_iter_vars.append(tmp)
        else:
            m[old] = target._new_iv(tmp.name, like, dtype=tmp.dtype, dom=doms.get(tmp))
    return rel.replay(m)


def _plan(ref: Stage, target: Stage, root_map: IVMap, pos: int):
    """The target's new relations, loop order and ref->target map, without changing it."""
    ref_leaves = ref.leaf_iter_vars[:pos]
    needed, touched_ref = _ancestors(ref, ref_leaves)
    touched = {id(t) for r, t in root_map.items() if id(r) in touched_ref}
    m = {r: t for r, t in root_map.items() if id(r) in touched_ref}
    made: list[Relation] = []
    for rel in needed:
        mapped = [i for i in rel.inputs if i in m]
        if rel.inputs and len(mapped) == len(rel.inputs):
            made.append(_replay_one(target, rel, m))
        elif mapped and len(rel.outputs) == 1:
            m[rel.outputs[0]] = m[mapped[0]]  # forward through a fuse with an axis the target lacks
    alive = {id(r) for r in target.op.root_iter_vars if id(r) not in touched}
    kept: list[Relation] = []
    for rel in target.relations:
        if all(id(i) in alive for i in rel.inputs):
            kept.append(rel)
            alive |= {id(o) for o in rel.outputs}
    rels = made + kept
    consumed = {id(i) for rel in rels for i in rel.inputs}
    pool = list(target.op.root_iter_vars) + [o for rel in rels for o in rel.outputs]
    leaves = [iv for iv in pool if id(iv) not in consumed]
    return rels, _order(ref, target, leaves, m, ref_leaves), m


def _order(ref: Stage, target: Stage, leaves: list[E.IterVar], m: IVMap, ref_leaves: list[E.IterVar]) -> list[E.IterVar]:
    """Images of the reference's first loops, then the other images in the reference's loop
    order, then the target's own loops in their old order, then anything left in root order."""
    out: list[E.IterVar] = []
    ids = {id(x) for x in leaves}

    def take(iv: E.IterVar | None) -> None:
        if iv is not None and id(iv) in ids and not any(iv is x for x in out):
            out.append(iv)

    for leaf in ref_leaves:
        take(m.get(leaf))
    for leaf in ref.leaf_iter_vars[len(ref_leaves):]:
        take(m.get(leaf))
    for leaf in target.leaf_iter_vars:
        take(leaf)
    for leaf in leaves:
        take(leaf)
    return out


def _apply(target: Stage, rels: list[Relation], order: list[E.IterVar], why: str) -> None:
    """Install the new loops on the target (after checking nothing attached is lost)."""
    keep = {id(x) for x in order}
    for st in target.schedule.stages:
        if st.attach_stage is target and st.attach_ivar is not None and id(st.attach_ivar) not in keep:
            raise ScheduleError(
                f"stage {target.name}: {why} would replace its loop {st.attach_ivar.name}, where {st.name} is "
                f"computed; compute {st.name} elsewhere first, or use a lower position")
    for iv in target.leaf_iter_vars:
        if id(iv) not in keep:
            target.schedule.iv_notes[iv] = f"{target.name}'s loops were rebuilt by {why}"
            target.iter_var_attrs.pop(iv, None)
    roots = list(target.op.root_iter_vars)
    target.relations = rels
    target.all_iter_vars = roots + [o for rel in rels for o in rel.outputs if not any(o is r for r in roots)]
    target.leaf_iter_vars = order


def replay_as(target: Stage, ref: Stage, root_map: IVMap, pos: int, fixed: int = 0,
              best_effort: bool = False) -> ReplayResult:
    """Make ``target``'s first loops the images of ``ref``'s first ``pos`` loops.

    ``root_map`` pairs ref root axes with target root axes. ``fixed``: how many of the target's
    leading loops an earlier call fixed; they are never changed (a FixedLoopsError says so, or,
    with ``best_effort``, fewer of ref's loops are replayed)."""
    while True:
        try:
            return _replay_as(target, ref, root_map, pos, fixed)
        except FixedLoopsError:
            if not best_effort or pos == 0:
                raise
            pos -= 1


def _replay_as(target: Stage, ref: Stage, root_map: IVMap, pos: int, fixed: int) -> ReplayResult:
    ref_leaves = ref.leaf_iter_vars[:pos]
    m = leaf_images(ref, target, root_map)
    linked = _linked(ref, root_map)
    q, index = _count(ref_leaves, target.leaf_iter_vars, m, linked)
    if q >= 0:
        return ReplayResult(q, index, False, m)
    old_rels, old_all, old_leaves = list(target.relations), list(target.all_iter_vars), list(target.leaf_iter_vars)
    rels, order, m2 = _plan(ref, target, root_map, pos)
    if order[:fixed] != old_leaves[:fixed] or any(a is not b for a, b in zip(order[:fixed], old_leaves[:fixed])):
        target.all_iter_vars[:] = old_all
        raise FixedLoopsError(
            f"making {target.name}'s loops like {ref.name}'s first {pos} would change its outer loops "
            f"{', '.join(iv.name for iv in old_leaves[:fixed])}, which an earlier call fixed (other stages are "
            f"computed inside them)", target)
    try:
        _apply(target, rels, order, f"replaying {ref.name}'s loops")
    except ScheduleError:
        target.relations, target.all_iter_vars, target.leaf_iter_vars = old_rels, old_all, old_leaves
        raise
    q, index = _count(ref_leaves, target.leaf_iter_vars, m2, set())
    return ReplayResult(max(q, 0), index, True, m2)


def replay_producer_as_consumer(sch_graph, producer: Stage, consumer: Stage, pos: int, fixed: int = 0,
                                best_effort: bool = False) -> ReplayResult:
    """seed 003's replayPasC: the producer's outer loops made the images of the consumer's
    first ``pos`` loops; the consumer's broadcast axes are skipped, its reduction axes map onto
    the producer's ordinary axes."""
    amap = sch_graph.map(producer, consumer)
    return replay_as(producer, consumer, amap.c2p, pos, fixed, best_effort)


def replay_consumer_as_producer(sch_graph, consumer: Stage, producer: Stage, pos: int, fixed: int = 0,
                                best_effort: bool = False) -> ReplayResult:
    """seed 003's replayCasP: the consumer's outer loops made the images of the producer's
    first ``pos`` loops (the producer's reduction loops, which the consumer lacks, are skipped)."""
    amap = sch_graph.map(producer, consumer)
    return replay_as(consumer, producer, dict(amap.p2c), pos, fixed, best_effort)


__all__ = ["FixedLoopsError", "ReplayResult", "leaf_images", "matched_prefix", "replay_as", "replay_consumer_as_producer", "replay_producer_as_consumer"]
