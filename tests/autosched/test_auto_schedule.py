"""tessel.auto_schedule: from the compute definition alone, a legal schedule that computes NumPy's
values for every kernel of the benchmark suite (and conv2d's 1x1 and depthwise variants), at
awkward sizes, on both targets; the rules it applies, checked on explicit Targets (so nothing
here depends on the machine); a small measured budget; and bad input refused by name.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import check, rand

import tessel
from tessel import te
from tessel.autosched import auto_schedule_result, make_plan
from tessel.target import Target, resolve

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/ lives at the root

from benchmarks import definitions


def auto(outputs, **kw):
    """The rule-based schedule alone (budget 0: nothing measured, nothing timed)."""
    return auto_schedule_result(outputs, **{"budget": 0, **kw})

AVX2 = Target("c", vector_bytes=32, vector_registers=16, fma_units=2, caches=(32 << 10, 512 << 10, 8 << 20))
AVX512 = Target("c", vector_bytes=64, vector_registers=32, fma_units=2, caches=(48 << 10, 2 << 20, 32 << 20))
SUITE = definitions.suite(small=True)


@pytest.mark.parametrize("d", SUITE, ids=lambda d: f"{d.name} {'x'.join(str(x) for x in d.outputs[0].shape)}")
def test_every_benchmark_kernel_computes_numpys_values(d):
    r = auto(d.outputs)
    assert r.level == "full", f"{d.name}: the plan fell back to {r.level}"
    assert [t.name for t in r.args] == [t.name for t in d.params + d.outputs]
    ins = d.inputs(np.random.default_rng(3))
    check(r.schedule, d.params + d.outputs, ins, [d.reference(*ins)], rtol=d.rtol, atol=d.atol)


@pytest.mark.parametrize("target", [AVX2, AVX512], ids=["avx2", "avx512"])
def test_matmul_gets_the_targets_register_tile_a_local_tile_and_a_packed_panel(target):
    d = definitions.matmul(67, 93, 41)
    r = auto(d.outputs, target=target)
    tile = {"avx2": (6, 2, 2), "avx512": (6, 4, 4)}["avx2" if target is AVX2 else "avx512"]  # rows, vectors, k
    assert (r.knobs["C.rows"], r.knobs["C.vectors"], r.knobs["C.k_unroll"]) == tile
    names = {st.name: st for st in r.schedule.stages}
    assert names["C.local"].scope == "local" and names["C.local"].attach_type == "scope"
    assert "B.global" in names and names["B.global"].attach_type == "scope"
    leaves = names["C"].leaf_iter_vars
    assert len(leaves) == 4  # panel (threads), row block, rows, vector
    # B is copied once per panel: a group of one, so the copy is one contiguous packed panel
    assert r.knobs["C.group"] == 1 and names["B.global"].attach_ivar is leaves[0]
    ins = d.inputs(np.random.default_rng(0))
    check(r.schedule, d.params + d.outputs, ins, [d.reference(*ins)], targets=("c",), rtol=1e-3, atol=1e-3)


def test_conv2d_tiles_output_channels_by_pixels_and_keeps_the_padding_stored():
    d = definitions.conv2d(8, 16, 10, 32)  # rows of whole vectors: the tile is not turned around
    r = auto(d.outputs, target=AVX2)
    st = {s.name: s for s in r.schedule.stages}
    assert st["Xp"].attach_type == "root"  # read nine times per output: stored, not inlined
    assert st["Y.local"].attach_type == "scope"
    assert 16 % r.knobs["Y.rows"] == 0  # channel blocks divide the channels: no partial block
    ins = d.inputs(np.random.default_rng(0))
    check(r.schedule, d.params + d.outputs, ins, [d.reference(*ins)], targets=("c",), rtol=1e-3, atol=1e-3)


def test_row_kernels_are_fused_per_row_with_vectorized_partial_reductions():
    d = definitions.softmax(6, 300)
    r = auto(d.outputs, target=AVX2)
    st = {s.name: s for s in r.schedule.stages}
    O = st["O"]
    for name in ("M", "E", "S", "M.rf", "S.rf"):
        assert st[name].attach_type == "scope" and st[name].attach_stage is O, name
        assert st[name].attach_ivar is O.op.axis[0], name
    assert r.knobs["S.partials"] == 64  # 8 lanes x 8 independent vectors on AVX2
    ins = d.inputs(np.random.default_rng(0))
    check(r.schedule, d.params + d.outputs, ins, [d.reference(*ins)], rtol=1e-5, atol=1e-6)


def test_injective_producers_are_inlined_and_an_elementwise_reader_absorbs_the_tile():
    """relu(X) feeding a matmul is read by a reduction that reuses it: stored. The bias-add
    after the matmul reads it once at its own point: the matmul's tile is computed inside it,
    in registers, instead of through a cache stage; a scale before the bias is inlined."""
    n, m, k = 21, 35, 17
    X = te.placeholder((n, k), name="X")
    W = te.placeholder((k, m), name="W")
    bias = te.placeholder((m,), name="bias")
    R = te.compute((n, k), lambda i, j: te.max(X[i, j], 0.0), name="R")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(R[i, r] * W[r, j], axis=r), name="C")
    Sb = te.compute((m,), lambda j: bias[j] * 2.0, name="Sb")
    D = te.compute((n, m), lambda i, j: C[i, j] + Sb[j], name="D")
    res = auto([D], target=AVX2)
    st = {s.name: s for s in res.schedule.stages}
    assert st["R"].attach_type == "root"
    assert st["Sb"].attach_type == "inline"
    assert st["C"].scope == "local" and st["C"].attach_stage is st["D"]
    assert "C.local" not in st
    x, w, b = rand(n, k), rand(k, m, seed=1), rand(m, seed=2)
    check(res.schedule, [X, W, bias, D], [x, w, b], [np.maximum(x, 0) @ w + b * 2], rtol=1e-4, atol=1e-4)


def test_a_few_long_rows_are_cut_into_pieces_for_the_threads_then_vector_partials():
    """Three rows cannot keep threads busy: rfactor over 16 pieces of each row (in parallel),
    each piece reduced in 64 partials (rfactor again, vectorized); many rows are not cut."""
    d = definitions.row_sum(3, 4099)
    r = auto(d.outputs, target=AVX2)
    assert r.knobs["B.partials"] == 64 and r.knobs["B.split_k"] == 16
    st = {s.name: s for s in r.schedule.stages}
    assert st["B.rf.rf"].attach_stage is st["B.rf"]
    assert auto(definitions.row_sum(50, 4099).outputs, target=AVX2).knobs["B.split_k"] == 0
    ins = d.inputs(np.random.default_rng(0))
    check(r.schedule, d.params + d.outputs, ins, [d.reference(*ins)], rtol=1e-4, atol=1e-3)


def test_symbolic_sizes_are_scheduled_too():
    n = te.var("n")
    A = te.placeholder((n, 50), name="A")
    k = te.reduce_axis((0, 50), name="k")
    M = te.compute((n,), lambda i: te.max(A[i, k], axis=k), name="M")
    O = te.compute((n, 50), lambda i, j: A[i, j] - M[i], name="O")
    r = auto([O])
    for rows in (1, 7, 30):
        a = rand(rows, 50, seed=rows)
        check(r.schedule, [A, O], [a], [a - a.max(axis=1, keepdims=True)])


def test_a_budget_runs_the_tuners_search_from_the_rule_based_point(tmp_path):
    """The knobs are a tessel.tune config space whose first point is the rules' schedule; the
    search measures it among its trials, records them in the log, and keeps the fastest."""
    from tessel.tune import records

    d = definitions.matmul(30, 32, 16)  # whole tiles: quick builds
    log = tmp_path / "auto.log"
    r = auto_schedule_result(d.outputs, budget=3, log=str(log))
    recs = list(records.load(str(log)))
    assert len(recs) == 3 and r.tuned is not None
    assert any(rec.config.index == 0 and rec.ok for rec in recs)  # the rule-based point
    best = min((rec for rec in recs if rec.ok), key=lambda rec: rec.cost)
    # the fastest recorded, or the rules' schedule where a head-to-head with it went to the rules
    assert r.knobs in ({k.name: best.config[k.name].val for k in r.plan.knobs}, r.plan.defaults())
    ins = d.inputs(np.random.default_rng(0))
    check(r.schedule, d.params + d.outputs, ins, [d.reference(*ins)], rtol=1e-3, atol=1e-3)


def test_the_plans_knobs_come_from_the_target():
    d = definitions.matmul(512)
    plan = make_plan([d.outputs[0].op], resolve(AVX512))
    names = [k.name for k in plan.knobs]
    assert names == ["C.rows", "C.vectors", "C.k_unroll", "C.group", "C.pack"]
    assert all(k.default in k.candidates for k in plan.knobs)


def test_bad_outputs_are_refused_by_name():
    with pytest.raises(tessel.ArgumentError, match="outputs must be tensors"):
        tessel.auto_schedule("C")
    with pytest.raises(tessel.ArgumentError, match="no outputs"):
        tessel.auto_schedule([])
    with pytest.raises(tessel.ArgumentError, match="In is an input .te.placeholder., which has nothing to schedule"):
        tessel.auto_schedule(te.placeholder((4,), name="In"))


@pytest.mark.parametrize("target", ["cuda", "cuda-sim"])
def test_a_gpu_target_is_refused_with_what_to_do(target):
    """The rules write CPU loops (parallel, vectorize), which a GPU target refuses at build
    time; auto_schedule says so at once instead of returning such a schedule."""
    A = te.placeholder((64, 64), name="A")
    B = te.compute((64, 64), lambda i, j: A[i, j] + 1.0, name="B")
    with pytest.raises(tessel.ArgumentError, match=f"CPU schedules .* not {target} ones; give target= one of c, "
                                                   "python, or schedule the GPU kernel by hand"):
        tessel.auto_schedule(B, target=target, budget=0)


def test_the_benchmark_harness_has_an_auto_column(monkeypatch):
    """``python -m benchmarks`` times the auto-scheduled kernel beside the hand schedule,
    checked against NumPy first like every contender (no timing asserted)."""
    from benchmarks import __main__ as harness
    from benchmarks import kernels

    case = kernels.row_sum(64)
    monkeypatch.setattr(harness, "_yardstick", lambda case, quick: (lambda: None, 8.0))
    row = harness.run_case(case, repeat=2, peers_on={"torch": False, "halide": False, "tvm": False}, auto_budget=0)
    assert {"tessel", "auto", "numpy"} <= set(row.rate) and "auto" not in row.notes
    assert row.auto_s is not None and row.auto_s > 0
    from tessel.target import as_target

    host = resolve(as_target(None))  # the auto contender's target: this machine's
    assert row.auto_knobs and set(row.auto_knobs) == {k.name for k in make_plan([case.auto().outputs[0].op], host).knobs}
    head, _, line = harness.table([row]).splitlines()
    cells = dict(zip([c.strip() for c in head.split("|")], [c.strip() for c in line.split("|")]))
    assert cells["auto"] != "—" and cells["auto vs NumPy"].endswith("x") and cells["auto vs tessel"].endswith("x")


def test_stages_sharing_a_name_get_knobs_of_their_own():
    A = te.placeholder((6, 300), name="A")
    k1 = te.reduce_axis((0, 300), name="k1")
    T1 = te.compute((6,), lambda i: te.sum(A[i, k1], axis=k1), name="T")
    k2 = te.reduce_axis((0, 300), name="k2")
    T2 = te.compute((6,), lambda i: te.max(A[i, k2] * T1[i], axis=k2), name="T")
    r = auto([T2], target=AVX2)
    names = [k.name for k in r.plan.knobs]
    assert len(names) == len(set(names)) and {"T#0.partials", "T#1.partials"} <= set(names)
    a = rand(6, 300)
    check(r.schedule, [A, T2], [a], [(a * a.sum(axis=1, keepdims=True)).max(axis=1)], rtol=1e-4, atol=1e-4)


class _Measured:
    """A measurer whose every run of a config costs what ``costs`` gives for its index."""

    def __init__(self, costs: dict[int, float]):
        self.costs, self.asked = costs, []

    def measure(self, configs, known=None, deadline=None):
        from tessel.tune.measure import MeasureResult

        self.asked += [c.index for c in configs]
        return [MeasureResult(c, [self.costs[c.index]]) for c in configs]


@pytest.mark.parametrize("again, kept", [({0: 1.0, 5: 0.8}, 5), ({0: 1.0, 5: 1.2}, 0)])
def test_a_winner_other_than_the_rules_must_beat_them_again_head_to_head(again, kept):
    """The search's first measurement of the rules' schedule was slow (a burst of load): its
    winner is measured against the rules' schedule in turns, and kept only if faster again."""
    from tessel.autosched.search import CONFIRM_ROUNDS, _FromDefault, task
    from tessel.tune.measure import MeasureResult

    d = definitions.conv2d(8, 8, 6, 6, kernel=1)
    plan = make_plan([d.outputs[0].op], resolve(AVX2))
    search = _FromDefault(task(plan, lambda kn: (None, [])))
    space = search.space
    search.update([MeasureResult(space.get(0), [2.0]), MeasureResult(space.get(5), [0.9])])
    assert search.best.config.index == 5
    m = _Measured(again)
    search.confirm(m)
    assert m.asked == [0, 5] * CONFIRM_ROUNDS
    assert search.best.config.index == kept


def test_no_head_to_head_when_the_rules_won():
    from tessel.autosched.search import _FromDefault, task
    from tessel.tune.measure import MeasureResult

    d = definitions.conv2d(8, 8, 6, 6, kernel=1)
    plan = make_plan([d.outputs[0].op], resolve(AVX2))
    search = _FromDefault(task(plan, lambda kn: (None, [])))
    search.update([MeasureResult(search.space.get(0), [1.0]), MeasureResult(search.space.get(3), [1.5])])
    m = _Measured({})
    search.confirm(m)
    assert m.asked == [] and search.best.config.index == 0 and search.confirmed is None


def test_the_search_never_measures_a_panel_group_without_panels():
    """``C.group`` (panels per group) means nothing when the operand is not packed: those
    configs keep the group's default, so no two configs the search may pick write one schedule."""
    from benchmarks import definitions
    from tessel.autosched import _legal, make_plan
    from tessel.autosched.search import task

    d = definitions.matmul(256)
    plan = make_plan([d.outputs[0].op], Target("c", vector_bytes=32, vector_registers=16, fma_units=2,
                                                caches=(32 << 10, 512 << 10, 8 << 20)))
    args = [*plan.graph.inputs(), *d.outputs]
    space = task(plan, lambda kn: (_legal(plan, kn, args)[0], args)).config_space
    group = next(k for k in plan.knobs if k.name == "C.group")
    valid = [space.get(i) for i in range(len(space)) if space.is_index_valid(i)]
    unpacked = [c for c in valid if not c["C.pack"].val]
    assert unpacked and all(c["C.group"].val == group.default for c in unpacked)
    assert len(valid) == len(space) // 2 + len(space) // 2 // len(group.candidates)
    assert space.is_index_valid(0)  # the rules' schedule is the first point, as before


def test_a_split_reduction_has_no_chunks_to_search():
    """Row sum over 4 rows is reduced in pieces shared by the threads (split_k): the rows'
    chunk is not read then, so every chunk writes one schedule and only the default is kept."""
    from benchmarks import definitions
    from tessel.autosched import _legal, make_plan

    d = definitions.row_sum(4, 1 << 14)
    plan = make_plan([d.outputs[0].op], Target("c", vector_bytes=32, vector_registers=16, fma_units=2,
                                                caches=(32 << 10, 512 << 10, 8 << 20)))
    chunk = next(k for k in plan.knobs if k.name.endswith(".chunk"))
    split = next(k for k in plan.knobs if k.name.endswith(".split_k"))
    values, args = plan.defaults(), [*plan.graph.inputs(), *d.outputs]
    assert split.default > 0 and not chunk.matters(values) and chunk.matters({**values, split.name: 0})
    texts = {str(tessel.lower(_legal(plan, {**values, chunk.name: c}, args)[0], args)) for c in chunk.candidates[:4]}
    assert len(texts) == 1
