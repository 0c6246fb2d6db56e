"""Axis maps between a producer stage and a consumer stage, read off the consumer's indices.

Why from the index expressions: computeAt by position (seed 003) must know which loop of a
consumer "is" which loop of its producer before it can replay one's splits on the other. The
reads say it. A producer dimension read as ``A[..., i, ...]`` (or ``i + c``, a stencil) where
``i`` is a root axis of the consumer follows that axis; a consumer reduction axis read that way
maps onto the producer's ordinary axis (``sum(A[i, k], k)``: A's second axis follows ``k``);
``B[j, i] = A[i, j]`` is a permutation. A consumer axis no producer dimension follows is a
broadcast axis of that read. A dimension read any other way (``A[2*i]``, ``A[i // 4]``, a
constant, two different consumer axes in two reads) is *unmappable*, and the reason says so by
name: replay and inlining stop there.

The maps are recomputed from the schedule when asked (the effective bodies: inlined stages
substituted), so no primitive has to keep them in sync.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..ir import expr as E
from ..ir.functor import collect
from .graph import consumers, effective_bodies

if TYPE_CHECKING:
    from .schedule import Schedule
    from .stage import Stage


@dataclass
class AxisMap:
    """How the root axes of ``producer`` follow the root axes of ``consumer`` in its reads.

    ``p2c`` maps a producer axis (``producer.op.axis[d]``) to the consumer root axis that indexes
    dimension ``d``; ``offsets`` holds the constant offsets seen (``{0}`` for an exact read);
    ``unmappable`` says, per producer axis, why it follows no consumer axis."""

    producer: Stage
    consumer: Stage
    p2c: dict[E.IterVar, E.IterVar] = field(default_factory=dict)
    offsets: dict[E.IterVar, set[int]] = field(default_factory=dict)
    unmappable: dict[E.IterVar, str] = field(default_factory=dict)

    @property
    def c2p(self) -> dict[E.IterVar, E.IterVar]:
        """The inverse map (consumer root axis -> producer axis)."""
        return {c: p for p, c in self.p2c.items()}

    def broadcast_axes(self) -> list[E.IterVar]:
        """Consumer root axes no producer dimension follows (the read is constant along them)."""
        hit = {id(c) for c in self.p2c.values()}
        return [iv for iv in self.consumer.op.root_iter_vars if id(iv) not in hit]

    def exact(self, p: E.IterVar) -> bool:
        """Whether producer axis ``p`` is read exactly at its consumer axis (no stencil offset)."""
        return p in self.p2c and self.offsets.get(p, {0}) == {0}

    def why(self, p: E.IterVar) -> str:
        return self.unmappable.get(p, f"{self.consumer.name} does not read {self.producer.name} along it")


def _var_offset(idx: E.PrimExpr) -> tuple[E.Var, int] | None:
    """``v`` or ``v + c`` / ``c + v`` / ``v - c`` with a constant ``c``: the variable and offset."""
    if isinstance(idx, E.Var):
        return idx, 0
    a, b = getattr(idx, "a", None), getattr(idx, "b", None)
    if isinstance(idx, E.Add):
        if isinstance(a, E.Var) and isinstance(b, E.IntImm):
            return a, b.value
        if isinstance(b, E.Var) and isinstance(a, E.IntImm):
            return b, a.value
    if isinstance(idx, E.Sub) and isinstance(a, E.Var) and isinstance(b, E.IntImm):
        return a, -b.value
    return None


def read_map(producer: Stage, consumer: Stage, body: tuple) -> AxisMap:
    """The axis map of ``consumer``'s reads of ``producer`` in ``body`` (its effective body)."""
    m = AxisMap(producer, consumer)
    roots = {iv.var: iv for iv in consumer.op.root_iter_vars}
    loads = [ld for b in body for ld in collect(b, lambda n: isinstance(n, E.ProducerLoad))
             if ld.producer.op is producer.op]
    paxes = list(producer.op.axis) if hasattr(producer.op, "axis") else []
    for d, p in enumerate(paxes):
        seen: E.IterVar | None = None
        for ld in loads:
            if d >= len(ld.indices):
                continue
            vo = _var_offset(ld.indices[d])
            text = f"{producer.name}[{', '.join(str(i) for i in ld.indices)}]"
            if vo is None or vo[0] not in roots:
                m.unmappable[p] = f"{consumer.name} reads it as {text}: dimension {d} is not one of its loops"
                break
            c = roots[vo[0]]
            if seen is not None and seen is not c:
                m.unmappable[p] = (f"{consumer.name} reads dimension {d} of {producer.name} along two "
                                   f"different loops, {seen.name} and {c.name}")
                break
            seen = c
            m.offsets.setdefault(p, set()).add(vo[1])
        if p in m.unmappable:
            m.offsets.pop(p, None)
        elif seen is not None:
            m.p2c[p] = seen
    _refuse_diagonal(m)
    return m


def _refuse_diagonal(m: AxisMap) -> None:
    """Two producer dimensions following one consumer axis (``A[i, i]``) map neither."""
    by_c: dict[int, list[E.IterVar]] = {}
    for p, c in m.p2c.items():
        by_c.setdefault(id(c), []).append(p)
    for ps in by_c.values():
        if len(ps) > 1:
            c = m.p2c[ps[0]]
            for p in ps:
                del m.p2c[p]
                m.offsets.pop(p, None)
                m.unmappable[p] = (f"{m.consumer.name} reads dimensions {', '.join(q.name for q in ps)} of "
                                   f"{m.producer.name} all along its loop {c.name}")


class Graph:
    """The stages' read graph with an axis map on every edge (built once per primitive call)."""

    def __init__(self, sch: Schedule):
        from .kinds import INLINE

        self.sch = sch
        self.bodies = effective_bodies(sch)
        cons = consumers(sch, self.bodies)
        self.stages = [st for st in sch.stages if st.attach_type != INLINE]
        self.consumers: dict[int, list[Stage]] = {id(st): list(cons.get(st, [])) for st in self.stages}
        self.producers: dict[int, list[Stage]] = {id(st): [] for st in self.stages}
        for st in self.stages:
            for c in self.consumers[id(st)]:
                self.producers[id(c)].append(st)
        self._maps: dict[tuple[int, int], AxisMap] = {}

    def map(self, producer: Stage, consumer: Stage) -> AxisMap:
        key = (id(producer), id(consumer))
        if key not in self._maps:
            self._maps[key] = read_map(producer, consumer, self.bodies[consumer.op])
        return self._maps[key]

    def spread(self, ref: Stage) -> Iterator[tuple[Stage, Stage, dict]]:
        """Every stage connected to ``ref`` through reads either way, breadth first, once each, as
        ``(known, stage, root_map)``: ``known`` already reached, ``root_map`` from ``known``'s root
        axes to ``stage``'s. What a walk from a reference stage carries (its positions, its loop
        kinds) goes from ``known`` to ``stage`` through the map."""
        seen, todo = {id(ref)}, [ref]
        while todo:
            y = todo.pop(0)
            for x in self.producers[id(y)] + self.consumers[id(y)]:
                if id(x) in seen or x.is_placeholder:
                    continue
                seen.add(id(x))
                producer = any(x is q for q in self.producers[id(y)])
                yield y, x, (self.map(x, y).c2p if producer else dict(self.map(y, x).p2c))
                todo.append(x)

    def downstream(self, st: Stage) -> list[Stage]:
        """Every stage that reads ``st``, directly or through others (breadth first)."""
        return self._reach(st, self.consumers)

    def upstream(self, st: Stage) -> list[Stage]:
        return self._reach(st, self.producers)

    @staticmethod
    def _reach(st: Stage, edges: dict[int, list[Stage]]) -> list[Stage]:
        out: list[Stage] = []
        seen = {id(st)}
        todo = list(edges.get(id(st), []))
        while todo:
            x = todo.pop(0)
            if id(x) in seen:
                continue
            seen.add(id(x))
            out.append(x)
            todo.extend(edges.get(id(x), []))
        return out


def self_mapped(graph: Graph, stages: Iterable[Stage]) -> tuple[Stage, E.IterVar, E.IterVar, list[Stage]] | None:
    """Two root axes of one stage that the reads among ``stages`` make "the same" axis.

    Sharing loops across such a group would need one of them computed once per value of each
    (seed 003's double broadcast, csarofeen/pytorch#322). Returns the stage, its two axes and the
    stages whose reads joined them; None when every stage's axes stay apart."""
    group = list(stages)
    ids = {id(st) for st in group}
    parent: dict[int, int] = {}
    owner: dict[int, tuple[Stage, E.IterVar]] = {}
    via: dict[int, list[Stage]] = {}

    def find(x: int) -> int:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for st in group:
        for iv in st.op.root_iter_vars:
            owner[id(iv)] = (st, iv)
            find(id(iv))
    for st in group:
        for c in graph.consumers.get(id(st), []):
            if id(c) not in ids:
                continue
            for p, cv in graph.map(st, c).p2c.items():
                a, b = find(id(p)), find(id(cv))
                if a != b:
                    parent[a] = b
                    via.setdefault(b, []).extend([st, c, *via.get(a, [])])
    for st in group:
        seen: dict[int, E.IterVar] = {}
        for iv in st.op.root_iter_vars:
            r = find(id(iv))
            if r in seen:
                joined = []
                for x in via.get(r, []):
                    if not any(x is y for y in joined):
                        joined.append(x)
                return st, seen[r], iv, joined
            seen[r] = iv
    return None


# ---- where the chains of uses meet (computeAt by position) -----------------------------------
def common_consumer(g: Graph, producer: Stage, consumer: Stage) -> Stage | None:
    """The first stage at or after ``consumer`` lying on every use chain of ``producer``."""
    down = g.downstream(producer)
    terminals = [x for x in down if not g.consumers[id(x)]]
    if not terminals:
        return None
    on_path = {id(x) for x in down if x is not consumer and reaches(g, x, consumer)}
    order = {id(st): k for k, st in enumerate(g.sch.stages)}
    for x in sorted(down, key=lambda s: order[id(s)]):
        if id(x) in on_path or (x is not consumer and not reaches(g, consumer, x)):
            continue
        if not _avoidable(g, producer, x, terminals):
            return x
    return None


def reaches(g: Graph, a: Stage, b: Stage) -> bool:
    return a is b or any(x is b for x in g.downstream(a))


def _avoidable(g: Graph, src: Stage, block: Stage, terminals: list[Stage]) -> bool:
    """Whether some terminal is reachable from ``src`` without passing ``block``."""
    seen, todo = {id(src)}, [src]
    while todo:
        x = todo.pop()
        if x is not block and not g.consumers[id(x)] and any(x is t for t in terminals):
            return True
        for c in g.consumers[id(x)]:
            if id(c) not in seen and c is not block:
                seen.add(id(c))
                todo.append(c)
    return False


__all__ = ["AxisMap", "Graph", "common_consumer", "reaches", "read_map", "self_mapped"]
