"""Misuse of the API: each error's class and the words that tell the user what to do."""

from __future__ import annotations

import pytest

import tessel
from tessel import te
from tessel.errors import BoundError, DefinitionError, LowerError, ScheduleError


def _ab():
    A = te.placeholder((8, 8), name="A")
    B = te.compute((8, 8), lambda i, j: A[i, j] + 1, name="B")
    return A, B


def test_wrong_number_of_indices_fails_at_definition():
    A = te.placeholder((8, 8), name="A")
    with pytest.raises(DefinitionError, match=r"tensor A has 2 dimension\(s\).*indexed with 1"):
        te.compute((8,), lambda i: A[i], name="B")
    with pytest.raises(DefinitionError, match=r"indexed with 3"):
        te.compute((8,), lambda i: A[i, i, i], name="B")


def test_compute_function_arity_must_match_shape():
    with pytest.raises(DefinitionError, match="one index argument per dimension"):
        te.compute((4, 4), lambda i: i, name="B")


def test_float_index_is_rejected():
    A = te.placeholder((8,), name="A")
    x = te.var("x", "float32")
    with pytest.raises(DefinitionError, match="indices must be integers"):
        A[x]


def test_integer_true_division_is_ambiguous():
    i = te.var("i")
    with pytest.raises(DefinitionError, match="//"):
        i / 2


def test_a_reduction_is_the_whole_body_or_one_inside_an_expression():
    """``sum + 1`` is a reduction finished by ``+ 1`` (te/test_finished_reductions.py); two
    reductions in one value are still refused, saying what to do."""
    A = te.placeholder((8,), name="A")
    k, r = te.reduce_axis((0, 8), name="k"), te.reduce_axis((0, 8), name="r")
    B = te.compute((1,), lambda i: te.sum(A[k], axis=k) + 1, name="B")
    assert B.op.body[0].finish is not None
    with pytest.raises(DefinitionError, match="whole body of a compute, or one reduction of one value"):
        te.compute((1,), lambda i: te.sum(A[k], axis=k) + te.max(A[r], axis=r), name="C")


def test_split_non_leaf_names_stage_and_axis():
    _, B = _ab()
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=2)
    with pytest.raises(ScheduleError, match=r"stage B: cannot split axis i: .*i\.outer, i\.inner"):
        s[B].split(B.op.axis[0], factor=2)


def test_split_foreign_axis():
    A, B = _ab()
    C = te.compute((8, 8), lambda i, j: B[i, j] * 2, name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"stage C: cannot split axis i: it belongs to stage B"):
        s[C].split(B.op.axis[0], factor=2)


@pytest.mark.parametrize("factor", [0, -3])
def test_non_positive_factor(factor):
    _, B = _ab()
    s = te.create_schedule(B.op)
    with pytest.raises(ScheduleError, match=rf"stage B: split factor of i must be positive, got {factor}"):
        s[B].split(B.op.axis[0], factor=factor)
    with pytest.raises(ScheduleError, match="nparts of j must be positive"):
        s[B].split(B.op.axis[1], nparts=factor)
    assert [iv.name for iv in s[B].leaf_iter_vars] == ["i", "j"]  # nothing changed


def test_split_needs_exactly_one_of_factor_nparts():
    _, B = _ab()
    s = te.create_schedule(B.op)
    with pytest.raises(ScheduleError, match="exactly one of factor= or nparts="):
        s[B].split(B.op.axis[0])


def test_reorder_repeated_axis():
    _, B = _ab()
    s = te.create_schedule(B.op)
    i, j = B.op.axis
    with pytest.raises(ScheduleError, match=r"stage B: reorder was given axis i more than once"):
        s[B].reorder(i, j, i)


def test_reorder_foreign_axis():
    A, B = _ab()
    C = te.compute((8, 8), lambda i, j: B[i, j] * 2, name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"stage C: cannot reorder axis j: it belongs to stage B"):
        s[C].reorder(C.op.axis[1], B.op.axis[1])


def test_fuse_non_adjacent():
    A = te.placeholder((4, 4, 4), name="A")
    B = te.compute((4, 4, 4), lambda i, j, k: A[i, j, k], name="B")
    s = te.create_schedule(B.op)
    i, j, k = B.op.axis
    with pytest.raises(ScheduleError, match=r"stage B: cannot fuse i and k: they are not adjacent.*reorder"):
        s[B].fuse(i, k)
    with pytest.raises(ScheduleError, match=r"cannot fuse k and i: they are not adjacent"):
        s[B].fuse(k, i)  # either order is accepted for adjacent loops (TVM), never for these


def test_compute_at_wrong_axis():
    A, B = _ab()
    C = te.compute((8, 8), lambda i, j: B[i, j] * 2, name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"stage B: compute_at target i is not a loop of stage C \(it is an axis of B\)"):
        s[B].compute_at(s[C], B.op.axis[0])


def test_compute_inline_reduction_or_output():
    A = te.placeholder((4, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    B = te.compute((4,), lambda i: te.sum(A[i, k], axis=k), name="B")
    C = te.compute((4,), lambda i: B[i] + 1, name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="stage B: a reduction cannot be inlined"):
        s[B].compute_inline()
    with pytest.raises(ScheduleError, match="stage C is an output"):
        s[C].compute_inline()


def test_missing_argument_is_named():
    A, B = _ab()
    s = te.create_schedule(B.op)
    with pytest.raises(LowerError, match="tensor A is read but .* add A to the argument list"):
        tessel.lower(s, [B])


def test_unbound_symbolic_size():
    n = te.var("n")
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * n.astype("float32"), name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(LowerError, match="symbolic size.*n"):
        tessel.lower(s, [A, B])


def test_stage_lookup_of_foreign_tensor():
    A, B = _ab()
    X = te.compute((3,), lambda i: i.astype("float32"), name="X")
    s = te.create_schedule(B.op)
    with pytest.raises(ScheduleError, match="X is not part of this schedule"):
        s[X]


def test_symbolic_bool_context():
    i = te.var("i")
    with pytest.raises(DefinitionError, match="if_then_else"):
        if i < 3:
            pass


def test_read_past_an_input_is_refused():
    A = te.placeholder((10,), name="A")
    B = te.compute((10,), lambda i: A[i] + A[i + 1], name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(BoundError, match=r"stage B reads A\[i \+ 1\] outside A's shape \(10\).*\[1, 10\].*if_then_else"):
        tessel.build(s, [A, B])


def test_read_past_a_symbolic_input_and_before_a_computed_tensor():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2, name="B")
    C = te.compute((n,), lambda i: B[i - 1] + A[i], name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(BoundError, match=r"stage C reads B\[i - 1\]"):
        tessel.lower(s, [A, C])


def test_guarded_reads_are_allowed():
    A = te.placeholder((10,), name="A")
    B = te.compute((10,), lambda i: te.if_then_else(i < 9, A[i + 1], 0.0) + A[i], name="B")
    s = te.create_schedule(B.op)
    tessel.lower(s, [A, B])
