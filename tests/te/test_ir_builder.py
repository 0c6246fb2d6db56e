"""Extern stages written with the statement builder (TVM's ir_builder): loops, branches,
temporaries and stores over the declared buffers, on both targets."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check, rand

from tessel import te
from tessel.errors import DefinitionError
from tessel.te import ir_builder


def test_a_prefix_sum_written_with_loops_and_a_temporary():
    n, m = 9, 17
    A = te.placeholder((n, m), name="A")

    def body(ins, outs):
        ib = ir_builder.create()
        a, b = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        acc = ib.allocate("float32", 1, name="acc")
        with ib.for_range(0, n, name="i", kind="parallel") as i:
            acc[0] = te.const(0.0)
            with ib.for_range(0, m, name="j") as j:
                acc[0] = acc[0] + a[i, j]
                b[i, j] = acc[0]
        return ib.get()

    B = te.extern((n, m), [A], body, name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] * 2, name="C")
    s = te.create_schedule(C.op)
    a = rand(n, m, seed=1)
    check(s, [A, C], [a], [2 * np.cumsum(a, axis=1)], rtol=1e-5, atol=1e-5)


def test_branches_and_flat_indices():
    n = 31
    A = te.placeholder((n,), name="A")

    def body(ins, outs):
        ib = ir_builder.create()
        a, b = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        with ib.for_range(0, n, name="i") as i:
            with ib.if_scope(i > 0):
                b[i] = a[i] + a[i - 1]
            with ib.else_scope():
                b[i] = a[i]
        return ib.get()

    B = te.extern((n,), [A], body, name="B")
    s = te.create_schedule(B.op)
    a = rand(n, seed=2)
    want = a.copy()
    want[1:] += a[:-1]
    check(s, [A, B], [a], [want])


def test_an_else_without_an_if_is_refused():
    ib = ir_builder.create()
    with pytest.raises(DefinitionError, match="else_scope must follow an if_scope"):
        with ib.else_scope():
            pass
