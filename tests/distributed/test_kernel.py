"""Distributed kernels against NumPy on 1-4 simulated ranks (threads of one process, no MPI),
at sizes no rank count divides, including fewer rows than ranks."""

from __future__ import annotations

import numpy as np
import pytest
from distributed_cases import CASES, CYCLIC, OVERLAP, heat2d, matmul, run_case

import tessel
from tessel import ArgumentError, ScheduleError, te
from tessel import distributed as dist


@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
@pytest.mark.parametrize("name,size", CASES)
def test_case_matches_numpy_on_the_c_target(name, size, ranks):
    err = dist.run_ranks(lambda c: run_case(name, c, size), ranks)[0]
    assert err is not None and err < 1e-9


@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
@pytest.mark.parametrize("name,size", OVERLAP)
def test_overlapped_core_and_rim_match_numpy(name, size, ranks):
    err = dist.run_ranks(lambda c: run_case(name, c, size, overlap=True), ranks)[0]
    assert err is not None and err < 1e-9


@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
@pytest.mark.parametrize("name,size,block", CYCLIC)
def test_block_cyclic_matches_numpy(name, size, block, ranks):
    err = dist.run_ranks(lambda c: run_case(name, c, size, block=block), ranks)[0]
    assert err is not None and err < 1e-9


def test_block_cyclic_with_overlap_matches_numpy():
    err = dist.run_ranks(lambda c: run_case("heat2d", c, (13, 9), block=2, overlap=True), 3)[0]
    assert err < 1e-9


def test_block_sizes_are_checked():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * 2, name="B")
    C = te.compute((8,), lambda i: B[i] + 1, name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"distribute on stage B: block=0 is not a positive integer"):
        s[B].distribute(B.op.axis[0], block=0)
    s[B].distribute(B.op.axis[0], block=2)
    s[C].distribute(C.op.axis[0], block=3)
    with pytest.raises(tessel.DistributionError, match=r"different block sizes \(2, 3\).*the same block="):
        dist.plan(s, [A, C], 2)


def test_overlap_needs_one_distributed_stage_without_reduction():
    s, args = matmul(5, 4, 3)
    with pytest.raises(tessel.DistributionError, match=r"overlap.*stage C is a reduction.*without overlap=True"):
        dist.plan(s, args, 2, overlap=True)


@pytest.mark.parametrize("name,size", [("heat2d", (7, 5)), ("sum", (5, 3))])
def test_python_target_and_deterministic_allreduce(name, size):
    err = dist.run_ranks(lambda c: run_case(name, c, size, target="python", deterministic=True), 3)[0]
    assert err < 1e-9


def test_one_process_without_mpi_is_one_rank_and_bitwise_equal_to_build():
    s, (A, B) = heat2d(9, 6)
    g = np.random.default_rng(1).random((9, 6))
    k = dist.build(s, [A, B], dist.SelfComm())
    a, b = k.scatter("A", g), k.empty("B")
    k(a, b)
    whole = np.zeros_like(g)
    tessel.build(s, [A, B])(g, whole)  # distribute changes nothing for one process
    assert np.array_equal(k.gather(b), whole)
    assert k.plan({}).messages == [] and k.plan({}).ranks == 1


def test_ranks_are_bitwise_equal_to_one_process():
    g = np.random.default_rng(2).random((11, 7))

    def run(c):
        s, (A, B) = heat2d(11, 7)
        k = dist.build(s, [A, B], c)
        a = k.scatter("A", g if c.rank == 0 else None)
        b = k.empty_like(a, "B")
        for _ in range(4):
            k(a, b)
            a, b = b, a
        return k.gather(a)

    one = dist.run_ranks(run, 1)[0]
    assert all(np.array_equal(one, dist.run_ranks(run, p)[0]) for p in (2, 3, 4))


def test_distribute_is_a_recorded_step_that_replays_and_prints():
    s, (A, B) = heat2d(8, 8)
    code = s.python()
    assert "s[B].distribute(i)" in code
    again = s.history.replay()
    assert again[again.outputs[0]].distributed_axis.var.name == "i"


def test_distribute_refuses_an_axis_a_split_made():
    A = te.placeholder((8, 8), name="A")
    B = te.compute((8, 8), lambda i, j: A[i, j] + 1, name="B")
    s = te.create_schedule(B.op)
    io, _ = s[B].split(B.op.axis[0], 4)
    with pytest.raises(ScheduleError, match=r"distribute on stage B: i.outer is not an axis of the operation "
                                            r"\(its axes: i, j\).*s\[B\].distribute\(B.op.axis\[0\]\)"):
        s[B].distribute(io)


def test_a_reducer_mpi_cannot_combine_is_refused():
    X = te.placeholder((6,), name="X")
    r = te.reduce_axis((0, 6), name="r")
    prod = te.comm_reducer(lambda a, b: a * b, lambda t: tessel.const(1, t), name="prod")
    P = te.compute((1,), lambda _: prod(X[r], axis=r), name="P")
    s = te.create_schedule(P.op)
    s[P].distribute(r)
    with pytest.raises(tessel.DistributionError, match=r"stage P, axis r:.*te.sum, te.max and te.min"):
        dist.plan(s, [X, P], 2)


def test_an_array_laid_out_for_another_tensor_is_refused():
    s, (A, B) = heat2d(6, 4)
    k = dist.build(s, [A, B], dist.SelfComm())
    a = k.scatter("A", np.ones((6, 4)))
    with pytest.raises(ArgumentError, match="distributed kernel takes 2 arrays"):
        k(a)


def test_symbolic_sizes_are_bound_from_the_global_arrays():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A", dtype="float32")
    B = te.compute((n, m), lambda i, j: te.if_then_else(i > 0, A[i, j] - A[i - 1, j], A[i, j]), name="B")
    s = te.create_schedule(B.op)
    s[B].distribute(B.op.axis[0])
    g = np.random.default_rng(4).random((7, 5)).astype("float32")

    def run(c):
        k = dist.build(s, [A, B], c)
        a = k.scatter("A", g if c.rank == 0 else None)
        with pytest.raises(ArgumentError, match=r"empty\('B'\): B's shape .* has symbolic sizes"):
            k.empty("B")
        b = k.empty("B", shape=(7, 5))
        k(a, b)
        return k.gather(b)

    want = g.copy()
    want[1:] = g[1:] - g[:-1]
    assert np.allclose(dist.run_ranks(run, 3)[0], want)


def test_an_argument_that_is_neither_input_nor_distributed_is_refused():
    A = te.placeholder((6,), name="A")
    B = te.compute((6,), lambda i: A[i] * 2, name="B")
    C = te.compute((6,), lambda i: B[i] + 1, name="C")
    s = te.create_schedule(C.op)
    s[C].distribute(C.op.axis[0])
    with pytest.raises(tessel.DistributionError, match=r"argument B: .*distribute B too"):
        dist.plan(s, [A, B, C], 2)
    assert dist.plan(s, [A, C], 2).messages == []  # B computed by each rank where its C needs it


@pytest.mark.parametrize("how", ["root", "inline", "compute_at"])
def test_a_stage_between_input_and_distributed_output_is_computed_where_needed(how):
    n, m = 11, 6
    A = te.placeholder((n, m), name="A", dtype="float64")
    Bx = te.compute((n, m - 2), lambda i, j: A[i, j] + A[i, j + 1] + A[i, j + 2], name="Bx")
    By = te.compute((n - 2, m - 2), lambda i, j: Bx[i, j] + Bx[i + 1, j] + Bx[i + 2, j], name="By")
    s = te.create_schedule(By.op)
    s[By].distribute(By.op.axis[0])
    if how == "inline":
        s[Bx].compute_inline()
    elif how == "compute_at":
        s[Bx].compute_at(s[By], By.op.axis[0])
    g = np.random.default_rng(8).random((n, m))

    def run(c):
        k = dist.build(s, [A, By], c)
        a, b = k.scatter("A", g if c.rank == 0 else None), k.empty("By")
        k(a, b)
        return k.gather(b), k.plan({}).halo(c.rank, "A")

    (out, halo), *rest = dist.run_ranks(run, 3)
    bx = g[:, :-2] + g[:, 1:-1] + g[:, 2:]
    assert np.abs(out - (bx[:-2] + bx[1:-1] + bx[2:])).max() < 1e-12
    # By's rows in blocks of 9 ([0, 3) [3, 6) [6, 9)) read A's rows [lo, hi + 2); A's 11 rows are
    # in blocks [0, 4) [4, 8) [8, 11): rank 0 lacks row 4, rank 1 row 3
    assert halo == (0, 1) and rest[0][1] == (1, 0)


@pytest.mark.parametrize("block", [None, 2])
def test_parts_made_where_they_live_equal_a_scatter(block):
    g = np.random.default_rng(9).random((10, 6))

    def run(c):
        s, (A, B) = heat2d(10, 6, block=block)
        k = dist.build(s, [A, B], c)
        a = k.fill("A", (10, 6), lambda ix: g[ix])
        b = k.empty("B")
        k(a, b)
        return k.gather(b)

    assert np.array_equal(dist.run_ranks(run, 3)[0], dist.run_ranks(lambda c: _heat_once(c, g, block), 3)[0])


def _heat_once(c, g, block):
    s, (A, B) = heat2d(*g.shape, block=block)
    k = dist.build(s, [A, B], c)
    a, b = k.scatter("A", g if c.rank == 0 else None), k.empty("B")
    k(a, b)
    return k.gather(b)
