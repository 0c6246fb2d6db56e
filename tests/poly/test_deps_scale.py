"""Issue 31: exact dependences of a deep nest cost what its pairs of accesses cost.

A chain of N stages each computed inside the next puts the first stage inside 2N loops: the
time space had 4N+1 dimensions, and the lexicographic order over it is a union of 4N+1
pieces. Intersecting every pair's relation with all of them made ``s.dependences()`` grow as
N^3 (31 s at 50 stages). (The loops that run once now take no dimension at all:
``test_unit_loops.py``; the pieces matter for any deep nest.) Budgets here are isl
operations, never seconds.
"""

from __future__ import annotations

import islpy as isl
import pytest

from benchmarks.build_growth import program
from tessel import te
from tessel.poly.analysis import analysis
from tessel.poly.deps import _Earlier, _in_time, dependences
from tessel.poly.space import DIM, bounded


def _lex_lt(width: int) -> isl.Map:
    return isl.Map.lex_lt(isl.Space.set_alloc(isl.DEFAULT_CONTEXT, 0, width).set_tuple_name(DIM.set, "T"))


def _reduction_at():
    n = te.var("n")
    A = te.placeholder((n, 13), name="A")
    k = te.reduce_axis((0, 13), "k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    C = te.compute((n,), lambda i: B[i] * 2, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    return s


SCHEDULES = {"chain-at": lambda: program("chain-at", 7)[0], "strip": lambda: program("strip", 1)[0],
             "splits": lambda: program("splits", 3)[0], "reduction-at": _reduction_at}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_the_pieces_of_the_order_left_out_are_exactly_the_empty_ones(name):
    model = analysis(SCHEDULES[name]()).model
    order = _lex_lt(model.time_dims)
    earlier = _Earlier(model.time_dims)
    asked = 0
    for s1 in model.statements:
        for a1 in s1.accesses:
            for s2 in model.statements:
                for a2 in s2.accesses:
                    if a1.relation.get_tuple_name(DIM.out) != a2.relation.get_tuple_name(DIM.out):
                        continue
                    same = _in_time(s1, a1).apply_range(_in_time(s2, a2).reverse())
                    assert earlier.part_of(same).is_equal(same.intersect(order)), (s1.name, s2.name)
                    asked += 1
                    assert len(earlier.candidates(same)) <= 2  # these nests leave one or two open
    assert asked


def test_a_deep_compute_at_chain_finds_its_dependences_within_an_isl_budget():
    # 12 stages: 49 time dimensions once. Intersecting each pair with the whole order took
    # 19,455 isl operations; the pieces left open took 7,912; without the loops that run once
    # (5 dimensions), fewer still.
    model = analysis(program("chain-at", 12)[0]).model
    ok, deps = bounded(12_000, lambda: dependences(model))
    assert ok, "the dependences of a 12-stage compute_at chain took more than 12,000 isl operations"
    assert deps is not None
    got = {(d.kind, d.source.stage.name, d.sink.stage.name) for d in deps}
    assert got == {("flow", f"T{k}", f"T{k + 1}") for k in range(11)}
