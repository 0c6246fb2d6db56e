"""The rules that write auto_schedule's schedules (tessel/autosched/rules.py): whatever knob
values a search tries, a kernel of several rows keeps its threads busy and no parallel loop
runs once (a search once kept a softmax whose every row was one chunk: a parallel loop of one
iteration, which lowering then drops, so the kernel ran on one core without a word, issue 37),
and each schedule still computes NumPy's values."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import check

import tessel
from tessel import te
from tessel.autosched import auto_schedule_result, make_plan, rules
from tessel.ir import stmt as S
from tessel.ir.expr import IntImm
from tessel.ir.functor import collect
from tessel.target import Target

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/ lives at the root

from benchmarks import definitions

AVX2 = Target("c", vector_bytes=32, vector_registers=16, fma_units=2, caches=(32 << 10, 512 << 10, 8 << 20))

# few rows, odd widths: a large chunk of rows (or of a stream) is all of them
FEW_ROWS = [definitions.softmax(3, 203), definitions.softmax(1, 97), definitions.row_sum(2, 301),
            definitions.layernorm(5, 64), definitions.blur(4, 37), definitions.add(301)]


def _parallel_trips(sch, args) -> list[int | None]:
    body = tessel.lower(sch, args).body
    loops = collect(body, lambda n: isinstance(n, S.For) and n.kind == S.LoopKind.PARALLEL, statements_only=True)
    return [lp.extent.value if isinstance(lp.extent, IntImm) else None for lp in loops]


def _chunk_choices(plan) -> list[dict]:
    """Every value of each chunk knob (one knob at a time, the others at their defaults)."""
    out = [{}]
    for k in plan.knobs:
        if k.name.endswith(".chunk"):
            out += [{k.name: c} for c in k.candidates]
    return out


@pytest.mark.parametrize("d", FEW_ROWS, ids=lambda d: f"{d.name} {'x'.join(str(x) for x in d.outputs[0].shape)}")
def test_no_parallel_loop_of_one_iteration_whatever_the_chunk(d):
    plan = make_plan([t.op for t in d.outputs], AVX2)
    args = d.params + d.outputs
    ins = d.inputs(np.random.default_rng(5))
    rows = d.outputs[0].shape[0].value if len(d.outputs[0].shape) > 1 else 0  # a 1-d stream: no rows
    for knobs in _chunk_choices(plan):
        sch = rules.build(plan, knobs)
        trips = _parallel_trips(sch, args)
        assert all(t is None or t >= 2 for t in trips), f"{d.name} with {knobs}: parallel loops of {trips} trips"
        assert rows < 2 or trips, f"{d.name} with {knobs}: {rows} rows and no parallel loop"
    check(sch, args, ins, [d.reference(*ins)], targets=("c",), rtol=d.rtol, atol=d.atol)


def test_a_chunk_knob_offers_no_chunk_that_is_every_row():
    d = definitions.softmax(6, 300)
    plan = make_plan([t.op for t in d.outputs], AVX2)
    chunks = next(k for k in plan.knobs if k.name.endswith(".chunk")).candidates
    assert chunks == (1, 2)  # 6 rows: in chunks of 4, one whole chunk and a partial one run apart


@pytest.mark.parametrize("rows", [1, 2, 5])
def test_rows_that_give_the_threads_too_little_still_compute_right(rows):
    d = definitions.softmax(rows, 130)
    plan = make_plan([t.op for t in d.outputs], AVX2)
    ins = d.inputs(np.random.default_rng(rows))
    for chunk, level in itertools.product((1, 2, 64), rules.LEVELS[:2]):
        name = next((k.name for k in plan.knobs if k.name.endswith(".chunk")), None)
        sch = rules.build(plan, {name: chunk} if name else {}, level)
        assert all(t is None or t >= 2 for t in _parallel_trips(sch, d.params + d.outputs))
        check(sch, d.params + d.outputs, ins, [d.reference(*ins)], targets=("c",), rtol=d.rtol, atol=d.atol)


def test_an_argmax_gets_vector_partials_and_a_naive_one_stays_serial():
    d = definitions.argmax(9, 517)
    r = auto_schedule_result(d.outputs, target=AVX2, budget=0)
    rf = [st for st in r.schedule.stages if st.name == "B.rf"]
    assert rf and any(a.kind == S.LoopKind.VECTORIZED for a in rf[0].iter_var_attrs.values())
    ins = d.inputs(np.random.default_rng(2))
    ins[0][4, 100:103] = ins[0][4].max() + 1  # a tie the serial loop resolves to index 100
    check(r.schedule, d.params + d.outputs, ins, [d.reference(*ins)], rtol=0, atol=0)
    A = d.params[0]
    naive = te.comm_reducer(lambda x, y: (te.select(x[1] >= y[1], x[0], y[0]), te.max(x[1], y[1])),
                            lambda ti, tv: (te.const(-1, ti), te.min_value(tv)), name="naive")
    k = te.reduce_axis((0, 517), name="k")
    idx, _ = te.compute((9,), lambda i: naive((k, A[i, k]), axis=k), name="N")
    r = auto_schedule_result(idx, target=AVX2, budget=0)
    assert [st.name for st in r.schedule.stages if not st.op.is_placeholder] == ["N"]  # no partials
    check(r.schedule, [A, idx], ins, [d.reference(*ins)], rtol=0, atol=0)
