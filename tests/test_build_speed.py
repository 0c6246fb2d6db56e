"""What the build-time shortcuts rely on, checked as properties (never as timings).

* The analyzer's memo of simplified expressions (shared by the analyzers of an unroll's
  copies) is keyed by everything the analyzer knows: an expression simplified under one set
  of facts is never served under another, and the generated code is the same with the memo
  as with a fresh simplification of every expression.
* Structural hashes remembered by identity agree with hashes computed afresh.
* ``Node.fields`` (a getter per class) lists the fields of ``_fields`` in order.
* The carried-dependence test without isl's ``subtract`` agrees with ``carried_by``, and
  dependences computed with the relations of access pairs shared agree with those computed
  alone.
* A tuner candidate's features read off its built kernel are those of ``driver.lower``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import check, rand

import tessel
from tessel import te
from tessel.arith import Analyzer
from tessel.arith.canonical import Simplifier
from tessel.codegen import generate
from tessel.driver import lower
from tessel.ir import expr as E
from tessel.ir import op as O
from tessel.ir import stmt as S
from tessel.ir.functor import forget_hashes, structural_equal, structural_hash
from tessel.poly.analysis import analysis
from tessel.poly.deps import carried, dependences
from tessel.target import backend, resolve


def _matmul(n: int, rows: int = 3, cols: int = 16, kb: int = 4):
    """A register-tiled matmul whose sizes leave partial tiles (loop partitioning, unrolled copies)."""
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], rows, cols)
    s[C].unroll(ii)
    s[C].vectorize(ji)
    s[C].parallel(io)
    s[CC].compute_at(s[C], jo)
    ic, jc = s[CC].op.axis
    ko, ki = s[CC].split(s[CC].op.reduce_axis[0], factor=kb)
    s[CC].reorder(ko, ki, ic, jc)
    s[CC].unroll(ki)
    s[CC].unroll(ic)
    s[CC].vectorize(jc)
    return s, [A, B, C]


def _blur(h: int, w: int):
    A = te.placeholder((h, w), name="A")
    Bx = te.compute((h, w - 2), lambda y, x: (A[y, x] + A[y, x + 1] + A[y, x + 2]) / 3.0, name="Bx")
    By = te.compute((h - 2, w - 2), lambda y, x: (Bx[y, x] + Bx[y + 1, x] + Bx[y + 2, x]) / 3.0, name="By")
    s = te.create_schedule(By.op)
    yo, xo, yi, xi = s[By].tile(By.op.axis[0], By.op.axis[1], 4, 8)
    s[Bx].compute_at(s[By], xo)
    s[By].vectorize(xi)
    s[By].unroll(yi)
    s[By].parallel(yo)
    return s, [A, By]


def _symbolic():
    n = te.var("n")
    A = te.placeholder((n, 12), name="A")
    B = te.compute((n, 12), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    s = te.create_schedule(B.op)
    io, ii = s[B].split(B.op.axis[0], factor=4)
    jo, ji = s[B].split(B.op.axis[1], factor=8)
    s[B].reorder(io, jo, ii, ji)
    s[B].unroll(ii)
    s[B].vectorize(ji)
    return s, [A, B]


KERNELS = {"matmul 29": lambda: _matmul(29), "matmul 32": lambda: _matmul(32, 4, 8, 2),
           "blur 19x37": lambda: _blur(19, 37), "symbolic": _symbolic}


def _fresh_simplify(self, e):
    """The analyzer's simplification before its memo: a fresh simplifier every time."""
    return Simplifier(self).visit(e.var if isinstance(e, E.IterVar) else O.convert(e) if isinstance(e, int | float) else e)


def _sources(make) -> dict[str, str]:
    out = {}
    for kind in ("c", "python"):
        s, args = make()
        tgt = resolve(tessel.target.as_target(kind))
        out[kind] = generate(backend(tgt).generate, lower(s, args, target=tgt), tgt).source
    return out


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_generated_code_is_the_same_without_the_simplifier_memo(name, monkeypatch):
    forget_hashes()
    with_memo = _sources(KERNELS[name])
    monkeypatch.setattr(Analyzer, "simplify", _fresh_simplify)
    forget_hashes()
    without = _sources(KERNELS[name])
    assert with_memo == without
    assert "ramp" not in with_memo["c"]  # the source is C: the property is not vacuous
    assert len(with_memo["c"].splitlines()) > 20


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_kernels_compute_numpys_values(name):
    s, args = KERNELS[name]()
    if name == "symbolic":
        a = rand(13, 12)
        check(s, args, [a], [a * 2.0 + 1.0])
    elif name.startswith("matmul"):
        n = args[0].shape[0].value
        a, b = rand(n, n), rand(n, n, seed=1)
        check(s, args, [a, b], [a @ b], rtol=1e-4, atol=1e-4)
    else:
        h, w = (int(x.value) for x in args[0].shape)
        a = rand(h, w)
        bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / 3.0
        check(s, args, [a], [(bx[:-2] + bx[1:-1] + bx[2:]) / 3.0])


def test_a_shared_memo_never_serves_an_answer_made_under_other_facts():
    i = te.var("i")
    memo: dict = {}
    small, large = Analyzer(memo), Analyzer(memo)
    small.bind(i, E.Range(O.const(0), O.const(4)))
    large.bind(i, E.Range(O.const(0), O.const(8)))
    cond = O.lt(i, 4)
    assert E.is_const_int(small.simplify(cond), 1)
    assert not isinstance(large.simplify(O.lt(i, 4)), E.IntImm)  # the same structure, other facts
    assert memo  # the memo was used
    ana = Analyzer(memo)
    assert not isinstance(ana.simplify(cond), E.IntImm)
    with ana.scoped_bind(i, E.Range(O.const(0), O.const(2))):
        assert E.is_const_int(ana.simplify(cond), 1)
    assert not isinstance(ana.simplify(cond), E.IntImm)  # the loop's range is forgotten after it
    with ana.constraint_scope(O.lt(i, 3)):
        assert E.is_const_int(ana.simplify(cond), 1)
    assert not isinstance(ana.simplify(cond), E.IntImm)
    ana.assume(O.le(i, 0))
    assert E.is_const_int(ana.simplify(cond), 1)


def test_an_unchanged_expression_is_handed_back_itself_from_the_memo():
    i = te.var("i")
    memo: dict = {}
    e1, e2 = O.add(O.mul(i, 4), 1), O.add(O.mul(i, 4), 1)
    assert Analyzer(memo).simplify(e1) is e1
    assert Analyzer(memo).simplify(e2) is e2  # a hit on e1's entry still answers with e2


def test_the_memo_tells_a_negative_zero_from_a_zero():
    """A constant ``-0.0`` and ``0.0`` compare equal as floats but are different values
    (``1/x``); a simplification made with one must not be served for the other."""
    i, x = te.var("i"), te.var("x", "float32")
    memo: dict = {}
    for c in (-0.0, 0.0, -0.0):
        got = Analyzer(memo).simplify(E.Select(O.lt(i, O.add(i, 1)), O.const(c, "float32"), x))
        assert isinstance(got, E.FloatImm) and math.copysign(1.0, got.value) == math.copysign(1.0, c), (c, got)
    assert not structural_equal(O.const(0.0, "float32"), O.const(-0.0, "float32"))
    assert structural_equal(O.const(-0.0, "float32"), O.const(-0.0, "float32"))


def test_remembered_structural_hashes_agree_with_fresh_ones():
    i, j = te.var("i"), te.var("j")
    exprs = [O.add(O.mul(i, 4), j), O.add(O.mul(i, 4), j), O.mul(O.add(i, 1), O.sub(j, 2))]
    first = [structural_hash(e) for e in exprs]
    assert first[0] == first[1] and structural_equal(exprs[0], exprs[1])
    forget_hashes()
    assert [structural_hash(e) for e in exprs] == first
    assert structural_hash(O.add(O.mul(j, 4), i)) != first[0]  # variables by identity


def test_fields_lists_every_field_in_order():
    classes, todo = [], [E.Node]
    while todo:
        c = todo.pop()
        classes.append(c)
        todo.extend(c.__subclasses__())
    i = te.var("i")
    samples = [O.add(i, 1), E.Range(O.const(0), O.const(3)), S.Evaluate(O.const(0)), E.Ramp(i, O.const(1), 8),
               S.For(i, O.const(0), O.const(4), "serial", S.Evaluate(O.const(0)))]
    for x in samples:
        assert x.fields() == tuple(getattr(x, f) for f in x._fields)
    assert all(len(c._fields) == len(c._getter(_Dummy(c._fields))) for c in classes)


class _Dummy:
    def __init__(self, names):
        for k, name in enumerate(names):
            setattr(self, name, k)


def _annotated(sch):
    """(model, deps, loop) for every loop of an annotated stage."""
    found = analysis(sch)
    model = found.model
    return model, dependences(model), model.loops


@pytest.mark.parametrize("name", ["matmul 29", "blur 19x37"])
def test_the_carried_test_agrees_with_carried_by(name):
    s, _ = KERNELS[name]()
    model, deps, loops = _annotated(s)
    assert deps and loops
    carried_somewhere = False
    for lp in loops:
        for d in deps:
            exact = not d.carried_by(lp).intersect_params(model.context).is_empty()
            assert d.is_carried_by(lp, model.context) == exact
            carried_somewhere |= exact
        got = carried(model, deps, lp)
        inside = {id(x) for x in model.statements_in(lp)}
        want = next((d for d in deps if id(d.source) in inside and id(d.sink) in inside
                     and not d.carried_by(lp).intersect_params(model.context).is_empty()), None)
        assert (got[0] if got else None) is want
    # matmul: a reduction loop carries its accumulation; the blur's stages are realized per tile
    assert carried_somewhere == name.startswith("matmul")


def test_dependences_with_shared_pairs_are_those_computed_alone():
    s, _ = _matmul(29)
    model = analysis(s).model
    pairs: dict = {}
    whole = dependences(model, pairs=pairs)
    for lp in model.loops:
        among = model.statements_in(lp)
        alone, shared = dependences(model, among), dependences(model, among, pairs)
        assert [(d.kind, d.source, d.sink, d.tensor_name) for d in alone] == \
            [(d.kind, d.source, d.sink, d.tensor_name) for d in shared]
        assert all(a.time.is_equal(b.time) for a, b in zip(alone, shared))
    assert whole and pairs


def test_a_candidates_features_from_its_kernel_are_those_of_lowering():
    from tessel.tune.features import loop_features
    from tessel.tune.measure import _build_child, _lowering_target, features
    from tessel.tune.task import Task

    def template(cfg, n):
        A = te.placeholder((n, n), name="A")
        B = te.compute((n, n), lambda i, j: A[i, j] * 2.0, name="B")
        s = te.create_schedule(B.op)
        cfg.define_split("tile_j", B.op.axis[1], num_outputs=2, filter=lambda e: e.size[-1] <= 16)
        jo, ji = cfg["tile_j"].apply(s, B, B.op.axis[1])
        s[B].vectorize(ji)
        return s, [A, B]

    task = Task(template, (24,))
    assert task.target == _lowering_target()
    for index in range(min(len(task.config_space), 4)):
        cfg = task.config(index)
        msg = _build_child(task, cfg, None)
        assert msg["features"] == features(task, cfg)
        sch, tensors = task.instantiate(cfg)
        assert msg["features"][: len(loop_features(lower(sch, list(tensors)), task.flop))] == \
            loop_features(lower(sch, list(tensors)), task.flop)
    assert np.isfinite(msg["features"]).all()
