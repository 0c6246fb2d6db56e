"""The pure-Python layout: boxes never overlap, edges run from their source to their target in
the rank direction, clusters enclose their members, cycles do not break it."""

from __future__ import annotations

import random
from itertools import combinations

import pytest

from tessel.viz.dot import Graph
from tessel.viz.layout import NODE_GAP, isotonic_place, layout


def _overlap(a, b) -> bool:
    return abs(a.x - b.x) * 2 < a.w + b.w and abs(a.y - b.y) * 2 < a.h + b.h


def _tree(n: int, seed: int) -> Graph:
    rng = random.Random(seed)
    g = Graph("t")
    g.add_node("n0", ["root"])
    for k in range(1, n):
        g.add_node(f"n{k}", [f"node {k}", "x" * rng.randint(1, 20)])
        g.add_edge(f"n{rng.randrange(k)}", f"n{k}", "lab" if k % 3 == 0 else "")
    return g


@pytest.mark.parametrize("seed", range(5))
def test_tree_layout_is_tidy(seed):
    g = _tree(25, seed)
    lay = layout(g)
    boxes = lay.boxes
    assert set(boxes) == set(g.nodes)
    for a, b in combinations(boxes.values(), 2):
        assert not _overlap(a, b)
    for b in boxes.values():
        assert 0 <= b.left and b.left + b.w <= lay.width + 0.01
        assert 0 <= b.top and b.top + b.h <= lay.height + 0.01
    for edge, pts, curved in lay.routes:
        src, dst = boxes[edge.src], boxes[edge.dst]
        assert curved
        assert src.y < dst.y  # parents above children
        assert pts[0] == pytest.approx((src.x, src.y + src.h / 2))
        assert pts[-1] == pytest.approx((dst.x, dst.y - dst.h / 2))


def test_long_edges_bend_around_boxes():
    g = Graph("g")
    for n in "abcd":
        g.add_node(n, [n * 5])
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    g.add_edge("c", "d")
    g.add_edge("a", "d")  # spans three layers: two dummy bends
    lay = layout(g)
    route = next(pts for e, pts, _ in lay.routes if (e.src, e.dst) == ("a", "d"))
    assert len(route) == 4
    for x, y in route[1:-1]:
        for n in "bc":
            b = lay.boxes[n]
            assert not (abs(x - b.x) * 2 < b.w and abs(y - b.y) * 2 < b.h)


def test_cycles_and_self_loops_are_laid_out():
    g = Graph("g")
    for n in "abc":
        g.add_node(n, [n])
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    g.add_edge("c", "a")
    g.add_edge("b", "b")
    lay = layout(g)
    assert set(lay.boxes) == {"a", "b", "c"}
    back = next(pts for e, pts, _ in lay.routes if (e.src, e.dst) == ("c", "a"))
    assert back[-1][1] < back[0][1]  # drawn upward, still ending at a


def test_left_to_right():
    g = Graph("g", rankdir="LR")
    for n in "abc":
        g.add_node(n, [n * 3])
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    lay = layout(g)
    xs = [lay.boxes[n].x for n in "abc"]
    assert xs == sorted(xs) and len(set(xs)) == 3
    assert len({round(lay.boxes[n].y, 3) for n in "abc"}) == 1


def test_clusters_enclose_their_nodes_and_do_not_overlap():
    g = Graph("g", title="a title")
    for c in ("X", "Y"):
        g.add_cluster(c, f"cluster {c} with a long label")
        for k in range(3):
            g.add_node(f"{c}{k}", [f"{c}{k}"], cluster=c)
        g.add_edge(f"{c}0", f"{c}1")
        g.add_edge(f"{c}0", f"{c}2")
    g.add_edge("X2", "Y0")  # across clusters: a straight line
    lay = layout(g)
    (cx, bx), (cy, by) = lay.clusters
    assert not _overlap(bx, by)
    for cluster, box in lay.clusters:
        for k in range(3):
            n = lay.boxes[f"{cluster.id}{k}"]
            assert box.left <= n.left and n.left + n.w <= box.left + box.w
            assert box.top <= n.top and n.top + n.h <= box.top + box.h
    straight = [pts for e, pts, curved in lay.routes if not curved]
    assert len(straight) == 1 and len(straight[0]) == 2
    assert min(b.top for b in lay.boxes.values()) > 20  # below the title


def test_isotonic_place_keeps_order_and_gaps():
    rng = random.Random(3)
    for _ in range(200):
        n = rng.randint(1, 8)
        targets = [rng.uniform(-50, 50) for _ in range(n)]
        sizes = [rng.uniform(5, 40) for _ in range(n)]
        xs = isotonic_place(targets, sizes, NODE_GAP)
        for i in range(n - 1):
            assert xs[i + 1] - xs[i] >= (sizes[i] + sizes[i + 1]) / 2 + NODE_GAP - 1e-9
        # optimal: the mean displacement of a block of touching boxes is zero
        assert sum(xs) / n == pytest.approx(sum(targets) / n) or any(
            xs[i + 1] - xs[i] > (sizes[i] + sizes[i + 1]) / 2 + NODE_GAP + 1e-9 for i in range(n - 1))


def test_isotonic_place_is_exact_when_targets_fit():
    assert isotonic_place([0.0, 100.0, 300.0], [10, 10, 10], 5) == [0.0, 100.0, 300.0]
    assert isotonic_place([50.0, 50.0], [10, 10], 10) == [40.0, 60.0]


def test_many_clusters_wrap_into_rows():
    g = Graph("g")
    for c in range(8):
        g.add_cluster(f"c{c}", f"stage {c}")
        g.add_node(f"n{c}", ["x" * 40], cluster=f"c{c}")
    lay = layout(g)
    assert lay.width <= 1200 + 20
    boxes = [box for _, box in lay.clusters]
    assert len({round(b.top) for b in boxes}) > 1
    for a, b in combinations(boxes, 2):
        assert not _overlap(a, b)
    for b in lay.boxes.values():
        assert b.top + b.h <= lay.height
