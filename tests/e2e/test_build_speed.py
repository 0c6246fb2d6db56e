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
* InferBound runs once per schedule state: the polyhedral model (legality) and the lowering
  share its result, and the code is the same as with a fresh InferBound for each.
* The C includes ``<math.h>`` and ``<stdlib.h>`` only where its text names something of
  theirs: every name the generator may print from them is in the sets that decide it.
* ``build`` takes the lowering ``lower`` made of the same schedule (``auto_schedule`` lowers the
  schedule it returns): only in the same state, with the same arguments, name, target and
  ``exact``, and the code is what a build that lowers afresh generates.
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
from tessel.driver import build_func, lower
from tessel.ir import expr as E
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
    return Simplifier(self).visit(e.var if isinstance(e, E.IterVar) else E.convert(e) if isinstance(e, int | float) else e)


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
    small.bind(i, E.Range(E.const(0), E.const(4)))
    large.bind(i, E.Range(E.const(0), E.const(8)))
    cond = E.lt(i, 4)
    assert E.is_const_int(small.simplify(cond), 1)
    assert not isinstance(large.simplify(E.lt(i, 4)), E.IntImm)  # the same structure, other facts
    assert memo  # the memo was used
    ana = Analyzer(memo)
    assert not isinstance(ana.simplify(cond), E.IntImm)
    with ana.scoped_bind(i, E.Range(E.const(0), E.const(2))):
        assert E.is_const_int(ana.simplify(cond), 1)
    assert not isinstance(ana.simplify(cond), E.IntImm)  # the loop's range is forgotten after it
    with ana.constraint_scope(E.lt(i, 3)):
        assert E.is_const_int(ana.simplify(cond), 1)
    assert not isinstance(ana.simplify(cond), E.IntImm)
    ana.assume(E.le(i, 0))
    assert E.is_const_int(ana.simplify(cond), 1)


def test_an_unchanged_expression_is_handed_back_itself_from_the_memo():
    i = te.var("i")
    memo: dict = {}
    e1, e2 = E.add(E.mul(i, 4), 1), E.add(E.mul(i, 4), 1)
    assert Analyzer(memo).simplify(e1) is e1
    assert Analyzer(memo).simplify(e2) is e2  # a hit on e1's entry still answers with e2


def test_the_memo_tells_a_negative_zero_from_a_zero():
    """A constant ``-0.0`` and ``0.0`` compare equal as floats but are different values
    (``1/x``); a simplification made with one must not be served for the other."""
    i, x = te.var("i"), te.var("x", "float32")
    memo: dict = {}
    for c in (-0.0, 0.0, -0.0):
        got = Analyzer(memo).simplify(E.Select(E.lt(i, E.add(i, 1)), E.const(c, "float32"), x))
        assert isinstance(got, E.FloatImm) and math.copysign(1.0, got.value) == math.copysign(1.0, c), (c, got)
    assert not structural_equal(E.const(0.0, "float32"), E.const(-0.0, "float32"))
    assert structural_equal(E.const(-0.0, "float32"), E.const(-0.0, "float32"))


def test_remembered_structural_hashes_agree_with_fresh_ones():
    i, j = te.var("i"), te.var("j")
    exprs = [E.add(E.mul(i, 4), j), E.add(E.mul(i, 4), j), E.mul(E.add(i, 1), E.sub(j, 2))]
    first = [structural_hash(e) for e in exprs]
    assert first[0] == first[1] and structural_equal(exprs[0], exprs[1])
    forget_hashes()
    assert [structural_hash(e) for e in exprs] == first
    assert structural_hash(E.add(E.mul(j, 4), i)) != first[0]  # variables by identity


def test_fields_lists_every_field_in_order():
    classes, todo = [], [E.Node]
    while todo:
        c = todo.pop()
        classes.append(c)
        todo.extend(c.__subclasses__())
    i = te.var("i")
    samples = [E.add(i, 1), E.Range(E.const(0), E.const(3)), S.Evaluate(E.const(0)), E.Ramp(i, E.const(1), 8),
               S.For(i, E.const(0), E.const(4), "serial", S.Evaluate(E.const(0)))]
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


def _fresh_build_source(make, **kw) -> str:
    """The C source of a build that lowers the schedule itself (nothing remembered)."""
    from tessel.driver import forget_lowerings
    from tessel.runtime.cache import clear_memory_cache

    forget_lowerings()
    clear_memory_cache()
    s, args = make()
    return tessel.build(s, args, **kw).source


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_build_takes_the_lowering_just_made_and_generates_the_same_code(name):
    want = _fresh_build_source(KERNELS[name])
    s, args = KERNELS[name]()
    func = lower(s, args)
    kernel = tessel.build(s, args)
    assert kernel.func is func  # not lowered again
    assert kernel.source == want
    assert tessel.build(s, args, exact=False).func is not func  # another lowering asked for
    assert tessel.build(s, list(args), name="other").func is not func


def test_an_auto_scheduled_kernel_is_built_from_the_lowering_that_checked_it():
    from tessel.autosched import auto_schedule

    def make():
        A = te.placeholder((37, 29), name="A")
        B = te.placeholder((29, 41), name="B")
        k = te.reduce_axis((0, 29), name="k")
        C = te.compute((37, 41), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
        return auto_schedule([C], budget=0), [A, B, C]

    want = _fresh_build_source(make)
    s, args = make()
    kernel = tessel.build(s, args)
    assert kernel.source == want
    a, b = rand(37, 29), rand(29, 41, seed=1)
    c = np.empty((37, 41), "float32")
    kernel(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_a_schedule_changed_after_lowering_is_lowered_again():
    s, args = _symbolic()
    func = lower(s, args)
    B = args[1]
    io = s[B].leaf_iter_vars[0]
    s[B].parallel(io)
    kernel = tessel.build(s, args)
    assert kernel.func is not func
    assert "omp parallel" in kernel.source and "omp parallel" not in build_func(func).source
    a = rand(13, 12)
    check(s, args, [a], [a * 2.0 + 1.0])


def test_other_arguments_are_lowered_again():
    s, args = _symbolic()
    func = lower(s, args)
    kernel = tessel.build(s, args[::-1])  # the output first: another calling order
    assert kernel.func is not func
    a = rand(13, 12)
    b = np.empty((13, 12), "float32")
    kernel(b, a)
    np.testing.assert_allclose(b, a * 2.0 + 1.0, rtol=1e-6)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_inferbound_runs_once_per_state_and_the_code_is_the_same(name, monkeypatch):
    import tessel.poly.analysis as pa
    from tessel.poly.analysis import Analysis, forget

    runs = []
    real = pa.run_infer_bound

    def counted(sch, check=True):
        runs.append(sch)
        return real(sch, check)

    monkeypatch.setattr(pa, "run_infer_bound", counted)
    forget()
    forget_hashes()
    shared = _sources(KERNELS[name])
    # each schedule (one per target, and the conftest's replay of each) bounded once: the
    # model and the lowering shared the result
    assert runs and len(runs) == len({id(x) for x in runs})
    # as before: a fresh InferBound for the model and another for the lowering
    monkeypatch.setattr(Analysis, "bound", property(lambda self: real(self.sch, check=False)))
    forget()
    forget_hashes()
    assert _sources(KERNELS[name]) == shared


def test_every_c_spelling_of_an_intrinsic_names_only_what_decides_an_include():
    import re

    from tessel.codegen.c import _MATH_NAMES
    from tessel.ir.intrinsics import INTRINSICS

    spelled = 0
    for name, it in INTRINSICS.items():
        if it.c is None:
            continue
        for f in ("", "f"):
            words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*\(", it.c.format(*("x" * it.arity), f=f, bits=32)))
            for w in words:
                w = w[:-1]
                assert w in _MATH_NAMES or w.startswith("__builtin_"), (name, w)
                spelled += 1
    assert spelled > 40


def _unary(fn, n: int = 37):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: fn(A[i]), name="B")
    return te.create_schedule(B.op), [A, B]


def test_a_kernel_includes_math_h_only_when_it_calls_into_it():
    a = rand(37)
    s, args = _unary(lambda x: te.exp(x) + 1.0)
    k = tessel.build(s, args)
    assert "#include <math.h>" in k.source and "#include <stdlib.h>" not in k.source
    check(s, args, [a], [np.exp(a) + 1.0], rtol=1e-5, atol=1e-6)
    s, args = _unary(lambda x: x * 2.0 + 1.0)
    k = tessel.build(s, args)
    assert "math.h" not in k.source and "stdlib.h" not in k.source
    check(s, args, [a], [a * 2.0 + 1.0])
    s, args = _unary(lambda x: te.max(x, float("inf")) - float("inf"))  # the constant is INFINITY
    k = tessel.build(s, args)
    assert "INFINITY" in k.source and "#include <math.h>" in k.source
    out = np.empty(37, "float32")
    k(a, out)
    assert np.isnan(out).all()


def test_a_heap_temporary_includes_stdlib_h():
    n = tessel.tunables.current().stack_limit_bytes // 4 + 5  # float32 elements past the stack limit
    A = te.placeholder((n,), name="A")
    T = te.compute((n,), lambda i: A[i] * 3.0, name="T")
    B = te.compute((n,), lambda i: T[n - 1 - i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    k = tessel.build(s, [A, B])
    assert "tsl_alloc" in k.source and "#include <stdlib.h>" in k.source
    a = rand(n)
    check(s, [A, B], [a], [a[::-1] * 3.0 + 1.0])


def test_a_name_that_spells_the_include_placeholder_stays_in_its_comment():
    """The headers go at the head's own line, not at the first text that looks like it: a
    tensor named like the placeholder prints only in a comment, and the kernel still builds."""
    from tessel.codegen.c import _INCLUDES

    A = te.placeholder((19,), name=_INCLUDES)
    B = te.compute((19,), lambda i: te.exp(A[i]) * 2.0, name="B")
    s = te.create_schedule(B.op)
    k = tessel.build(s, [A, B])
    lines = k.source.splitlines()
    assert "#include <math.h>" in lines
    assert all(not ln.startswith("#include <tessel") for ln in lines)
    a = rand(19)
    check(s, [A, B], [a], [np.exp(a) * 2.0], rtol=1e-5, atol=1e-6)


def test_analysed_and_lowered_schedules_are_freed_when_dropped():
    """The analysis kept per schedule state and the lowering ``build`` may take must not keep
    the schedule alive: a tuner analyses and lowers thousands of candidates in one process."""
    import gc
    import weakref

    gc.collect()
    alive = []
    for n in (9, 10, 11):
        s, args = _matmul(n)
        found = analysis(s)
        assert found.dependences is not None and found.bound is not None
        lower(s, args)
        tessel.build(s, args, target="python")
        alive.append(weakref.ref(s))
        del s, args, found
    gc.collect()
    assert [r() for r in alive] == [None] * len(alive)


def test_a_copy_of_an_analysed_schedule_gets_its_own_analysis():
    s, args = _symbolic()
    found = analysis(s)
    t = s.copy()
    assert analysis(t) is not found and analysis(t).sch is t
    assert analysis(s) is found  # the original's is kept


def _guarded_kernel():
    A = te.placeholder((6,), name="A")
    # a guard no loop can be cut on (a padded copy's border is cut out by loop partitioning, a
    # test of i % 2 by running the residues apart)
    P = te.compute((8,), lambda i: te.if_then_else((i * i) % 3 == 0, A[i // 2 + 2], 0.0), name="P")
    return te.create_schedule(P.op), [A, P]


@pytest.mark.parametrize("name", [*sorted(KERNELS), "guarded"])
def test_the_checking_walk_finds_what_the_two_scans_it_replaced_found(name):
    """``check_func`` reports the written buffers and guarded loads on its one walk: they are
    what ``written_buffers`` and ``has_guarded_loads`` find on walks of their own."""
    from tessel.codegen.c import has_guarded_loads
    from tessel.codegen.common import check_func, written_buffers

    s, args = (KERNELS.get(name) or _guarded_kernel)()
    func = lower(s, args)
    facts = check_func(func)
    assert facts.written == written_buffers(func) and facts.written
    assert facts.guarded_loads == has_guarded_loads(func.body)
    assert facts.guarded_loads == (name == "guarded")


def test_a_copy_does_not_inherit_its_originals_memos():
    """``Schedule.copy`` is a shallow copy: the original's analysis and lowering (which refer to
    the original) must not ride along in the copy's attributes."""
    s, args = _symbolic()
    assert analysis(s).bound is not None
    lower(s, args)
    assert any(k.startswith("_memo_") for k in vars(s))
    t = s.copy()
    assert not any(k.startswith("_memo_") for k in vars(t))
    assert analysis(t).sch is t and lower(t, args) is not None


@pytest.mark.parametrize("was_on", [True, False])
def test_build_pauses_the_cyclic_collector_and_restores_it(was_on, monkeypatch):
    """The collector is off while a build lowers and generates code (in a process holding a
    large heap a collection walks all of it), and left as the caller had it, after a failed
    build too."""
    import gc

    from tessel import driver

    seen: list[bool] = []
    real = driver.build_func

    def spy(*a, **kw):
        seen.append(gc.isenabled())
        return real(*a, **kw)

    monkeypatch.setattr(driver, "build_func", spy)
    s, args = _matmul(37)
    (gc.enable if was_on else gc.disable)()
    try:
        tessel.build(s, args, target="python")
        assert seen == [False] and gc.isenabled() == was_on
        with pytest.raises(tessel.TesselError):
            tessel.build(s, args[:1], target="python")
        assert gc.isenabled() == was_on
    finally:
        gc.enable()


def test_overlapping_builds_share_one_pause():
    """Builds in several threads overlap: the collector comes back when the last one ends, not
    the first, and the setting restored is the one from before the first."""
    import gc

    from tessel.driver import _collector_paused

    gc.enable()
    try:
        first = _collector_paused()
        second = _collector_paused()
        first.__enter__()
        second.__enter__()
        first.__exit__(None, None, None)
        assert not gc.isenabled()  # the second build is still running
        second.__exit__(None, None, None)
        assert gc.isenabled()
    finally:
        gc.enable()
