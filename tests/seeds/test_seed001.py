"""Seed 001 (the operational model): its programs verbatim under ``import tessel as tvm``.

Example 5 is illegal after step 2 and legal again after step 3; the schedule tree, the
dataflow graph and the IterVar-relation DAG are checked after each step, and every program
that lowers is run on both targets against NumPy.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from helpers import check, rand

import tessel as tvm

# ---- the seed's code, copied verbatim ------------------------------------------------------
EXAMPLE5_STEPS_1_2 = """
A = tvm.placeholder((M, N), name='A')
B = tvm.compute((M, N), lambda bi, bj : A[bi, bj] + 1, name='B')
C = tvm.compute((M, N), lambda ci, cj : B[ci, cj] * 3, name='C')

s = tvm.create_schedule(C.op)

# step 1
s[B].compute_at(s[C], s[C].op.axis[0])

# step 2
BL = s.cache_read(B, "local", readers=[C])

print(tvm.lower(s, [A, B], simple_mode=True))
"""

EXAMPLE5_STEP_1 = """
A = tvm.placeholder((M, N), name='A')
B = tvm.compute((M, N), lambda bi, bj : A[bi, bj] + 1, name='B')
C = tvm.compute((M, N), lambda ci, cj : B[ci, cj] * 3, name='C')

s = tvm.create_schedule(C.op)

# step 1
s[B].compute_at(s[C], s[C].op.axis[0])
"""

EXAMPLE5_FIXED = """
A = tvm.placeholder((M, N), name='A')
B = tvm.compute((M, N), lambda bi, bj : A[bi, bj] + 1, name='B')
C = tvm.compute((M, N), lambda ci, cj : B[ci, cj] * 3, name='C')

s = tvm.create_schedule(C.op)

# step 1
s[B].compute_at(s[C], s[C].op.axis[0])

# step 2
BL = s.cache_read(B, "local", readers=[C])

# step 3 (The above schedule is illegal. This step makes it legal).
s[BL].compute_at(s[C], s[C].op.axis[0])
"""

TENSOR_EXPRESSION = """
A = tvm.placeholder((m,n))
B = tvm.compute((m, n), lambda i, j: A[i,j] + 1)
C = tvm.compute((m, n), lambda i, j: B[i,j] * 2)
s = tvm.create_schedule(C.op)
i0, j0 = s[C].op.axis
j1o, j1i = s[C].split(j0, 2)
s[C].reorder(j1i, j1o)
"""

RFACTOR = """
k = tvm.reduce_axis((0, m), "k")
B = tvm.compute((n,), lambda i: tvm.sum(A[i, k], axis=k), name="B")
...
ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
BF = s.rfactor(B, ki)
"""

M, N = 7, 5


def run(code: str, **env) -> dict:
    ns = {"tvm": tvm, "M": M, "N": N, **env}
    exec(code, ns)
    return ns


def _example5_values(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return a + 1, (a + 1) * 3


# ---- Example 5 --------------------------------------------------------------------------
STEP1_TREE = """\
root
  stage C [output]
    for ci
      stage B
        for bi
          for bj
      for cj"""

STEP2_TREE = """\
root
  stage B.local [local]
    for ax0
      for ax1
  stage C [output]
    for ci
      stage B
        for bi
          for bj
      for cj"""

STEP3_TREE = """\
root
  stage C [output]
    for ci
      stage B
        for bi
          for bj
      stage B.local [local]
        for ax0
          for ax1
      for cj"""


C_DAG = "IterVar-relation DAG of C\n  root ci: data [0, 7)\n  root cj: data [0, 5)\n  leaves: ci, cj"
B_DAG = "IterVar-relation DAG of B\n  root bi: data [0, 7)\n  root bj: data [0, 5)\n  leaves: bi, bj"


def test_example5_step1_is_legal_and_computes_the_right_values():
    ns = run(EXAMPLE5_STEP_1)
    s, A, B, C = ns["s"], ns["A"], ns["B"], ns["C"]
    assert str(s.schedule_tree()) == STEP1_TREE
    assert str(s[C].itervar_dag()) == C_DAG and str(s[B].itervar_dag()) == B_DAG
    assert s.violations() == []
    a = rand(M, N)
    b, c = _example5_values(a)
    check(s, [A, B, C], [a], [b, c])


def test_example5_step2_is_illegal_explained_with_a_fix():
    with pytest.raises(tvm.ScheduleError) as info:
        run(EXAMPLE5_STEPS_1_2)
    err = info.value
    assert err.explanation.startswith(
        "B is attached inside C's loop over ci (C.op.axis[0]), but its new reader B.local sits at the root, "
        "above that loop, so B.local would read B before it exists"
    )
    assert "LCA(B, B.local) is the root" in err.explanation
    assert err.fix == "s[B_local].compute_at(s[C], C.op.axis[0])"
    assert "suggested fix: s[B_local].compute_at(s[C], C.op.axis[0])" in str(err)
    assert err.rule == "lca"
    assert set(err.fix_names) == {"B_local", "C"}


def test_example5_step2_structures():
    ns = run(EXAMPLE5_STEP_1)
    s, B, C = ns["s"], ns["B"], ns["C"]
    BL = s.cache_read(B, "local", readers=[C])
    assert str(s.schedule_tree()) == STEP2_TREE
    assert str(s[C].itervar_dag()) == C_DAG and str(s[B].itervar_dag()) == B_DAG
    assert str(s.dataflow_graph()) == (
        "dataflow graph\n  A [placeholder]\n  B\n  B.local [local]\n  C [output]\n"
        "  A -> B\n  B -> B.local\n  B.local -> C"
    )
    tree = s.schedule_tree()
    # seed 001: LCA(BL, C) is above LCA(B, C)
    lca_bl_c = tree.lca(tree.stage_node(s[BL]), tree.innermost(s[C]))
    lca_b_c = tree.lca(tree.stage_node(s[B]), tree.innermost(s[C]))
    assert lca_bl_c is tree.root
    assert lca_b_c is tree.loop_node(s[C], C.op.axis[0])
    assert [v.rule for v in s.violations()] == ["lca"]
    assert s[BL].scope == "local" and s[BL].created_by == "cache_read(B, 'local')"


def test_example5_fix_from_the_error_makes_it_legal():
    ns = run(EXAMPLE5_STEP_1)
    s, A, B, C = ns["s"], ns["A"], ns["B"], ns["C"]
    s.cache_read(B, "local", readers=[C])
    with pytest.raises(tvm.ScheduleError) as info:
        tvm.lower(s, [A, B], simple_mode=True)
    exec(info.value.fix, {"s": s, **info.value.fix_names})
    assert str(s.schedule_tree()) == STEP3_TREE
    a = rand(M, N)
    b, c = _example5_values(a)
    check(s, [A, B, C], [a], [b, c])


def test_example5_step3_verbatim():
    ns = run(EXAMPLE5_FIXED)
    s, A, B, C, BL = ns["s"], ns["A"], ns["B"], ns["C"], ns["BL"]
    assert str(s.schedule_tree()) == STEP3_TREE
    assert str(s[C].itervar_dag()) == C_DAG and str(s[B].itervar_dag()) == B_DAG
    text = str(tvm.lower(s, [A, B], simple_mode=True))
    assert "B.local" in text and "scope=local" in text
    a = rand(M, N)
    b, c = _example5_values(a)
    check(s, [A, B, C], [a], [b, c])
    check(s, [A, C], [a], [c])
    assert str(s[BL].itervar_dag()) == (
        "IterVar-relation DAG of B.local\n  root ax0: data [0, 7)\n  root ax1: data [0, 5)\n  leaves: ax0, ax1"
    )


# ---- the "Tensor Expression" example: split and reorder ------------------------------------
def test_tensor_expression_split_reorder():
    m, n = 6, 5
    ns = run(TENSOR_EXPRESSION, m=m, n=n)
    s, A, C = ns["s"], ns["A"], ns["C"]
    assert str(s.dataflow_graph()) == (
        "dataflow graph\n  placeholder [placeholder]\n  compute\n  compute [output]\n"
        "  placeholder -> compute\n  compute -> compute"
    )
    assert str(s.schedule_tree()) == (
        "root\n  stage compute\n    for i\n      for j\n"
        "  stage compute [output]\n    for i\n      for j.inner\n        for j.outer"
    )
    assert str(s[C].itervar_dag()) == (
        "IterVar-relation DAG of compute\n  root i: data [0, 6)\n  root j: data [0, 5)\n"
        "  split j -> j.outer, j.inner (factor 2)\n  leaves: i, j.inner, j.outer"
    )
    dag = s[C].itervar_dag()
    assert [dag.role(iv) for iv in s[C].all_iter_vars] == ["root+leaf", "root", "leaf", "leaf"]
    a = rand(m, n)
    check(s, [A, C], [a], [(a + 1) * 2])


def test_tensor_expression_structures_step_by_step():
    m, n = 4, 6
    A = tvm.placeholder((m, n))
    B = tvm.compute((m, n), lambda i, j: A[i, j] + 1)
    C = tvm.compute((m, n), lambda i, j: B[i, j] * 2)
    s = tvm.create_schedule(C.op)
    i0, j0 = s[C].op.axis
    assert str(s[C].itervar_dag()).endswith("leaves: i, j")
    j1o, j1i = s[C].split(j0, 2)
    assert str(s.schedule_tree()).endswith("  stage compute [output]\n    for i\n      for j.outer\n        for j.inner")
    s[C].reorder(j1i, j1o)
    assert str(s.schedule_tree()).endswith("  stage compute [output]\n    for i\n      for j.inner\n        for j.outer")
    assert str(s[C].itervar_dag()).endswith("leaves: i, j.inner, j.outer")


# ---- the rfactor page ------------------------------------------------------------------
def test_rfactor_page():
    m, n = 50, 6
    A = tvm.placeholder((n, m), name="A")
    code = RFACTOR.replace("...", "s = tvm.create_schedule(B.op)")
    ns = run(code, m=m, n=n, A=A)
    s, B, BF = ns["s"], ns["B"], ns["BF"]
    assert BF.op.name == "B.rf" and BF.shape[0].value == 16
    assert str(s.dataflow_graph()) == (
        "dataflow graph\n  A [placeholder]\n  B.rf\n  B [output]\n  A -> B.rf\n  B.rf -> B"
    )
    assert str(s.schedule_tree()) == (
        "root\n  stage B.rf\n    for k.inner\n      for i\n        for k.outer (reduce)\n"
        "  stage B [output]\n    for i\n      for k.inner.v (reduce)"
    )
    assert str(s[BF].itervar_dag()) == (
        "IterVar-relation DAG of B.rf\n"
        "  root k.inner: data [0, 16), rfactor of B's reduction loop k.inner\n"
        "  root i: data [0, 6)\n  root k.outer: reduce [0, 4)\n  leaves: k.inner, i, k.outer"
    )
    assert str(s[B].itervar_dag()) == (
        "IterVar-relation DAG of B\n  root i: data [0, 6)\n  root k.inner.v: reduce [0, 16)\n  leaves: i, k.inner.v"
    )
    a = rand(n, m)
    check(s, [A, B], [a], [a.sum(axis=1)], rtol=1e-5)


def test_rfactor_page_then_tvm_tutorial_steps():
    """The tutorial continues: split B's axis, compute B.rf at B's new reduction loop."""
    m, n = 40, 10
    A = tvm.placeholder((n, m), name="A")
    ns = run(RFACTOR.replace("...", "s = tvm.create_schedule(B.op)"), m=m, n=n, A=A)
    s, B, BF = ns["s"], ns["B"], ns["BF"]
    xo, xi = s[B].split(s[B].op.axis[0], factor=4)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    assert str(s.schedule_tree()) == (
        "root\n  stage B [output]\n    for i.outer\n      for i.inner\n        for k.inner.v (reduce)\n"
        "          stage B.rf\n            for k.inner\n              for i\n                for k.outer (reduce)"
    )
    a = rand(n, m)
    check(s, [A, B], [a], [a.sum(axis=1)], rtol=1e-5)


# ---- every complete TE program of seeds 000 and 001 runs verbatim -------------------------
SEED000_EX4 = """
C = tvm.compute((5, 16), lambda i, j : tvm.const(5), name='C')
D = tvm.compute((4, 5, 16), lambda di, dj, dk : C[dj, dk]*2, name='D')
s = tvm.create_schedule(D.op)
s[C].compute_at(s[D], D.op.axis[2])
"""

SEED000_EX5 = """
C = tvm.compute((5, 16), lambda i, j : tvm.const(5), name='C')
D = tvm.compute((5, 16), lambda i, j : C[i, j]*2, name='D')
s = tvm.create_schedule(D.op)
d_o, d_i = s[D].split(D.op.axis[1], factor=8)
s[C].compute_at(s[D], d_i)
"""

SEED000_CHAIN = """
C = tvm.compute((5, 16), lambda i, j : tvm.const(5), name='C')
D = tvm.compute((5, 16), lambda di, dj : C[di, dj]*2, name='D')
E = tvm.compute((5, 16), lambda ei, ej : D[ei, ej]*4, name='E')
s = tvm.create_schedule(E.op)
s[C].compute_at(s[D], D.op.axis[1])
s[D].compute_at(s[E], E.op.axis[1])
"""


@pytest.mark.parametrize(("code", "out", "want"), [
    (SEED000_EX4, "D", np.full((4, 5, 16), 10, "int32")),
    (SEED000_EX5, "D", np.full((5, 16), 10, "int32")),
    (SEED000_CHAIN, "E", np.full((5, 16), 40, "int32")),
])
def test_seed000_programs_verbatim(code, out, want):
    ns = run(code)
    assert ns["s"].violations() == []
    check(ns["s"], [ns[out]], [], [want])


SEED_PROGRAMS = Path(__file__).parent / "seed_programs"  # copied verbatim from seeds 000 and 001


def _seed_blocks() -> list[str]:
    return [p.read_text() for p in sorted(SEED_PROGRAMS.glob("seed00[01]_*.txt"))]


def _document_blocks(root: Path) -> list[str]:
    """The complete TE programs of the seed documents: code blocks that build a schedule."""
    blocks = []
    for f in sorted(root.glob("00[01]_*.txt")):
        for b in re.findall(r"```[a-z]*\n(.*?)```", f.read_text(), re.S):
            if "tvm.create_schedule" in b and "..." not in b:
                blocks.append(b)
    return blocks


def test_the_copied_seed_programs_are_the_documents_blocks():
    """The copies in tests/ are what the seed documents say, where the documents are at hand."""
    root = Path(__file__).resolve().parents[3] / "shared" / "seeds"
    if not root.is_dir():
        pytest.skip(f"the seed documents are not at {root}; the copies in {SEED_PROGRAMS} are still run")
    copies = ["".join(b.splitlines(True)[2:]) for b in _seed_blocks()]
    assert copies == _document_blocks(root)


def test_every_complete_seed_program_runs_verbatim(capsys):
    """Example 5 steps 1-2 must be refused (it is the seed's illegal schedule); all others lower and
    compute what a default schedule of the same tensors computes."""
    blocks = _seed_blocks()
    assert len(blocks) == 10, f"expected the 10 programs of seeds 000 and 001 in {SEED_PROGRAMS}"
    for code in blocks:
        illegal = "cache_read" in code and "step 3" not in code
        if illegal and "tvm.lower" in code:
            with pytest.raises(tvm.ScheduleError, match="B is attached inside C's loop over ci"):
                run(code, m=6, n=5)
            continue
        ns = run(code, m=6, n=5)
        s = ns["s"]
        assert [v.rule for v in s.violations()] == (["lca"] if illegal else [])
        if illegal:
            continue
        outs = [op.output(0) for op in s.outputs]
        ins = [st.op.output(0) for st in s.stages if st.is_placeholder]
        data = [rand(*[int(d) for d in t.shape], dtype=str(t.dtype)) for t in ins]
        ref = tvm.build(tvm.create_schedule([t.op for t in outs]), ins + outs, target="python")
        want = [np.zeros([int(d) for d in t.shape], str(t.dtype)) for t in outs]
        ref(*data, *want)
        check(s, ins + outs, data, want)
