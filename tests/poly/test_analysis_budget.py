"""Issue 31: an exact analysis that would cost more than its budget is given up soundly.

The strip stencil below (a producer computed per strip of 16 rows of a 5-point stencil over
symbolic ``n x m``, its columns split by 16 and vectorized) took minutes to lower: the exact
region of the producer leaves out the strip's four corners, a set whose loops bound each
column loop by a min/max of four terms, and every later pass reasoned about those bounds.
Budgets are counted in work (isl operations, proof attempts, constraints), never in seconds,
so these tests say what gave up, not how fast a machine is.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from helpers import check, rand

import tessel
from benchmarks.build_growth import program
from tessel import te
from tessel.arith import budget
from tessel.errors import AnalysisBudgetWarning
from tessel.poly import regions
from tessel.runtime.cache import clear_memory_cache


def _strip():
    s, (A, S) = program("strip", 1)  # the benchmark's own program: one definition of it
    return s, A, S


def _want(a: np.ndarray) -> np.ndarray:
    p = a * a
    return p[:-2, 1:-1] + p[1:-1, :-2] + p[1:-1, 1:-1] + p[1:-1, 2:] + p[2:, 1:-1]


def test_the_strip_stencil_keeps_its_producers_box_because_the_corners_are_only_a_slice():
    s, A, S = _strip()
    report = regions(s).report()
    assert "stage P: keeps its interval box (the exact region saves only a slice" in report
    text = str(tessel.lower(s, [A, S], simple_mode=True))
    assert "min(min(" not in text  # the corners' bounds would have nested four terms
    a = rand(37, 29)
    check(s, [A, S], [a], [_want(a)])


def test_a_region_whose_saving_is_a_whole_part_stays_exact():
    # seed 000's example: readers of T[0:2, 0:2] and T[2:4, 2:4] save two whole blocks of its
    # box (not a slice), so T computes its exact region
    A = te.placeholder((4, 4), name="A")
    T = te.compute((4, 4), lambda i, j: A[i, j] * 3, name="T")
    D = te.compute((2, 2), lambda i, j: T[i, j] + T[i + 2, j + 2], name="D")
    s = te.create_schedule(D.op)
    assert "stage T: computes the exact region" in regions(s).report()
    a = rand(4, 4)
    check(s, [A, D], [a], [a[:2, :2] * 3 + a[2:, 2:] * 3])


@pytest.mark.parametrize("knob, analysis", [("region_operations", "exact region"),
                                            ("region_constraints", "exact region"),
                                            ("emptiness_operations", "emptiness"),
                                            ("proof_steps", "simplifier")])
def test_an_analysis_past_its_budget_gives_the_sound_answer_and_says_so(monkeypatch, tmp_path, limits, knob,
                                                                         analysis):
    # a budget of (almost) nothing: that analysis gives up, and the values are still NumPy's;
    # the first give-up of the process warns (of this test: it forgets earlier warnings)
    limits(**{knob: 1})  # isl reads 0 as no limit
    monkeypatch.setattr(budget, "_warned", set())
    monkeypatch.setenv("TESSEL_CACHE_DIR", str(tmp_path))  # a build, not a cached kernel
    clear_memory_cache()
    budget.recent.clear()
    h = te.var("h")
    A = te.placeholder((2 * h, 2 * h), name="A")
    T = te.compute((2 * h, 2 * h), lambda i, j: A[i, j] * 3, name="T")
    D = te.compute((h, h), lambda i, j: T[i, j] + T[i + h, j + h], name="D")
    s = te.create_schedule(D.op)
    s[D].split(D.op.axis[1], factor=5)
    a = rand(14, 14)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        check(s, [A, D], [a], [a[:7, :7] * 3 + a[7:, 7:] * 3])
    assert any(e.analysis == analysis for e in budget.recent)
    assert any(isinstance(w.message, AnalysisBudgetWarning) and analysis in str(w.message) for w in got)
