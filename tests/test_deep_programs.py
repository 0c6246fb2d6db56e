"""Deep programs: long expressions and long chains of stages build, or are refused cleanly.

The IR is walked recursively, so a body summing hundreds of terms, or a chain of stages each
reading the last, used to end in a RecursionError. Such programs now build (``tessel.deep``:
the pipeline is retried on a big stack) and compute what NumPy computes."""

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


def _chain(n: int):
    A = te.placeholder((11,), name="A")

    def step(P, k):
        return te.compute((11,), lambda i: P[i] * 0.5 + 1.0, name=f"T{k}")

    T = A
    for k in range(n):
        T = step(T, k)
    return A, T


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
