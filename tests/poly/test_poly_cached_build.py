"""A build whose code is already remembered (on disk, by an earlier process) runs neither the
out-of-bounds analysis nor the exact-region analysis (issue 13, acceptance: build time), and
still refuses every program a fresh build refuses."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import rand

import tessel
from tessel import driver, te
from tessel.errors import BoundError
from tessel.poly import analysis as poly_analysis


def _tiled():
    """A non-divisible split with a producer computed at it: the exact analysis changes it."""
    A = te.placeholder((20, 16), name="A")
    B = te.compute((20, 16), lambda i, j: A[i, j] * 3, name="B")
    C = te.compute((20, 16), lambda i, j: B[i, j] + 1, name="C")
    s = te.create_schedule(C.op)
    io, _ = s[C].split(C.op.axis[0], factor=6)
    s[B].compute_at(s[C], io)
    return s, A, C


def _forget_this_process(monkeypatch):
    """What a new process starts with: no analysis kept beside a schedule, no verdict shared."""
    monkeypatch.setattr(poly_analysis, "_GENERATION", {"_memo_analysis": -1})  # no analysis stored is served
    monkeypatch.setattr(poly_analysis, "_CLEAN", {})


def _refuse(what):
    def run(*_args, **_kwargs):
        raise AssertionError(f"a cached build ran the {what}")
    return run


@pytest.mark.no_replay_check  # the replay lowers a second schedule, which would run the check
def test_a_cached_build_runs_no_analysis(monkeypatch):
    s, A, C = _tiled()
    a = rand(20, 16)
    out = np.empty_like(a)
    tessel.build(s, [A, C], target="c")(a, out)
    np.testing.assert_allclose(out, a * 3 + 1, rtol=1e-5, atol=1e-6)

    _forget_this_process(monkeypatch)
    monkeypatch.setattr(poly_analysis, "check_accesses", _refuse("out-of-bounds analysis"))
    monkeypatch.setattr(driver, "exact_plan", _refuse("exact analysis"))
    runs = dict(poly_analysis.RUNS)
    s2, A2, C2 = _tiled()
    out2 = np.full_like(a, 7.0)
    tessel.build(s2, [A2, C2], target="c")(a, out2)
    np.testing.assert_allclose(out2, a * 3 + 1, rtol=1e-5, atol=1e-6)
    assert poly_analysis.RUNS == runs


def _flat_twins():
    """Two programs whose flattened IR is the same index ``j + 1`` into a 2x4 ``A``: one reads
    ``A[(j+1)//4, (j+1)%4]`` (inside), the other ``A[0, j+1]`` (column 4 when j = 3)."""
    A = te.placeholder((2, 4), name="A")
    inside = te.compute((4,), lambda j: A[(j + 1) // 4, (j + 1) % 4], name="B")
    A2 = te.placeholder((2, 4), name="A")
    outside = te.compute((4,), lambda j: A2[0, j + 1], name="B")
    return (A, inside), (A2, outside)


@pytest.mark.no_replay_check
def test_a_cached_program_with_the_same_flat_code_does_not_let_an_out_of_bounds_one_through(monkeypatch):
    (A, inside), (A2, outside) = _flat_twins()
    s_in, s_out = te.create_schedule(inside.op), te.create_schedule(outside.op)
    flat_in = driver._lower_schedule(s_in, [A, inside], "main", False, None, check=False)[0].body
    flat_out = driver._lower_schedule(s_out, [A2, outside], "main", False, None, check=False)[0].body
    assert str(flat_in) == str(flat_out)  # the flat IR alone cannot tell them apart
    a = rand(2, 4)
    out = np.empty(4, "float32")
    tessel.build(s_in, [A, inside], target="c")(a, out)
    np.testing.assert_allclose(out, a.reshape(-1)[1:5])
    _forget_this_process(monkeypatch)
    with pytest.raises(BoundError, match="A") as err:
        tessel.build(s_out, [A2, outside], target="c")
    assert err.value.witness  # refused by the exact check, with the loop values where it happens


@pytest.mark.no_replay_check
def test_a_refused_program_is_refused_again():
    _, (A2, outside) = _flat_twins()
    s = te.create_schedule(outside.op)
    for _ in range(2):
        with pytest.raises(BoundError):
            tessel.build(s, [A2, outside], target="c")


def _symbolic():
    """Symbolic sizes: the kernel's calling convention carries index guards (seed 002)."""
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 3, name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] + 1, name="C")
    s = te.create_schedule(C.op)
    io, _ = s[C].split(C.op.axis[0], factor=6)
    s[B].compute_at(s[C], io)
    return s, A, C


@pytest.mark.no_replay_check
def test_a_cached_build_of_symbolic_sizes_runs_no_analysis_and_keeps_its_guards(monkeypatch):
    s, A, C = _symbolic()
    first = tessel.build(s, [A, C], target="c")
    assert first._spec.guards is not None  # sizes whose indices int32 cannot hold are refused

    _forget_this_process(monkeypatch)
    monkeypatch.setattr(poly_analysis, "check_accesses", _refuse("out-of-bounds analysis"))
    monkeypatch.setattr(driver, "exact_plan", _refuse("exact analysis"))
    s2, A2, C2 = _symbolic()
    again = tessel.build(s2, [A2, C2], target="c")
    assert again._spec.guards is not None
    assert [str(g.expr) for g in again._spec.guards.guards] == [str(g.expr) for g in first._spec.guards.guards]
    for shape in [(1, 1), (13, 7), (20, 16)]:
        a = rand(*shape)
        out = np.full_like(a, 7.0)
        again(a, out)
        np.testing.assert_allclose(out, a * 3 + 1, rtol=1e-5, atol=1e-6)
