"""Issue 15, difference 8: TE spellings TVM programs use on tensors, operations and IR nodes.

``A[i][j]`` (TVM's TensorSlice), ``op.input_tensors`` read as a property, ``Allocate.extents``,
and iteration types as TVM's numbers: ``IterVar.iter_type`` and
``s[C].iter_var_attrs[x].iter_type``.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check, rand

import tessel
from tessel import DefinitionError, te
from tessel.driver import lower_steps
from tessel.ir import stmt as S
from tessel.ir.functor import collect


def test_chained_indexing_is_the_same_load():
    A = te.placeholder((4, 5, 3), name="A")
    B = te.compute((4, 5), lambda i, j: A[i][j][2] + A[i, j][0] * A[i][j, 1], name="B")
    assert str(B.op.body[0]) == "A[i, j, 2] + A[i, j, 0]*A[i, j, 1]"
    s = te.create_schedule(B.op)
    a = rand(4, 5, 3)
    check(s, [A, B], [a], [a[:, :, 2] + a[:, :, 0] * a[:, :, 1]])


def test_slice_dtype_and_incomplete_use_is_refused_with_the_index_count():
    A = te.placeholder((4, 5), name="A", dtype="float64")
    assert A[1].dtype == A.dtype
    for body in (lambda i: A[i] + 1, lambda i: 2 * A[i], lambda i: A[i], lambda i: te.exp(A[i])):
        with pytest.raises(DefinitionError, match=r"tensor A has 2 dimension\(s\).*indexed with 1"):
            te.compute((4,), body, name="B")
    with pytest.raises(DefinitionError, match="indexed with 3"):
        te.compute((4,), lambda i: A[i][i, i], name="B")


def test_input_tensors_is_a_property_that_can_also_be_called():
    A = te.placeholder((4,), name="A")
    W = te.placeholder((4,), name="W")
    B = te.compute((4,), lambda i: A[i] * W[i] + A[i], name="B")
    assert list(B.op.input_tensors) == [A, W]  # TVM: a property
    assert list(B.op.input_tensors()) == [A, W]  # tessel's operation protocol calls it
    assert list(A.op.input_tensors) == []
    walked = []

    def visit(t):  # a post-order walk as TVM tutorials write it
        for x in t.op.input_tensors:
            visit(x)
        walked.append(t.name)

    visit(B)
    assert walked == ["A", "W", "B"]


def test_allocate_has_extents():
    A = te.placeholder((6, 10), name="A")
    B = te.compute((6, 10), lambda i, j: A[i, j] + 1, name="B")
    C = te.compute((6, 10), lambda i, j: B[i, j] * 2, name="C")
    s = te.create_schedule(C.op)
    func, _ = lower_steps(s, [A, C])
    allocs = collect(func.body, lambda n: isinstance(n, S.Allocate))
    assert len(allocs) == 1
    ext = allocs[0].extents
    assert int(np.prod([e.value for e in ext])) == 60 and allocs[0].dtype == B.dtype


def test_iter_type_numbers_are_tvms():
    IV = te.IterVar
    assert (IV.DataPar, IV.ThreadIndex, IV.CommReduce, IV.Ordered, IV.Opaque) == (0, 1, 2, 3, 4)
    assert (IV.Unrolled, IV.Vectorized, IV.Parallelized, IV.Tensorized) == (5, 6, 7, 8)
    A = te.placeholder((8, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    B = te.compute((8,), lambda i: te.sum(A[i, k], axis=k), name="B")
    assert B.op.axis[0].iter_type == IV.DataPar
    assert B.op.reduce_axis[0].iter_type == IV.CommReduce
    assert te.thread_axis("threadIdx.x").iter_type == IV.ThreadIndex
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=4)
    assert ko.iter_type == ki.iter_type == IV.CommReduce


def test_iter_var_attrs_report_the_loop_kind_as_tvm_numbers():
    A = te.placeholder((8, 16, 4), name="A")
    B = te.compute((8, 16, 4), lambda i, j, k: A[i, j, k] * 2, name="B")
    s = te.create_schedule(B.op)
    i, j, k = B.op.axis
    jo, ji = s[B].split(j, factor=4)
    s[B].parallel(i)
    s[B].unroll(ji)
    s[B].vectorize(k)
    attrs = s[B].iter_var_attrs
    assert attrs[i].iter_type == te.IterVar.Parallelized
    assert attrs[ji].iter_type == te.IterVar.Unrolled
    assert attrs[k].iter_type == te.IterVar.Vectorized
    assert jo not in attrs  # as in TVM, only annotated loops have attributes
    a = rand(8, 16, 4)
    check(s, [A, B], [a], [a * 2])


def test_iter_type_survives_lowering_of_a_tvm_style_walk():
    A = te.placeholder((8, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    B = te.compute((8,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    reduce_leaves = [iv.name for iv in s[B].leaf_iter_vars if iv.iter_type == te.IterVar.CommReduce]
    assert reduce_leaves == ["k"]
    assert "for (k" in str(tessel.lower(s, [A, B], simple_mode=True))
