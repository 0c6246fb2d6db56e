"""The schedule tree of seed 001: where every stage is computed.

The root stands for the whole program. Under it hang the stages computed at the root, in the
order they run (the stage list, which is dataflow order). A stage's node is followed by a
chain of its loops, outermost first; a stage attached with ``compute_at`` at loop ``x`` of
stage ``S`` hangs under ``S``'s loop node ``x``, before ``x``'s inner loop, because lowering
places it at the top of that loop's body. Inlined stages are kept under the root, marked, with
no loops: they are computed inside their readers' expressions.

Legality is a question about this tree (seed 001, compute_at): a value is usable where the
node that computes it is an ancestor of the use, so a producer must hang at a node that
encloses every reader's innermost loop. :meth:`ScheduleTree.dominates` answers that question;
``legality.py`` asks it.

The tree is rebuilt from the stages whenever it is asked for, so no primitive has to keep it
in sync; a stage whose attachment cannot be placed (a cycle, a loop that no longer exists)
hangs under the root marked ``detached`` and is reported by ``Schedule.verify``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..ir import expr as E
from ..ir.stmt import LoopKind
from .kinds import INLINE, SCOPE

if TYPE_CHECKING:
    from .schedule import Schedule
    from .stage import Stage


class TreeNode:
    """A node: the root, a stage, or one loop (a leaf IterVar) of a stage."""

    __slots__ = ("children", "iter_var", "kind", "note", "parent", "stage")

    def __init__(self, kind: str, stage: Stage | None = None, iter_var: E.IterVar | None = None,
                 parent: TreeNode | None = None):
        self.kind = kind  # "root" | "stage" | "loop"
        self.stage = stage
        self.iter_var = iter_var
        self.parent = parent
        self.children: list[TreeNode] = []
        self.note = ""

    def ancestors(self) -> list[TreeNode]:
        """From this node's parent up to the root."""
        out: list[TreeNode] = []
        n = self.parent
        while n is not None:
            out.append(n)
            n = n.parent
        return out

    def walk(self) -> Iterator[TreeNode]:
        yield self
        for c in self.children:
            yield from c.walk()

    @property
    def depth(self) -> int:
        return len(self.ancestors())

    @property
    def label(self) -> str:
        if self.kind == "root":
            return "root"
        st = self.stage
        assert st is not None
        if self.kind == "stage":
            tags = []
            if st.scope != "global":
                tags.append(st.scope)
            if st.attach_type == INLINE:
                tags.append("inline")
            if st.is_output:
                tags.append("output")
            store = st.placement.store if st.attach_type == SCOPE else None
            if store is not None:  # computed here, stored outside (storage_point.py)
                tags.append(f"stored at {store[0].name}" if store else "stored at the root")
            if st.attach_type == SCOPE and st.placement.image:
                tags.append("over each iteration's box")
            if self.note:
                tags.append(self.note)
            return f"stage {st.name}" + (f" [{', '.join(tags)}]" if tags else "")
        iv = self.iter_var
        assert iv is not None
        attr = st.iter_var_attrs.get(iv)
        kind = attr.kind if attr else LoopKind.SERIAL
        if kind == LoopKind.THREAD_BINDING and attr is not None and attr.bind_thread is not None:
            text = f"for {iv.name} @ {attr.bind_thread.thread_tag or attr.bind_thread.name}"
        elif kind in (LoopKind.PARALLEL, LoopKind.VECTORIZED, LoopKind.UNROLLED):
            text = f"{kind} {iv.name}"
        else:
            text = f"for {iv.name}"
        return text + (" (reduce)" if iv.is_reduce else "")

    def where(self) -> str:
        """This position in words: "the root" or "C's loop over ci"."""
        if self.kind == "root":
            return "the root"
        assert self.stage is not None
        if self.kind == "stage":
            return f"stage {self.stage.name}"
        assert self.iter_var is not None
        return f"{self.stage.name}'s loop over {self.iter_var.name}"

    def __repr__(self) -> str:
        return f"<{self.label}>"


class ScheduleTree:
    def __init__(self, sch: Schedule):
        self.schedule = sch
        self.root = TreeNode("root")
        self._stage: dict[int, TreeNode] = {}
        self._loops: dict[tuple[int, int], TreeNode] = {}
        self.detached: dict[int, str] = {}  # stage id -> why its attachment could not be placed
        stages = [st for st in sch.stages if not st.is_placeholder]
        for st in stages:
            self._stage[id(st)] = TreeNode("stage", st)
        for st in stages:
            node = self._stage[id(st)]
            prev = node
            if st.attach_type == INLINE:
                continue
            for iv in st.leaf_iter_vars:
                loop = TreeNode("loop", st, iv, prev)
                self._loops[(id(st), id(iv))] = loop
                prev = loop
        # attached stages first under their loop, in stage order; then the inner loop
        for st in stages:
            node = self._stage[id(st)]
            parent = self._placement(st)
            node.parent = parent
            parent.children.append(node)
        for st in stages:
            if st.attach_type == INLINE:
                continue
            prev = self._stage[id(st)]
            for iv in st.leaf_iter_vars:
                loop = self._loops[(id(st), id(iv))]
                prev.children.append(loop)
                prev = loop

    def _placement(self, st: Stage) -> TreeNode:
        if st.attach_type != SCOPE:
            return self.root
        why = _attach_problem(st)
        if why is None:
            return self._loops[(id(st.attach_stage), id(st.attach_ivar))]
        self.detached[id(st)] = why
        self._stage[id(st)].note = "detached: " + why
        return self.root

    # ---- queries -------------------------------------------------------------------------
    def stage_node(self, stage: Stage) -> TreeNode:
        return self._stage[id(stage)]

    def loop_node(self, stage: Stage, iv: E.IterVar) -> TreeNode:
        return self._loops[(id(stage), id(iv))]

    def placement(self, stage: Stage) -> TreeNode:
        """The node the stage hangs under: the root or the loop it is computed at."""
        parent = self._stage[id(stage)].parent
        assert parent is not None
        return parent

    def storage(self, stage: Stage) -> TreeNode:
        """The node whose subtree its values live in: where it is computed, or where its storage
        is made when that is outside (``Placement.store``: the root, or a host loop around it).
        Its readers must run inside this node; a reader outside the loop it is computed at runs
        after that loop, so it sees every value the loop computed into the storage."""
        store = stage.placement.store if stage.attach_type == SCOPE else None
        if store is None:
            return self.placement(stage)
        owner = stage.schedule.stage_of_iter_var(store[0]) if store else None
        node = self._loops.get((id(owner), id(store[0]))) if owner is not None else None
        return node if node is not None else self.root

    def innermost(self, stage: Stage) -> TreeNode:
        """Where the stage's body runs: its innermost loop (or its own node if it has none)."""
        if stage.attach_type != INLINE and stage.leaf_iter_vars:
            return self._loops[(id(stage), id(stage.leaf_iter_vars[-1]))]
        return self._stage[id(stage)]

    @staticmethod
    def dominates(node: TreeNode, other: TreeNode) -> bool:
        """Whether ``node`` encloses ``other`` (or is it)."""
        return node is other or any(a is node for a in other.ancestors())

    @staticmethod
    def lca(a: TreeNode, b: TreeNode) -> TreeNode:
        """The lowest common ancestor of two nodes (seed 001 uses LCA(producer, consumer))."""
        up = [a, *a.ancestors()]
        for n in [b, *b.ancestors()]:
            if any(n is x for x in up):
                return n
        raise AssertionError("nodes of one tree share the root")

    def enclosing_loops(self, stage: Stage) -> list[TreeNode]:
        """The loop nodes around the stage, outermost first (the attach path, reversed)."""
        return [n for n in reversed(self._stage[id(stage)].ancestors()) if n.kind == "loop"]

    # ---- text ----------------------------------------------------------------------------
    def to_text(self) -> str:
        lines: list[str] = []

        def emit(n: TreeNode, depth: int) -> None:
            lines.append("  " * depth + n.label)
            for c in n.children:
                emit(c, depth + 1)

        emit(self.root, 0)
        return "\n".join(lines)

    __str__ = to_text

    def __repr__(self) -> str:
        return f"ScheduleTree({len(self._stage)} stages)"


def attach_fault(st: Stage) -> tuple[str, str] | None:
    """Why ``st``'s compute_at cannot be placed in a tree, as (kind, sentence); None when it can.

    The kind is one of ``unplaced``, ``other-schedule``, ``inlined-target``, ``placeholder-target``,
    ``stale`` and ``cycle``: legality classifies by it, never by the sentence (which holds names)."""
    tgt, iv = st.attach_stage, st.attach_ivar
    if tgt is None or iv is None:
        return "unplaced", "its attachment names no stage or loop"
    if tgt.schedule is not st.schedule:
        return "other-schedule", f"{tgt.name} belongs to another schedule"
    if tgt.attach_type == INLINE:
        return "inlined-target", f"{tgt.name} is inlined and has no loops"
    if tgt.is_placeholder:
        return "placeholder-target", f"{tgt.name} is a placeholder and has no loops"
    if not any(iv is x for x in tgt.leaf_iter_vars):
        return "stale", f"{iv.name} is not a loop of {tgt.name}"
    seen: set[int] = set()
    s: Stage | None = tgt
    while s is not None and s.attach_type == SCOPE and id(s) not in seen:
        if s is st:
            break
        seen.add(id(s))
        s = s.attach_stage
    return ("cycle", "its compute_at attachments form a cycle") if s is st else None


def _attach_problem(st: Stage) -> str | None:
    """Why ``st``'s compute_at cannot be placed in a tree, or None when it can."""
    fault = attach_fault(st)
    return None if fault is None else fault[1]


__all__ = ["ScheduleTree", "TreeNode"]
