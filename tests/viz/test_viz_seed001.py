"""Seed 001's figures, read back from the DOT of each view: the nodes, edges and labels the
figures show are there, step by step (the schedules come from the scripts in examples/)."""

from __future__ import annotations

import pytest
from viz_util import EXAMPLES, example_schedule, parse_dot, step

import tessel
from tessel import te, viz

# ---- "The Operational Model": split j by 2, then reorder j.inner before j.outer ------------


@pytest.fixture(scope="module")
def split_reorder():
    return example_schedule("seed001_split_reorder.py")


def test_split_reorder_dataflow_graph(split_reorder):
    d = parse_dot(viz.dataflow_graph(split_reorder).to_dot())
    for a, b in [("stage:A", "tensor:A"), ("tensor:A", "stage:B"), ("stage:B", "tensor:B"),
                 ("tensor:B", "stage:C"), ("stage:C", "tensor:C")]:
        assert d.has_edge(a, b), (a, b)
    assert len(d.edges) == 5
    assert d.label("tensor:B") == ["B", "(m, n)", "float32"]
    assert d.label("stage:A")[1] == "placeholder"
    assert "output" in d.label("stage:C") and "output" not in d.label("stage:B")


def test_split_reorder_itervar_graph(split_reorder):
    d = parse_dot(viz.itervar_graph(split_reorder, stage="C").to_dot())
    assert set(d.clusters) == {"C"}
    assert d.label("rel:C:0") == ["split", "factor=2"]
    assert d.has_edge("iv:C:j", "rel:C:0")
    assert d.has_edge("rel:C:0", "iv:C:j.outer", "outer")
    assert d.has_edge("rel:C:0", "iv:C:j.inner", "inner")
    # the reorder: j.inner is loop 1, j.outer loop 2; i untouched is a root and loop 0
    assert d.label("iv:C:i")[1:] == ["[0, m)", "root, loop 0"]
    assert d.label("iv:C:j.inner")[2] == "loop 1"
    assert d.label("iv:C:j.outer")[2] == "loop 2"
    assert d.label("iv:C:j")[2] == "root"  # split away: no longer a loop
    assert d.label("iv:C:j.outer")[1] == "[0, (n + 1)//2)"


def test_split_reorder_schedule_tree(split_reorder):
    d = parse_dot(viz.schedule_tree(split_reorder).to_dot())
    assert d.children("root") == ["stage:B", "stage:C"]
    assert d.children("stage:C") == ["loop:C:i"]
    assert d.children("loop:C:i") == ["loop:C:j.inner"]
    assert d.children("loop:C:j.inner") == ["loop:C:j.outer"]
    assert d.children("loop:C:j.outer") == []
    assert d.children("stage:B") == ["loop:B:i"]
    assert d.label("loop:C:i") == ["i", "[0, m)"]


def test_split_reorder_history(split_reorder):
    calls = [r.call for r in split_reorder.history]
    assert calls == ["create_schedule(C.op)", "s[C].split(j, 2)", "s[C].reorder(j.inner, j.outer)"]
    before = parse_dot(viz.itervar_graph(step(split_reorder, "split"), stage="C").to_dot())
    assert before.label("iv:C:j.outer")[2] == "loop 1"  # before the reorder


# ---- Example 5: compute_at, cache_read (illegal), compute_at (legal again) ----------------


@pytest.fixture(scope="module")
def example5():
    return example_schedule("seed001_example5.py")


def test_example5_records_three_steps(example5):
    prims = [r.primitive for r in example5.history]
    assert prims == ["create_schedule", "compute_at", "cache_read", "compute_at"]
    assert example5.history[2].code == 'BL = s.cache_read(B, "local", readers=[C])'
    lines = (EXAMPLES / "seed001_example5.py").read_text().splitlines()
    assert example5.history[2].where.endswith(f"seed001_example5.py:{lines.index(example5.history[2].code) + 1}")


def test_example5_step1_tree(example5):
    d = parse_dot(viz.schedule_tree(step(example5, "compute_at", 0)).to_dot())
    assert d.children("root") == ["stage:C"]
    assert d.has_edge("loop:C:ci", "stage:B", "compute_at")  # B hangs under C's first loop
    assert d.children("loop:C:ci") == ["stage:B", "loop:C:cj"]
    assert d.label("stage:B")[1] == "region [ci, ci + 1) x [0, N)"


def test_example5_step2_dataflow_has_cache_stage_between(example5):
    d = parse_dot(viz.dataflow_graph(step(example5, "cache_read")).to_dot())
    assert d.has_edge("tensor:B", "stage:B.local")
    assert d.has_edge("stage:B.local", "tensor:B.local")
    assert d.has_edge("tensor:B.local", "stage:C")
    assert not d.has_edge("tensor:B", "stage:C")
    assert "scope local" in d.label("tensor:B.local")


def test_example5_step2_tree_is_the_illegal_one(example5):
    snap = step(example5, "cache_read")
    d = parse_dot(viz.schedule_tree(snap).to_dot())
    assert d.parents("stage:B.local") == ["root"]  # B.local hangs under the root ...
    assert d.parents("stage:B") == ["loop:C:ci"]  # ... while B, which it reads, is inside C's loop
    assert "scope local" in d.label("stage:B.local")
    with pytest.raises(tessel.ScheduleError) as info:
        snap.verify()
    assert "B.local" in info.value.explanation
    assert info.value.fix and "compute_at" in info.value.fix


def test_example5_step3_tree_is_legal_again(example5):
    snap = step(example5, "compute_at", 1)
    d = parse_dot(viz.schedule_tree(snap).to_dot())
    assert d.children("root") == ["stage:C"]
    assert d.children("loop:C:ci") == ["stage:B", "stage:B.local", "loop:C:cj"]
    snap.verify()


# ---- rfactor --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rfactor():
    return example_schedule("seed001_rfactor.py")


def test_rfactor_split_before(rfactor):
    d = parse_dot(viz.itervar_graph(step(rfactor, "split"), stage="B").to_dot())
    assert d.label("rel:B:0") == ["split", "factor=16"]
    assert d.has_edge("iv:B:k", "rel:B:0")
    assert d.has_edge("rel:B:0", "iv:B:k.outer", "outer") and d.has_edge("rel:B:0", "iv:B:k.inner", "inner")
    assert "reduce" in d.label("iv:B:k.inner")


def test_rfactor_dataflow(rfactor):
    d = parse_dot(viz.dataflow_graph(rfactor).to_dot())
    assert d.has_edge("tensor:A", "stage:B.rf")
    assert d.has_edge("stage:B.rf", "tensor:B.rf")
    assert d.has_edge("tensor:B.rf", "stage:B")
    assert not d.has_edge("tensor:A", "stage:B")
    assert d.label("stage:B.rf")[1] == "reduction"
    assert d.label("stage:B.rf")[2].startswith("made by rfactor(B, k.inner")
    assert d.label("tensor:B.rf")[1] == "(16, n)"  # the factored axis comes first (factor_axis=0)


def test_rfactor_itervar_graph(rfactor):
    d = parse_dot(viz.itervar_graph(rfactor).to_dot())
    assert set(d.clusters) == {"B.rf", "B"}
    rf = d.label("iv:B.rf:k.inner")
    assert "reduce" not in rf and "root, loop 0" in rf  # now an ordinary, outermost axis
    assert any("rfactor" in line for line in rf)
    assert "reduce" in d.label("iv:B.rf:k.outer")
    assert "reduce" in d.label("iv:B:k.inner.v") and d.label("iv:B:k.inner.v")[1] == "[0, 16)"


# ---- what the tree draws besides placement ----------------------------------------------


def test_tree_shows_annotations_and_inlined_stages():
    n = te.var("n")
    A = te.placeholder((n, 64), name="A")
    B = te.compute((n, 64), lambda i, j: A[i, j] * 2, name="B")
    C = te.compute((n, 64), lambda i, j: B[i, j] + 1, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_inline()
    io, ii = s[C].split(C.op.axis[0], factor=4)
    s[C].parallel(io)
    s[C].unroll(ii)
    s[C].vectorize(C.op.axis[1])
    d = parse_dot(viz.schedule_tree(s).to_dot())
    assert d.label("stage:B") == ["B", "inlined into C"]
    assert d.nodes["stage:B"]["style"].split(",").count("dashed") == 1
    assert d.has_edge("root", "stage:B", "inline")
    assert d.children("stage:B") == []
    assert d.label("loop:C:i.outer")[2:] == ["parallel"]
    assert d.label("loop:C:i.inner")[2:] == ["unrolled"]
    assert d.label("loop:C:j")[2:] == ["vectorized"]


def test_tree_shows_thread_binding_and_reduction():
    A = te.placeholder((64, 32), name="A")
    k = te.reduce_axis((0, 32), name="k")
    B = te.compute((64,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=16)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    d = parse_dot(viz.schedule_tree(s).to_dot())
    assert d.label("loop:B:i.outer")[2:] == ["bind blockIdx.x"]
    assert d.label("loop:B:i.inner")[2:] == ["bind threadIdx.x"]
    assert d.label("loop:B:k") == ["k", "[0, 32)", "reduce"]


def test_views_of_a_schedule_inferbound_rejects_still_draw():
    """A view exists to debug a broken schedule: no loop ranges, but the picture and the reason."""
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    C = te.compute((8,), lambda i: B[i] * 2, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    s[C].compute_at(s[B], B.op.axis[0])  # a cycle of attachments
    d = parse_dot(viz.schedule_tree(s).to_dot())
    assert "note" in d.nodes and "no loop ranges" in d.label("note")[0]
    for st in ("stage:B", "stage:C"):  # neither can be placed: both hang under the root, in red
        assert d.has_edge("root", st, "detached")
        assert d.label(st)[1] == "detached: its compute_at attachments"
        assert d.nodes[st]["fillcolor"] == "#f8cecc"
    assert d.label("loop:B:i") == ["i", "[?]"]
    assert "<svg" in viz.schedule_tree(s).to_svg(engine="python")


def test_itervar_graph_stage_selection():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    assert set(parse_dot(viz.itervar_graph(s, stage=B).to_dot()).clusters) == {"B"}
    assert set(parse_dot(viz.itervar_graph(s, stage=s[B]).to_dot()).clusters) == {"B"}
    assert set(parse_dot(viz.itervar_graph(s, stage=[B.op]).to_dot()).clusters) == {"B"}
    with pytest.raises(tessel.TesselError, match="no stage named 'X'.*A, B"):
        viz.itervar_graph(s, stage="X")
    with pytest.raises(tessel.TesselError, match="needs a schedule"):
        viz.schedule_tree(B)


def test_fuse_in_the_itervar_graph():
    A = te.placeholder((8, 4), name="A")
    B = te.compute((8, 4), lambda i, j: A[i, j] + 1, name="B")
    s = te.create_schedule(B.op)
    f = s[B].fuse(*B.op.axis)
    d = parse_dot(viz.itervar_graph(s).to_dot())
    assert d.label("rel:B:0") == ["fuse"]
    assert d.has_edge("iv:B:i", "rel:B:0", "outer") and d.has_edge("iv:B:j", "rel:B:0", "inner")
    assert d.has_edge("rel:B:0", f"iv:B:{f.name}")
    assert d.label("iv:B:i.j.fused")[1:3] == ["[0, 32)", "loop 0"]


def test_singleton_and_rebase_in_the_itervar_graph():
    from tessel.ir import expr as E
    from tessel.schedule.relations import Rebase

    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    one = s[B].fuse()  # fusing nothing makes a loop of extent one
    (i,) = B.op.axis
    st = s[B]
    rebased = E.IterVar(None, E.Var("i.rb", i.dtype))
    st.all_iter_vars.append(rebased)
    st.relations.append(Rebase(i, rebased))
    st.leaf_iter_vars[st.leaf_iter_vars.index(i)] = rebased
    d = parse_dot(viz.itervar_graph(s).to_dot())
    assert d.label("rel:B:0") == ["singleton"] and d.has_edge("rel:B:0", f"iv:B:{one.name}")
    assert d.parents("rel:B:0") == []
    assert d.label("rel:B:1") == ["rebase"]
    assert d.has_edge("iv:B:i", "rel:B:1") and d.has_edge("rel:B:1", "iv:B:i.rb")
    assert d.label("iv:B:i.rb")[1:3] == ["[0, 8)", "loop 1"]
    assert d.label(f"iv:B:{one.name}")[1:3] == ["[0, 1)", "loop 0"]
