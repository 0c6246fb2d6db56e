"""Border iterations peeled off a loop whose body tests for them (passes/peel.py): a stencil
written over its whole array with its border kept by a test runs its interior with no test,
so the interior's vectorized loop is vector code (it was kept scalar: "chooses between loads
per lane; the unchosen lanes might read out of bounds")."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, check, five_point, rand

import tessel
from tessel import te
from tessel.ir import expr as E
from tessel.ir import stmt as S
from tessel.ir.functor import collect
from tessel.passes.peel import peel_borders


def _smooth(n, m):
    A = te.placeholder((n, m), name="A", dtype="float64")

    def f(i, j):
        edge = te.any(i == 0, j == 0, i == n - 1, j == m - 1)
        inner = (A[i, j] + A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1]) * 0.2
        return te.if_then_else(edge, A[i, j], inner)

    B = te.compute((n, m), f, name="B")
    return A, B


@pytest.mark.parametrize(("n", "m"), [(13, 37), (9, 24)])
def test_a_stencil_with_its_border_tested_is_vector_code_inside(n, m):
    A, B = _smooth(n, m)
    s = te.create_schedule(B.op)
    s[B].vectorize(B.op.axis[1])
    a = rand(n, m, dtype="float64")
    kernels = check(s, [A, B], [a], [five_point(a)], targets=TARGETS, rtol=1e-12, atol=1e-12)
    src = kernels["c"].source
    assert "chooses between loads per lane" not in src
    assert "tsl_ld_f64x" in src  # vector loads in the interior


def _loop_with_test(k: int, n: int = 8) -> S.Stmt:
    i = E.Var("i", "int32")
    buf = S.Buffer("X", "float32", (n,))
    cond = E.EQ(i, E.IntImm(k, "int32"))
    value = E.Select(cond, E.FloatImm(1.0, "float32"), E.FloatImm(2.0, "float32"))
    return S.For(i, E.IntImm(0, "int32"), E.IntImm(n, "int32"), "serial", S.BufferStore(buf, value, [i]))


@pytest.mark.parametrize(("k", "extents"), [(0, [7]), (7, [7]), (3, [3, 4])])
def test_the_tested_iteration_runs_apart(k, extents):
    """A test of the first or last value peels it; a test of a value inside the loop splits the
    loop there (before it, it, after it). No piece tests anything."""
    out = peel_borders(_loop_with_test(k))
    fors = collect(out, lambda n: isinstance(n, S.For), statements_only=True)
    assert [f.extent.value for f in fors] == extents
    assert not collect(out, lambda n: isinstance(n, E.Select))
    stores = collect(out, lambda n: isinstance(n, S.BufferStore), statements_only=True)
    assert [x.value.value for x in stores if not collect(x.indices[0], lambda n: isinstance(n, E.Var))] == [1.0]


@pytest.mark.parametrize("k", [0, 1, 2])
def test_a_short_loop_over_cases_runs_each_iteration_apart(k):
    """A loop of at most SPLIT_WHOLE iterations whose body tests its variable for a value (a
    field index) is split into its iterations, each with its case chosen."""
    out = peel_borders(_loop_with_test(k, n=3))
    assert not collect(out, lambda n: isinstance(n, S.For), statements_only=True)
    assert not collect(out, lambda n: isinstance(n, E.Select))
    stores = collect(out, lambda n: isinstance(n, S.BufferStore), statements_only=True)
    assert [st.value.value for st in stores] == [1.0 if x == k else 2.0 for x in range(3)]


def test_a_loop_bound_to_a_gpu_thread_is_left_alone():
    """``if (threadIdx.x == 0)`` is each thread's test of its own index: the loop that stands
    for the threads is never cut."""
    i = E.Var("tx", "int32")
    buf = S.Buffer("X", "float32", (8,))
    value = E.Select(E.EQ(i, E.IntImm(0, "int32")), E.FloatImm(1.0, "float32"), E.FloatImm(2.0, "float32"))
    loop = S.For(i, E.IntImm(0, "int32"), E.IntImm(8, "int32"), "thread_binding", S.BufferStore(buf, value, [i]),
                 "threadIdx.x")
    assert peel_borders(loop) is loop


def _run(stmt: S.Stmt, n: int) -> list[float]:
    """What a loop nest over its one buffer X (``n`` float32, -1 before) stores, built as it is
    for the python target (the pipeline's passes are not run on a function built directly)."""
    import numpy as np

    from tessel.driver import build_func

    buf = collect(stmt, lambda x: isinstance(x, S.BufferStore))[0].buffer
    x = np.full(n, -1.0, dtype="float32")
    build_func(S.PrimFunc("k", (buf,), (), stmt, (buf,)), "python")(x)
    return [float(v) for v in x]


def _parity_loop(n: int, lo: int = 0, modulus: int = 2) -> S.Stmt:
    """X[i] = 1 where (i + 1) % modulus == 0, else 2."""
    i = E.Var("i", "int32")
    buf = S.Buffer("X", "float32", (n + lo,))
    cond = E.EQ(E.FloorMod(E.Add(i, E.IntImm(1, "int32")), E.IntImm(modulus, "int32")), E.IntImm(0, "int32"))
    value = E.Select(cond, E.FloatImm(1.0, "float32"), E.FloatImm(2.0, "float32"))
    return S.For(i, E.IntImm(lo, "int32"), E.IntImm(n, "int32"), "serial", S.BufferStore(buf, value, [i]))


@pytest.mark.parametrize(("n", "lo", "modulus"), [(9, 0, 2), (10, 1, 2), (11, 2, 3), (8, 0, 4)])
def test_a_test_of_the_variable_modulo_a_constant_runs_each_residue_apart(n, lo, modulus):
    """The arrays taking turns of store_in([A, B], ...) are chosen by a step's parity: the loop
    steps by the modulus, one copy per residue, none of which tests anything; the iterations
    left over run after it. The values stored are the same."""
    loop = _parity_loop(n, lo, modulus)
    out = peel_borders(loop)
    assert not collect(out, lambda x: isinstance(x, E.Select | E.FloorMod))
    steps = [x for x in collect(out, lambda x: isinstance(x, S.For))]
    assert len(steps) == 1 and steps[0].extent.value == n // modulus
    want = [-1.0] * lo + [1.0 if (i + 1) % modulus == 0 else 2.0 for i in range(lo, lo + n)]
    assert _run(out, n + lo) == want == _run(loop, n + lo)


def test_a_symbolic_loop_keeps_its_leftover_iterations_in_a_loop_that_still_tests():
    n = E.Var("n", "int32")
    i = E.Var("i", "int32")
    buf = S.Buffer("X", "float32", (n,))
    cond = E.EQ(E.FloorMod(i, E.IntImm(2, "int32")), E.IntImm(0, "int32"))
    loop = S.For(i, E.IntImm(0, "int32"), n, "serial",
                 S.BufferStore(buf, E.Select(cond, E.FloatImm(1.0, "float32"), E.FloatImm(2.0, "float32")), [i]))
    out = peel_borders(loop)
    loops = collect(out, lambda x: isinstance(x, S.For))
    assert len(loops) == 2  # the pairs, then what is left (n % 2 iterations), which still tests
    assert len(collect(loops[0].body, lambda x: isinstance(x, E.Select))) == 0


@pytest.mark.parametrize(("op", "k", "peeled"), [
    (E.LT, 7, {7}), (E.LE, 6, {7}), (E.GT, 0, {0}), (E.GE, 1, {0}), (E.LT, 1, {0}), (E.LT, 4, set())])
def test_a_comparison_that_singles_out_an_end_peels_it(op, k, peeled):
    """``i < n - 1`` (the last row a stencil skips) is false at the last iteration only: that
    one runs apart and the loop left tests nothing; a comparison true on a range inside splits
    the loop where it changes (``i < 4``: [0, 4) and [4, 8)). No piece tests anything."""
    n = 8
    i = E.Var("i", "int32")
    buf = S.Buffer("X", "float32", (n,))
    value = E.Select(op(i, E.IntImm(k, "int32")), E.FloatImm(1.0, "float32"), E.FloatImm(2.0, "float32"))
    loop = S.For(i, E.IntImm(0, "int32"), E.IntImm(n, "int32"), "serial", S.BufferStore(buf, value, [i]))
    out = peel_borders(loop)
    assert _run(out, n) == _run(loop, n)
    left = collect(out, lambda x: isinstance(x, S.For))
    assert not collect(out, lambda x: isinstance(x, E.Select))
    assert [lp.extent.value for lp in left] == ([n - len(peeled)] if peeled else [k, n - k])


def test_a_store_of_an_elements_own_value_leaves_nothing_behind():
    """Peeling may make a border's store ``X[0] = X[0]`` (a recurrence keeping its border in
    place): it is dropped, and a loop left with nothing to do goes too."""
    n = 8
    i = E.Var("i", "int32")
    buf = S.Buffer("X", "float32", (n,))
    keep = E.BufferLoad(buf, [i])
    value = E.Select(E.EQ(i, E.IntImm(0, "int32")), keep, E.FloatImm(2.0, "float32"))
    loop = S.For(i, E.IntImm(0, "int32"), E.IntImm(n, "int32"), "serial", S.BufferStore(buf, value, [i]))
    out = peel_borders(loop)
    stores = collect(out, lambda x: isinstance(x, S.BufferStore))
    assert len(stores) == 1 and _run(out, n) == _run(loop, n) == [-1.0] + [2.0] * (n - 1)


def test_residue_splits_are_bounded_per_kernel():
    """Nested loops each testing their variable's parity would copy the body 2^depth times: past
    MAX_RESIDUE_SPLITS the inner ones keep their tests, and the values are the same."""
    from tessel.passes.peel import MAX_RESIDUE_SPLITS

    depth = MAX_RESIDUE_SPLITS + 2
    vs = [E.Var(f"i{d}", "int32") for d in range(depth)]
    buf = S.Buffer("X", "float32", (4,))
    cond = E.EQ(E.FloorMod(vs[0], E.IntImm(2, "int32")), E.IntImm(0, "int32"))
    for v in vs[1:]:
        cond = E.And(cond, E.EQ(E.FloorMod(v, E.IntImm(2, "int32")), E.IntImm(0, "int32")))
    body = S.BufferStore(buf, E.Select(cond, E.FloatImm(1.0, "float32"), E.FloatImm(2.0, "float32")),
                         [E.IntImm(0, "int32")])
    for v in reversed(vs):
        body = S.For(v, E.IntImm(0, "int32"), E.IntImm(4, "int32"), "serial", body)
    out = peel_borders(body)
    # at most MAX_RESIDUE_SPLITS loops split in all (copies included): the code grows linearly
    stores = collect(out, lambda x: isinstance(x, S.BufferStore))
    assert len(stores) <= 2 * (MAX_RESIDUE_SPLITS + 1)
    assert collect(out, lambda x: isinstance(x, E.Select))  # the innermost kept their tests


@pytest.mark.parametrize("n", [1, 2, 13])
def test_a_triangle_tested_against_an_outer_loop_is_split_there(n):
    """``j == k`` and ``j > k`` (a solver's pivot and the triangle past it) test the inner loop
    against the outer one: the inner loop is split at ``k`` (before, at, after), each piece
    knows which choice it makes, and nothing is tested per element."""
    A = te.placeholder((n, n), name="A", dtype="float64")
    B = te.compute((n, n), lambda k, j: te.if_then_else(
        j == k, A[k, j] * 2, te.if_then_else(j > k, A[k, j] + 1, A[k, j] - 1)), name="B")
    s = te.create_schedule(B.op)
    body = tessel.lower(s, [A, B]).body
    if n > 1:  # (one element: no loop to split, the choices made by constants)
        assert not collect(body, lambda x: isinstance(x, E.Call) and x.op == "if_then_else")
    a = rand(n, n, dtype="float64")
    k, j = np.indices((n, n))
    want = np.where(j == k, a * 2, np.where(j > k, a + 1, a - 1))
    check(s, [A, B], [a], [want], targets=TARGETS, rtol=1e-12, atol=1e-12)


def test_a_point_not_proved_inside_the_loop_is_not_split():
    """``j == k + 5`` may lie past the row's end (k runs to 9, the row has 8): the loop keeps its
    test, and the values are right."""
    A = te.placeholder((10, 8), name="A", dtype="float64")
    B = te.compute((10, 8), lambda k, j: te.if_then_else(j == k + 5, A[k, j] * 2, A[k, j]), name="B")
    s = te.create_schedule(B.op)
    body = tessel.lower(s, [A, B]).body
    assert collect(body, lambda x: isinstance(x, E.Call) and x.op == "if_then_else")
    a = rand(10, 8, dtype="float64")
    k, j = np.indices((10, 8))
    check(s, [A, B], [a], [np.where(j == k + 5, a * 2, a)], targets=TARGETS, rtol=1e-12, atol=1e-12)


def test_a_triangle_of_symbolic_size_is_split_and_right_at_every_size():
    """With ``n`` symbolic, ``k < n`` still proves the pivot ``j == k`` inside the row: the
    split holds for every size, the one kernel checked at three."""
    n = te.var("n")
    A = te.placeholder((n, n), name="A", dtype="float64")
    B = te.compute((n, n), lambda k, j: te.if_then_else(
        j == k, A[k, j] * 2, te.if_then_else(j > k, A[k, j] + 1, A[k, j] - 1)), name="B")
    s = te.create_schedule(B.op)
    body = tessel.lower(s, [A, B]).body
    assert not collect(body, lambda x: isinstance(x, E.Call) and x.op == "if_then_else")
    kernels = None
    for size in (1, 2, 13):
        a = rand(size, size, dtype="float64")
        k, j = np.indices((size, size))
        want = np.where(j == k, a * 2, np.where(j > k, a + 1, a - 1))
        kernels = check(s, [A, B], [a], [want], targets=TARGETS, rtol=1e-12, atol=1e-12, kernels=kernels)


@pytest.mark.parametrize("schedule", ["parallel", "tiled", "in_place"])
def test_a_triangle_split_under_other_schedules(schedule):
    """The pivot split under threads over the rows, under tiles whose inner loops see the pivot
    only through the tile's index, and written in place into its input (``store_in``)."""
    n = 11
    A = te.placeholder((n, n), name="A", dtype="float64")
    B = te.compute((n, n), lambda k, j: te.if_then_else(
        j == k, A[k, j] * 2, te.if_then_else(j > k, A[k, j] + 1, A[k, j] - 1)), name="B")
    s = te.create_schedule(B.op)
    k, j = B.op.axis
    if schedule == "parallel":
        s[B].parallel(k)
    elif schedule == "tiled":
        s[B].tile(k, j, 4, 3)
    a = rand(n, n, dtype="float64")
    kk, jj = np.indices((n, n))
    want = np.where(jj == kk, a * 2, np.where(jj > kk, a + 1, a - 1))
    if schedule == "in_place":
        s[B].store_in(A)
        for target in TARGETS:
            x = a.copy()
            tessel.build(s, [A], target=target)(x)
            np.testing.assert_allclose(x, want, rtol=1e-12, err_msg=target)
        return
    check(s, [A, B], [a], [want], targets=TARGETS, rtol=1e-12, atol=1e-12)
