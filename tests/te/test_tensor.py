"""Arithmetic on whole tensors (tensor.py): ``A + B`` broadcasts as NumPy into a new stage
tagged ``broadcast``, ``A + k`` (a number or an expression, on either side) is tagged
``elemwise``, and an expression leaves ``n + A`` to the tensor; values against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check, rand

from tessel import te
from tessel.errors import DefinitionError
from tessel.ir import expr as E
from tessel.te.tensor import Tensor


def test_operands_give_tensors_with_tvms_tags():
    n = te.var("n")
    A, B = te.placeholder((), name="A"), te.placeholder((10, 5), name="B")
    for made in (1 + B, B + 1, n + B, B + n, B[0, 0] + A, A + B[0, 0]):
        assert isinstance(made, Tensor) and made.op.tag == "elemwise"
    for made in (A + B, B + A, B + B):
        assert isinstance(made, Tensor) and made.op.tag == "broadcast" and made.shape == B.shape
    assert isinstance(n + B[0, 0], E.PrimExpr) and isinstance(B[0, 0] * 2, E.PrimExpr)


def test_values_broadcast_as_numpy():
    A, B, C = te.placeholder((3, 1, 5), name="A"), te.placeholder((4, 1), name="B"), te.placeholder((5,), name="C")
    k = te.var("k", "float32")
    D = 2.0 - A * B + C / 4.0 - k
    s = te.create_schedule(D.op)
    a, b, c = rand(3, 1, 5), rand(4, 1, seed=1), rand(5, seed=2)
    check(s, [A, B, C, k, D], [a, b, c, np.float32(0.5)], [2 - a * b + c / 4 - np.float32(0.5)])
    with pytest.raises(DefinitionError, match="do not broadcast"):
        A + te.placeholder((4, 6), name="E")
