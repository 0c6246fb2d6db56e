"""A layered layout for the small DAGs and trees the views draw, in pure Python.

Why our own: the pictures must come out without the Graphviz binary. The graphs are small
(tens of nodes), so the classic Sugiyama recipe is plenty: break cycles, give every node a
layer by longest path, insert dummy nodes so long edges bend around boxes, order each layer
by barycenters (keeping the ordering with the fewest crossings), then place nodes across
each layer as close to their neighbours as the ordering allows (an isotonic regression, so
the result is the best such placement, not a heuristic nudge).

Everything is computed for top-to-bottom and transposed for left-to-right graphs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise

from ..ir.names import shown
from .dot import Cluster, Edge, Graph, Node

CHAR_W = 6.7  # advance of an 11px monospace glyph (0.6em, rounded up)
LINE_H = 14.0
PAD_X, PAD_Y = 9.0, 6.0
NODE_GAP = 16.0
RANK_GAP = 34.0
LABEL_GAP = 14.0  # extra room between layers whose edges carry labels
CLUSTER_PAD = 12.0
CLUSTER_LABEL_H = 18.0
GROUP_GAP = 22.0
MARGIN = 8.0
TITLE_H = 22.0
DUMMY_SIZE = 6.0
ROW_WIDTH = 1200.0  # clusters (one per stage) wrap into rows past this width


@dataclass
class Box:
    """A rectangle by its centre."""

    x: float
    y: float
    w: float
    h: float

    @property
    def left(self) -> float:
        return self.x - self.w / 2

    @property
    def top(self) -> float:
        return self.y - self.h / 2


@dataclass
class Layout:
    width: float
    height: float
    boxes: dict[str, Box] = field(default_factory=dict)
    # (edge, points, curved): layered routes are drawn as curves along the rank direction,
    # edges between clusters as straight lines
    routes: list[tuple[Edge, list[tuple[float, float]], bool]] = field(default_factory=list)
    clusters: list[tuple[Cluster, Box]] = field(default_factory=list)
    rankdir: str = "TB"


def node_size(node: Node) -> tuple[float, float]:
    chars = max((len(shown(line)) for line in node.label), default=1)
    w = chars * CHAR_W + 2 * PAD_X
    h = max(len(node.label), 1) * LINE_H + 2 * PAD_Y
    if node.shape == "ellipse":
        w, h = w * 1.2 + 6, h * 1.15
    return w, h


def layout(graph: Graph) -> Layout:
    """Positions of every node, cluster and edge route of ``graph``, in pixels."""
    lr = graph.rankdir == "LR"
    groups: list[tuple[Cluster | None, list[str]]] = []
    loose = [n.id for n in graph.nodes.values() if n.cluster is None]
    if loose:
        groups.append((None, loose))
    for c in graph.clusters:
        members = [n.id for n in graph.nodes.values() if n.cluster == c.id]
        if members:
            groups.append((c, members))
    sizes = {}
    for n in graph.nodes.values():
        w, h = node_size(n)
        sizes[n.id] = (w, h) if not lr else (h, w)  # (across, along)
    group_of = {nid: k for k, (_, members) in enumerate(groups) for nid in members}
    result = Layout(0, 0, rankdir=graph.rankdir)
    top = MARGIN
    cursor = MARGIN
    along_max = top
    across_max = cursor
    local_edges: dict[int, list[Edge]] = {k: [] for k in range(len(groups))}
    for e in graph.edges:
        if e.src in group_of and e.dst in group_of and group_of[e.src] == group_of[e.dst] and e.src != e.dst:
            local_edges[group_of[e.src]].append(e)
    for k, (cluster, members) in enumerate(groups):
        inset = CLUSTER_PAD if cluster else 0.0
        head = CLUSTER_LABEL_H if cluster else 0.0
        g = _Layered(members, local_edges[k], sizes)
        across, along = g.run()
        if cluster:
            across = max(across, len(shown(cluster.label)) * CHAR_W + 2 * PAD_X - 2 * inset)
        if not lr and cursor > MARGIN and cursor + across + 2 * inset > ROW_WIDTH:
            top, cursor = along_max + GROUP_GAP, MARGIN  # many stages: start a new row
        for nid, (a, b) in g.pos.items():
            if nid in graph.nodes:
                wa, wb = sizes[nid]
                result.boxes[nid] = _box(cursor + inset + a, top + head + inset + b, wa, wb, lr)
        for e, pts in g.routes:
            result.routes.append((e, [_point(cursor + inset + a, top + head + inset + b, lr) for a, b in pts], True))
        if cluster:
            result.clusters.append((cluster, _box(cursor + (across + 2 * inset) / 2,
                                                  top + (along + 2 * inset + head) / 2,
                                                  across + 2 * inset, along + 2 * inset + head, lr)))
        cursor += across + 2 * inset + GROUP_GAP
        across_max = max(across_max, cursor)
        along_max = max(along_max, top + head + along + 2 * inset)
    for e in graph.edges:
        if e.src in group_of and e.dst in group_of and group_of[e.src] != group_of[e.dst]:
            a, b = result.boxes[e.src], result.boxes[e.dst]
            result.routes.append((e, [_clip(a, (b.x, b.y)), _clip(b, (a.x, a.y))], False))
    across_total = max(across_max - GROUP_GAP + MARGIN, 2 * MARGIN)
    along_total = along_max + MARGIN
    result.width, result.height = (along_total, across_total) if lr else (across_total, along_total)
    if graph.title:  # the title sits on top whatever the direction
        _shift_down(result, TITLE_H)
        result.width = max(result.width, len(shown(graph.title)) * CHAR_W + 2 * MARGIN)
    return result


def _shift_down(result: Layout, dy: float) -> None:
    for b in [*result.boxes.values(), *(box for _, box in result.clusters)]:
        b.y += dy
    result.routes = [(e, [(x, y + dy) for x, y in pts], curved) for e, pts, curved in result.routes]
    result.height += dy


def _box(a: float, b: float, wa: float, wb: float, lr: bool) -> Box:
    return Box(b, a, wb, wa) if lr else Box(a, b, wa, wb)


def _point(a: float, b: float, lr: bool) -> tuple[float, float]:
    return (b, a) if lr else (a, b)


def _clip(box: Box, toward: tuple[float, float]) -> tuple[float, float]:
    """Where the segment from the box's centre toward a point leaves the box."""
    dx, dy = toward[0] - box.x, toward[1] - box.y
    if dx == 0 and dy == 0:
        return box.x, box.y
    tx = (box.w / 2) / abs(dx) if dx else float("inf")
    ty = (box.h / 2) / abs(dy) if dy else float("inf")
    t = min(tx, ty, 1.0)
    return box.x + dx * t, box.y + dy * t


def isotonic_place(targets: list[float], sizes: list[float], gap: float) -> list[float]:
    """Centres closest (least squares) to ``targets`` that keep the order and never overlap.

    Shifting each centre by the room the boxes before it need turns the spacing constraint
    into "non-decreasing", which pool-adjacent-violators solves exactly.
    """
    offs = [0.0]
    for i in range(1, len(targets)):
        offs.append(offs[-1] + (sizes[i - 1] + sizes[i]) / 2 + gap)
    blocks: list[list[float]] = []
    for t, o in zip(targets, offs):
        blocks.append([t - o, 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, c = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += c
    fitted: list[float] = []
    for s, c in blocks:
        fitted.extend([s / c] * int(c))
    return [y + o for y, o in zip(fitted, offs)]


class _Layered:
    """One connected group laid out top to bottom; coordinates are (across, along)."""

    def __init__(self, nodes: list[str], edges: list[Edge], sizes: dict[str, tuple[float, float]]):
        self.nodes = list(nodes)
        self.edges = edges
        self.size = dict(sizes)
        self.pos: dict[str, tuple[float, float]] = {}
        self.routes: list[tuple[Edge, list[tuple[float, float]]]] = []

    def run(self) -> tuple[float, float]:
        oriented = self._break_cycles()
        rank = self._rank(oriented)
        chains, succ, pred = self._dummies(oriented, rank)
        layers = self._order(rank, succ, pred)
        across = self._across(layers, succ, pred)
        along, extent = self._along(layers, chains)
        for nid in rank:
            self.pos[nid] = (across[nid], along[nid])
        for (e, flipped), chain in zip(oriented, chains):
            pts = [(across[n], along[n]) for n in chain]
            first, last = chain[0], chain[-1]
            pts[0] = (pts[0][0], pts[0][1] + self.size[first][1] / 2)
            pts[-1] = (pts[-1][0], pts[-1][1] - self.size[last][1] / 2)
            self.routes.append((e, pts[::-1] if flipped else pts))
        width = max((across[n] + self.size[n][0] / 2 for n in rank), default=0.0)
        return width, extent

    def _break_cycles(self) -> list[tuple[Edge, bool]]:
        """Edges oriented downward; an edge closing a cycle is drawn reversed (flipped)."""
        out_edges: dict[str, list[Edge]] = {n: [] for n in self.nodes}
        for e in self.edges:
            out_edges[e.src].append(e)
        state: dict[str, int] = {}
        back: set[int] = set()
        for start in self.nodes:
            if start in state:
                continue
            stack = [(start, iter(out_edges[start]))]
            state[start] = 1
            while stack:
                node, it = stack[-1]
                e = next(it, None)
                if e is None:
                    state[node] = 2
                    stack.pop()
                elif state.get(e.dst) == 1:
                    back.add(id(e))
                elif e.dst not in state:
                    state[e.dst] = 1
                    stack.append((e.dst, iter(out_edges[e.dst])))
        return [(e, id(e) in back) for e in self.edges]

    def _rank(self, oriented: list[tuple[Edge, bool]]) -> dict[str, int]:
        preds: dict[str, list[str]] = {n: [] for n in self.nodes}
        succs: dict[str, list[str]] = {n: [] for n in self.nodes}
        for e, flipped in oriented:
            a, b = (e.dst, e.src) if flipped else (e.src, e.dst)
            preds[b].append(a)
            succs[a].append(b)
        indeg = {n: len(preds[n]) for n in self.nodes}
        ready = [n for n in self.nodes if indeg[n] == 0]
        rank: dict[str, int] = {}
        while ready:
            n = ready.pop(0)
            rank[n] = max((rank[p] + 1 for p in preds[n]), default=0)
            for s in succs[n]:
                indeg[s] -= 1
                if indeg[s] == 0:
                    ready.append(s)
        # a source feeding only deep nodes sits just above the nearest of them
        for n in self.nodes:
            if not preds[n] and succs[n]:
                rank[n] = max(rank[n], min(rank[s] for s in succs[n]) - 1)
        return {n: rank[n] for n in self.nodes}

    def _dummies(self, oriented, rank):
        succ: dict[str, list[str]] = {n: [] for n in self.nodes}
        pred: dict[str, list[str]] = {n: [] for n in self.nodes}
        chains: list[list[str]] = []
        for k, (e, flipped) in enumerate(oriented):
            a, b = (e.dst, e.src) if flipped else (e.src, e.dst)
            chain = [a]
            for r in range(rank[a] + 1, rank[b]):
                d = f"\0dummy{k}.{r}"
                rank[d] = r
                self.size[d] = (DUMMY_SIZE, 0.0)
                succ[d], pred[d] = [], []
                chain.append(d)
            chain.append(b)
            for u, v in pairwise(chain):
                succ[u].append(v)
                pred[v].append(u)
            chains.append(chain)
        return chains, succ, pred

    def _order(self, rank, succ, pred) -> list[list[str]]:
        seen: dict[str, int] = {}

        def visit(n: str) -> None:
            stack = [n]
            while stack:
                m = stack.pop()
                if m in seen:
                    continue
                seen[m] = len(seen)
                stack.extend(reversed(succ[m]))

        for n in self.nodes:
            if not pred[n]:
                visit(n)
        for n in rank:
            visit(n)
        depth = max(rank.values(), default=-1) + 1
        layers: list[list[str]] = [[] for _ in range(depth)]
        for n in sorted(rank, key=lambda m: seen[m]):
            layers[rank[n]].append(n)
        best, best_cross = [list(layer) for layer in layers], _crossings(layers, succ)
        for _ in range(6):
            if best_cross == 0:
                break
            for r in range(1, depth):
                _sort_by_barycenter(layers[r], layers[r - 1], pred)
            for r in range(depth - 2, -1, -1):
                _sort_by_barycenter(layers[r], layers[r + 1], succ)
            cross = _crossings(layers, succ)
            if cross < best_cross:
                best, best_cross = [list(layer) for layer in layers], cross
        return best

    def _across(self, layers, succ, pred) -> dict[str, float]:
        x: dict[str, float] = {}
        for layer in layers:
            targets = [0.0] * len(layer)
            for n, v in zip(layer, isotonic_place(targets, [self.size[n][0] for n in layer], NODE_GAP)):
                x[n] = v
        for _ in range(8):
            for r in range(1, len(layers)):
                self._pull(layers[r], x, pred)
            for r in range(len(layers) - 2, -1, -1):
                self._pull(layers[r], x, succ)
        low = min((x[n] - self.size[n][0] / 2 for n in x), default=0.0)
        return {n: v - low for n, v in x.items()}

    def _pull(self, layer: list[str], x: dict[str, float], nbrs: dict[str, list[str]]) -> None:
        targets = [sum(x[m] for m in nbrs[n]) / len(nbrs[n]) if nbrs[n] else x[n] for n in layer]
        for n, v in zip(layer, isotonic_place(targets, [self.size[n][0] for n in layer], NODE_GAP)):
            x[n] = v

    def _along(self, layers, chains) -> tuple[dict[str, float], float]:
        labelled = {n for e, chain in zip(self.edges, chains) if e.label for n in chain[:-1]}
        y: dict[str, float] = {}
        top = 0.0
        for layer in layers:
            h = max((self.size[n][1] for n in layer), default=0.0)
            for n in layer:
                y[n] = top + h / 2
            gap = RANK_GAP + (LABEL_GAP if any(n in labelled for n in layer) else 0.0)
            top += h + gap
        return y, max(top - RANK_GAP, 0.0)


def _sort_by_barycenter(layer: list[str], fixed: list[str], nbrs: dict[str, list[str]]) -> None:
    where = {n: k for k, n in enumerate(fixed)}
    cur = {n: k for k, n in enumerate(layer)}

    def key(n: str) -> float:
        ks = [where[m] for m in nbrs[n] if m in where]
        return sum(ks) / len(ks) if ks else float(cur[n]) * len(fixed) / max(len(layer), 1)

    layer.sort(key=key)


def _crossings(layers: list[list[str]], succ: dict[str, list[str]]) -> int:
    total = 0
    for upper, lower in pairwise(layers):
        where = {n: k for k, n in enumerate(lower)}
        pairs = [(i, where[m]) for i, n in enumerate(upper) for m in succ[n] if m in where]
        for i, (a, b) in enumerate(pairs):
            for c, d in pairs[i + 1:]:
                if (a - c) * (b - d) < 0:
                    total += 1
    return total
