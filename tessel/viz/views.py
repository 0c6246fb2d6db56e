"""The three pictures of a schedule that seed 001's operational model reasons with.

- the dataflow graph: which stage produces which tensor and who reads it (what to compute);
- the schedule tree: where each stage runs, as loops nested under the root (how and where);
- the IterVar-relation DAG: how each stage's loops derive from its axes (split, fuse, ...).

Views only read a schedule. Loop extents come from InferBound; when a schedule is so broken
that InferBound fails, the views still draw it (that is when they are most needed) and say
why the ranges are missing.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from pathlib import Path

from ..arith import Analyzer
from ..errors import TesselError, ViewError
from ..ir import expr as E
from ..ir.stmt import LoopKind
from ..schedule.commands import describe
from ..schedule.compute_at_pos import replay_origins
from ..schedule.graph import DataflowGraph
from ..schedule.kinds import INLINE, SCOPE
from ..schedule.relations import Relation
from ..schedule.schedule import Schedule
from ..schedule.stage import Stage
from ..schedule.tree import ScheduleTree
from ..te.tensor import Operation
from .dot import Graph, Ids
from .svg import to_svg


class View:
    """One picture: ``to_dot()`` always works; ``to_svg()`` needs no Graphviz binary."""

    def __init__(self, graph: Graph):
        self.graph = graph

    @property
    def kind(self) -> str:
        return self.graph.name

    def to_dot(self) -> str:
        return self.graph.to_dot()

    def to_svg(self, engine: str = "auto") -> str:
        """``engine``: ``"auto"`` uses Graphviz's ``dot`` when on PATH, ``"python"`` never does."""
        return to_svg(self.graph, engine)

    def _repr_svg_(self) -> str:
        return self.to_svg()

    def save(self, path: str | Path, engine: str = "auto") -> Path:
        """Write ``.dot``/``.gv`` as DOT text and anything else as SVG."""
        path = Path(path)
        text = self.to_dot() if path.suffix in (".dot", ".gv") else self.to_svg(engine)
        path.write_text(text, encoding="utf-8")
        return path

    def __repr__(self) -> str:
        return f"<{self.kind} view: {len(self.graph.nodes)} nodes, {len(self.graph.edges)} edges>"


# ---- shared facts ------------------------------------------------------------------------
def bounds_of(sch: Schedule) -> tuple[dict[E.IterVar, E.Range], str | None]:
    """InferBound's ranges, or none and the reason (a view of a broken schedule still draws)."""
    from ..bound import infer_bound

    try:
        return infer_bound(sch), None
    except TesselError as err:
        return {}, f"no loop ranges: {type(err).__name__}: {str(err).splitlines()[0]}"
    except Exception as err:  # a view must not die with the schedule it is meant to debug
        return {}, f"no loop ranges: InferBound failed ({type(err).__name__}: {err})"


_ANA = Analyzer()


def range_text(r: E.Range | None) -> str:
    if r is None:
        return "[?]"
    if E.is_const_int(r.min, 0):
        return f"[0, {r.extent})"
    try:
        end = _ANA.simplify(E.add(r.min, r.extent))
    except Exception:
        end = E.add(r.min, r.extent)
    return f"[{r.min}, {end})"


def annotation(st: Stage, iv: E.IterVar) -> list[str]:
    """What a loop is besides serial: its kind, thread binding, pragmas, reduction."""
    out = []
    attr = st.iter_var_attrs.get(iv)
    if attr is not None:
        if attr.bind_thread is not None:
            out.append(f"bind {attr.bind_thread.thread_tag or attr.bind_thread.name}")
        elif attr.kind != LoopKind.SERIAL:
            out.append(attr.kind)
        out.extend(f"pragma {k}" + ("" if v is None else f"={v}") for k, v in attr.pragmas.items())
    if iv.is_reduce:
        out.append("reduce")
    return out


def attach_text(st: Stage) -> str:
    if st.attach_type == INLINE:
        return "inlined"
    if st.attach_type == SCOPE and st.attach_stage is not None and st.attach_ivar is not None:
        return f"compute_at {st.attach_stage.name}.{st.attach_ivar.name}"
    return "at root"


def _kind(op: Operation) -> str:
    if op.is_placeholder:
        return "placeholder"
    if op.is_reduction:
        return "reduction"
    return "compute" if hasattr(op, "body") else type(op).__name__


def _shape(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _note(graph: Graph, text: str | None) -> None:
    if text:
        graph.add_node("note", [text], role="error", shape="box")


# ---- dataflow graph ------------------------------------------------------------------------
def dataflow_graph(s: Schedule) -> View:
    """Stages (boxes) and the tensors they produce and read (ellipses), left to right.

    Drawn from the schedule's own :class:`~tessel.schedule.graph.DataflowGraph`, so the
    picture has exactly the edges legality and the other views reason with.
    """
    _check_schedule(s)
    flow = DataflowGraph(s)
    g = Graph("dataflow", rankdir="LR", title="dataflow graph")
    ids = Ids()
    tensor_ids: dict[tuple[int, int], str] = {}
    for st in flow.stages:
        nid = ids(st, f"stage:{st.name}")
        label = [st.name, _kind(st.op), *domain_lines(st.op)]
        if getattr(st, "created_by", None):
            label.append(f"made by {st.created_by}")
        if not st.is_placeholder:
            label.append(attach_text(st))
        if st.is_output:
            label.append("output")
        role = "input" if st.is_placeholder else "inline" if st.attach_type == INLINE else "stage"
        g.add_node(nid, label, role=role, dashed=st.attach_type == INLINE, bold=st.is_output)
        for t in st.op.outputs:
            tid = ids(t, f"tensor:{t.name}")
            tensor_ids[(id(t.op), t.value_index)] = tid
            extra = [f"scope {st.scope}"] if st.scope != "global" else []
            g.add_node(tid, [t.name, _shape(t.shape), str(t.dtype), *extra], role="tensor", shape="ellipse")
            g.add_edge(nid, tid)
    for e in flow.edges:
        g.add_edge(tensor_ids[(id(e.tensor.op), e.tensor.value_index)], ids(e.consumer, ""))
    return View(g)


# ---- schedule tree -----------------------------------------------------------------------------
def schedule_tree(s: Schedule) -> View:
    """The root, each stage under the loop it is computed at, each stage's loops in order.

    Drawn from the schedule's own :class:`~tessel.schedule.tree.ScheduleTree` (the tree the
    legality rules are judged on): a stage node is followed by its loops, outermost first;
    stages attached at a loop hang under it before the loop nested inside it, as they run.
    A stage whose attachment cannot be placed hangs under the root, detached, in red.
    """
    _check_schedule(s)
    tree = ScheduleTree(s)
    rmap, why = bounds_of(s)
    g = Graph("schedule_tree", title="schedule tree")
    ids = Ids()
    stage_ids: dict[int, str] = {}
    g.add_node("root", ["root"], role="root")
    index = stage_index(s)
    # what is inside which stage's loops, for the explorer's collapsing: owners enclose a node
    todo: list[tuple] = [(child, "root", ()) for child in reversed(tree.root.children)]
    while todo:  # depth first, children in order, so the DOT lists them as the tree has them
        node, parent, owners = todo.pop()
        st = node.stage
        tags = tuple(f"in-{k}" for k in owners)
        if node.kind == "stage":
            nid = stage_ids[id(st)] = ids(st, f"stage:{st.name}")
            g.add_node(nid, _stage_label(s, st, rmap, node.note),
                       role="error" if node.note else "inline" if st.attach_type == INLINE else "stage",
                       dashed=st.attach_type == INLINE, bold=st.is_output, tags=(*tags, f"head-{index[id(st)]}"))
            owners = (*owners, index[id(st)])
            if node.note:
                g.add_edge(parent, nid, "detached", color="#cc0000", dashed=True)
            elif st.attach_type == INLINE:
                g.add_edge(parent, nid, "inline", dashed=True)
            elif parent == "root":
                g.add_edge(parent, nid)
            else:
                g.add_edge(parent, nid, "compute_at", color="#1e6fb8")
        else:
            iv = node.iter_var
            nid = ids(iv, f"loop:{st.name}:{iv.name}")
            g.add_node(nid, [iv.name, range_text(rmap.get(iv)) if rmap else "[?]", *annotation(st, iv)],
                       role="loop", tags=tags)
            g.add_edge(parent, nid)
        todo.extend((child, nid, owners) for child in reversed(node.children))
    _mark_violations(s, g, stage_ids)
    _note(g, why)
    return View(g)


def stage_index(s: Schedule) -> dict[int, int]:
    """Each stage's position in ``s.stages`` by identity: the number the explorer's stage
    panel and the pictures' hooks share (a name may be shown twice; a position cannot)."""
    return {id(st): k for k, st in enumerate(s.stages)}


def _stage_label(s: Schedule, st: Stage, rmap, note: str) -> list[str]:
    label = [st.name]
    if st.scope != "global":
        label.append(f"scope {st.scope}")
    if st.attach_type == INLINE:
        readers = [r.name for r in s.stages if any(t.op is st.op for t in r.op.input_tensors())]
        label.append("inlined" + (f" into {', '.join(readers)}" if readers else ""))
    elif rmap and st.op.axis:
        label.append("region " + " x ".join(range_text(rmap.get(iv)) for iv in st.op.axis))
    label += describe(st)  # Tiramisu's commands (after, shift, store_in, ...)
    return label + domain_lines(st.op) + textwrap.wrap(note, 36)


def domain_lines(op: Operation) -> list[str]:
    """What a stage's box does not show: its declared domain (``where=``), and for a
    recurrence's definition which one it is, the storage it shares and the axes run backwards."""
    out = [f"domain: {op.where}"] if op.where is not None else []
    defs = getattr(op, "definitions", ())
    if defs:
        k = next((k for k, t in enumerate(defs) if t.op is op), 0)
        base = op.storage(op.outputs[0])
        out.append(f"definition {k + 1} of {len(defs)} of {defs[-1].op.name}")
        out.append(f"in place: {base.name}" if base.op.is_placeholder else f"storage: {base.name}")
        back = [iv.var.name for iv, d in zip(op.axis, op.directions) if d < 0]
        if back:
            out.append("backwards: " + ", ".join(back))
    return out


def _mark_violations(s: Schedule, g: Graph, stage_ids: dict[int, str]) -> None:
    """Stages that break a legality rule are drawn red, with the rule's name."""
    try:
        found = s.violations()
    except Exception:  # legality is judged by verify/lower; a view only decorates
        return
    for v in found:
        nid = stage_ids.get(id(v.stage))
        if nid is not None:
            node = g.nodes[nid]
            node.role = "error"
            node.label.append(f"illegal: {v.rule}")


# ---- IterVar-relation DAG -------------------------------------------------------------------------
def itervar_graph(s: Schedule, stage=None) -> View:
    """Per stage: root axes, each relation (split with its factor, fuse, rebase, singleton) and
    the leaf loops it produced, with their ranges; ``stage`` picks one stage or a list."""
    _check_schedule(s)
    stages = _pick_stages(s, stage)
    rmap, why = bounds_of(s)
    g = Graph("itervar_graph", title="IterVar-relation DAG")
    ids = Ids()
    index = stage_index(s)
    for st in stages:
        cluster = ids(st, st.name)
        inside = (f"in-{index[id(st)]}",)
        extra = " (inlined)" if st.attach_type == INLINE else ""
        if getattr(st, "created_by", None):
            extra += f" (made by {st.created_by})"
        derived = getattr(st, "derived_from", {})
        g.add_cluster(cluster, f"stage {st.name}{extra}: loops {', '.join(iv.name for iv in st.leaf_iter_vars)}"
                      ).tags = (f"head-{index[id(st)]}",)
        roots = set(map(id, st.op.root_iter_vars))
        leaves = {id(iv): k for k, iv in enumerate(st.leaf_iter_vars)}
        for iv in st.all_iter_vars:
            tags = []
            if id(iv) in roots:
                tags.append("root")
            if id(iv) in leaves:
                tags.append(f"loop {leaves[id(iv)]}")
            label = [iv.name, range_text(rmap.get(iv)) if rmap else "[?]", ", ".join(tags),
                     *annotation(st, iv), *textwrap.wrap(derived.get(iv, ""), 30)]
            role = "leaf_iv" if id(iv) in leaves else "root_iv" if id(iv) in roots else "iv"
            g.add_node(ids(iv, f"iv:{st.name}:{iv.name}"), label, role=role, bold=id(iv) in roots,
                       cluster=cluster, tags=inside)
        origin = replay_origins(s)
        for k, rel in enumerate(st.relations):
            rid = ids(rel, f"rel:{st.name}:{k}")
            label = _relation_label(rel) + ([f"replayed from {origin[id(rel)]}"] if id(rel) in origin else [])
            g.add_node(rid, label, role="relation", shape="ellipse", cluster=cluster, tags=inside)
            in_labels, out_labels = _port_labels(rel)
            for iv, lab in zip(rel.inputs, in_labels):
                g.add_edge(ids(iv, f"iv:{st.name}:{iv.name}"), rid, lab)
            for iv, lab in zip(rel.outputs, out_labels):
                g.add_edge(rid, ids(iv, f"iv:{st.name}:{iv.name}"), lab)
    _note(g, why)
    return View(g)


def _relation_label(rel: Relation) -> list[str]:
    return [rel.kind, *(f"{k}={v}" for k, v in rel.params().items())]


def _port_labels(rel: Relation) -> tuple[list[str], list[str]]:
    return list(rel.input_roles), list(rel.output_roles)


def _pick_stages(s: Schedule, stage) -> list[Stage]:
    if stage is None:
        return [st for st in s.stages if not st.is_placeholder]
    items: Iterable = stage if isinstance(stage, list | tuple) else [stage]
    out = []
    for item in items:
        if isinstance(item, str):
            found = [st for st in s.stages if st.name == item]
            if not found:
                raise ViewError(f"itervar_graph: no stage named {item!r}; the stages are "
                                f"{', '.join(st.name for st in s.stages)}")
            out.extend(found)
        else:
            out.append(s[item])
    return out


def _check_schedule(s) -> None:
    if not isinstance(s, Schedule):
        raise ViewError(f"a view needs a schedule (te.create_schedule(...)), got {type(s).__name__}")
