"""What standard mode promises: the producer a ``compute_at`` by position names gets every loop
of the consumer's first ``pos`` that is tied to it, or the call is refused.

nvFuser's standard mode (``inlineSelectedAt`` without best effort) errors when a stage cannot be
computed at the position mapped from the consumer's; the spanning tree it maps along can still
drop a position without a word (ComputeAtFailDueToRootMapping, ComplexBCast1 before loops were
forwarded through broadcasts). tessel's rule is stricter and checkable: a consumer loop made
from axes the producer's values flow into (along any path between them) must become one of the
producer's outer loops. Loops only of the consumer's broadcast axes are not asked for (nvFuser
hoists them out too). Best effort lowers instead and says what it lowered and why
(``Report.lowered``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .axis_map import Graph
from .dataflow import connected
from .transform_replay import leaf_images

if TYPE_CHECKING:
    from .stage import Stage


@dataclass
class Refusal:
    """Why a stage cannot be computed as deep as asked: its kind (a legality ViolationKind
    name), the sentence, the stages and loops involved, and the deepest legal position."""

    kind: str
    stage: Stage
    text: str
    limit: int
    stages: tuple = ()
    loops: tuple = ()
    #: (host, its loops in an order that would make the call legal, how many lead): the loops a
    #: reader shares first, so that it runs inside only those (a candidate fix, tried first)
    reorder: tuple = ()


def tied_loops(g: Graph, producer: Stage, consumer: Stage, p: int) -> list[int]:
    """Indices of ``consumer``'s first ``p`` loops made from an axis that a producer axis reaches
    through the reads of the stages between them."""
    reach: dict[int, set[int]] = {id(producer): {id(r) for r in producer.op.root_iter_vars}}
    for st in [x for x in g.sch.stages if any(x is d for d in g.downstream(producer))]:
        hit: set[int] = set()
        for q in g.producers[id(st)]:
            if id(q) in reach:
                hit |= {id(c) for a, c in g.map(q, st).p2c.items() if id(a) in reach[id(q)]}
        if hit:
            reach[id(st)] = hit
    mine = reach.get(id(consumer), set())
    return [k for k, iv in enumerate(consumer.leaf_iter_vars[:p])
            if any(id(r) in connected(consumer, iv) for r in consumer.op.root_iter_vars if id(r) in mine)]


def short_of_request(g: Graph, producer: Stage, consumer: Stage, refidx: dict[int, list[int]], p: int) -> Refusal | None:
    """Why the named producer would end below the position asked for (None when it does not)."""
    two_ways = lost_to_a_broadcast(g, producer, refidx, p)
    if two_ways is not None:
        return two_ways
    have = refidx.get(id(producer), [])
    missing = [k for k in tied_loops(g, producer, consumer, p) if k not in have]
    return _not_replayed(producer, consumer, have, missing[0]) if missing else None


def _not_replayed(producer: Stage, consumer: Stage, have: list[int], k: int) -> Refusal:
    loop = consumer.leaf_iter_vars[k]
    limit = len([j for j in have if j < k])
    text = (f"{consumer.name}'s loop {loop.name} is made from axes {producer.name}'s values flow into, but no loop "
            f"of {producer.name} could be made its image along the stages between them (their loops differ "
            f"there), so {producer.name} would silently end at position {limit}")
    return Refusal("UNMAPPABLE_AXIS", producer, text, limit, (producer, consumer), (loop,))


def lost_to_a_broadcast(g: Graph, st: Stage, refidx: dict[int, list[int]], p: int) -> Refusal | None:
    """The named stage reached through a reader that reads it as a broadcast along one of the
    first ``p`` loops, while another reader reads its axis along that very loop (nvFuser's
    ComputeAtFailDueToRootMapping: ``t2 = t1[None, :]``, ``t3 = t1[:, None]``, ``t4 = t2 + t3``,
    ``t1.compute_at(t4, 1)``): nvFuser refuses, and so does tessel."""
    have = len(refidx.get(id(st), []))
    if have >= p:
        return None
    for c in g.consumers[id(st)]:
        cidx = refidx.get(id(c), [])
        images = set(map(id, leaf_images(st, c, dict(g.map(st, c).p2c)).values()))
        k = 0
        while k < min(len(cidx), p) and cidx[k] == k and id(c.leaf_iter_vars[k]) in images:
            k += 1
        if k > have:
            loop = c.leaf_iter_vars[have]
            return Refusal("BROADCAST_TWO_WAYS", st, f"{c.name} reads {st.name}'s axis along its loop {loop.name}, "
                           f"another reader reads {st.name} as a broadcast along that loop; {st.name} is broadcast "
                           f"two different ways into stages that share loops", have, (st, c), (loop,))
    return None


__all__ = ["Refusal", "lost_to_a_broadcast", "short_of_request", "tied_loops"]
