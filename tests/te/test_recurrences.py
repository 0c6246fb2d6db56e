"""Recurrences TE cannot write (te.recurrence) and the same programs with te.scan, against NumPy
on both targets; refusals for orders that would read a value before it is written."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, rand

import tessel
from tessel import te


def _run(sch, args, inputs, outs, target):
    f = tessel.build(sch, args, target=target)
    ins = [np.array(a, copy=True) for a in inputs]
    got = [np.array(o, copy=True) for o in outs]
    f(*ins, *got)
    return ins, got


def _wavefront(n, m):
    A = te.placeholder((n, m), name="A")
    h = te.recurrence((n, m), [
        te.define(lambda h, i, j: A[i, j]),
        te.define(lambda h, i, j: 0.5 * h[i - 1, j] + 0.25 * h[i, j - 1] + A[i, j],
                  where=lambda i, j: te.all(i > 0, j > 0)),
    ], name="h")
    return A, h


def _wavefront_ref(a):
    h = a.astype("float64").copy()
    for i in range(1, a.shape[0]):
        for j in range(1, a.shape[1]):
            h[i, j] = 0.5 * h[i - 1, j] + 0.25 * h[i, j - 1] + a[i, j]
    return h


@pytest.mark.parametrize("target", TARGETS)
def test_wavefront_2d(target):
    n, m = 11, 7
    A, h = _wavefront(n, m)
    s = te.create_schedule(h.op)
    a = rand(n, m)
    _, (got,) = _run(s, [A, h], [a], [np.full((n, m), np.nan, "float32")], target)
    np.testing.assert_allclose(got, _wavefront_ref(a), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_wavefront_interchange_is_legal_and_split_too(target):
    n, m = 9, 13
    A, h = _wavefront(n, m)
    s = te.create_schedule(h.op)
    i, j = h.op.axis
    jo, ji = s[h].split(j, factor=4)
    s[h].reorder(jo, i, ji)  # dependences (1,0), (0,1): tiling keeps both forwards
    a = rand(n, m, seed=4)
    _, (got,) = _run(s, [A, h], [a], [np.zeros((n, m), "float32")], target)
    np.testing.assert_allclose(got, _wavefront_ref(a), rtol=1e-5, atol=1e-5)


def test_reorder_against_a_dependence_is_refused():
    n, m = 6, 6
    A = te.placeholder((n, m), name="A")
    h = te.recurrence((n, m), [
        te.define(lambda h, i, j: A[i, j]),
        te.define(lambda h, i, j: h[i - 1, j + 1] + A[i, j], where=lambda i, j: te.all(i > 0, j < m - 1)),
    ], name="h")
    s = te.create_schedule(h.op)
    tessel.build(s, [A, h], target="python")  # the default order is legal
    s[h].reorder(h.op.axis[1], h.op.axis[0])  # j outside i: h[i-1, j+1] is written later
    with pytest.raises(tessel.ScheduleError, match=r"reads h\[i - 1, j \+ 1\].*for i = \d+, j = \d+"):
        tessel.build(s, [A, h], target="python")


def test_conflicting_self_reads_are_refused():
    x = te.placeholder((8,), name="x")
    with pytest.raises(tessel.DefinitionError, match="no direction of loop i"):
        te.recurrence((8,), [te.define(lambda y, i: x[i]),
                             te.define(lambda y, i: y[i - 1] + y[i + 1], where=lambda i: te.all(i > 0, i < 7))],
                      name="y")


@pytest.mark.parametrize("target", TARGETS)
def test_fibonacci_like_recurrence_through_updates(target):
    """Tiramisu's test_25: C[0] = C[1] = v; C[i] = (C[i-1] + C[i-2]) / 2 + i, three definitions."""
    N = 23
    v = te.placeholder((1,), name="v")
    C = te.recurrence((N,), [
        te.define(lambda c, i: v[0], where=lambda i: i == 0),
        te.define(lambda c, i: v[0] * 2.0, where=lambda i: i == 1),
        te.define(lambda c, i: (c[i - 1] + c[i - 2]) * 0.5 + i.astype("float32"), where=lambda i: i >= 2),
    ], name="C")
    s = te.create_schedule(C.op)
    assert [t.op.name for t in C.op.definitions] == ["C.def0", "C.def1", "C"]
    vv = rand(1)
    ref = np.zeros(N)
    ref[0], ref[1] = vv[0], vv[0] * 2
    for i in range(2, N):
        ref[i] = (ref[i - 1] + ref[i - 2]) * 0.5 + i
    _, (got,) = _run(s, [v, C], [vv], [np.zeros(N, "float32")], target)
    np.testing.assert_allclose(got, ref, rtol=1e-5)


def _scan_prefix(n, m, X):
    s_state = te.placeholder((n, m), name="s_state")
    init = te.compute((1, m), lambda _, j: X[0, j], name="init")
    upd = te.compute((n, m), lambda t, j: s_state[t - 1, j] + X[t, j], name="upd")
    return te.scan(init, upd, s_state, name="prefix")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("api", ["scan", "recurrence"])
def test_prefix_sum(target, api):
    n, m = 19, 5
    X = te.placeholder((n, m), name="X")
    if api == "scan":
        P = _scan_prefix(n, m, X)
    else:
        P = te.recurrence((n, m), [te.define(lambda p, t, j: X[t, j]),
                                   te.define(lambda p, t, j: p[t - 1, j] + X[t, j], where=lambda t, j: t > 0)],
                          name="prefix")
    s = te.create_schedule(P.op)
    x = rand(n, m)
    _, (got,) = _run(s, [X, P], [x], [np.zeros((n, m), "float32")], target)
    np.testing.assert_allclose(got, np.cumsum(x, axis=0), rtol=1e-5, atol=1e-5)


def _iir_ref(x, a, backwards):
    y = x.astype("float64").copy()
    order = range(len(x) - 2, -1, -1) if backwards else range(1, len(x))
    for i in order:
        y[i] = x[i] + a * y[i + 1 if backwards else i - 1]
    return y


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("backwards", [False, True])
@pytest.mark.parametrize("api", ["scan", "recurrence"])
def test_iir_filter_both_directions(target, backwards, api):
    n, a = 29, 0.7
    x = te.placeholder((n,), name="x")
    if api == "recurrence":
        if backwards:
            y = te.recurrence((n,), [te.define(lambda y, i: x[i]),
                                     te.define(lambda y, i: x[i] + a * y[i + 1], where=lambda i: i < n - 1)], name="y")
        else:
            y = te.recurrence((n,), [te.define(lambda y, i: x[i]),
                                     te.define(lambda y, i: x[i] + a * y[i - 1], where=lambda i: i > 0)], name="y")
        s = te.create_schedule(y.op)
        args = [x, y]
    else:  # te.scan runs forwards: a backwards filter scans the reversed signal
        st = te.placeholder((n,), name="st")
        xi = (lambda t: x[n - 1 - t]) if backwards else (lambda t: x[t])
        init = te.compute((1,), lambda t: xi(t), name="init")
        upd = te.compute((n,), lambda t: xi(t) + a * st[t - 1], name="upd")
        sc = te.scan(init, upd, st, name="iir")
        y = te.compute((n,), (lambda i: sc[n - 1 - i]) if backwards else (lambda i: sc[i]), name="y")
        s = te.create_schedule(y.op)
        args = [x, y]
    xv = rand(n)
    _, (got,) = _run(s, args, [xv], [np.zeros(n, "float32")], target)
    np.testing.assert_allclose(got, _iir_ref(xv, a, backwards), rtol=1e-5, atol=1e-5)
    if api == "recurrence" and backwards:
        assert y.op.directions == (-1,)


def _edge_filter(n, m):
    Img = te.placeholder((n, m), name="Img")
    R = te.compute((n - 2, m - 2), lambda i, j: (Img[i, j] + Img[i + 1, j + 1] + Img[i + 2, j + 2]
                                                  + Img[i, j + 2] + Img[i + 2, j]) / 5.0, name="R")
    Out = te.recurrence(None, [te.define(lambda o, i, j: te.abs(R[i, j] - R[i + 1, j + 1]) + te.abs(R[i + 1, j] - R[i, j + 1]),
                                         where=lambda i, j: te.all(i < n - 3, j < m - 3))],
                        name="Out", inplace=Img)
    return Img, R, Out


def _edge_ref(a):
    r = (a[:-2, :-2] + a[1:-1, 1:-1] + a[2:, 2:] + a[:-2, 2:] + a[2:, :-2]) / 5
    out = a.copy()
    out[:-3, :-3] = np.abs(r[:-1, :-1] - r[1:, 1:]) + np.abs(r[1:, :-1] - r[:-1, 1:])
    return out


@pytest.mark.parametrize("target", TARGETS)
def test_in_place_edge_filter(target):
    """Tiramisu's edge benchmark: a ring blur, then Roberts edges written back into the image."""
    n, m = 13, 10
    Img, R, Out = _edge_filter(n, m)
    s = te.create_schedule(Out.op)
    s[Out].parallel(Out.op.axis[0])
    a = rand(n, m)
    (img,), _ = _run(s, [Img], [a], [], target)
    np.testing.assert_allclose(img, _edge_ref(a), rtol=1e-5, atol=1e-6)


def test_in_place_reader_inside_the_recurrence_is_refused():
    Img, R, Out = _edge_filter(9, 9)
    s = te.create_schedule(Out.op)
    s[R].compute_at(s[Out], Out.op.axis[0])
    with pytest.raises(tessel.ScheduleError, match="overwrites in place"):
        tessel.build(s, [Img], target="python")
    s2 = te.create_schedule(Out.op)
    s2[R].compute_inline()
    with pytest.raises(tessel.TesselError, match=r"reads Img\["):
        tessel.build(s2, [Img], target="python")


@pytest.mark.parametrize("target", TARGETS)
def test_heat_2d_over_time_steps(target):
    T, n, m = 5, 10, 9
    U0 = te.placeholder((n, m), name="U0")
    u = te.recurrence((T, n, m), [
        te.define(lambda u, t, x, y: U0[x, y]),
        te.define(lambda u, t, x, y: u[t - 1, x, y] + 0.125 * (u[t - 1, x - 1, y] + u[t - 1, x + 1, y]
                                                              + u[t - 1, x, y - 1] + u[t - 1, x, y + 1]
                                                              - 4.0 * u[t - 1, x, y]),
                  where=lambda t, x, y: te.all(t > 0, x > 0, x < n - 1, y > 0, y < m - 1)),
    ], name="u")
    s = te.create_schedule(u.op)
    s[u].parallel(u.op.axis[1])  # x carries no dependence within a time step
    u0 = rand(n, m)
    ref = np.empty((T, n, m))
    ref[:] = u0
    for t in range(1, T):
        p = ref[t - 1]
        ref[t, 1:-1, 1:-1] = p[1:-1, 1:-1] + 0.125 * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:]
                                                     - 4 * p[1:-1, 1:-1])
    _, (got,) = _run(s, [U0, u], [u0], [np.zeros((T, n, m), "float32")], target)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_lstm_style_cell_over_time_and_layers(target):
    """h[t, l] = sum_j W[l, k, j] tanh(h[t, l-1, j]) + U[l, k, j] tanh(h[t-1, l, j]): the state
    runs over time and layers (Tiramisu's LSTM recurrence), the layer-0 row is the input."""
    T, L, K = 6, 3, 5
    X = te.placeholder((T, K), name="X")
    W = te.placeholder((L, K, K), name="W")
    U = te.placeholder((L, K, K), name="U")

    def cell(h, t, l, k):
        j = te.reduce_axis((0, K), name="j")
        return te.sum(W[l - 1, k, j] * te.tanh(h[t, l - 1, j]) + U[l - 1, k, j] * te.tanh(h[t - 1, l, j]), axis=j)

    H = te.recurrence((T + 1, L + 1, K), [
        te.define(lambda h, t, l, k: te.const(0.0, "float32"), where=lambda t, l, k: te.any(t == 0, l > 0)),
        te.define(lambda h, t, l, k: X[t - 1, k], where=lambda t, l, k: te.all(t > 0, l == 0)),
        te.define(cell, where=lambda t, l, k: te.all(t > 0, l > 0)),
    ], name="H")
    s = te.create_schedule(H.op)
    x, w, u = rand(T, K), rand(L, K, K, seed=1) * 0.5, rand(L, K, K, seed=2) * 0.5
    ref = np.zeros((T + 1, L + 1, K))
    ref[1:, 0] = x
    for t in range(1, T + 1):
        for l in range(1, L + 1):
            ref[t, l] = w[l - 1] @ np.tanh(ref[t, l - 1]) + u[l - 1] @ np.tanh(ref[t - 1, l])
    _, (got,) = _run(s, [X, W, U, H], [x, w, u], [np.full((T + 1, L + 1, K), np.nan, "float32")], target)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)


def test_model_shares_one_storage_and_finds_the_dependences():
    A, h = _wavefront(5, 5)
    s = te.create_schedule(h.op)
    m = tessel.poly.model(s)
    names = {a.relation.get_tuple_name(tessel.poly.space.DIM.out) for st in m.statements for a in st.writes}
    assert len(names) == 1  # both definitions write one array
    deps = s.dependences()
    assert any(d.source.stage.name == "h.def0" and d.sink.stage.name == "h" for d in deps)
    assert any(d.source.stage.name == "h" and d.sink.stage.name == "h" and d.kind == "flow" for d in deps)


@pytest.mark.parametrize("fi,fj,order", [(2, 2, 0), (3, 4, 0), (2, 4, 1), (3, 2, 2), (2, 2, 3), (3, 4, 3)])
def test_tilings_of_a_recurrence_are_right_or_refused(fi, fj, order):
    """Dependences (1,0), (0,1), (1,-1): a split and reorder either keeps every self-read after
    its write (right values) or is refused; never a wrong value."""
    N, M = 9, 7
    A = te.placeholder((N, M), name="A")
    h = te.recurrence((N, M), [
        te.define(lambda h, i, j: A[i, j]),
        te.define(lambda h, i, j: 0.5 * h[i - 1, j] + 0.25 * h[i, j - 1] + 0.1 * h[i - 1, j + 1],
                  where=lambda i, j: te.all(i > 0, j > 0, j < M - 1)),
    ], name="h")
    s = te.create_schedule(h.op)
    io, ii = s[h].split(h.op.axis[0], factor=fi)
    jo, ji = s[h].split(h.op.axis[1], factor=fj)
    s[h].reorder(*[(io, ii, jo, ji), (io, jo, ii, ji), (jo, io, ii, ji), (io, jo, ji, ii)][order])
    a = rand(N, M, seed=order)
    ref = a.astype("float64").copy()
    for i in range(1, N):
        for j in range(1, M - 1):
            ref[i, j] = 0.5 * ref[i - 1, j] + 0.25 * ref[i, j - 1] + 0.1 * ref[i - 1, j + 1]
    try:
        _, (got,) = _run(s, [A, h], [a], [np.zeros((N, M), "float32")], "python")
    except tessel.ScheduleError as err:
        assert order != 0 and "write that element only after the read" in str(err)
        return
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_definitions_stay_whole_at_the_root():
    n = 6
    A = te.placeholder((n,), name="A")
    h = te.recurrence((n,), [te.define(lambda h, i: A[i]),
                             te.define(lambda h, i: h[i - 1] + A[i], where=lambda i: i > 0)], name="h")
    s = te.create_schedule(h.op)
    with pytest.raises(tessel.ScheduleError, match="te.compute stages only"):
        s.cache_write(h, "local")
    B = te.compute((n,), lambda i: h[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    s[h].compute_at(s[B], B.op.axis[0])
    with pytest.raises(tessel.TesselError, match="must run whole"):
        tessel.build(s, [A, B], target="python")


@pytest.mark.parametrize("target", TARGETS)
def test_a_cache_read_for_a_recurrence_is_read_by_all_its_definitions(target):
    """The definitions share one storage and run as one computation: the copy replaces the
    input for every definition that reads it, and the recurrence is rebuilt whole."""
    n = 6
    A = te.placeholder((n,), name="A")
    h = te.recurrence((n,), [te.define(lambda h, i: A[i]),
                             te.define(lambda h, i: h[i - 1] + A[i], where=lambda i: i > 0)], name="h")
    s = te.create_schedule(h.op)
    AL = s.cache_read(A, "local", [h.op])
    assert all(AL in d.op.input_tensors() and A not in d.op.input_tensors() for d in s[h].op.definitions)
    a = rand(n)
    got = np.empty(n, "float32")
    tessel.build(s, [A, h], target=target)(a, got)
    np.testing.assert_allclose(got, np.cumsum(a), rtol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_a_reader_of_one_element_still_gets_the_whole_recurrence(target):
    """The exact plan computes a producer only where it is read; a recurrence's points read
    each other, so it runs whole even when its reader wants its last element alone."""
    n = 10
    x = te.placeholder((n,), name="x")
    h = te.recurrence((n,), [te.define(lambda h, i: x[i]),
                             te.define(lambda h, i: h[i - 1] + x[i], where=lambda i: i > 0)], name="h")
    B = te.compute((1,), lambda i: h[n - 1] * 2.0, name="B")
    s = te.create_schedule(B.op)
    xv = rand(n)
    _, (got,) = _run(s, [x, B], [xv], [np.zeros(1, "float32")], target)
    np.testing.assert_allclose(got, [2 * xv.astype("float64").sum()], rtol=1e-5)


@pytest.mark.parametrize("definitions", [lambda h, i: h[i - 1] + 1.0, None, 3])
def test_definitions_that_are_not_a_list_say_to_wrap_them(definitions):
    d = te.define(definitions) if callable(definitions) else definitions
    with pytest.raises(tessel.DefinitionError, match=r"te.recurrence R: definitions must be a list of "
                                                     r"te.define\(...\).*\[te.define\(...\)\]"):
        te.recurrence((8,), d, name="R")


def _jacobi(boundary_last: bool, steps: int = 6, n: int = 10):
    """Jacobi 1-d over time steps, the boundary given by a definition of its own (after the
    interior one: ``boundary_last``) or as a select inside the one definition."""
    A = te.placeholder((n,), name="A")
    first = te.define(lambda h, t, i: A[i], where=lambda t, i: t == 0)
    if boundary_last:
        defs = [first,
                te.define(lambda h, t, i: (h[t - 1, i - 1] + h[t - 1, i] + h[t - 1, i + 1]) / 3.0,
                          where=lambda t, i: te.all(t >= 1, i >= 1, i <= n - 2)),
                te.define(lambda h, t, i: h[t - 1, i], where=lambda t, i: te.all(t >= 1, te.any(i == 0, i == n - 1)))]
    else:
        defs = [first,
                te.define(lambda h, t, i: te.if_then_else(
                    te.any(i == 0, i == n - 1), h[t - 1, i],
                    (h[t - 1, te.max(i - 1, 0)] + h[t - 1, i] + h[t - 1, te.min(i + 1, n - 1)]) / 3.0),
                    where=lambda t, i: t >= 1)]
    J = te.recurrence((steps, n), defs, name="J")
    O = te.compute((n,), lambda i: J[steps - 1, i] * 1.0, name="O")
    a = rand(n)
    ref = a.astype("float64")
    for _ in range(1, steps):
        ref = np.concatenate([ref[:1], (ref[:-2] + ref[1:-1] + ref[2:]) / 3.0, ref[-1:]])
    return A, J, O, a, ref.astype("float32")


@pytest.mark.parametrize("fold", [None, 2])
@pytest.mark.parametrize("target", TARGETS)
def test_a_read_of_a_value_a_later_definition_gives_is_refused(target, fold):
    """The definitions run one after the other: the interior's read of the boundary of the step
    before reads what only the later boundary definition writes, which does not exist yet; the
    kernel read uninitialized memory (values of 1e28 and NaN) instead of being refused."""
    A, J, O, _, _ = _jacobi(boundary_last=True)
    s = te.create_schedule(O.op)
    if fold:
        s[J].storage_fold(J.op.axis[0], fold)
    with pytest.raises(tessel.ScheduleError, match=r"reads J\.def1\[t - 1, i - 1\] where nothing has written that "
                       r"element yet \(for t = 2, i = 1\); J writes it, but runs after J\.def1"):
        tessel.build(s, [A, O], target=target)


@pytest.mark.parametrize("fold", [None, 2, 3])
@pytest.mark.parametrize("target", TARGETS)
def test_the_same_stencil_with_its_boundary_in_one_definition_folds_to_two_steps(target, fold):
    A, J, O, a, ref = _jacobi(boundary_last=False)
    s = te.create_schedule(O.op)
    if fold:
        s[J].storage_fold(J.op.axis[0], fold)
    f = tessel.build(s, [A, O], target=target)
    out = np.empty_like(ref)
    f(a, out)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def _in_place_with_a_reader_of_the_input(n: int = 9):
    Img = te.placeholder((n,), name="Img")
    Out = te.recurrence(None, [te.define(lambda h, i: h[i - 1] * 0.5 + h[i], where=lambda i: i >= 1)],
                        name="Out", inplace=Img)
    E = te.compute((n,), lambda i: Img[i] * 2.0, name="E")  # the input's values
    D = te.compute((n,), lambda i: Out[i] + 1.0, name="D")  # the recurrence's results
    a = rand(n)
    ref = a.astype("float64")
    for i in range(1, n):
        ref[i] = ref[i - 1] * 0.5 + ref[i]
    return Img, E, D, a, ref


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("first", ["E", "D"])
def test_a_reader_of_an_in_place_input_runs_before_the_recurrence(target, first):
    """E reads the input Img, which recurrence Out overwrites in place: it runs first whatever the
    order of the outputs given to create_schedule (with D's listed first, E ran after the
    recurrence and read its results, twice the results, silently; then it was refused)."""
    Img, E, D, a, ref = _in_place_with_a_reader_of_the_input()
    outs = [E.op, D.op] if first == "E" else [D.op, E.op]
    f = tessel.build(te.create_schedule(outs), [Img, E, D], target=target)
    img, e, d = a.copy(), np.empty_like(a), np.empty_like(a)
    f(img, e, d)
    np.testing.assert_allclose(e, a * 2.0)
    np.testing.assert_allclose(d, ref + 1.0, rtol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_a_reader_of_an_in_place_input_and_of_the_results_is_refused(target):
    """F needs the input's values and the recurrence's results at once: nothing keeps the input
    once the recurrence has overwritten it."""
    Img, E, D, a, ref = _in_place_with_a_reader_of_the_input()
    F = te.compute((9,), lambda i: Img[i] + D[i], name="F")
    with pytest.raises(tessel.ScheduleError, match="stage F reads Img, the input that recurrence Out overwrites "
                       "in place, but runs after the recurrence starts.*inplace="):
        tessel.build(te.create_schedule(F.op), [Img, F], target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_a_reader_of_points_no_definition_writes_is_refused(target):
    """The later steps' definition covers only the interior; a reader of the last step's
    boundary read uninitialized memory (2.8e-45), where a compute's where= is refused."""
    n, steps = 8, 3
    A = te.placeholder((n,), name="A")
    h = te.recurrence((steps + 1, n), [
        te.define(lambda h, t, i: A[i], where=lambda t, i: t == 0),
        te.define(lambda h, t, i: h[t - 1, i] * 0.5, where=lambda t, i: te.all(t >= 1, i >= 1, i < n - 1))], name="h")
    O = te.compute((n,), lambda i: h[steps, i], name="O")
    with pytest.raises(tessel.ScheduleError, match=r"stage O reads h\[3, i\] where no definition of recurrence h "
                       r"writes \(for i = 0\)"):
        tessel.build(te.create_schedule(O.op), [A, O], target=target)
    inner = te.compute((n - 2,), lambda i: h[steps, i + 1], name="inner")  # only what is written
    f = tessel.build(te.create_schedule(inner.op), [A, inner], target=target)
    a = rand(n)
    out = np.empty(n - 2, "float32")
    f(a, out)
    np.testing.assert_allclose(out, a[1:-1] * 0.5 ** steps, rtol=1e-6)


def _back_substitution(n):
    """x[i] = (y[i] - sum_{j > i} U[i, j] x[j]) / U[i, i]: the read x[j] has no constant offset,
    but j > i over the sum's range, so i runs backwards."""
    U = te.placeholder((n, n), name="U", dtype="float64")
    y = te.placeholder((n,), name="y", dtype="float64")

    def row(x, i):
        j = te.reduce_axis((i + 1, n), name="j")
        return te.sum(-U[i, j] * x[j] / U[i, i], axis=j, init=y[i] / U[i, i])

    return U, y, te.recurrence((n,), [te.define(row)], name="x")


@pytest.mark.parametrize("split", [None, 3])
@pytest.mark.parametrize("target", TARGETS)
def test_back_substitution_runs_backwards_and_equals_numpy(target, split):
    """Refused before (the direction came from constant offsets only); and a loop run backwards
    gave its reduction the range of the mirrored row (the count, not the index): wrong values."""
    n = 9
    U, y, x = _back_substitution(n)
    assert x.op.directions == (-1,)
    s = te.create_schedule(x.op)
    if split:
        s[x].split(x.op.axis[0], factor=split)
    u = np.triu(rand(n, n, dtype="float64")) + 4 * np.eye(n)
    b = rand(n, dtype="float64")
    f = tessel.build(s, [U, y, x], target=target)
    out = np.empty(n)
    f(u, b, out)
    np.testing.assert_allclose(out, np.linalg.solve(u, b), rtol=1e-9)


@pytest.mark.parametrize("target", TARGETS)
def test_a_backward_filter_with_a_triangular_sum_equals_numpy(target):
    """A constant offset (h[i + 1]) already ran i backwards; the sum over j in (i, n) then took
    the range of the mirrored row."""
    n = 10
    A = te.placeholder((n, n), name="A", dtype="float64")
    x = te.placeholder((n,), name="x", dtype="float64")

    def row(h, i):
        j = te.reduce_axis((i + 1, n), name="j")
        return te.sum(A[i, j], axis=j, init=x[i] + 0.5 * te.if_then_else(i < n - 1, h[te.min(i + 1, n - 1)], 0.0))

    h = te.recurrence((n,), [te.define(row)], name="h")
    assert h.op.directions == (-1,)
    a, xv = rand(n, n, dtype="float64"), rand(n, dtype="float64")
    want = np.zeros(n)
    for i in range(n - 1, -1, -1):
        want[i] = xv[i] + (0.5 * want[i + 1] if i < n - 1 else 0.0) + a[i, i + 1:].sum()
    f = tessel.build(te.create_schedule(h.op), [A, x, h], target=target)
    out = np.empty(n)
    f(a, xv, out)
    np.testing.assert_allclose(out, want, rtol=1e-9)


@pytest.mark.parametrize("target", TARGETS)
def test_nussinov_like_recurrence_runs_rows_backwards_and_columns_forwards(target):
    """h[i, j] = max over k in (i, j) of h[i, k] + h[k + 1, j], and h[i + 1, j - 1]: i runs
    backwards, j forwards, as PolyBench writes it."""
    n = 8
    W = te.placeholder((n, n), name="W", dtype="float64")

    def cell(h, i, j):
        k = te.reduce_axis((i + 1, j), name="k")
        return te.max(h[i, k] + h[k + 1, j], axis=k,
                      init=te.if_then_else(te.all(i + 1 < n, j >= 1), h[te.min(i + 1, n - 1), te.max(j - 1, 0)], 0.0)
                      + W[i, j])

    h = te.recurrence((n, n), [te.define(lambda h, i, j: W[i, j] * 0.0, where=lambda i, j: j <= i),
                               te.define(cell, where=lambda i, j: j > i)], name="h")
    assert h.op.definitions[-1].op.directions == (-1, 1)
    w = rand(n, n, dtype="float64")
    want = np.zeros((n, n))
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            best = (want[i + 1, j - 1] if i + 1 < n and j >= 1 else 0.0) + w[i, j]
            for k in range(i + 1, j):
                best = max(best, want[i, k] + want[k + 1, j])
            want[i, j] = best
    f = tessel.build(te.create_schedule(h.op), [W, h], target=target)
    out = np.empty((n, n))
    f(w, out)
    np.testing.assert_allclose(np.triu(out, 1), np.triu(want, 1), rtol=1e-9)


def test_a_definition_with_the_wrong_arguments_is_refused_naming_the_recurrence():
    """The first definition's arguments were checked while its dtype was probed, and the
    refusal named the probe ("te.recurrence probe") instead of the recurrence."""
    U = te.placeholder((6, 6), name="U")
    with pytest.raises(tessel.DefinitionError, match=r"te.recurrence R: a definition's function takes the tensor "
                       r"being defined, then one index per dimension \(3 arguments"):
        te.recurrence((6, 6), [te.define(lambda h, i, j, U=U: U[i, j] * 2.0)], name="R")


def test_a_fold_too_small_looks_for_its_fix_once_by_bisection(monkeypatch):
    """Each dependence a fold breaks is one violation; the fix (the least legal fold) is the
    same for all, and was searched for each of them, factor by factor (a gramschmidt refusal
    took 10 s). It is searched once per folded stage, widest first, then by bisection."""
    import tessel.check.commands as commands

    calls = []
    real = commands.record

    def counted(*args, **kwargs):
        calls.append(args[-1])
        return real(*args, **kwargs)

    monkeypatch.setattr(commands, "record", counted)
    steps, n, back = 40, 6, 5
    A = te.placeholder((back, n), name="A", dtype="float64")

    def step(h, t, i):  # the last step, and a row earlier of the four before it
        return 0.5 * h[t - 1, i] + sum(0.1 * h[t - d, te.max(i - 1, 0)] for d in range(2, back + 1))

    h = te.recurrence((steps, n), [te.define(lambda h, t, i: A[t, i], where=lambda t, i: t < back),
                                   te.define(step, where=lambda t, i: t >= back)], name="h")
    O = te.compute((n,), lambda i: h[steps - 1, i], name="O")
    s = te.create_schedule(O.op)
    s[h].storage_fold(h.op.axis[0], 2)  # it breaks four dependences; six steps are live
    with pytest.raises(tessel.ScheduleError, match=r"The least fold that keeps every value until it is read: "
                       r"s\[h\].storage_fold\(h.op.axis\[0\], 6\)") as info:
        tessel.build(s, [A, O], target="python")
    assert len(calls) <= 8, calls  # the widest, then log2 of the 40 steps (factor by factor, for each: 20)
    s = te.create_schedule(O.op)
    info.value.fix_steps.apply(s)  # the fix offered is legal
    a = rand(back, n, dtype="float64")
    want = list(a)
    for _ in range(back, steps):
        shifted = [np.concatenate([w[:1], w[:-1]]) for w in want[-back:-1]]
        want.append(0.5 * want[-1] + sum(0.1 * w for w in shifted))
    out = np.empty(n)
    tessel.build(s, [A, O], target="python")(a, out)
    np.testing.assert_allclose(out, want[-1], rtol=1e-9)


@pytest.mark.parametrize("target", TARGETS)
def test_unwritten_reads_over_symbolic_sizes_are_refused_and_the_folded_stencil_is_right(target):
    """The read-before-written check over symbolic sizes (its context: sizes where the tensor
    has elements), beside a fold and a split by a non-divisor of the same stencil written right."""
    n, steps = te.var("n"), te.var("T")
    A = te.placeholder((n,), name="A")
    first = te.define(lambda h, t, i: A[i], where=lambda t, i: t == 0)
    later_boundary = te.recurrence((steps, n), [
        first,
        te.define(lambda h, t, i: (h[t - 1, i - 1] + h[t - 1, i] + h[t - 1, i + 1]) / 3.0,
                  where=lambda t, i: te.all(t >= 1, i >= 1, i <= n - 2)),
        te.define(lambda h, t, i: h[t - 1, i], where=lambda t, i: te.all(t >= 1, te.any(i == 0, i == n - 1)))],
        name="J")
    with pytest.raises(tessel.ScheduleError, match=r"reads J\.def1\[t - 1, i - 1\] where nothing has written"):
        tessel.build(te.create_schedule(later_boundary.op), [A, later_boundary], target=target)
    J = te.recurrence((steps, n), [first, te.define(lambda h, t, i: te.if_then_else(
        te.any(i == 0, i == n - 1), h[t - 1, i],
        (h[t - 1, te.max(i - 1, 0)] + h[t - 1, i] + h[t - 1, te.min(i + 1, n - 1)]) / 3.0), where=lambda t, i: t >= 1)],
        name="J")
    X = te.placeholder((steps,), name="X")  # a shape that makes T a size (a scalar T may be anything)
    O = te.compute((n,), lambda i: J[steps - 1, i] + X[steps - 1], name="O")
    s = te.create_schedule(O.op)
    s[J].storage_fold(J.op.axis[0], 2)
    s[J].split(J.op.axis[1], factor=4)
    f = tessel.build(s, [A, X, O], target=target)
    for size, count in ((11, 5), (6, 1)):
        a = rand(size)
        want = a.astype("float64")
        for _ in range(1, count):
            want = np.concatenate([want[:1], (want[:-2] + want[1:-1] + want[2:]) / 3.0, want[-1:]])
        x = rand(count)
        out = np.empty(size, "float32")
        f(a, x, out)
        np.testing.assert_allclose(out, want + x[-1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("clamp", ["min", "min_max"])
def test_a_clamped_read_under_its_guard_runs_backwards(target, clamp):
    """deriche's anticausal pass, its read kept inside the array by a clamp under the guard that
    makes the clamp idle: the offset is proved positive under the guard (it was not known, the
    loop ran forwards and the default schedule was refused)."""
    n = 9
    x = te.placeholder((n,), "float64", name="x")

    def ahead(j):
        return te.min(j + 1, n - 1) if clamp == "min" else te.min(te.max(j + 1, 0), n - 1)

    y = te.recurrence((n,), [te.define(
        lambda y, j: x[j] + 0.5 * te.if_then_else(j < n - 1, y[ahead(j)], te.const(0.0, "float64")))], name="y")
    s = te.create_schedule(y.op)
    xv = rand(n).astype("float64")
    want = xv.copy()
    for j in range(n - 2, -1, -1):
        want[j] += 0.5 * want[j + 1]
    got = np.zeros(n)
    tessel.build(s, [x, y], target=target)(xv, got)
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("target", TARGETS)
def test_readers_of_an_input_written_in_place_run_before_it_when_they_can(target):
    """PolyBench's correlation: the standard deviations read the data, the centring overwrites the
    data in place and then divides by them. Only the centring's second definition needs them, so
    the post-order put them after its first one, where they would read centred data; they are
    now ordered first (the build was refused, advising to list stddev among the outputs)."""
    n, m = 11, 7
    data = te.placeholder((n, m), "float64", name="data")
    r = te.reduce_axis((0, n), name="r")
    mean = te.compute((m,), lambda j: te.sum(data[r, j] / n, axis=r), name="mean")

    def sq(h, j):
        i = te.reduce_axis((0, n), name="i")
        return te.sum((data[i, j] - mean[j]) * (data[i, j] - mean[j]), axis=i)

    std = te.recurrence((m,), [te.define(sq), te.define(lambda h, j: te.sqrt(h[j] / n))], name="std")
    centred = te.recurrence(None, [te.define(lambda h, i, j: h[i, j] - mean[j]),
                                   te.define(lambda h, i, j: h[i, j] / std[j])], name="centred", inplace=data)
    k = te.reduce_axis((0, n), name="k")
    corr = te.compute((m, m), lambda i, j: te.sum(centred[k, i] * centred[k, j], axis=k), name="corr")
    s = te.create_schedule(corr.op)
    d0 = rand(n, m).astype("float64")
    z = (d0 - d0.mean(0)) / d0.std(0)
    d, got = d0.copy(), np.zeros((m, m))
    tessel.build(s, [data, corr], target=target)(d, got)
    np.testing.assert_allclose(d, z, rtol=1e-12)
    np.testing.assert_allclose(got, z.T @ z, rtol=1e-12)
