"""A stage's IterVar-relation DAG (seed 001; seed 000 calls it the IterVar hyper-graph).

Nodes are the stage's IterVars: the roots (its operation's axes and reduction axes), the
loops split, fuse and rebase made from them, and the leaves, which are the loops lowering
emits, in their current order. Each relation record is one hyper-edge from its inputs to its
outputs. A root that stands for a loop of another stage (rfactor's factored axis, the ``i.c``
axes of a cache_write) says so, since that is where its extent comes from.

The DAG is a view over ``Stage.relations``, made fresh on request: the records themselves are
the single source of truth that InferBound and lowering replay.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..ir import expr as E
from .relations import Relation

if TYPE_CHECKING:
    from .stage import Stage


@dataclass(frozen=True)
class DagEdge:
    """One relation: ``kind`` is split, fuse, rebase or singleton."""

    kind: str
    inputs: tuple[E.IterVar, ...]
    outputs: tuple[E.IterVar, ...]
    params: str
    relation: Relation
    replayed_from: str | None = None  # made by computeAt's transform replay from that stage (seed 003)

    def to_text(self) -> str:
        ins = ", ".join(iv.name for iv in self.inputs) or "()"
        outs = ", ".join(iv.name for iv in self.outputs)
        text = f"{self.kind} {ins} -> {outs}" + (f" ({self.params})" if self.params else "")
        return text + (f" [replayed from {self.replayed_from}]" if self.replayed_from else "")


class IterVarDag:
    def __init__(self, stage: Stage):
        self.stage = stage
        self.roots: list[E.IterVar] = list(stage.op.root_iter_vars)
        self.nodes: list[E.IterVar] = list(stage.all_iter_vars)
        self.leaves: list[E.IterVar] = list(stage.leaf_iter_vars)
        from .compute_at_pos import replay_origins

        origin = replay_origins(stage.schedule)
        self.edges: list[DagEdge] = [_edge(r, origin.get(id(r))) for r in stage.relations]

    def is_root(self, iv: E.IterVar) -> bool:
        return any(iv is r for r in self.roots)

    def is_leaf(self, iv: E.IterVar) -> bool:
        return any(iv is r for r in self.leaves)

    def role(self, iv: E.IterVar) -> str:
        """root, leaf, root+leaf (an untouched axis) or inner (transformed away)."""
        r, l = self.is_root(iv), self.is_leaf(iv)
        return "root+leaf" if r and l else "root" if r else "leaf" if l else "inner"

    def describe(self, iv: E.IterVar) -> str:
        """``k: reduce [0, 64)`` plus where a root came from, if another stage's loop."""
        text = f"{iv.name}: {'reduce' if iv.is_reduce else 'data'}"
        if iv.dom is not None and self.is_root(iv):
            text += f" [{iv.dom.min}, {iv.dom.min + iv.dom.extent})"
        note = self.stage.derived_from.get(iv)
        return text + (f", {note}" if note else "")

    def to_text(self) -> str:
        st = self.stage
        lines = [f"IterVar-relation DAG of {st.name}"]
        for iv in self.roots:
            lines.append(f"  root {self.describe(iv)}")
        for e in self.edges:
            lines.append(f"  {e.to_text()}")
        lines.append(f"  leaves: {', '.join(iv.name for iv in self.leaves) or 'none'}")
        return "\n".join(lines)

    __str__ = to_text

    def __repr__(self) -> str:
        return f"IterVarDag({self.stage.name}: {len(self.nodes)} IterVars, {len(self.edges)} relations)"


def _edge(r: Relation, replayed_from: str | None = None) -> DagEdge:
    params = ", ".join(f"{k} {v}" for k, v in r.params().items())
    return DagEdge(r.kind, r.inputs, r.outputs, params, r, replayed_from)


__all__ = ["DagEdge", "IterVarDag"]
