"""Facts derived from a schedule: effective bodies (after inlining), readers, attach paths.

The read graph of the operations themselves (``create_read_graph``, ``post_dfs_order``,
``create_feed_graph``: TVM's names) lives with the operations in ``te.operation`` and is
re-exported here, where TVM users look for it.

They are recomputed from the stages whenever asked, so no primitive has to keep them in
sync; InferBound, lowering, legality checks and the views all read the same answers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ScheduleError
from ..ir import expr as E
from ..ir.functor import Mutator, substitute
from ..te.operation import create_feed_graph, create_read_graph, post_dfs_order
from ..te.tensor import Tensor
from .dataflow import py_name
from .kinds import INLINE, SCOPE

if TYPE_CHECKING:
    from .schedule import Schedule
    from .stage import Stage


class _Inliner(Mutator):
    """Substitutes the bodies of inlined stages for their reads, outermost read first: the
    producer's own body, with its axes replaced by the read's indices, is then inlined in turn.
    (Substituting each producer's already inlined body instead copies it once per stage of a
    chain, which is quadratic in the chain's length.)"""

    def __init__(self, sch: Schedule):
        self.sch = sch
        self.active: list[Stage] = []  # inlined stages being expanded, to refuse a cycle

    def visit_ProducerLoad(self, e: E.ProducerLoad):
        idx = tuple(self.visit(i) for i in e.indices)
        st = self.sch.stage_map.get(e.producer.op)
        if st is not None and st.attach_type == INLINE:
            if any(st is a for a in self.active):
                raise ScheduleError(f"stage {st.name} is inlined into itself (through "
                                    f"{', '.join(a.name for a in self.active)}); keep it stored: "
                                    f"s[{py_name(st.name)}].compute_root()")
            body = st.op.effective_body(lambda b: b)[e.producer.value_index]
            self.active.append(st)
            try:  # the indices are inlined already: visiting them again leaves them as they are
                return self.visit(substitute(body, {iv.var: i for iv, i in zip(st.op.axis, idx)}))
            finally:
                self.active.pop()
        if all(a is b for a, b in zip(idx, e.indices)):
            return e
        return E.ProducerLoad(e.producer, idx)


def inlined_body(sch: Schedule, stage: Stage, cache: dict | None = None) -> tuple[E.PrimExpr, ...]:
    """The stage's body with every inlined producer substituted (recursively)."""
    cache = {} if cache is None else cache
    if stage.op not in cache:
        cache[stage.op] = stage.op.effective_body(_Inliner(sch).visit)
    return cache[stage.op]


def effective_bodies(sch: Schedule) -> dict:
    cache: dict = {}
    return {st.op: inlined_body(sch, st, cache) for st in sch.stages if st.attach_type != INLINE}


def consumers(sch: Schedule, bodies: dict) -> dict[Stage, list[Stage]]:
    """For every stage, the (non-inlined) stages that read one of its outputs."""
    result: dict[Stage, list[Stage]] = {st: [] for st in sch.stages}
    for st in sch.stages:
        if st.attach_type == INLINE:
            continue
        seen: set[int] = set()
        for t in st.op.read_tensors(bodies[st.op]):
            prod = sch.stage_map.get(t.op)
            if prod is not None and prod.attach_type == INLINE:
                raise ScheduleError(
                    f"stage {st.name} reads {prod.name}, which is inlined, but {st.name}'s operation "
                    f"({type(st.op).__name__}) cannot substitute an inlined expression for its reads; "
                    f"keep {prod.name} stored: s[{py_name(prod.name)}].compute_root()"
                )
            if prod is not None and id(prod) not in seen:
                seen.add(id(prod))
                result[prod].append(st)
    return result


def attach_path(stage: Stage) -> list[E.IterVar]:
    """Leaf loops that enclose the stage, innermost first (seed 000, CreateAttachPath)."""
    path: list[E.IterVar] = []
    s = stage
    guard: set[int] = set()
    while s.attach_type == SCOPE:
        if id(s) in guard:
            raise ScheduleError(f"stage {stage.name}: its compute_at attachments form a cycle through {s.name}")
        guard.add(id(s))
        parent, ivar = s.attach_stage, s.attach_ivar
        assert parent is not None
        # by identity: ``in`` and ``index`` would build an ``==`` expression per loop passed
        k = next((k for k, x in enumerate(parent.leaf_iter_vars) if x is ivar), None)
        if k is None:
            raise ScheduleError(
                f"stage {s.name} is computed at {ivar.name} of {parent.name}, which is not one of "
                f"{parent.name}'s loops ({parent._leaf_names()}); attach it to one of those"
            )
        path.extend(reversed(parent.leaf_iter_vars[: k + 1]))
        s = parent
    return path


def output_tensors(sch: Schedule) -> list[Tensor]:
    return [t for op in sch.outputs for t in op.outputs]


# ---- the dataflow graph as an object (seed 001) ------------------------------------------
class DataflowEdge:
    """``tensor``, produced by ``producer``, is read by ``consumer``."""

    __slots__ = ("consumer", "producer", "tensor")

    def __init__(self, producer: Stage, consumer: Stage, tensor: Tensor):
        self.producer, self.consumer, self.tensor = producer, consumer, tensor

    def __repr__(self) -> str:
        return f"{self.producer.name} -> {self.consumer.name}"


class DataflowGraph:
    """Stages as nodes, one edge per tensor a stage's current operation reads.

    Edges follow the operations as they are now (after cache_read/cache_write/rfactor), not
    the effect of inlining: an inlined stage stays a node, marked, because the user wrote it.
    ``effective_consumers`` gives the readers after inlining, which is what legality needs.
    """

    def __init__(self, sch: Schedule):
        self.schedule = sch
        self.stages: list[Stage] = list(sch.stages)
        self.edges: list[DataflowEdge] = []
        for st in self.stages:
            for t in st.op.input_tensors():
                prod = sch.stage_map.get(t.op)
                if prod is not None:
                    self.edges.append(DataflowEdge(prod, st, t))

    def producers(self, stage: Stage) -> list[Stage]:
        return _unique(e.producer for e in self.edges if e.consumer is stage)

    def consumers(self, stage: Stage) -> list[Stage]:
        return _unique(e.consumer for e in self.edges if e.producer is stage)

    def to_text(self) -> str:
        lines = ["dataflow graph"]
        for st in self.stages:
            tags = [t for t in (_kind(st), st.scope if st.scope != "global" else "",
                                "output" if st.is_output else "") if t]
            lines.append(f"  {st.name}" + (f" [{', '.join(tags)}]" if tags else ""))
        for e in self.edges:
            via = f" ({e.tensor.name})" if e.tensor.name != e.producer.name else ""
            lines.append(f"  {e.producer.name} -> {e.consumer.name}{via}")
        return "\n".join(lines)

    __str__ = to_text

    def __repr__(self) -> str:
        return f"DataflowGraph({len(self.stages)} stages, {len(self.edges)} edges)"


def _kind(st: Stage) -> str:
    if st.is_placeholder:
        return "placeholder"
    if st.attach_type == INLINE:
        return "inline"
    return ""


def _unique(items) -> list:
    out: list = []
    for x in items:
        if not any(x is y for y in out):
            out.append(x)
    return out


def effective_consumers(sch: Schedule) -> dict[Stage, list[Stage]]:
    """Readers of every stage once inlined stages are substituted away."""
    return consumers(sch, effective_bodies(sch))


def reaches(cons: dict[Stage, list[Stage]], src: Stage, dst: Stage) -> bool:
    """Whether ``dst`` reads ``src``'s values, directly or through other stages."""
    seen: set[int] = set()
    todo = list(cons.get(src, []))
    while todo:
        st = todo.pop()
        if st is dst:
            return True
        if id(st) not in seen:
            seen.add(id(st))
            todo.extend(cons.get(st, []))
    return False


__all__ = [
    "DataflowEdge", "DataflowGraph", "attach_path", "consumers", "create_feed_graph", "create_read_graph",
    "effective_bodies", "effective_consumers", "inlined_body", "output_tensors", "post_dfs_order", "reaches",
]
