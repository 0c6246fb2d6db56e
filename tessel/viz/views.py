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
from ..ir import op as O
from ..schedule.relations import Fuse, Rebase, Singleton, Split
from ..schedule.schedule import Schedule
from ..schedule.stage import INLINE, ROOT, SCOPE, Stage
from ..te.tensor import Operation, PlaceholderOp, Tensor
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
        end = _ANA.simplify(O.add(r.min, r.extent))
    except Exception:
        end = O.add(r.min, r.extent)
    return f"[{r.min}, {end})"


def annotation(st: Stage, iv: E.IterVar) -> list[str]:
    """What a loop is besides serial: its kind, thread binding, pragmas, reduction."""
    out = []
    attr = st.iter_var_attrs.get(iv)
    if attr is not None:
        if attr.bind_thread is not None:
            out.append(f"bind {attr.bind_thread.thread_tag or attr.bind_thread.name}")
        elif attr.kind != "serial":
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
    if isinstance(op, PlaceholderOp):
        return "placeholder"
    if getattr(op, "is_reduction", False):
        return "reduction"
    return "compute" if hasattr(op, "body") else type(op).__name__


def _shape(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _note(graph: Graph, text: str | None) -> None:
    if text:
        graph.add_node("note", [text], role="error", shape="box")


# ---- dataflow graph ------------------------------------------------------------------------
def dataflow_graph(s: Schedule) -> View:
    """Stages (boxes) and the tensors they produce and read (ellipses), left to right."""
    _check_schedule(s)
    g = Graph("dataflow", rankdir="LR", title="dataflow graph")
    ids = Ids()
    tensor_ids: dict[tuple[int, int], str] = {}

    def tensor_node(t: Tensor, scope: str, known: bool = True) -> str:
        key = (id(t.op), t.value_index)
        if key not in tensor_ids:
            nid = ids(t, f"tensor:{t.name}")
            label = [t.name, _shape(t.shape), str(t.dtype)]
            if scope != "global":
                label.append(f"scope {scope}")
            if not known:
                label.append("(no stage in this schedule)")
            g.add_node(nid, label, role="tensor", shape="ellipse", dashed=not known)
            tensor_ids[key] = nid
        return tensor_ids[key]

    for st in s.stages:
        nid = ids(st, f"stage:{st.name}")
        label = [st.name, _kind(st.op)]
        if getattr(st, "created_by", None):
            label.append(f"made by {st.created_by}")
        if not st.is_placeholder:
            label.append(attach_text(st))
        if st.is_output:
            label.append("output")
        role = "input" if st.is_placeholder else "inline" if st.attach_type == INLINE else "stage"
        g.add_node(nid, label, role=role, dashed=st.attach_type == INLINE, bold=st.is_output)
        for t in st.op.outputs:
            g.add_edge(nid, tensor_node(t, st.scope))
    for st in s.stages:
        for t in st.op.input_tensors():
            producer = s.stage_map.get(t.op)
            src = tensor_node(t, producer.scope if producer else "global", producer is not None)
            g.add_edge(src, ids(st, ""))
    return View(g)


# ---- schedule tree -----------------------------------------------------------------------------
def schedule_tree(s: Schedule) -> View:
    """The root, each stage under the loop it is computed at, each stage's loops in order.

    A stage node is followed by its loops (outermost first); the stages attached at a loop
    hang under that loop, before the loops inside it, in the order they run.
    """
    _check_schedule(s)
    rmap, why = bounds_of(s)
    g = Graph("schedule_tree", title="schedule tree")
    ids = Ids()
    g.add_node("root", ["root"], role="root")
    stage_ids = {id(st): ids(st, f"stage:{st.name}") for st in s.stages if not st.is_placeholder}
    loop_ids: dict[tuple[int, int], str] = {}
    for st in s.stages:
        if st.is_placeholder:
            continue
        label = [st.name]
        if st.scope != "global":
            label.append(f"scope {st.scope}")
        if st.attach_type == INLINE:
            readers = [r.name for r in s.stages if any(t.op is st.op for t in r.op.input_tensors())]
            label.append("inlined" + (f" into {', '.join(readers)}" if readers else ""))
        elif rmap:
            region = " x ".join(range_text(rmap.get(iv)) for iv in st.op.axis)
            if region:
                label.append(f"region {region}")
        g.add_node(stage_ids[id(st)], label, role="inline" if st.attach_type == INLINE else "stage",
                   dashed=st.attach_type == INLINE, bold=st.is_output)
        parent = stage_ids[id(st)]
        if st.attach_type == INLINE:
            continue
        for iv in st.leaf_iter_vars:
            nid = ids(iv, f"loop:{st.name}:{iv.name}")
            loop_ids[(id(st), id(iv))] = nid
            g.add_node(nid, [iv.name, range_text(rmap.get(iv)) if rmap else "[?]", *annotation(st, iv)], role="loop")
            g.add_edge(parent, nid)
            parent = nid
    for st in s.stages:
        if st.is_placeholder:
            continue
        nid = stage_ids[id(st)]
        if st.attach_type == SCOPE and st.attach_stage is not None:
            at = loop_ids.get((id(st.attach_stage), id(st.attach_ivar)))
            if at is not None:
                g.add_edge(at, nid, "compute_at", color="#1e6fb8")
            else:  # attached to something that is not a loop of that stage: show it, in red
                name = getattr(st.attach_ivar, "name", "?")
                g.add_edge(stage_ids.get(id(st.attach_stage), "root"), nid,
                           f"at {name}: not a loop", color="#cc0000", dashed=True)
        elif st.attach_type == INLINE:
            g.add_edge("root", nid, "inline", dashed=True)
        elif st.attach_type == ROOT:
            g.add_edge("root", nid)
    _mark_violations(s, g, stage_ids)
    _reorder_children(g)
    _note(g, why)
    return View(g)


def _mark_violations(s: Schedule, g: Graph, stage_ids: dict[int, str]) -> None:
    """Stages that break a legality rule are drawn red, with the rule's name."""
    find = getattr(s, "violations", None)
    if not callable(find):
        return
    try:
        found = find()
    except Exception:  # legality is judged elsewhere (verify/lower); a view only decorates
        return
    for v in found:
        nid = stage_ids.get(id(getattr(v, "stage", None)))
        if nid is not None and nid in g.nodes:
            node = g.nodes[nid]
            node.role = "error"
            node.label.append(f"illegal: {getattr(v, 'rule', 'rule broken')}")


def _reorder_children(g: Graph) -> None:
    """Under a loop, attached stages come before the loop nested inside it, as they run."""
    g.edges.sort(key=lambda e: e.dst.startswith("loop:"))


# ---- IterVar-relation DAG -------------------------------------------------------------------------
def itervar_graph(s: Schedule, stage=None) -> View:
    """Per stage: root axes, each relation (split with its factor, fuse, rebase, singleton) and
    the leaf loops it produced, with their ranges; ``stage`` picks one stage or a list."""
    _check_schedule(s)
    stages = _pick_stages(s, stage)
    rmap, why = bounds_of(s)
    g = Graph("itervar_graph", title="IterVar-relation DAG")
    ids = Ids()
    for st in stages:
        cluster = ids(st, st.name)
        extra = " (inlined)" if st.attach_type == INLINE else ""
        if getattr(st, "created_by", None):
            extra += f" (made by {st.created_by})"
        derived = getattr(st, "derived_from", {})
        g.add_cluster(cluster, f"stage {st.name}{extra}: loops {', '.join(iv.name for iv in st.leaf_iter_vars)}")
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
                       cluster=cluster)
        for k, rel in enumerate(st.relations):
            rid = ids(rel, f"rel:{st.name}:{k}")
            g.add_node(rid, _relation_label(rel), role="relation", shape="ellipse", cluster=cluster)
            in_labels, out_labels = _port_labels(rel)
            for iv, lab in zip(rel.inputs, in_labels):
                g.add_edge(ids(iv, f"iv:{st.name}:{iv.name}"), rid, lab)
            for iv, lab in zip(rel.outputs, out_labels):
                g.add_edge(rid, ids(iv, f"iv:{st.name}:{iv.name}"), lab)
    _note(g, why)
    return View(g)


def _relation_label(rel) -> list[str]:
    if isinstance(rel, Split):
        return ["split", f"factor={rel.factor}" if rel.factor is not None else f"nparts={rel.nparts}"]
    if isinstance(rel, Fuse):
        return ["fuse"]
    if isinstance(rel, Rebase):
        return ["rebase"]
    if isinstance(rel, Singleton):
        return ["singleton"]
    return [type(rel).__name__.lower()]


def _port_labels(rel) -> tuple[list[str], list[str]]:
    n_in, n_out = len(rel.inputs), len(rel.outputs)
    if isinstance(rel, Split):
        return [""], ["outer", "inner"]
    if isinstance(rel, Fuse):
        return ["outer", "inner"], [""]
    return [""] * n_in, [""] * n_out


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
