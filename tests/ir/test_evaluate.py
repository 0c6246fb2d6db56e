"""The interpreter is the oracle for simplifier tests, so its C semantics are pinned here."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tessel.errors import DefinitionError
from tessel.ir import Buffer, BufferLoad, Call, Cast, Let, Ramp, Var
from tessel.ir import expr as E
from tessel.ir.evaluate import evaluate, wrap_int

x, y = Var("x"), Var("y")


def test_int_division_flavours():
    assert evaluate(E.truncdiv(x, 4), {x: -7}) == -1
    assert evaluate(E.truncmod(x, 4), {x: -7}) == -3
    assert evaluate(E.floordiv(x, 4), {x: -7}) == -2
    assert evaluate(E.floormod(x, 4), {x: -7}) == 1
    assert evaluate(E.floormod(x, -4), {x: 7}) == -1
    with pytest.raises(ZeroDivisionError):
        evaluate(E.floordiv(x, y), {x: 1, y: 0})


def test_wraparound_per_dtype():
    assert evaluate(x + 1, {x: 2**31 - 1}) == -(2**31)
    b = Var("b", "int64")
    assert evaluate(b + 1, {b: 2**31 - 1}) == 2**31
    u = Var("u", "uint8")
    assert evaluate(u - E.const(1, "uint8"), {u: 0}) == 255
    assert wrap_int(300, E.const(0, "int8").dtype) == 44


def test_casts_follow_c():
    f = Var("f", "float32")
    assert evaluate(Cast("int32", f), {f: -2.7}) == -2
    assert evaluate(Cast("int8", x), {x: 200}) == -56
    assert evaluate(Cast("bool", x), {x: 5}) is True
    assert evaluate(Cast("float32", x), {x: 16777217}) == 16777216.0


def test_float32_rounding():
    f = Var("f", "float32")
    got = evaluate(f / 3, {f: 1.0})
    assert got == float(np.float32(1.0) / np.float32(3.0))
    assert evaluate(E.const(0.1, "float32")) == float(np.float32(0.1))


def test_lazy_select_and_logic():
    # the untaken branch divides by zero: lazy evaluation must not touch it
    e = E.select(y == 0, E.const(-1), E.floordiv(x, y))
    assert evaluate(e, {x: 5, y: 0}) == -1
    assert evaluate(E.logical_or(y == 0, E.floordiv(x, y) > 1), {x: 5, y: 0}) is True
    assert evaluate(E.logical_and(y != 0, E.floordiv(x, y) > 1), {x: 5, y: 0}) is False
    assert evaluate(E.logical_not(x < y), {x: 1, y: 2}) is False


def test_min_max_compare_let():
    assert evaluate(E.min_(x, y), {x: 3, y: -2}) == -2
    assert evaluate(E.max_(x, y), {x: 3, y: -2}) == 3
    assert evaluate(x <= y, {x: 3, y: 3}) is True
    assert evaluate(Let(y, x * 2, y + 1), {x: 4}) == 9


def test_intrinsics():
    f = Var("f", "float64")
    assert evaluate(Call("float64", "exp", [f]), {f: 1.0}) == math.e
    assert evaluate(Call("float64", "sqrt", [f]), {f: 4.0}) == 2.0
    assert math.isnan(evaluate(Call("float64", "sqrt", [f]), {f: -1.0}))
    assert evaluate(Call("float64", "pow", [f, f]), {f: 2.0}) == 4.0
    with pytest.raises(DefinitionError):
        evaluate(Call("float32", "no_such_fn", [f]), {f: 1.0})


def test_vectors_and_loads():
    assert evaluate(Ramp(x, E.const(2), 4), {x: 1}) == [1, 3, 5, 7]
    buf = Buffer("A", "float32", (4,))
    arr = np.arange(4, dtype="float32")
    assert evaluate(BufferLoad(buf, [x + 1]), {x: 1, buf: arr}) == 2.0
    assert evaluate(BufferLoad(buf, [Ramp(x, E.const(1), 2)]), {x: 1, buf: arr}) == [1.0, 2.0]


def test_missing_variable_is_reported():
    with pytest.raises(DefinitionError, match="x"):
        evaluate(x + 1, {})
