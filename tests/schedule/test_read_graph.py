"""TVM's read graph utilities: create_read_graph, post_dfs_order, create_feed_graph."""

from __future__ import annotations

from tessel import te
from tessel.schedule.graph import create_feed_graph, create_read_graph, post_dfs_order


def _diamond():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    C = te.compute((8,), lambda i: A[i] * 2, name="C")
    D = te.compute((8,), lambda i: B[i] + C[i] + A[i], name="D")
    return A, B, C, D


def test_read_graph_lists_each_operations_inputs():
    A, B, C, D = _diamond()
    g = create_read_graph([D.op])
    assert set(map(id, g)) == {id(A.op), id(B.op), id(C.op), id(D.op)}
    assert [t.name for t in g[D.op]] == ["B", "C", "A"]
    assert g[A.op] == []


def test_post_dfs_order_puts_producers_first():
    A, B, C, D = _diamond()
    order = post_dfs_order([D.op], create_read_graph([D.op]))
    names = [op.name for op in order]
    assert names == ["A", "B", "C", "D"]
    for k, op in enumerate(order):
        for t in op.input_tensors():
            assert any(t.op is o for o in order[:k]), f"{t.name} must come before {op.name}"


def test_post_dfs_order_follows_the_given_graph():
    """A graph with an edge removed gives an order without what only that edge reached."""
    A, B, C, D = _diamond()
    g = create_read_graph([D.op])
    g[D.op] = [B]
    assert [op.name for op in post_dfs_order([D.op], g)] == ["A", "B", "D"]


def test_feed_graph_inverts_the_read_graph():
    A, B, C, D = _diamond()
    feed = create_feed_graph(create_read_graph([D.op]))
    assert sorted(op.name for op in feed[A]) == ["B", "C", "D"]
    assert [op.name for op in feed[B]] == ["D"]
    assert D not in feed
