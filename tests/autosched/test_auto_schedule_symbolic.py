"""Issue 30, item 4: ``auto_schedule`` with a search budget works on symbolic shapes. The search
measures at representative values of the sizes (``sizes=`` sets them); the schedule stays
generic in them. The README's first kernel is the test."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, rand

import tessel
from tessel import te
from tessel.autosched import auto_schedule_result
from tessel.errors import TesselError
from tessel.tune.task import REPRESENTATIVE_SIZE


def _readme_kernel():
    n = te.var("n")
    A = te.placeholder((n, 64), name="A")
    k = te.reduce_axis((0, 64), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k] * A[i, k], axis=k), name="B")
    return A, B


def _check_generic(s, A, B) -> None:
    for target in TARGETS:
        f = tessel.build(s, [A, B], target=target)
        for rows in (7, 13, 100):
            a = rand(rows, 64, seed=rows)
            b = np.full(rows, np.nan, "float32")
            f(a, b)
            np.testing.assert_allclose(b, (a.astype("float64") ** 2).sum(axis=1), rtol=1e-4)


def test_the_readmes_first_kernel_is_auto_scheduled_with_a_search(tmp_path):
    A, B = _readme_kernel()
    log = tmp_path / "tune.log"
    res = auto_schedule_result([B], budget=3, log=str(log))
    assert res.tuned is not None and any(r.ok for r in res.tuned.records)
    assert f"n={REPRESENTATIVE_SIZE}" in log.read_text()  # measured at the representative size
    _check_generic(res.schedule, A, B)


def test_the_sizes_measured_at_can_be_set(tmp_path):
    A, B = _readme_kernel()
    log = tmp_path / "tune.log"
    s = tessel.auto_schedule([B], budget=2, log=str(log), sizes={"n": 37})
    assert "n=37" in log.read_text()
    _check_generic(s, A, B)
    with pytest.raises(TesselError, match="sizes= names m, which no tensor's shape uses"):
        tessel.auto_schedule([B], budget=2, sizes={"m": 5})
    with pytest.raises(TesselError, match="a size to measure at is a positive int"):
        tessel.auto_schedule([B], budget=2, sizes={"n": 0})
