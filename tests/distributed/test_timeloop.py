"""A time loop inside one program: a te.recurrence over (t, i, ...) distributed over a data axis,
its steps run by the distributed runtime with one exact halo exchange each (ranks as threads)."""

from __future__ import annotations

import numpy as np
import pytest
from distributed_cases import heat2d_time, jacobi1d_time, one_process, run_case, scan2_time

import tessel
from examples.polybench import stencils
from tessel import ArgumentError, DistributionError, te
from tessel import distributed as dist


@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
@pytest.mark.parametrize("name,size,block", [("heat2d_time", (13, 9), None), ("heat2d_time", (3, 6), None),
                                             ("jacobi1d_time", (11,), None), ("jacobi1d_time", (11,), 2),
                                             ("heat2d_time", (10, 5), 3), ("scan2_time", (9,), None),
                                             ("scan2_time", (10,), 2)])
def test_steps_are_bit_for_bit_one_process(name, size, block, ranks):
    assert dist.run_ranks(lambda c: run_case(name, c, size, block=block), ranks)[0] == 0.0


@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
@pytest.mark.parametrize("kernel,sizes", [(stencils.JACOBI_1D, {"TSTEPS": 4, "N": 13}),
                                          (stencils.JACOBI_2D, {"TSTEPS": 3, "N": 11})])
def test_polybench_ping_pong_reads_two_steps_back_bit_for_bit(kernel, sizes, ranks):
    """PolyBench's jacobi as one recurrence over half steps (its border copies the step two
    before; the schedule stores the steps in A and B taking turns, parallel and vectorized)."""
    prog = kernel.define(sizes)
    s, (A, B) = prog.schedule, prog.args
    h = s.outputs[0].output(0)
    want = kernel.init(sizes)
    a0, b0 = want["A"].copy(), want["B"].copy()
    tessel.build(s, [A, B])(want["A"], want["B"])
    s[h].distribute(h.op.axis[1])

    def run(c):
        k = dist.build(s, [A, B, h], c)
        a, b = (k.scatter(n, x if c.rank == 0 else None) for n, x in (("A", a0), ("B", b0)))
        w = k.empty(h.name)
        k(a, b, w)
        assert len(w.planes) == 3  # h[t-1] and h[t-2] are read: three live steps
        return k.gather(w), k.gather(w, step=w.last - 1)

    last, before = dist.run_ranks(run, ranks)[0]
    assert np.array_equal(last, want["A"]) and np.array_equal(before, want["B"])


def test_each_rank_keeps_the_live_steps_of_its_block_only():
    s, args = heat2d_time(30, 13, 9)

    def run(c):
        k = dist.build(s, args, c)
        a, w = k.scatter("A", np.ones((13, 9)) if c.rank == 0 else None), k.empty("h")
        k(a, w)
        return [seg.local.shape for p in w.planes for seg in p.segments.values()]

    shapes = dist.run_ranks(run, 3)
    assert all(len(x) == 2 for x in shapes)  # two steps, as storage_fold keeps on one process (not 31)
    assert shapes[0] == [(6, 9)] * 2 and shapes[1] == [(6, 9)] * 2 and shapes[2] == [(5, 9)] * 2  # block + ghosts


def test_the_plan_of_every_step_is_exact_and_explained():
    s, args = heat2d_time(5, 11, 7)
    p = dist.plan(s, args, 3)
    assert p.volume(0) == 0  # step 0 copies the input: no message
    assert p.volume(1) == p.volume(4) == 20  # each step: one row each way, without its border columns
    assert p.volume() == 5 * 20 and p.whole_row_volume() == 5 * 28  # steps 1..5
    assert p.partners(1) == [0, 2] and p.halo(1) == (1, 1) and p.halo(0) == (0, 1)
    text = p.explain(1)
    assert "step 0 of recurrence h:\n  no messages" in text
    assert ("steps 1..5 of recurrence h:\n  rank 1 needs h[t-1, 3, 1:6] from rank 0 because h reads h[t-1, i - 1, j] "
            "(e.g. h at i=4, j=1 reads h[t-1, 3, 1])") in text
    assert "h[t-1, 8, 1:6] from rank 2" in text


@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_the_messages_are_what_brute_force_enumeration_of_the_reads_says(ranks):
    n, m = 10, 6
    s, args = heat2d_time(3, n, m)
    p = dist.plan(s, args, ranks)
    for r in range(ranks):
        lo, hi = p.of(2).part(r).owned["h[t-1]"].lo[0], p.of(2).part(r).owned["h[t-1]"].hi[0]
        need = set()
        for i in range(lo, hi):  # the instances of rank r at a step t >= 1, and what each reads of step t - 1
            for j in range(m):
                inside = 0 < i < n - 1 and 0 < j < m - 1
                need |= {(i, j)} | ({(i - 1, j), (i + 1, j), (i, j - 1), (i, j + 1)} if inside else set())
        want = {x for x in need if not lo <= x[0] < hi}
        got = {(a, b) for msg in p.of(2).received(r) for box in msg.boxes
               for a in range(box.lo[0], box.hi[0]) for b in range(box.lo[1], box.hi[1])}
        assert got == want


def test_a_gauss_seidel_sweep_is_refused_with_a_witness():
    prog = stencils.SEIDEL_2D.define({"TSTEPS": 3, "N": 9})
    h = prog.schedule.outputs[0].output(0)
    prog.schedule[h].distribute(h.op.axis[1])
    with pytest.raises(DistributionError, match=r"reads seidel\[t, i - 1, j - 1\] \(e\.g\. seidel at t=1, i=1, j=1 "
                       r"reads seidel\[1, 0, 0\]\), a value of the same step.*Gauss-Seidel"):
        dist.plan(prog.schedule, [*prog.args, h], 2)


def _recurrence(step, init=None, n: int = 8, steps: int = 4):
    A = te.placeholder((n,), name="A", dtype="float64")
    h = te.recurrence((steps, n), [te.define(init or (lambda h, t, i: A[i]), where=lambda t, i: t == 0),
                                   te.define(step, where=lambda t, i: t >= 1)], name="h")
    return A, h, te.create_schedule(h.op)


@pytest.mark.parametrize("step,match", [
    (lambda h, t, i: h[t - 1, i] * t, r"uses the step t as a value"),
    (lambda h, t, i: te.if_then_else(i < t, h[t - 1, i], 0.0), r"the condition `i < t` mixes the step t"),
    (lambda h, t, i: h[t - 1, te.min(i + t, 7)], r"indexes the data axes with the step t"),
])
def test_what_a_step_program_cannot_express_is_refused(step, match):
    A, h, s = _recurrence(step)
    s[h].distribute(h.op.axis[1])
    with pytest.raises(DistributionError, match=match):
        dist.plan(s, [A, h], 2)


def test_distributing_the_time_axis_and_an_early_definition_reading_back_are_refused():
    A, h, s = _recurrence(lambda h, t, i: h[t - 1, i] + 1.0)
    s[h].distribute(h.op.axis[0])
    with pytest.raises(DistributionError, match=r"axis t is the recurrence's time.*h\.op\.axis\[1\]"):
        dist.plan(s, [A, h], 2)
    A = te.placeholder((8,), name="A", dtype="float64")
    h = te.recurrence((4, 8), [te.define(lambda h, t, i: A[i], where=lambda t, i: t == 0),
                               te.define(lambda h, t, i: h[t - 1, i] + 1.0, where=lambda t, i: t >= 1),
                               te.define(lambda h, t, i: 0.0, where=lambda t, i: i == 0)], name="h")
    s = te.create_schedule(h.op)
    s[h].distribute(h.op.axis[1])
    with pytest.raises(DistributionError, match=r"definition 1 \(h\.def1\) reads h and another definition follows"):
        dist.plan(s, [A, h], 2)


def test_a_halo_wider_than_a_block_is_refused_and_multi_hop_computes_it():
    A, h, s = _recurrence(lambda h, t, i: te.if_then_else(i >= 3, h[t - 1, i - 3], h[t - 1, i]) * 0.5)
    s[h].distribute(h.op.axis[1])
    with pytest.raises(DistributionError, match=r"the halo is wider than a neighbour's block"):
        dist.plan(s, [A, h], 4)
    g = np.random.default_rng(4).random(8)
    one = np.zeros((4, 8))
    tessel.build(s, [A, h])(g, one)

    def run(c):
        k = dist.build(s, [A, h], c, multi_hop=True)
        a, w = k.scatter("A", g if c.rank == 0 else None), k.empty("h")
        k(a, w)
        return k.gather(w)

    assert np.array_equal(dist.run_ranks(run, 4)[0], one[-1])


def test_window_arguments_are_checked():
    s, args = heat2d_time(3, 7, 5)

    def run(c):
        k = dist.build(s, args, c)
        a, w = k.scatter("A", np.ones((7, 5)) if c.rank == 0 else None), k.empty("h")
        with pytest.raises(ArgumentError, match=r"gather of h at step -1: the live steps"):
            k.gather(w)
        with pytest.raises(ArgumentError, match=r"argument h: expected a Window"):
            k(a, a)
        k(a, w)
        with pytest.raises(ArgumentError, match=r"gather of h at step 1: the live steps are 2\.\.3"):
            k.gather(w, step=1)
        return k.gather(w, step=2)

    got = dist.run_ranks(run, 2)[0]
    assert got.shape == (7, 5)
    with pytest.raises(DistributionError, match=r"overlap=, transfers= and grid= are for a kernel of one step"):
        dist.build(s, args, dist.SelfComm(), overlap=True)


def test_one_rank_without_mpi_runs_the_same_script():
    s, args = jacobi1d_time(6, 9)
    g = np.random.default_rng(5).random(9)
    k = dist.build(s, args, dist.SelfComm())
    a, w = k.scatter("A", g), k.empty("h")
    k(a, w)
    assert np.array_equal(k.gather(w), one_process(s, args, g))


def test_a_scan_of_two_states_exchanges_the_stencil_state_only():
    s, args = scan2_time(4, 9)
    p = dist.plan(s, args, 3)
    assert p.volume(0) == 0 and p.halo(1, state=0) == (1, 1) and p.halo(1, state=1) == (0, 0)
    assert "rank 1 needs U[t-1, 2] from rank 0 because uu reads U[t-1, i - 1]" in p.explain(1)
    assert "V[t-1" not in p.explain()  # v reads its own point of the last step, and u of this step


def test_a_scan_update_reading_another_ranks_value_of_the_same_step_is_refused():
    s, args = scan2_time(4, 9, shift=1)  # v at i reads u at i - 1 of the same step: a neighbour's, mid-step
    with pytest.raises(DistributionError, match=r"steps 1\.\.4 of scan sc: .*rank 1 runs vv, which reads "
                       r"uu\[max\(i - 1, 0\)\] \(vv at i=3 reads uu\[2\]\), a value another rank computes"):
        dist.plan(s, args, 3)


def test_a_condition_on_the_parity_of_the_step_makes_classes_of_alternate_steps():
    A, h, s = _recurrence(lambda h, t, i: te.if_then_else(t % 2 == 0, h[t - 1, te.max(i - 1, 0)] * 0.5,
                                                          h[t - 1, te.min(i + 1, 7)] + 1.0), steps=7)
    s[h].distribute(h.op.axis[1])
    p = dist.plan(s, [A, h], 3)
    assert [p.program.steps_of(c) for c in range(len(p.plans))] == [[0], [1, 3, 5], [2, 4, 6]]
    assert p.partners(1) == [0, 2] and p.of(1).partners(1) == [2] and p.of(2).partners(1) == [0]
    g = np.random.default_rng(9).random(8)
    one = np.zeros((7, 8))
    tessel.build(s, [A, h])(g, one)

    def run(c):
        k = dist.build(s, [A, h], c)
        a, w = k.scatter("A", g if c.rank == 0 else None), k.empty("h")
        k(a, w)
        return k.gather(w)

    assert np.array_equal(dist.run_ranks(run, 3)[0], one[-1])
