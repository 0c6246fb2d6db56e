"""The plan as data: its text and explanations, and hand-written transfers checked against it."""

from __future__ import annotations

import numpy as np
import pytest
from distributed_cases import heat2d, heat2d_ref, matmul

from tessel import DistributionError, te
from tessel import distributed as dist
from tessel.distributed import Box, Transfer


def _rows(p, tensor="A"):
    """One Transfer per derived message: the plan's own messages, declared by hand."""
    return [Transfer(m.tensor, m.src, m.dst, m.boxes) for m in p.messages if m.tensor == tensor]


def test_plan_text_names_blocks_partners_and_reasons():
    s, args = heat2d(13, 9)
    p = dist.plan(s, args, 3)
    text = str(p)
    assert "B: axis i (13) in blocks [0, 5) [5, 9) [9, 13)" in text
    assert "rank 1: partners [0, 2], ghost widths A (1, 1), receives 14" in text
    assert p.volume() == 28 and p.whole_row_volume() == 36
    assert p.explain(2) == "rank 2 needs A[8, 1:8] from rank 1 because B reads A[i - 1, j] (e.g. B at i=9, j=1 reads A[8, 1])"


def test_declared_transfers_equal_to_the_plan_run_and_match_numpy():
    g = np.random.default_rng(5).random((10, 6))

    def run(c):
        s, args = heat2d(10, 6)
        k = dist.build(s, args, c, transfers=_rows)
        a = k.scatter("A", g if c.rank == 0 else None)
        b = k.empty_like(a, "B")
        k(a, b)
        return k.gather(b)

    assert np.abs(dist.run_ranks(run, 3)[0] - heat2d_ref(g, 1)).max() < 1e-12


def test_declared_transfers_are_checked_with_witnesses():
    s, args = heat2d(10, 6)
    p = dist.plan(s, args, 3)
    whole = [Transfer("A", m.src, m.dst, (Box((m.boxes[0].lo[0], 0), (m.boxes[0].hi[0], 6)),)) for m in p.messages]
    with pytest.raises(DistributionError, match=r"rank 0 receives A\[4, (0|5)\], which no instance it runs reads"):
        p.with_transfers(whole)
    missing = [t for t in _rows(p) if not (t.dst == 1 and t.src == 2)]
    with pytest.raises(DistributionError, match=r"rank 1 needs A\[7, \d\] from rank 2 but no message brings it \(B reads "
                                                r"A\[i \+ 1, j\]"):
        p.with_transfers(missing)
    wrong = [Transfer("A", 2, 0, (Box((4, 1), (5, 5)),))] + [t for t in _rows(p) if t.dst != 0]
    with pytest.raises(DistributionError, match=r"rank 2 sends A\[4, \d\] to rank 0, but does not own it"):
        p.with_transfers(wrong)
    twice = [*_rows(p), _rows(p)[0]]
    with pytest.raises(DistributionError, match=r"rank 0 receives A\[4, \d\] twice"):
        p.with_transfers(twice)


@pytest.mark.parametrize("placement", [{"A": None}, {"A": 1}])
def test_a_declared_placement_is_exchanged_exactly(placement):
    g = np.random.default_rng(6).random((9, 7))

    def run(c):
        s, args = heat2d(9, 7)
        k = dist.build(s, args, c, placement=placement, multi_hop=True)  # columns: from every rank
        a = k.scatter("A", g if c.rank == 0 else None)
        b = k.empty("B")
        k(a, b)
        return k.gather(b), k.plan({}).volume()

    (out, volume), *_ = dist.run_ranks(run, 3)
    assert np.abs(out - heat2d_ref(g, 1)).max() < 1e-12
    assert (volume == 0) == (placement["A"] is None)


def test_a_declared_placement_is_checked():
    s, args = matmul(5, 4, 3)
    with pytest.raises(DistributionError, match=r"placement of 'C': not an input \(placeholder\) of the program; "
                                                r"its inputs: A, B"):
        dist.plan(s, args, 2, placement={"C": 0})
    with pytest.raises(DistributionError, match=r"placement of B: dimension 2 is not one of its 2 dimensions"):
        dist.plan(s, args, 2, placement={"B": 2})


def test_a_recurrence_read_by_a_distributed_stage_is_refused_with_the_way_to_distribute_it():
    from helpers import heat_steps

    A, h, out = heat_steps(4, 6, 5)
    s = te.create_schedule(out.op)
    s[out].distribute(out.op.axis[0])
    with pytest.raises(DistributionError, match=r"stage h.*DefinitionOp cannot be part of a distributed program "
                                                r"of other stages.*distribute a recurrence or scan itself on a data "
                                                r"axis.*Python loop of distributed kernel calls"):
        dist.plan(s, [A, out], 2)
