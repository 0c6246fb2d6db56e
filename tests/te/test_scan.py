"""te.scan with TVM v0.14's semantics: recurrences over the first dimension, computed on both
targets and compared with NumPy; InferBound through the scan; the schedule of its spatial axes."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check, ir_text, rand

import tessel
from tessel import te
from tessel.errors import DefinitionError, LowerError, ScheduleError


def cumsum(m, n, name="scan"):
    X = te.placeholder((m, n), name="X")
    state = te.placeholder((m, n), name="state")
    init = te.compute((1, n), lambda _, i: X[0, i], name="init")
    update = te.compute((m, n), lambda t, i: state[t - 1, i] + X[t, i], name="update")
    res = te.scan(init, update, state, inputs=[X], name=name)
    return X, init, update, res


@pytest.mark.parametrize("m,n", [(7, 5), (1, 3), (13, 1)])
def test_prefix_sum(m, n):
    X, _, _, res = cumsum(m, n)
    assert tuple(int(d) for d in res.shape) == (m, n)
    s = te.create_schedule(res.op)
    x = rand(m, n, seed=m)
    check(s, [X, res], [x], [np.cumsum(x, axis=0)], rtol=1e-5)


def test_prefix_sum_of_symbolic_size():
    m, n = te.var("m"), te.var("n")
    X, _, _, res = cumsum(m, n)
    s = te.create_schedule(res.op)
    for shape in ((9, 4), (2, 11)):
        x = rand(*shape, seed=shape[0])
        check(s, [X, res], [x], [np.cumsum(x, axis=0)], rtol=1e-5)


def iir_forward(x, a, b):
    y = np.zeros_like(x)
    y[0] = b * x[0]
    for t in range(1, len(x)):
        y[t] = a * y[t - 1] + b * x[t]
    return y


def test_iir_filter_in_both_directions():
    """A forward IIR filter along the time axis, then the same filter backwards over its result
    (time reversed in the indices): two scans, the second reading the first."""
    m, n, a, b = 11, 6, 0.7, 0.3
    X = te.placeholder((m, n), name="X")
    fs = te.placeholder((m, n), name="fs")
    f_init = te.compute((1, n), lambda _, i: b * X[0, i], name="f_init")
    f_upd = te.compute((m, n), lambda t, i: a * fs[t - 1, i] + b * X[t, i], name="f_upd")
    fwd = te.scan(f_init, f_upd, fs, name="fwd")
    bs = te.placeholder((m, n), name="bs")  # bs[t] is the backward filter at time m-1-t
    b_init = te.compute((1, n), lambda _, i: b * fwd[m - 1, i], name="b_init")
    b_upd = te.compute((m, n), lambda t, i: a * bs[t - 1, i] + b * fwd[m - 1 - t, i], name="b_upd")
    bwd = te.scan(b_init, b_upd, bs, name="bwd")
    out = te.compute((m, n), lambda t, i: bwd[m - 1 - t, i], name="out")
    s = te.create_schedule(out.op)
    x = rand(m, n, seed=4)
    y = iir_forward(x, a, b)
    want = iir_forward(y[::-1], a, b)[::-1]
    check(s, [X, out], [x], [want], rtol=1e-5)


def test_two_states_advance_together():
    """s1[t] = s1[t-1] + s2[t-1] * x[t]; s2[t] = s2[t-1] - s1[t-1] * 0.5: each reads the other."""
    m, n = 9, 4
    X = te.placeholder((m, n), name="X")
    S1, S2 = te.placeholder((m, n), name="S1"), te.placeholder((m, n), name="S2")
    i1 = te.compute((1, n), lambda _, i: X[0, i], name="i1")
    i2 = te.compute((1, n), lambda _, i: X[0, i] * 2.0, name="i2")
    u1 = te.compute((m, n), lambda t, i: S1[t - 1, i] + S2[t - 1, i] * X[t, i], name="u1")
    u2 = te.compute((m, n), lambda t, i: S2[t - 1, i] - S1[t - 1, i] * 0.5, name="u2")
    r1, r2 = te.scan([i1, i2], [u1, u2], [S1, S2], inputs=[X], name="pair")
    s = te.create_schedule([r1.op])
    x = rand(m, n, seed=5)
    w1, w2 = np.zeros_like(x), np.zeros_like(x)
    w1[0], w2[0] = x[0], x[0] * 2
    for t in range(1, m):
        w1[t] = w1[t - 1] + w2[t - 1] * x[t]
        w2[t] = w2[t - 1] - w1[t - 1] * 0.5
    check(s, [X, r1, r2], [x], [w1, w2], rtol=1e-5)


@pytest.mark.parametrize("target_split", ["update", "init"])
def test_spatial_axis_split_and_parallelized(target_split):
    m, n = 8, 37  # 37: the split leaves a tail
    X, init, update, res = cumsum(m, n)
    s = te.create_schedule(res.op)
    stage = s[update] if target_split == "update" else s[init]
    xo, xi = stage.split(stage.op.axis[1], factor=8)
    stage.parallel(xo)
    stage.vectorize(xi)
    x = rand(m, n, seed=6)
    check(s, [X, res], [x], [np.cumsum(x, axis=0)], rtol=1e-5)


def test_a_body_of_two_stages_runs_inside_the_scan_loop():
    """An intermediate stage computed from the state is part of each step, and can be placed
    inside the update's loops."""
    m, n = 6, 10
    X = te.placeholder((m, n), name="X")
    state = te.placeholder((m, n), name="state")
    init = te.compute((1, n), lambda _, i: X[0, i], name="init")
    mid = te.compute((m, n), lambda t, i: state[t - 1, i] * 0.5, name="mid")
    update = te.compute((m, n), lambda t, i: mid[t, i] + X[t, i], name="update")
    res = te.scan(init, update, state, name="scan")
    s = te.create_schedule(res.op)
    x = rand(m, n, seed=7)
    want = np.zeros_like(x)
    want[0] = x[0]
    for t in range(1, m):
        want[t] = want[t - 1] * 0.5 + x[t]
    check(s, [X, res], [x], [want], rtol=1e-5)
    s[mid].compute_at(s[update], update.op.axis[1])
    check(s, [X, res], [x], [want], rtol=1e-5)
    # a reader of 4 columns: each step keeps its columns through both stages, so 4 are computed
    C = te.compute((m, 4), lambda t, i: res[t, i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    bounds = tessel.infer_bound(s)
    assert [str(bounds[iv].extent) for iv in (res.op.spatial_axis_[0], update.op.axis[1], mid.op.axis[1])] == ["4"] * 3
    check(s, [X, C], [x], [want[:, :4] + 1], rtol=1e-5)


def test_infer_bound_slices_a_fixed_point_and_not_a_shifted_read():
    """A reader of 3 columns of a scan whose steps keep each column in place asks the scan (and
    so the update and the init) for 3 columns; when a step reads its right neighbour's previous
    value the whole row is needed."""
    m, n = 6, 10

    def build(shift):
        X = te.placeholder((m, n), name="X")
        state = te.placeholder((m, n), name="state")
        init = te.compute((1, n), lambda _, i: X[0, i], name="init")
        if shift:
            update = te.compute((m, n), lambda t, i: te.if_then_else(
                i + shift < n, state[t - 1, te.min(i + shift, n - 1)], te.const(0.0)) + X[t, i], name="update")
        else:
            update = te.compute((m, n), lambda t, i: state[t - 1, i] + X[t, i], name="update")
        res = te.scan(init, update, state, name="scan")
        C = te.compute((m, 3), lambda t, i: res[t, i] * 2.0, name="C")
        return X, init, update, res, C

    X, init, update, res, C = build(0)
    s = te.create_schedule(C.op)
    bounds = tessel.infer_bound(s)
    assert str(bounds[res.op.spatial_axis_[0]].extent) == "3"
    assert str(bounds[update.op.axis[1]].extent) == "3"
    assert str(bounds[update.op.axis[0]].extent) == "1"  # one step at a time
    assert str(bounds[init.op.axis[1]].extent) == "3"
    x = rand(m, n, seed=8)
    check(s, [X, C], [x], [np.cumsum(x, axis=0)[:, :3] * 2])

    X, init, update, res, C = build(1)
    s = te.create_schedule(C.op)
    bounds = tessel.infer_bound(s)
    assert str(bounds[res.op.spatial_axis_[0]].extent) == str(n)
    want = np.zeros_like(x)
    want[0] = x[0]
    for t in range(1, m):
        want[t] = np.append(want[t - 1][1:], 0.0) + x[t]
    check(s, [X, C], [x], [want[:, :3] * 2])


def test_infer_bound_runs_only_the_steps_a_reader_needs():
    m, n = 12, 4
    X, init, update, res = cumsum(m, n)
    C = te.compute((5, n), lambda t, i: res[t, i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    bounds = tessel.infer_bound(s)
    assert str(bounds[res.op.scan_axis].min) == "1"
    assert str(bounds[res.op.scan_axis].extent) == "4"  # steps 1..4
    assert "for (scan.idx, 0, 4)" in ir_text(s, [X, C])
    x = rand(m, n, seed=9)
    check(s, [X, C], [x], [np.cumsum(x, axis=0)[:5] + 1])


def test_the_update_moved_out_of_the_scan_is_refused():
    """A tree rule (fuzz F16: lowering refused it with a LowerError and no verified fix): the
    refusal's fix puts the update back inside the scan's loop, and the values are right."""
    X, init, update, res = cumsum(6, 4)
    s = te.create_schedule(res.op)
    s[update].compute_root()
    with pytest.raises(ScheduleError, match="scan-body|inside the scan's loop") as err:
        tessel.lower(s, [X, res])
    assert err.value.rule == "scan-body-placement"
    assert "compute_at(s[scan]" in err.value.fix
    s[update].compute_at(s[res], res.op.scan_axis)
    x = rand(6, 4, seed=3)
    check(s, [X, res], [x], [np.cumsum(x, axis=0)], rtol=1e-5)


def test_the_scan_axis_cannot_run_in_parallel():
    X, init, update, res = cumsum(6, 4)
    s = te.create_schedule(res.op)
    s[res].parallel(res.op.scan_axis)
    with pytest.raises(LowerError, match="in order"):
        tessel.lower(s, [X, res])


def test_bad_scans_are_refused():
    m, n = 6, 4
    X = te.placeholder((m, n), name="X")
    state = te.placeholder((m, n), name="state")
    init = te.compute((1, n), lambda _, i: X[0, i], name="init")
    update = te.compute((m, n + 1), lambda t, i: X[t, 0], name="update")
    with pytest.raises(DefinitionError, match="update"):
        te.scan(init, update, state)
    good = te.compute((m, n), lambda t, i: state[t - 1, i], name="good")
    with pytest.raises(DefinitionError, match="placeholder"):
        te.scan(init, good, good)
    with pytest.raises(DefinitionError, match="one\\s+length"):
        te.scan([init], [good, good], [state])


def test_iir_filter_along_the_second_axis():
    """A scan runs over the first dimension; along the second, it scans a transposed view and
    the result is read back transposed."""
    m, n, a, b = 5, 9, 0.6, 0.4
    X = te.placeholder((m, n), name="X")
    XT = te.compute((n, m), lambda j, i: X[i, j], name="XT")
    st = te.placeholder((n, m), name="st")
    init = te.compute((1, m), lambda _, i: b * XT[0, i], name="init")
    upd = te.compute((n, m), lambda t, i: a * st[t - 1, i] + b * XT[t, i], name="upd")
    sc = te.scan(init, upd, st, name="iir")
    out = te.compute((m, n), lambda i, j: sc[j, i], name="out")
    s = te.create_schedule(out.op)
    s[XT].compute_inline()
    x = rand(m, n, seed=10)
    check(s, [X, out], [x], [iir_forward(x.T, a, b).T], rtol=1e-5)


def test_second_order_recurrence_with_a_placeholder_init_over_three_dimensions():
    """Two initial steps given by the caller, each step reading the two before it, the spatial
    axes of the update reordered."""
    m, n, p = 6, 3, 4
    X = te.placeholder((m, n, p), name="X")
    init = te.placeholder((2, n, p), name="init")
    st = te.placeholder((m, n, p), name="st")
    upd = te.compute((m, n, p), lambda t, i, j: st[t - 1, i, j] * 0.5 + st[t - 2, i, j] + X[t, i, j], name="upd")
    sc = te.scan(init, upd, st, name="sc")
    assert [iv.name for iv in sc.op.spatial_axis_] == ["sc.out0.i1", "sc.out0.i2"]
    s = te.create_schedule(sc.op)
    s[upd].reorder(upd.op.axis[2], upd.op.axis[1])
    x, i0 = rand(m, n, p, seed=11), rand(2, n, p, seed=12)
    want = np.zeros_like(x)
    want[:2] = i0
    for t in range(2, m):
        want[t] = want[t - 1] * 0.5 + want[t - 2] + x[t]
    check(s, [X, init, sc], [x, i0], [want], rtol=1e-5)


def test_the_scan_axis_cannot_be_split():
    X, init, update, res = cumsum(9, 4)
    s = te.create_schedule(res.op)
    s[res].split(res.op.scan_axis, factor=4)
    with pytest.raises(LowerError, match="split"):
        tessel.lower(s, [X, res])


@pytest.mark.parametrize("step", ["t", "t - 2", "t + 1"])
def test_a_read_of_a_step_not_yet_computed_or_before_the_first_is_refused(step):
    """With one initial step, state[t - 2] reads step -1 at t = 1; state[t] and state[t + 1]
    read steps not computed yet."""
    m, n = 6, 4
    X = te.placeholder((m, n), name="X")
    state = te.placeholder((m, n), name="state")
    init = te.compute((1, n), lambda _, i: X[0, i], name="init")
    offset = {"t": 0, "t - 2": -2, "t + 1": 1}[step]
    update = te.compute((m, n), lambda t, i: te.if_then_else(
        t + offset < m, state[te.min(t + offset, m - 1), i], te.const(0.0)) + X[t, i], name="update")
    with pytest.raises(DefinitionError, match="earlier step"):
        te.scan(init, update, state)


def test_a_second_order_read_is_accepted_with_two_initial_steps():
    m, n = 6, 4
    X = te.placeholder((m, n), name="X")
    state = te.placeholder((m, n), name="state")
    init = te.compute((2, n), lambda s, i: X[s, i], name="init")
    update = te.compute((m, n), lambda t, i: state[t - 2, i] + X[t, i], name="update")
    res = te.scan(init, update, state)
    x = rand(m, n, seed=13)
    want = x.copy()
    for t in range(2, m):
        want[t] = want[t - 2] + x[t]
    check(te.create_schedule(res.op), [X, res], [x], [want], rtol=1e-5)


def test_cache_read_and_cache_write_around_the_update():
    """A cache of X read by the update, and the update's cache_write stage placed back inside the
    scan as the refusal's fix says."""
    m, n = 8, 6
    X, init, update, res = cumsum(m, n)
    x = rand(m, n, seed=14)
    s = te.create_schedule(res.op)
    XL = s.cache_read(X, "local", [s[update]])
    s[XL].compute_at(s[update], update.op.axis[1])
    check(s, [X, res], [x], [np.cumsum(x, axis=0)], rtol=1e-5)
    s = te.create_schedule(res.op)
    UL = s.cache_write(update, "local")
    with pytest.raises(ScheduleError, match="inside the scan's loop"):
        tessel.lower(s, [X, res])
    s[UL].compute_at(s[res], res.op.scan_axis)
    check(s, [X, res], [x], [np.cumsum(x, axis=0)], rtol=1e-5)


def test_a_stage_of_the_body_inlined_into_the_update():
    """compute_inline of a stage of the body (TVM's test_scan_inline1): it runs inside its
    reader, so it is inside the scan's loop; it was refused as moved out of it."""
    m, n = 9, 4
    X = te.placeholder((m, n), name="X")
    s1, s2 = te.placeholder((m, n), name="s1"), te.placeholder((m, n), name="s2")
    i1 = te.compute((1, n), lambda _, i: X[0, i], name="i1")
    i2 = te.compute((1, n), lambda _, i: X[0, i] * 2.0, name="i2")
    x1 = te.compute((m, n), lambda t, i: s1[t - 1, i] + X[t, i], name="x1")
    x2 = te.compute((m, n), lambda t, i: s2[t - 1, i] * 0.5, name="x2")
    u1 = te.compute((m, n), lambda t, i: x1[t, i], name="u1")
    u2 = te.compute((m, n), lambda t, i: x2[t, i] + 1.0, name="u2")
    r1, r2 = te.scan([i1, i2], [u1, u2], [s1, s2], inputs=[X], name="res")
    s = te.create_schedule(r1.op)
    s[x1].compute_inline()
    x = rand(m, n)
    w2 = np.zeros((m, n), "float32")
    w2[0] = x[0] * 2
    for t in range(1, m):
        w2[t] = w2[t - 1] * 0.5 + 1
    check(s, [X, r1, r2], [x], [np.cumsum(x, axis=0), w2], rtol=1e-5)
