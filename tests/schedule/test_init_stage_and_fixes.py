"""Fuzz families F3/F6 (a stage only an init reads, attached where the init does not run) and
F5 (a proposed fix that is itself refused), and a refused cache_read leaving the schedule
half-changed (seed 0 case 7)."""

import numpy as np
import pytest

import tessel
from tessel import te
from tessel.errors import ScheduleError
from tessel.testing import check, rand, refused

TARGETS = ("c", "python")


def _init_reduction():
    A = te.placeholder((3, 7), name="A", dtype="float32")
    kb = te.reduce_axis((0, 7), name="kb")
    Bp = te.compute((3,), lambda i: A[i, 0] * 2.0 + 0.5, name="Bp")
    B = te.compute((3,), lambda i: te.max(A[i, kb] * 0.5, axis=kb, init=Bp[i], where=kb > i), name="B")
    a = rand(3, 7, dtype="float32", seed=3)
    i_, k_ = np.meshgrid(np.arange(3), np.arange(7), indexing="ij")
    rb = np.maximum(a[:, 0] * 2.0 + 0.5, np.where(k_ > i_, a * 0.5, -np.inf).max(axis=1))
    return A, Bp, B, a, rb


def test_init_stage_attached_outside_reduction_loop_is_right():
    A, Bp, B, a, rb = _init_reduction()
    s = te.create_schedule([B.op])
    s[Bp].compute_at(s[B], s[B].leaf_iter_vars[0])
    check(s, [A, B], [a], [rb], targets=TARGETS, rtol=1e-4, atol=1e-4)


def test_init_stage_attached_inside_reduction_loop_is_refused():
    A, Bp, B, a, rb = _init_reduction()
    s = te.create_schedule([B.op])
    s[Bp].compute_at(s[B], s[B].leaf_iter_vars[0])
    s[B].reorder(s[B].leaf_iter_vars[1], s[B].leaf_iter_vars[0])  # kb outside i: the init is hoisted out of kb
    for target in TARGETS:
        with pytest.raises(ScheduleError, match="Bp is read by the init of reduction B"):
            tessel.build(s, [A, B], target=target)
    s[Bp].compute_root()  # what the refusal says to do
    check(s, [A, B], [a], [rb], targets=TARGETS, rtol=1e-4, atol=1e-4)


def test_scan_init_attached_inside_scan_loop_is_refused():
    A = te.placeholder((13, 10), name="A", dtype="float32")
    Bs = te.placeholder((13, 10), name="Bs", dtype="float32")
    Bi = te.compute((1, 10), lambda _, j: A[0, j], name="Bi")
    Bu = te.compute((13, 10), lambda t, j: Bs[t - 1, j] * 0.5 + A[t, j], name="Bu")
    B = te.scan(Bi, Bu, Bs, name="B")
    C = te.compute((13, 10), lambda i, j: B[i, j] * 2.0, name="C")
    a = rand(13, 10, dtype="float32", seed=4)
    rb = a.astype(np.float64).copy()
    for t in range(1, 13):
        rb[t] = rb[t - 1] * 0.5 + a[t]
    s = te.create_schedule([C.op])
    s[Bi].compute_at(s[B], s[B].leaf_iter_vars[0])
    for target in TARGETS:
        with pytest.raises(ScheduleError, match="Bi is the init of scan B"):
            tessel.build(s, [A, C], target=target)
    s[Bi].compute_root()
    check(s, [A, C], [a], [(rb * 2.0).astype(np.float32)], targets=TARGETS, rtol=1e-4, atol=1e-4)


def test_cache_read_for_a_definition_rebuilds_the_recurrence_and_a_refused_one_changes_nothing():
    """A definition given as cache_read's reader was refused (its definitions share one
    storage); the recurrence is now rebuilt whole, every definition reading the copy. A
    cache_read still refused (of an input a recurrence overwrites in place) leaves the
    schedule as it was."""
    A = te.placeholder((4, 10), name="A", dtype="float32")
    B = te.compute((4, 10), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.recurrence((4, 10), [te.define(lambda h, i, j: B[i, j]),
                                te.define(lambda h, i, j: B[i, j] + h[i - 1, j] * 0.5, where=lambda i, j: i >= 1)],
                      name="C")
    a = rand(4, 10, dtype="float32", seed=5)
    rb = (a + 1.0).astype(np.float64)
    rc = rb.copy()
    for i in range(1, 4):
        rc[i] = rb[i] + rc[i - 1] * 0.5
    s = te.create_schedule([C.op])
    BL = s.cache_read(B, "local", [s[C.op.definitions[0]]])
    assert all(BL in d.op.input_tensors() for d in s[C].op.definitions)
    check(s, [A, C], [a], [rc.astype(np.float32)], targets=TARGETS, rtol=1e-4, atol=1e-4)

    Img = te.placeholder((4, 10), name="Img", dtype="float32")
    D = te.recurrence(None, [te.define(lambda h, i, j: h[i, j] + h[i - 1, j] * 0.5, where=lambda i, j: i >= 1)],
                      name="D", inplace=Img)
    s = te.create_schedule([D.op])
    names = [st.name for st in s.stages]
    refused(lambda: s.cache_read(Img, "local", [D.op]))
    assert [st.name for st in s.stages] == names


def _apply_fix(err: ScheduleError, ns: dict) -> None:
    assert err.fix, str(err)
    exec(err.fix, ns)  # a proposed fix is accepted


def test_inline_at_fix_is_accepted():
    A = te.placeholder((3, 3), name="A", dtype="float32")
    B = te.recurrence((3, 3), [te.define(lambda h, i, j: A[i, j]),
                               te.define(lambda h, i, j: A[i, j] + h[i - 1, j] * 0.5 + h[i - 2, j - 1] * -0.25,
                                         where=lambda i, j: te.all(i >= 2, j >= 1))], name="B")
    kcm = te.reduce_axis((0, 3), name="kcm")
    Cm = te.compute((3,), lambda i: te.max(B[i, kcm], axis=kcm), name="Cm")
    C = te.compute((3, 3), lambda i, j: B[i, j] - Cm[i], name="C")
    s = te.create_schedule([C.op])
    s[B].inline_at(-2, best_effort=True)
    with pytest.raises(ScheduleError) as info:
        s[Cm].inline_at(2)
    _apply_fix(info.value, {"s": s, "Cm": Cm})
    assert s[Cm].compute_at_pos >= 0


def test_inline_all_at_fix_is_accepted_or_absent():
    """Seed 0 case 75: inline_all_at's best-effort fix was itself refused."""
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A", dtype="int8")
    B = te.compute((n, (m + 1) // 2), lambda i, j: A[i, j * 2] + 1, name="B")
    C = te.compute((n - 2, (m + 1) // 2 - 2), lambda i, j: B[i + 0, j + 1] * 1 + B[i + 1, j + 0] * -2
                   + B[i + 1, j + 1] * 3 + B[i + 1, j + 2] * 1 + B[i + 2, j + 1] * -1, name="C")
    kz = te.reduce_axis((0, (m + 1) // 2), name="kz")
    Z = te.compute((n,), lambda i: te.sum(B[i, kz], axis=kz), name="Z")
    s = te.create_schedule([C.op, Z.op])
    s.assume("n % 2 == 0")
    s.inline_most()
    BS20 = te.placeholder(((m + 1) // 2, n), name="BS20", dtype=B.dtype)
    s[B].store_in(BS20, lambda i, j: (j, i))
    s[C].inline_at(-3, best_effort=True)
    s.inline_most()
    s[B].compute_at(s[C], 0, mode="standard")
    try:
        s.inline_all_at(C, -1)
    except ScheduleError as err:
        if err.fix:
            _apply_fix(err, {"s": s, "C": C})
    a = rand(10, 13, dtype="int8", seed=7)
    rb = (a[:, ::2] + 1).astype(np.int8)
    rc = (rb[0:8, 1:6] * 1 + rb[1:9, 0:5] * -2 + rb[1:9, 1:6] * 3 + rb[1:9, 2:7] * 1 + rb[2:10, 1:6] * -1).astype(np.int8)
    rz = rb.sum(axis=1).astype(np.int8)
    check(s, [A, C, Z], [a], [rc, rz], targets=TARGETS, rtol=0, atol=0)


@pytest.mark.parametrize("rewrite", ["rfactor", "cache_write"])
def test_rfactor_and_cache_write_above_a_recurrence_rebuild_it(rewrite):
    """Seed 1 case 136: a refused rfactor left C's stage rewritten and D.def0 reading the old C.
    The rewrites are now accepted, the recurrence rebuilt whole over the new C."""
    A = te.placeholder((3, 4), name="A", dtype="float32")
    kc = te.reduce_axis((0, 4), name="kc")
    C = te.compute((3,), lambda i: te.sum(A[i, kc] * 0.5, axis=kc), name="C")
    D = te.recurrence((3,), [te.define(lambda h, i: C[i]),
                             te.define(lambda h, i: C[i] + h[i + 1] * 0.5, where=lambda i: i < 3 - 1)], name="D")
    a = rand(3, 4, dtype="float32", seed=8)
    rc = (a * 0.5).sum(axis=1).astype(np.float64)
    rd = rc.copy()
    for i in reversed(range(2)):
        rd[i] = rc[i] + rd[i + 1] * 0.5
    s = te.create_schedule([D.op])
    if rewrite == "rfactor":
        s.rfactor(C, s[C].leaf_iter_vars[1])
    else:
        s.cache_write(C, "local")
    defs = s[D].op.definitions
    assert all(d.op.base is defs[-1] for d in defs)
    check(s, [A, D], [a], [rd.astype(np.float32)], targets=TARGETS, rtol=1e-4, atol=1e-4)


def test_init_stage_inside_reduction_loop_is_refused_beside_commands():
    """Seed 1 case 135 (F12): a command on another stage lowers the whole nest through isl's AST
    (poly_ops), which hoists the init as the loop nest does; the rule was judged only by the
    loop nest's lowering, so the init read Bp before it was computed (garbage on both targets)."""
    A, Bp, B, a, rb = _init_reduction()
    D = te.compute((3,), lambda i: B[i] * 3.0, name="D")
    s = te.create_schedule([D.op])
    s[Bp].compute_at(s[B], s[B].leaf_iter_vars[0])
    s[B].reorder(s[B].leaf_iter_vars[1], s[B].leaf_iter_vars[0])  # kb outside i: the init is hoisted out of kb
    s[D].reverse(s[D].leaf_iter_vars[0])  # a command: the nest is isl's
    for target in TARGETS:
        with pytest.raises(ScheduleError, match="Bp is read by the init of reduction B") as err:
            tessel.build(s, [A, D], target=target)
    exec(err.value.fix, {"s": s, **err.value.fix_names})  # the fix it proposes
    check(s, [A, D], [a], [rb * 3.0], targets=TARGETS, rtol=1e-4, atol=1e-4)
