"""The operation set is open: a kind of operation defined here, outside tessel, is scheduled,
bounded, lowered and run with no change to InferBound or lowering; and InferBound follows the
read graph, not the order of ``sch.stages``."""

from __future__ import annotations

import random

import pytest
from helpers import check, ir_text, rand

import tessel
from tessel import te
from tessel.arith import union
from tessel.errors import LowerError, ScheduleError
from tessel.ir import expr as E
from tessel.ir import stmt as S
from tessel.te import Operation, Tensor


class CopyOp(Operation):
    """``out[i, ...] = src[i, ...]``: an identity, asking for exactly the region it copies."""

    def __init__(self, src: Tensor, name: str, axis=None):
        self.name, self.tag, self.attrs = name, "", {}
        self.src = src
        self.axis = tuple(axis) if axis is not None else tuple(
            E.IterVar(E.Range(0, n), E.Var(f"c{k}", n.dtype), E.IterVar.DATA_PAR) for k, n in enumerate(src.shape))
        self.outputs = (Tensor(self, 0, src.shape, src.dtype),)

    @property
    def root_iter_vars(self):
        return self.axis

    def input_tensors(self):
        return [self.src]

    def replace_inputs(self, tmap):
        return CopyOp(tmap[self.src], self.name, self.axis) if self.src in tmap else self

    def propagate_bounds(self, body, dom_map, producer, analyzer):
        if self.src.op is not producer:
            return []
        return [(self.src, [dom_map[iv.var] for iv in self.axis])]

    def gather_bound(self, stage, requests, analyzer):
        out = []
        for j, iv in enumerate(self.axis):
            r = union([sets[j] for _, sets in requests]).cover_range(iv.dom)
            out.append((iv, E.Range(analyzer.simplify(r.min), analyzer.simplify(r.extent))))
        return out

    def build_provide(self, nest, stage, body):
        value = nest.index_values(stage)
        idx = [value[iv] for iv in self.axis]
        store = S.ProducerStore(self.outputs[0], E.ProducerLoad(self.src, idx), idx)
        guarded = nest.guarded(nest.bound_checks(stage, value), store)
        return nest.nest(stage, 0, len(stage.leaf_iter_vars), guarded)

    def build_realize(self, stage, rmap, body):
        return S.ProducerRealize(self.outputs[0], tuple(rmap[iv] for iv in self.axis), body, stage.scope)


class WholeCopyOp(CopyOp):
    """The same copy relying on the interface's defaults: it reads, computes and stores all."""

    propagate_bounds = Operation.propagate_bounds
    gather_bound = Operation.gather_bound
    build_realize = Operation.build_realize


def copy(t: Tensor, name: str, cls=CopyOp) -> Tensor:
    return cls(t, name).output(0)


def test_a_copy_computed_inside_its_reader_computes_only_the_tile_it_reads():
    n, m = 37, 23
    A = te.placeholder((n, m), name="A")
    B = copy(A, "B")
    C = te.compute((n, m), lambda i, j: B[i, j] * 2 + 1, name="C")
    s = te.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=8)
    s[B].compute_at(s[C], io)
    bounds = tessel.infer_bound(s)
    assert str(bounds[B.op.axis[0]].extent) == "8"  # one tile of C's rows, not all 37
    assert str(bounds[B.op.axis[1]].extent) == str(m)
    text = ir_text(s, [A, C])
    assert f"realize B([i.outer*8, 8], [0, {m}])" in text
    a = rand(n, m)
    check(s, [A, C], [a], [a * 2 + 1])


def test_a_producer_computed_inside_a_split_copy():
    n, m = 29, 13
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 3 - 1, name="B")
    C = copy(B, "C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=5)  # 29 = 5*5 + 4: the last tile is guarded
    s[C].reorder(xo, C.op.axis[1], xi)
    s[B].compute_at(s[C], C.op.axis[1])
    bounds = tessel.infer_bound(s)
    assert [str(bounds[iv].extent) for iv in B.op.axis] == ["5", "1"]
    a = rand(n, m, seed=3)
    check(s, [A, C], [a], [a * 3 - 1])


def test_a_cache_read_rewrites_a_copy_to_read_the_cache():
    n = 41
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 2, name="B")
    C = copy(B, "C")
    s = te.create_schedule(C.op)
    BL = s.cache_read(B, "local", [s[C]])
    co, ci = s[C].split(C.op.axis[0], factor=16)
    s[BL].compute_at(s[C], co)
    assert s[C].op.src is BL  # the copy was re-pointed through replace_inputs
    assert "realize B.local([c0.outer*16, 16])" in ir_text(s, [A, C])
    a = rand(n, seed=5)
    check(s, [A, C], [a], [a + 2])


def test_the_interface_defaults_compute_everything_and_stay_correct():
    n, m = 19, 11
    A = te.placeholder((n, m), name="A")
    B = copy(A, "B", cls=WholeCopyOp)
    C = te.compute((n, m), lambda i, j: B[i, j] - 4, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    bounds = tessel.infer_bound(s)
    assert [str(bounds[iv].extent) for iv in B.op.axis] == [str(n), str(m)]
    assert f"realize B([0, {n}], [0, {m}])" in ir_text(s, [A, C])
    a = rand(n, m, seed=7)
    check(s, [A, C], [a], [a - 4])


def test_an_operation_that_cannot_absorb_an_inlined_producer_is_refused():
    A = te.placeholder((10,), name="A")
    B = te.compute((10,), lambda i: A[i] * 2, name="B")
    C = copy(B, "C")
    s = te.create_schedule(C.op)
    s[B].compute_inline()
    with pytest.raises(ScheduleError, match=r"stage C reads B, which is inlined.*CopyOp.*s\[B\]\.compute_root\(\)"):
        tessel.lower(s, [A, C])


def test_an_operation_without_build_provide_is_refused_by_name():
    class NoLowering(CopyOp):
        build_provide = Operation.build_provide

    A = te.placeholder((6,), name="A")
    B = copy(A, "Mystery", cls=NoLowering)
    s = te.create_schedule(B.op)
    with pytest.raises(LowerError, match="Mystery.*NoLowering.*build_provide"):
        tessel.lower(s, [A, B])


def test_a_copy_cannot_be_inlined_or_cache_written():
    A = te.placeholder((6,), name="A")
    B = copy(A, "B")
    C = te.compute((6,), lambda i: B[i] + 1, name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="stage B: only a te.compute"):
        s[B].compute_inline()
    with pytest.raises(ScheduleError, match="B is a CopyOp; cache_write rewrites te.compute"):
        s.cache_write(B, "local")


# ---- InferBound follows the read graph -----------------------------------------------------
def _dag():
    n, m = 27, 18
    A = te.placeholder((n, m), name="A")
    W = te.placeholder((m,), name="W")
    B = te.compute((n, m), lambda i, j: A[i, j] * W[j], name="B")
    k = te.reduce_axis((0, m), name="k")
    R = te.compute((n,), lambda i: te.sum(B[i, k], axis=k), name="R")
    D = te.compute((n, m), lambda i, j: B[i, j] - R[i], name="D")
    s = te.create_schedule(D.op)
    AS = s.cache_read(A, "shared", [s[B]])
    DO, DI = s[D].split(D.op.axis[0], factor=4)
    s[R].compute_at(s[D], DO)
    s[B].compute_at(s[D], DO)
    s[AS].compute_at(s[B], B.op.axis[0])
    a, w = rand(n, m, seed=11), rand(m, seed=12)
    b = a * w
    return s, [A, W, D], [a, w], [b - b.sum(axis=1, keepdims=True)]


def _text(bounds) -> dict[int, str]:
    return {id(iv): f"{iv.name}: [{r.min}, {r.extent}]" for iv, r in bounds.items()}


@pytest.mark.no_replay_check  # the stage list is shuffled by hand: not a step a replay could repeat
@pytest.mark.parametrize("seed", range(6))
def test_infer_bound_does_not_depend_on_the_order_of_the_stage_list(seed):
    s, args, inputs, expected = _dag()
    want = _text(tessel.infer_bound(s))
    order = list(reversed(s.stages))  # consumers before producers: the worst case for a list walk
    if seed:
        random.Random(seed).shuffle(order)
    s.stages[:] = order
    assert _text(tessel.infer_bound(s)) == want
    # and the lowered kernel still places every producer before its readers
    check(s, args, inputs, expected, targets=("python",), rtol=1e-4, atol=1e-4)


def test_the_shuffle_test_covers_attachments_and_a_cache():
    s, *_ = _dag()
    names = [st.name for st in s.stages]
    assert "A.shared" in names
    assert sum(st.attach_type == "scope" for st in s.stages) == 3
