"""A small graph model shared by every view, and its DOT text.

Each view builds one :class:`Graph`; the DOT writer and the pure-Python SVG renderer both read
it, so the picture Graphviz draws and the one tessel draws itself always show the same nodes,
edges and labels (the tests read the DOT, the explorer shows the SVG).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.names import dot_string, shown

# Fill colours by role, so the same kind of thing looks the same in every view.
COLORS = {
    "root": "#eeeeee",
    "stage": "#dae8fc",
    "input": "#f5f5f5",
    "tensor": "#fff2cc",
    "loop": "#ffffff",
    "inline": "#f5f5f5",
    "root_iv": "#dae8fc",
    "leaf_iv": "#d5e8d4",
    "iv": "#ffffff",
    "relation": "#e1d5e7",
    "error": "#f8cecc",
}


@dataclass
class Node:
    """One box: ``label`` is its lines of text, ``role`` picks its colour."""

    id: str
    label: list[str]
    role: str = "stage"
    shape: str = "box"  # box, ellipse
    dashed: bool = False
    bold: bool = False
    cluster: str | None = None
    tags: tuple[str, ...] = ()  # hooks for the explorer (which stage a box belongs to), see ``tag_attr``


@dataclass
class Edge:
    src: str
    dst: str
    label: str = ""
    dashed: bool = False
    color: str = "#333333"
    tags: tuple[str, ...] = ()


@dataclass
class Cluster:
    id: str
    label: str
    tags: tuple[str, ...] = ()


@dataclass
class Graph:
    """Nodes, edges and clusters in insertion order (the order is part of the layout)."""

    name: str
    rankdir: str = "TB"
    title: str = ""
    nodes: dict[str, Node] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)
    clusters: list[Cluster] = field(default_factory=list)

    def add_node(self, node_id: str, label: list[str], **attrs) -> Node:
        node = Node(node_id, [line for line in label if line], **attrs)
        self.nodes[node_id] = node
        return node

    def add_edge(self, src: str, dst: str, label: str = "", **attrs) -> Edge:
        if "tags" not in attrs and dst in self.nodes:  # an edge goes where the box it points at goes
            attrs["tags"] = self.nodes[dst].tags
        edge = Edge(src, dst, label, **attrs)
        self.edges.append(edge)
        return edge

    def add_cluster(self, cluster_id: str, label: str) -> Cluster:
        cluster = Cluster(cluster_id, label)
        self.clusters.append(cluster)
        return cluster

    def to_dot(self) -> str:
        return to_dot(self)


class Ids:
    """Readable, unique node ids: ``stage:B``, then ``stage:B#2`` for a second stage named B.

    Ids are keyed by the object they stand for, so the same IterVar gets the same id wherever
    a view refers to it.
    """

    def __init__(self) -> None:
        self._by_obj: dict[int, str] = {}
        self._used: set[str] = set()
        self._keep: list[object] = []  # keep objects alive so their id() stays theirs

    def __call__(self, obj: object, text: str) -> str:
        key = id(obj)
        if key in self._by_obj:
            return self._by_obj[key]
        text = shown(text, None)  # unique as written: two names may be shown alike
        cand, k = text, 1
        while cand in self._used:
            k += 1
            cand = f"{text}#{k}"
        self._used.add(cand)
        self._by_obj[key] = cand
        self._keep.append(obj)
        return cand


def tag_attr(tags: tuple[str, ...]) -> str:
    """The class list a drawing carries for ``tags``. Tags are made by tessel from indices
    (``in-3``: inside stage 3's loops), never from a user's name, and are checked here so a
    name can never reach an attribute through them."""
    for t in tags:
        if not t.replace("-", "").isalnum() or not t.isascii():
            raise ValueError(f"tag {t!r} is not an internal tag")
    return " ".join(f"tsl-{t}" for t in tags)


def quote(text: str | list[str]) -> str:
    """A DOT double-quoted label, each line (a list is several) shown as
    :func:`tessel.ir.names.shown` shows a name: printable, escaped, capped, as in the SVG."""
    return dot_string(text)


def quote_id(text: str) -> str:
    """A node, cluster or graph id as a DOT string, shown in full (``Ids`` made them unique as
    shown): a name is data, whatever it holds it cannot end the string or the line."""
    return dot_string(text, None)


def _node_attrs(node: Node) -> str:
    style = ["filled"]
    if node.dashed:
        style.append("dashed")
    if node.bold:
        style.append("bold")
    if node.shape == "box" and node.role in ("stage", "root", "input", "inline", "error"):
        style.append("rounded")
    attrs = [
        f"label={quote(node.label)}",
        f"shape={node.shape}",
        f"style={quote(','.join(style))}",
        f"fillcolor={quote(COLORS.get(node.role, '#ffffff'))}",
    ]
    if node.tags:
        attrs.append(f"class={quote_id(tag_attr(node.tags))}")
    return ", ".join(attrs)


def _edge_attrs(edge: Edge) -> str:
    attrs = []
    if edge.label:
        attrs.append(f"label={quote(edge.label)}")
    if edge.dashed:
        attrs.append('style="dashed"')
    if edge.color != "#333333":
        attrs.append(f"color={quote(edge.color)}")
    if edge.tags:
        attrs.append(f"class={quote_id(tag_attr(edge.tags))}")
    return f" [{', '.join(attrs)}]" if attrs else ""


def to_dot(graph: Graph) -> str:
    """DOT text, one statement per line, in the graph's insertion order (stable for diffs)."""
    out = [f"digraph {quote_id(graph.name)} {{"]
    out.append(f'  graph [rankdir={graph.rankdir}, fontname="monospace", fontsize=11, nodesep=0.3, ranksep=0.4'
               + (f", label={quote(graph.title)}, labelloc=t" if graph.title else "") + "];")
    out.append('  node [fontname="monospace", fontsize=10, margin="0.12,0.05", color="#333333"];')
    out.append('  edge [fontname="monospace", fontsize=9, color="#333333", arrowsize=0.7];')
    for node in graph.nodes.values():
        if node.cluster is None:
            out.append(f"  {quote_id(node.id)} [{_node_attrs(node)}];")
    for cluster in graph.clusters:
        out.append(f"  subgraph {quote_id('cluster_' + cluster.id)} {{")
        out.append(f'    label={quote(cluster.label)}; style="rounded"; color="#999999";'
                   + (f" class={quote_id(tag_attr(cluster.tags))};" if cluster.tags else ""))
        for node in graph.nodes.values():
            if node.cluster == cluster.id:
                out.append(f"    {quote_id(node.id)} [{_node_attrs(node)}];")
        out.append("  }")
    for edge in graph.edges:
        out.append(f"  {quote_id(edge.src)} -> {quote_id(edge.dst)}{_edge_attrs(edge)};")
    out.append("}")
    return "\n".join(out) + "\n"
