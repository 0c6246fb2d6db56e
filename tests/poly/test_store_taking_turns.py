"""Arrays taking turns (issue 33): ``store_in([A, B], lambda s, i: (s % 2, i))`` keeps a
recurrence's steps in the caller's two arrays, as PolyBench's Jacobi stencils do, legal exactly
when no value -- the recurrence's own, or an input's -- is overwritten before its last read."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, rand

import tessel
from tessel import te
from tessel.driver import lower_steps
from tessel.errors import ScheduleError
from tessel.ir import expr as E
from tessel.ir import stmt as S
from tessel.ir.functor import collect


def _jacobi(n: int, steps: int, extra_reader=None):
    """Half step s of ``B = f(A); A = f(B)``: even steps are A's values, odd ones B's; the
    border keeps its value (step 1 takes B's, a later step the one two before)."""
    A = te.placeholder((n,), "float64", name="A")
    B = te.placeholder((n,), "float64", name="B")

    def half(h, s, i):
        inner = (h[s - 1, i - 1] + h[s - 1, i] + h[s - 1, i + 1]) / 3.0
        border = te.if_then_else(s == 1, B[i], h[s - 2, i])
        return te.if_then_else(te.any(i == 0, i == n - 1), border, inner)

    h = te.recurrence((2 * steps + 1, n), [
        te.define(lambda h, s, i: A[i], where=lambda s, i: s == 0),
        te.define(half, where=lambda s, i: s >= 1)], name="h")
    outs = [h]
    if extra_reader is not None:
        outs.append(te.compute((n,), lambda i: extra_reader(A, B, h, i), name="R"))
    return A, B, h, outs


def _reference(a, b, steps):
    a, b = a.copy(), b.copy()
    for _ in range(steps):
        b[1:-1] = (a[:-2] + a[1:-1] + a[2:]) / 3.0
        a[1:-1] = (b[:-2] + b[1:-1] + b[2:]) / 3.0
    return a, b


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n,steps", [(13, 4), (30, 5)])
def test_jacobi_in_the_callers_two_arrays(target, n, steps):
    A, B, h, _ = _jacobi(n, steps)
    s = te.create_schedule(h.op)
    s[h].store_in([A, B], lambda s_, i: (s_ % 2, i))
    f = tessel.build(s, [A, B], target=target)
    a0, b0 = rand(n).astype("float64"), rand(n, seed=1).astype("float64")
    a, b = a0.copy(), b0.copy()
    f(a, b)
    want_a, want_b = _reference(a0, b0, steps)
    np.testing.assert_allclose(a, want_a, rtol=1e-12)
    np.testing.assert_allclose(b, want_b, rtol=1e-12)


def test_the_step_loop_runs_by_twos_with_no_choice_left():
    """PolyBench's own loop nest: the steps' parity chooses the array, and the steps run two at a
    time, so each copy names its arrays directly and no temporary is allocated."""
    A, B, h, _ = _jacobi(30, 5)
    s = te.create_schedule(h.op)
    s[h].store_in([A, B], lambda s_, i: (s_ % 2, i))
    func, _ = lower_steps(s, [A, B], target="c")
    assert not collect(func.body, lambda x: isinstance(x, S.Allocate | E.Select | S.IfThenElse))
    stored = {x.buffer.name for x in collect(func.body, lambda x: isinstance(x, S.BufferStore))}
    assert stored == {"A", "B"}


@pytest.mark.parametrize("target", TARGETS)
def test_symbolic_sizes_and_an_odd_number_of_half_steps(target):
    n = te.var("n")
    A = te.placeholder((n,), "float64", name="A")
    B = te.placeholder((n,), "float64", name="B")
    T = 8  # half steps 0..7: three whole steps, then B once more

    def half(h, s, i):
        inner = (h[s - 1, i - 1] + h[s - 1, i] + h[s - 1, i + 1]) / 3.0
        return te.if_then_else(te.any(i == 0, i == n - 1), te.if_then_else(s == 1, B[i], h[s - 2, i]), inner)

    h = te.recurrence((T, n), [te.define(lambda h, s, i: A[i], where=lambda s, i: s == 0),
                               te.define(half, where=lambda s, i: s >= 1)], name="h")
    s = te.create_schedule(h.op)
    s[h].store_in([A, B], lambda s_, i: (s_ % 2, i))
    f = tessel.build(s, [A, B], target=target)
    for size in (9, 17):
        a0, b0 = rand(size).astype("float64"), rand(size, seed=2).astype("float64")
        a, b = a0.copy(), b0.copy()
        f(a, b)
        want_a, want_b = _reference(a0, b0, 3)
        want_b[1:-1] = (want_a[:-2] + want_a[1:-1] + want_a[2:]) / 3.0
        np.testing.assert_allclose(a, want_a, rtol=1e-12)
        np.testing.assert_allclose(b, want_b, rtol=1e-12)


def test_one_array_for_both_turns_is_refused_with_the_read():
    A, B, h, _ = _jacobi(13, 3)
    s = te.create_schedule(h.op)
    s[h].store_in([A, B], lambda s_, i: (0, i))
    with pytest.raises(ScheduleError, match="would read A|B after another value of h overwrote the element") as e:
        tessel.build(s, [A, B])
    # the fix offered was checked: the least fold of the steps that keeps every value, which
    # takes the store's place
    assert e.value.fix == "s[h].storage_fold(h.op.axis[0], 2)"
    e.value.fix_steps.apply(s)
    assert not s.violations() and s[h].storage.folded


def test_a_later_read_of_an_input_it_overwrote_is_refused():
    """R reads A's own (initial) values after the steps overwrote them in A."""
    A, B, h, outs = _jacobi(13, 3, extra_reader=lambda A, B, h, i: A[i] + h[6, i])
    s = te.create_schedule([x.op for x in outs])
    s[h].store_in([A, B], lambda s_, i: (s_ % 2, i))
    with pytest.raises(ScheduleError, match="R reads the values A holds when the kernel is called"):
        tessel.build(s, [A, B, outs[1]])


@pytest.mark.parametrize("bad,match", [
    (lambda A, B, C: [A], "two or more"),
    (lambda A, B, C: [A, A], "twice"),
    (lambda A, B, C: [A, C], "one shape and dtype"),
])
def test_a_list_that_cannot_take_turns_is_refused(bad, match):
    A, B, h, _ = _jacobi(13, 3)
    C = te.placeholder((14,), "float64", name="C")
    s = te.create_schedule(h.op)
    with pytest.raises(ScheduleError, match=match):
        s[h].store_in(bad(A, B, C), lambda s_, i: (s_ % 2, i))


def test_the_arrays_must_be_passed():
    A, B, h, _ = _jacobi(13, 3)
    s = te.create_schedule(h.op)
    s[h].store_in([A, B], lambda s_, i: (s_ % 2, i))
    with pytest.raises(tessel.TesselError, match="pass B"):
        tessel.build(s, [A])


def test_the_step_is_recorded_as_written():
    A, B, h, _ = _jacobi(13, 3)
    s = te.create_schedule(h.op)
    step, i = h.op.axis
    s[h].store_in([A, B], [step.var % 2, i.var])
    assert "s[h].store_in([A, B], [s%2, i])" in str(s.history)


def test_an_array_taking_turns_is_one_stages_storage():
    """Another stage stored in one of the arrays would be one storage under two names."""
    A, B, h, _ = _jacobi(13, 3)
    C = te.compute((13,), lambda i: h[6, i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    s[h].store_in([A, B], lambda s_, i: (s_ % 2, i))
    with pytest.raises(ScheduleError, match="store_in into B is refused: h is stored in B too"):
        s[C].store_in(B)
    s = te.create_schedule(C.op)
    s[C].store_in(B)
    with pytest.raises(ScheduleError, match="store_in into B is refused: C is stored in B too"):
        s[h].store_in([A, B], lambda s_, i: (s_ % 2, i))
