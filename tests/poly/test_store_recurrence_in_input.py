"""A recurrence stored in the input it starts from (issue 33): legal exactly when no value -- the
recurrence's own, or the input's -- is overwritten before its last read, judged on the
program's values rather than on storage elements. A plain stage stored into a tensor it reads
keeps Tiramisu's meaning (an in-place update) and is not concerned."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, rand

import tessel
from tessel import te
from tessel.errors import ScheduleError


def _steps(T, n, body, reader=None):
    """H[0, i] = P[i]; H[t, i] = body(h, t, i) for t > 0; O[i] = H[T-1, i] (+ reader(P, i))."""
    P = te.placeholder((n,), name="P", dtype="float64")
    H = te.recurrence((T, n), [
        te.define(lambda h, t, i: P[i], where=lambda t, i: t == 0),
        te.define(lambda h, t, i: body(h, t, i), where=lambda t, i: t > 0)], name="H")
    O = te.compute((n,), lambda i: H[T - 1, i] + (reader(P, i) if reader else 0.0), name="O")
    return P, H, O


def _build(P, H, O, target, fold=None):
    s = te.create_schedule(O.op)
    if fold is None:
        s[H].store_in(P, lambda t, i: (i,))
    else:
        s[H].storage_fold(H.op.axis[0], fold)
    return tessel.build(s, [P, O], target=target)


def _doubling(h, t, i):
    return h[t - 1, i] * 2.0 + 1.0


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [7, 12])
def test_pointwise_steps_stored_in_their_input(target, n):
    T = 5
    f = _build(*_steps(T, n, _doubling), target)
    p0 = rand(n).astype("float64")
    want = p0.copy()
    for _ in range(1, T):
        want = want * 2 + 1
    p, o = p0.copy(), np.zeros(n)
    f(p, o)
    np.testing.assert_allclose(o, want, rtol=1e-12)
    np.testing.assert_allclose(p, want, rtol=1e-12)  # the caller's P holds the last step


def _seidel(h, t, i):
    n = h.shape[1]
    left = te.if_then_else(i > 0, h[t, te.max(i - 1, 0)], 0.0)
    right = te.if_then_else(i < n - 1, h[t - 1, te.min(i + 1, n - 1)], 0.0)
    return (left + h[t - 1, i] + right) / 3.0


@pytest.mark.parametrize("target", TARGETS)
def test_gauss_seidel_steps_in_place_in_their_input(target):
    """Each step reads its left neighbour's new value and its right neighbour's old one: both
    are still in P when read, so one array is enough, as PolyBench's seidel keeps it."""
    T, n = 6, 11
    f = _build(*_steps(T, n, _seidel), target)
    p0 = rand(n).astype("float64")
    want = p0.copy()
    for _ in range(1, T):
        for i in range(n):
            want[i] = ((want[i - 1] if i > 0 else 0.0) + want[i] + (want[i + 1] if i < n - 1 else 0.0)) / 3.0
    p, o = p0.copy(), np.zeros(n)
    f(p, o)
    np.testing.assert_allclose(o, want, rtol=1e-12)


def _jacobi(h, t, i):
    n = h.shape[1]
    left = te.if_then_else(i > 0, h[t - 1, te.max(i - 1, 0)], 0.0)
    right = te.if_then_else(i < n - 1, h[t - 1, te.min(i + 1, n - 1)], 0.0)
    return (left + h[t - 1, i] + right) / 3.0


def test_jacobi_steps_in_one_array_are_refused_and_two_are_right():
    """A Jacobi step reads its left neighbour's *old* value, which its own left neighbour has
    already replaced in one array: refused, on the values (not on P's elements); a fold of
    two steps keeps both and is right."""
    T, n = 5, 9
    with pytest.raises(ScheduleError) as e:
        _build(*_steps(T, n, _jacobi), "c")
    msg = str(e.value)
    assert "store_in(P" in msg and "refused" in msg and "H" in msg
    f = _build(*_steps(T, n, _jacobi), "c", fold=2)
    p0 = rand(n).astype("float64")
    want = p0.copy()
    for _ in range(1, T):
        pad = np.concatenate([[0.0], want, [0.0]])
        want = (pad[:-2] + pad[1:-1] + pad[2:]) / 3.0
    o = np.zeros(n)
    f(p0.copy(), o)
    np.testing.assert_allclose(o, want, rtol=1e-12)


def test_a_reader_of_the_input_after_the_recurrence_is_refused_with_the_point():
    P, H, O = _steps(5, 7, _doubling, reader=lambda P, i: P[i])
    with pytest.raises(ScheduleError) as e:
        _build(P, H, O, "c")
    msg = str(e.value)
    assert "O reads the values P holds when the kernel is called" in msg
    assert "H has already written over the element" in msg and "(for i = " in msg
    assert "storage_fold of its step axis" in msg


@pytest.mark.parametrize("target", TARGETS)
def test_symbolic_sizes(target):
    T, n = te.var("T"), te.var("n")
    P = te.placeholder((n,), name="P", dtype="float64")
    H = te.recurrence((T, n), [
        te.define(lambda h, t, i: P[i], where=lambda t, i: t == 0),
        te.define(lambda h, t, i: h[t - 1, i] * 0.5 + 1.0, where=lambda t, i: t > 0)], name="H")
    Tsh = te.placeholder((T,), name="Tsh", dtype="float64")  # gives the step count a shape to come from
    O = te.compute((n,), lambda i: H[T - 1, i] + Tsh[0] * 0.0, name="O")
    s = te.create_schedule(O.op)
    s[H].store_in(P, lambda t, i: (i,))
    f = tessel.build(s, [P, Tsh, O], target=target)
    for steps, size in [(3, 5), (7, 13)]:
        p0 = rand(size).astype("float64")
        want = p0.copy()
        for _ in range(1, steps):
            want = want * 0.5 + 1.0
        o = np.zeros(size)
        f(p0.copy(), np.ones(steps), o)
        np.testing.assert_allclose(o, want, rtol=1e-12)


def _reads_left_neighbour():
    T, n = 3, 8
    P = te.placeholder((n,), "float64", name="P")
    H = te.recurrence((T, n), [
        te.define(lambda h, t, i: P[i] + P[te.max(i - 1, 0)], where=lambda t, i: t == 0),
        te.define(lambda h, t, i: h[t - 1, i] * 2.0, where=lambda t, i: t > 0)], name="H")
    s = te.create_schedule(H.op)
    s[H].store_in(P, lambda t, i: (i,))
    return s, P


@pytest.mark.parametrize("target", TARGETS)
def test_the_refusal_holds_for_every_build_of_the_same_program(target):
    """The program's own order is cached by content: a second, identical program must be judged
    on its own tensors (it was accepted, and computed with P half overwritten)."""
    for _ in range(3):
        s, P = _reads_left_neighbour()
        with pytest.raises(ScheduleError, match="H.def0 reads the values P holds when the kernel is called"):
            tessel.build(s, [P], target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_two_stages_stored_one_after_the_other_in_one_buffer(target):
    n = 6
    A = te.placeholder((n,), "float64", name="A")
    Tmp = te.placeholder((n,), "float64", name="Tmp")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((n,), lambda i: B[n - 1 - i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    s[B].store_in(Tmp)
    s[C].store_in(Tmp)
    with pytest.raises(ScheduleError, match="would read Tmp after another value of C overwrote"):
        tessel.build(s, [A, Tmp], target=target)  # C overwrites B's values before reading them all
    D = te.compute((n,), lambda i: B[i] * 2.0, name="D")
    s = te.create_schedule(D.op)
    s[B].store_in(Tmp)
    s[D].store_in(Tmp)
    f = tessel.build(s, [A, Tmp], target=target)
    a, t = rand(n).astype("float64"), np.zeros(n)
    f(a, t)
    np.testing.assert_allclose(t, (a + 1.0) * 2.0, rtol=1e-12)
