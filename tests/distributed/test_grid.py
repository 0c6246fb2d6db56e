"""2-D grids of ranks: ``distribute`` of two axes, each rank a block of both; exact halos along
both dimensions (a corner only where it is read), values bit for bit those of one process."""

from __future__ import annotations

import numpy as np
import pytest
from distributed_cases import heat3d, run_case

import tessel
from examples.distributed_matmul import matmul
from tessel import DistributionError, ScheduleError, te
from tessel import distributed as dist


def stencil(n: int, m: int, corner: bool):
    """The 5-point heat step, plus (``corner``) a read of the north-west neighbour."""
    A = te.placeholder((n, m), name="A", dtype="float64")

    def value(i, j):
        v = 0.6 * A[i, j] + 0.1 * (A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1])
        return v + 0.05 * A[i - 1, j - 1] if corner else v

    B = te.compute((n, m), lambda i, j: te.if_then_else(te.all(i > 0, i < n - 1, j > 0, j < m - 1), value(i, j),
                                                         A[i, j]), name="B")
    s = te.create_schedule(B.op)
    s[B].distribute(B.op.axis[0])
    s[B].distribute(B.op.axis[1])
    return s, [A, B]


def _run(s, args, ranks, g, grid=None):
    def body(c):
        k = dist.build(s, args, c, grid=grid)
        a, b = k.scatter("A", g if c.rank == 0 else None), k.empty("B")
        k(a, b)
        return k.gather(b)

    return dist.run_ranks(body, ranks)[0]


@pytest.mark.parametrize("ranks,grid", [(1, None), (2, None), (3, None), (4, None), (6, None), (4, (1, 4)),
                                        (4, (4, 1)), (6, (2, 3))])
@pytest.mark.parametrize("shape", [(9, 7), (3, 5)])
@pytest.mark.parametrize("corner", [False, True])
def test_grid_values_are_one_process_bit_for_bit(ranks, grid, shape, corner):
    s, args = stencil(*shape, corner)
    g = np.random.default_rng(5).random(shape)
    want = np.zeros(shape)
    tessel.build(s, args)(g, want)
    assert np.array_equal(_run(s, args, ranks, g, grid), want)


@pytest.mark.parametrize("ranks,grid", [(4, (2, 2)), (6, (3, 2)), (6, (2, 3))])
@pytest.mark.parametrize("corner", [False, True])
def test_grid_halos_are_what_brute_force_enumeration_of_the_reads_says(ranks, grid, corner):
    n, m = 10, 8
    s, args = stencil(n, m, corner)
    p = dist.plan(s, args, ranks, grid=grid)
    taps = [(0, 0), (-1, 0), (1, 0), (0, -1), (0, 1)] + ([(-1, -1)] if corner else [])
    for r in range(ranks):
        own = p.part(r).owned["A"]
        need = set()
        for i in range(own.lo[0], own.hi[0]):
            for j in range(own.lo[1], own.hi[1]):
                inside = 0 < i < n - 1 and 0 < j < m - 1
                need |= {(i + a, j + b) for a, b in (taps if inside else [(0, 0)])}
        want = {x for x in need if not (own.lo[0] <= x[0] < own.hi[0] and own.lo[1] <= x[1] < own.hi[1])}
        got = [(a, b) for msg in p.received(r) for box in msg.boxes
               for a in range(box.lo[0], box.hi[0]) for b in range(box.lo[1], box.hi[1])]
        assert len(got) == len(set(got)) and set(got) == want


def test_a_corner_travels_only_where_it_is_read():
    p5 = dist.plan(*stencil(9, 7, False), 4)
    p9 = dist.plan(*stencil(9, 7, True), 4)
    assert p5.partners(3) == [1, 2] and p9.partners(3) == [0, 1, 2]
    assert "rank 3 needs A[4, 3] from rank 0 because B reads A[i - 1, j - 1]" in p9.explain(3)
    assert "2x2 grid of ranks" in p9.text() and "rows [0, 5) [5, 9), columns [0, 4) [4, 7)" in p9.text()
    assert p9.halo(3, "A") == (1, 0) and p9.halo(3, "A", second=True) == (1, 0)


def test_an_input_not_split_along_a_grid_dimension_is_copied_along_it():
    s, args = matmul(7, 5, 6)
    C = args[-1]
    s[C].distribute(C.op.axis[1])  # C's rows and columns on the grid: A's rows and B's columns follow
    p = dist.plan(s, args, 4)
    assert p.messages == [] and p.part(1).owned["A"].lo == (0, 0) and p.part(1).owned["B"].lo == (0, 3)
    a, b = np.random.default_rng(6).random((7, 5)), np.random.default_rng(7).random((5, 6))

    def body(c):
        k = dist.build(s, args, c)
        da, db, dc = k.scatter("A", a if c.rank == 0 else None), k.scatter("B", b if c.rank == 0 else None), \
            k.empty("C")
        k(da, db, dc)
        return k.gather(dc)

    want = np.zeros((7, 6))
    tessel.build(s, args)(a, b, want)
    for ranks in (2, 4, 6):
        assert np.array_equal(dist.run_ranks(body, ranks)[0], want)


def test_a_3d_stencil_on_a_grid_of_its_first_two_axes():
    s, (A, B) = heat3d(7, 6, 5)
    s[B].distribute(B.op.axis[1])
    g = np.random.default_rng(8).random((7, 6, 5))
    want = np.zeros_like(g)
    tessel.build(s, [A, B])(g, want)
    assert np.array_equal(_run(s, [A, B], 4, g), want)


def test_the_two_distribute_steps_replay_and_print():
    s, args = stencil(9, 7, False)
    assert s.python().count(".distribute(") == 2
    again = s.history.replay()
    assert [iv.var.name for iv in again[again.outputs[0]].distributed_axes] == ["i", "j"]


def test_what_a_grid_cannot_do_is_refused():
    s, args = stencil(9, 7, False)
    with pytest.raises(DistributionError, match=r"grid=\(3, 2\): a 2-D grid of 4 ranks is \(rows, columns\)"):
        dist.plan(s, args, 4, grid=(3, 2))
    with pytest.raises(DistributionError, match=r"overlap of computation with messages: the ranks form a 2-D grid"):
        dist.plan(s, args, 4, overlap=True)
    with pytest.raises(ScheduleError, match=r"already distributed over two axes"):
        s[args[1]].distribute(args[1].op.axis[1])
    A = te.placeholder((9, 7), name="A")
    B = te.compute((9, 7), lambda i, j: A[i, j] * 2.0, name="B")
    s1 = te.create_schedule(B.op)
    s1[B].distribute(B.op.axis[0], block=2)
    with pytest.raises(ScheduleError, match=r"already distributed over another axis"):
        s1[B].distribute(B.op.axis[1])
    s1 = te.create_schedule(B.op)
    s1[B].distribute(B.op.axis[0])
    with pytest.raises(DistributionError, match=r"grid=\(2, 2\): the schedule distributes one axis per stage"):
        dist.plan(s1, [A, B], 4, grid=(2, 2))
    k = te.reduce_axis((0, 7), name="k")
    S = te.compute((9,), lambda i: te.sum(A[i, k], axis=k), name="S")
    s2 = te.create_schedule(S.op)
    s2[S].distribute(S.op.axis[0])
    s2[S].distribute(k)
    with pytest.raises(DistributionError, match=r"a 2-D grid of ranks over a reduce axis is not built"):
        dist.plan(s2, [A, S], 4)


def test_a_time_loop_on_a_grid_is_refused():
    from distributed_cases import heat2d_time

    s, (A, h) = heat2d_time(3, 9, 7)
    s[h].distribute(h.op.axis[2])
    with pytest.raises(DistributionError, match=r"a time loop over a 2-D grid of ranks is not built"):
        dist.plan(s, [A, h], 4)


def test_the_grid_case_of_the_mpirun_script():
    assert dist.run_ranks(lambda c: run_case("heat2d_grid", c, (9, 7)), 4)[0] == 0.0
