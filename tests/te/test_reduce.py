"""te.argmax and te.argmin (tessel/te/reduce.py): NumPy's answer -- the first index of the best
value, a NaN counted best -- under every schedule of the reduction (serial, split, rfactor into
vector partials, threads over rows), with many ties, at awkward and symbolic sizes, on both
targets; the naive reducer TVM's tutorial writes is not that, and rfactor says so."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from helpers import check

import tessel
from tessel import te
from tessel.errors import TesselWarning
from tessel.schedule.reducer_checks import reorderable

CASES = [(te.argmax, np.argmax, np.max), (te.argmin, np.argmin, np.min)]


def _data(rows: int, cols: int, seed: int, fn) -> np.ndarray:
    """Small integers (ties everywhere), two NaNs in one row, a row of the worst infinity."""
    a = np.random.default_rng(seed).integers(-3, 4, (rows, cols)).astype("float32")
    a[1, cols // 2] = a[1, cols - 1] = np.nan
    a[2, :] = -np.inf if fn is np.argmax else np.inf
    return a


def _definition(red, rows, cols, dtype="float32"):
    A = te.placeholder((rows, cols), dtype, name="A")
    k = te.reduce_axis((0, cols), name="k")
    index, value = te.compute((rows,), lambda i: red((k, A[i, k]), axis=k), name="B")
    return A, index, value


def _vector_partials(s, index, parts: int) -> None:
    """Rows over threads, each row's reduction in ``parts`` partial results in vector lanes."""
    _, ki = s[index].split(index.op.reduce_axis[0], factor=parts)
    rf = s.rfactor(index, ki)[0]
    row = s[index].op.axis[0]
    s[index].parallel(row)
    s[rf].compute_at(s[index], row)
    s[rf].reorder(*s[rf].op.reduce_axis, s[rf].op.axis[0])
    s[rf].vectorize(s[rf].op.axis[0])


@pytest.mark.parametrize(("red", "ref", "best"), CASES, ids=["argmax", "argmin"])
@pytest.mark.parametrize("schedule", ["serial", "split", "partials"])
def test_the_index_is_numpys_under_any_schedule(red, ref, best, schedule):
    A, index, value = _definition(red, 7, 203)
    s = te.create_schedule(index.op)
    if schedule == "split":
        ko, ki = s[index].split(index.op.reduce_axis[0], factor=8)
        s[index].reorder(s[index].op.axis[0], ki, ko)  # the elements of a row visited out of order
    elif schedule == "partials":
        with warnings.catch_warnings():
            warnings.simplefilter("error", TesselWarning)  # nothing to doubt: ties go to the smaller index
            _vector_partials(s, index, 16)
        # the combine's selects choose between the accumulators it also compares: every lane loads them
        assert "not_vectorized" not in str(tessel.lower(s, [A, index, value]))
    a = _data(7, 203, 1, ref)
    check(s, [A, index, value], [a], [ref(a, axis=1).astype("int32"), best(a, axis=1)])


@pytest.mark.parametrize(("red", "ref", "best"), CASES, ids=["argmax", "argmin"])
def test_symbolic_sizes_and_integers(red, ref, best):
    n, m = te.var("n"), te.var("m")
    A, index, value = _definition(red, n, m, "int32")
    s = te.create_schedule(index.op)
    _vector_partials(s, index, 8)
    kernels = None
    for rows, cols in ((3, 5), (9, 61)):
        a = np.random.default_rng(rows).integers(-4, 5, (rows, cols)).astype("int32")
        kernels = check(s, [A, index, value], [a], [ref(a, axis=1).astype("int32"), best(a, axis=1)], kernels=kernels)


def test_the_reducers_are_reorderable_and_the_naive_one_is_not():
    A, index, _ = _definition(te.argmax, 4, 5)
    assert reorderable(index.op.body[0].combiner)
    naive = te.comm_reducer(lambda x, y: (te.select(x[1] >= y[1], x[0], y[0]), te.max(x[1], y[1])),
                            lambda ti, tv: (te.const(-1, ti), te.min_value(tv)), name="naive")
    k = te.reduce_axis((0, 5), name="k")
    bad, _ = te.compute((4,), lambda i: naive((k, A[i, k]), axis=k), name="C")
    assert not reorderable(bad.op.body[0].combiner)
    s = te.create_schedule(bad.op)
    _, ki = s[bad].split(k, factor=2)
    with pytest.warns(TesselWarning, match="not commutative"):
        s.rfactor(bad, ki)


@pytest.mark.parametrize(("red", "ref"), [(te.argmax, np.argmax), (te.argmin, np.argmin)], ids=["argmax", "argmin"])
def test_where_and_a_stored_producer_with_vector_partials(red, ref):
    """``where=`` (every other column) and a producer computed per row, under vector partials
    and threads: the first best index among the kept columns, as NumPy finds it."""
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    P = te.compute((n, m), lambda i, j: A[i, j] * 2 - 1, name="P")
    k = te.reduce_axis((0, m), name="k")
    index, _ = te.compute((n,), lambda i: red((k, P[i, k]), axis=k, where=k % 2 == 0), name="B")
    s = te.create_schedule(index.op)
    _vector_partials(s, index, 8)
    s[P].compute_at(s[index], s[index].op.axis[0])
    kernels = None
    for rows, cols in ((3, 7), (6, 41)):
        a = _data(rows, cols, rows, ref)  # ties, NaNs (kept or not), a row of the worst infinity
        kept = np.where(np.arange(cols) % 2 == 0, a * 2 - 1, -np.inf if ref is np.argmax else np.inf)
        kernels = check(s, [A, index], [a], [ref(kept, axis=1).astype("int32")], kernels=kernels)
