"""Exact regions in ``build``: the option, the memo, and the C target's values."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check, rand

import tessel
from tessel import driver, te
from tessel.runtime.cache import clear_memory_cache


def _split_case():
    A = te.placeholder((32,), name="A")
    C = te.compute((32,), lambda i: A[i] * 3 + 1, name="C")
    D = te.compute((20,), lambda i: C[i] * 2, name="D")
    s = te.create_schedule(D.op)
    outer, _ = s[D].split(D.op.axis[0], factor=16)
    s[C].compute_at(s[D], outer)
    return s, [A, D]


@pytest.fixture
def analyses(tmp_path, monkeypatch):
    """A cache of this test's own, and a count of the exact analyses run."""
    monkeypatch.setenv("TESSEL_CACHE_DIR", str(tmp_path / "cache"))
    clear_memory_cache()
    calls = []
    real = driver.exact_plan

    def counted(ctx):
        calls.append(ctx)
        return real(ctx)

    monkeypatch.setattr(driver, "exact_plan", counted)
    yield calls
    clear_memory_cache()


def test_a_cached_build_does_not_run_the_analysis_again(analyses):
    a = rand(32)
    want = (a[:20] * 3 + 1) * 2
    check(*_split_case(), [a], [want], targets=("c",))
    assert len(analyses) == 1
    clear_memory_cache()  # as a new process would: the code comes from the disk cache
    check(*_split_case(), [a], [want], targets=("c",))
    assert len(analyses) == 1


def test_exact_and_interval_builds_are_remembered_apart(analyses):
    s, args = _split_case()
    exact = tessel.build(s, args, target="c")
    box = tessel.build(s, args, target="c", exact=False)
    assert exact.source != box.source
    assert len(analyses) == 1  # exact=False never asks for it
    a = rand(32)
    for f in (exact, box):
        out = np.full(20, np.nan, "float32")
        f(a, out)
        np.testing.assert_allclose(out, (a[:20] * 3 + 1) * 2, rtol=1e-6)


def test_lower_takes_the_option_too():
    s, args = _split_case()
    box = str(tessel.lower(s, args, simple_mode=True, exact=False))
    exact = str(tessel.lower(s, args, simple_mode=True))
    assert box.count("for (i, 0, 16)") == 2 and "for (i, 0, 4)" not in box  # both tiles whole
    assert exact.count("for (i, 0, 16)") == 1 and "for (i, 0, 4)" in exact  # the last one: 4
