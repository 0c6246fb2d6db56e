"""Fixed-point spatial axes of a scan (scan_fixpoint.py): an axis is one when each element of a
step is computed from the same element of earlier steps only."""

from __future__ import annotations

from tessel import te
from tessel.te.scan_fixpoint import fixed_point_axes


def _scan(update_of, steps: int = 6, rows: int = 4, cols: int = 4, between=None):
    X = te.placeholder((steps, rows, cols), name="X")
    S = te.placeholder((steps, rows, cols), name="S")
    init = te.compute((1, rows, cols), lambda _, i, j: X[0, i, j], name="init")
    mid = between(S) if between else None
    update = te.compute((steps, rows, cols), lambda t, i, j: update_of(S, X, mid, t, i, j), name="update")
    res = te.scan(init, update, S, inputs=[X], name="res")
    return [fixed_point_axes(res.op)[iv] for iv in res.op.spatial_axis_]


def test_elementwise_recurrence_is_fixed_on_both_axes():
    assert _scan(lambda S, X, _, t, i, j: S[t - 1, i, j] * 0.5 + X[t, j, i]) == [True, True]  # X is no state


def test_transposed_state_fixes_neither():
    assert _scan(lambda S, X, _, t, i, j: S[t - 1, j, i] + 1.0) == [False, False]


def test_a_neighbour_or_constant_index_breaks_only_its_axis():
    assert _scan(lambda S, X, _, t, i, j: S[t - 1, i, j] + S[t - 1, i, 0]) == [True, False]
    assert _scan(lambda S, X, _, t, i, j: S[t - 1, i, j] + S[t - 1, te.min(i + 1, 3), j]) == [False, True]


def test_through_a_stage_of_the_body():
    def mid(S):
        return te.compute((6, 4, 4), lambda t, j, i: S[t - 1, i, j] * 2.0, name="mid")  # its axes swapped

    assert _scan(lambda S, X, M, t, i, j: M[t, j, i] + 1.0, between=mid) == [True, True]
    assert _scan(lambda S, X, M, t, i, j: M[t, i, j] + 1.0, between=mid) == [False, False]
