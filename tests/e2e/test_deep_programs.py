"""Deep programs: long expressions and long chains of stages build, or are refused cleanly.

The IR is walked recursively, so a body summing hundreds of terms, or a chain of stages each
reading the last, used to end in a RecursionError. Such programs now build (``tessel.deep``:
a program known to be deep is lowered on a big stack straight away, any other one is retried
there after a RecursionError) and compute what NumPy computes: 10,000 terms and 1,000 stages
(stored or inlined) included, which also needs every step to be linear in the program's size."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, check, rand

import tessel
from tessel import te
from tessel.ir.functor import collect, free_vars


def _sum_of_terms(n: int):
    A = te.placeholder((n,), name="A")

    def body(i):
        e = A[0]
        for k in range(1, n):
            e = e + A[k]
        return e

    return A, te.compute((1,), body, name="B")


def _sliding_sum(n: int, width: int):
    """``B[i] = A[i] + A[i+1] + ... + A[i+n-1]`` written out term by term."""
    A = te.placeholder((n + width - 1,), name="A")

    def body(i):
        e = A[i]
        for k in range(1, n):
            e = e + A[i + k]
        return e

    return A, te.compute((width,), body, name="B")


def _chain(n: int):
    A = te.placeholder((11,), name="A")

    def step(P, k):
        return te.compute((11,), lambda i: P[i] * 0.5 + 1.0, name=f"T{k}")

    T = A
    for k in range(n):
        T = step(T, k)
    return A, T


def _signed_chain(n: int, inline: bool = False):
    """``T_k = c_k - T_{k-1}``: every stage changes the result (no fixed point to converge to),
    so a kernel that skipped or repeated one would be caught. With ``inline`` every stage but
    the last is inlined, which makes one expression of about 3n nodes."""
    A = te.placeholder((11,), name="A")

    def step(P, k):
        return te.compute((11,), lambda i: _constant(k) - P[i], name=f"T{k}")

    T, made = A, []
    for k in range(n):
        T = step(T, k)
        made.append(T)
    s = te.create_schedule(T.op)
    if inline:
        for t in made[:-1]:
            s[t].compute_inline()
    return A, T, s


def _constant(k: int) -> float:
    return 0.25 * (k % 7) + 0.5


def _signed_reference(a: np.ndarray, n: int) -> np.ndarray:
    out = a.astype("float32")
    for k in range(n):
        out = np.float32(_constant(k)) - out
    return out


def _chain_reference(a: np.ndarray, n: int) -> np.ndarray:
    out = a.astype("float32")
    for _ in range(n):
        out = out * np.float32(0.5) + np.float32(1.0)
    return out


@pytest.mark.parametrize("target", TARGETS)
def test_a_body_summing_300_terms_builds_and_matches_numpy(target):
    A, B = _sum_of_terms(300)
    a = rand(300, seed=3)
    check(te.create_schedule(B.op), [A, B], [a], [np.array([a.sum(dtype="float64")], "float32")],
          targets=(target,), rtol=1e-4)


@pytest.mark.parametrize("target", TARGETS)
def test_a_chain_of_150_stages_builds_and_matches_numpy(target):
    A, T = _chain(150)
    a = rand(11, seed=4)
    check(te.create_schedule(T.op), [A, T], [a], [_chain_reference(a, 150)], targets=(target,))


def test_walks_of_a_10000_term_expression_need_no_recursion():
    A, B = _sum_of_terms(10000)  # te.compute checks the body: that walk must not recurse
    body = B.op.body[0]
    assert len(collect(body, lambda n: type(n).__name__ == "ProducerLoad")) == 10000
    assert free_vars(body) == set()


def test_a_program_deeper_than_the_big_stack_is_refused_with_a_build_error(monkeypatch):
    import tessel.deep as deep

    monkeypatch.setattr(deep, "RECURSION_LIMIT", 1500)
    A, B = _sum_of_terms(2000)
    with pytest.raises(tessel.BuildError, match="nested more deeply"):
        tessel.lower(te.create_schedule(B.op), [A, B])


@pytest.mark.parametrize("target", TARGETS)
def test_a_body_summing_10000_terms_builds_and_matches_numpy(target):
    n, width = 10000, 5
    A, B = _sliding_sum(n, width)
    a = rand(n + width - 1, seed=5)
    want = np.array([a[i:i + n].sum(dtype="float64") for i in range(width)], "float32")
    check(te.create_schedule(B.op), [A, B], [a], [want], targets=(target,), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("target", TARGETS)
def test_a_chain_of_1000_stages_builds_and_matches_numpy(target):
    A, T, s = _signed_chain(1000)
    a = rand(11, seed=6)
    check(s, [A, T], [a], [_signed_reference(a, 1000)], targets=(target,))


@pytest.mark.parametrize("target", TARGETS)
def test_a_chain_of_1000_inlined_stages_builds_and_matches_numpy(target):
    # one expression 3,000 nodes deep, inlined through 999 stages: the python target prints it
    # as nested local functions, each shallow enough for CPython's parser and compiler
    A, T, s = _signed_chain(1000, inline=True)
    a = rand(11, seed=7)
    check(s, [A, T], [a], [_signed_reference(a, 1000)], targets=(target,))


def test_a_short_inlined_chain_builds_on_every_target():
    A, T, s = _signed_chain(40, inline=True)
    a = rand(11, seed=8)
    check(s, [A, T], [a], [_signed_reference(a, 40)])


def test_a_deep_program_is_lowered_on_the_big_stack_without_a_failed_first_try():
    import threading

    from tessel import pipeline

    threads = []

    class Where(pipeline.Instrument):
        def after_front(self, sch, args, func, lower_again):
            threads.append(threading.current_thread().name)

    where = Where()
    pipeline.INSTRUMENTS.insert(0, where)
    try:
        _lower_deep_and_shallow(threads)
    finally:
        pipeline.INSTRUMENTS.remove(where)


def _lower_deep_and_shallow(threads: list) -> None:
    import threading

    A, T = _chain(300)
    tessel.lower(te.create_schedule(T.op), [A, T])
    assert threads == ["tessel-deep-compile"]
    threads.clear()
    A, T = _chain(3)  # an ordinary program stays on the caller's thread
    tessel.lower(te.create_schedule(T.op), [A, T])
    assert threads == [threading.current_thread().name]


def test_structural_equality_and_hash_of_a_10000_term_expression_need_no_recursion():
    from tessel.ir.functor import structural_equal, structural_hash

    A, B = _sum_of_terms(10000)
    body = B.op.body[0]
    twin = type(body)(*body.fields())  # a different root over the same children
    assert twin is not body and structural_equal(body, twin)
    assert structural_hash(body) == structural_hash(twin)
    A2, B2 = _sum_of_terms(10000)  # the same shape over another tensor: not equal
    assert not structural_equal(body, B2.op.body[0])


def test_a_schedule_of_a_long_chain_is_not_snapshotted_at_every_primitive():
    from tessel.schedule import history

    A, T, s = _signed_chain(history.MAX_SNAPSHOT_STAGES + 10, inline=True)
    assert all(rec.snapshot is None for rec in s.history)
    assert "MAX_SNAPSHOT_STAGES" in s.history[-1].snapshot_error
    A, T = _chain(3)
    assert te.create_schedule(T.op).history[0].snapshot is not None
