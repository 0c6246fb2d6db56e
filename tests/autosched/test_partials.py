"""Row reductions in vector partials (tessel.autosched.partials): several vectors of partials
are combined a vector at a time into one vector before its lanes, and whatever the sizes
(rows and columns that no vector divides, fewer columns than partials) the answer is
NumPy's: a sum to rounding, an argmax exactly (ties and NaN as NumPy breaks them)."""

from __future__ import annotations

import numpy as np
import pytest

import tessel
from tessel import te
from tessel.autosched import partials

LANES = 16  # a vector of the schedule (any width works on any machine: the vectorizer splits it)


def _row_sum(rows, cols, v, lanes=LANES, threads=True):
    A = te.placeholder((rows, cols), name="A")
    k = te.reduce_axis((0, cols), name="k")
    B = te.compute((rows,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    stages = partials.factor(s, B, v, lanes)
    if threads:
        s[B].parallel(s[B].op.axis[0])
    partials.attach(s, stages, B, s[B].op.axis[0])
    return s, [A, B], stages


def _argmax(rows, cols, v, lanes=LANES):
    A = te.placeholder((rows, cols), name="A")
    k = te.reduce_axis((0, cols), name="k")
    index, _ = te.compute((rows,), lambda i: te.argmax((k, A[i, k]), axis=k), name="B")
    s = te.create_schedule(index.op)
    stages = partials.factor(s, index, v, lanes)
    s[index].parallel(s[index].op.axis[0])
    partials.attach(s, stages, index, s[index].op.axis[0])
    return s, [A, index], stages


@pytest.mark.parametrize("v, levels", [(8 * LANES, 2), (2 * LANES, 2), (LANES, 1), (24, 1), (3, 1)])
def test_levels_follow_the_vectors_of_partials(v, levels):
    *_, stages = _row_sum(5, 100, v)
    assert len(stages) == levels


@pytest.mark.parametrize("rows, cols", [(37, 1027), (3, 203), (9, 17), (4, 300), (1, 128)])
@pytest.mark.parametrize("v", [8 * LANES, 2 * LANES, 24])
def test_row_sum_matches_numpy_at_awkward_sizes(rows, cols, v):
    s, args, _ = _row_sum(rows, cols, v)
    f = tessel.build(s, args)
    a = np.random.default_rng(rows * cols + v).standard_normal((rows, cols), dtype="float32")
    out = np.full(rows, np.nan, "float32")
    f(a, out)
    np.testing.assert_allclose(out, a.astype("float64").sum(axis=1), rtol=1e-4, atol=1e-4)
    if v == 8 * LANES:  # the C holds the vector combine: a stage of LANES partials after the first
        assert f.source.count("// produce B.rf") == 2


def test_row_sum_on_the_python_target_agrees_with_c():
    s, args, _ = _row_sum(7, 333, 4 * LANES, threads=False)
    a = np.random.default_rng(7).standard_normal((7, 333), dtype="float32")
    got = {}
    for target in ("c", "python"):
        out = np.full(7, np.nan, "float32")
        tessel.build(s, args, target=target)(a, out)
        got[target] = out
    np.testing.assert_allclose(got["c"], got["python"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["c"], a.sum(axis=1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("rows, cols", [(37, 1027), (5, 33), (6, 70)])
@pytest.mark.parametrize("v", [8 * LANES, 2 * LANES])
def test_argmax_is_numpys_index_with_ties_and_nan(rows, cols, v):
    rng = np.random.default_rng(rows + cols + v)
    a = rng.integers(-3, 4, (rows, cols)).astype("float32")  # many ties: the first index must win
    a[1, [cols // 3, cols - 1]] = np.nan  # NaN is the best value; its first index wins
    a[2, :] = -np.inf
    s, args, stages = _argmax(rows, cols, v)
    assert len(stages) == 2
    out = np.full(rows, -1, "int32")
    tessel.build(s, args)(a, out)
    np.testing.assert_array_equal(out, np.argmax(a, axis=1))


def test_the_reducer_is_checked_once_for_both_levels(monkeypatch):
    """The sample-value search for a reducer that may not be reordered (thousands of
    evaluations) runs once per reducer object, not once per rfactor."""
    from tessel.schedule import reducer_checks

    calls = []
    monkeypatch.setattr(reducer_checks, "_ANSWERS", {})  # te.argmax's reducer is shared: asked before
    real = reducer_checks._counterexample
    monkeypatch.setattr(reducer_checks, "_counterexample", lambda comb: calls.append(comb) or real(comb))
    s, args, stages = _argmax(6, 70, 2 * LANES)
    assert len(stages) == 2 and len(calls) == 1
    a = np.random.default_rng(1).standard_normal((6, 70), dtype="float32")
    out = np.full(6, -1, "int32")
    tessel.build(s, args)(a, out)
    np.testing.assert_array_equal(out, np.argmax(a, axis=1))
