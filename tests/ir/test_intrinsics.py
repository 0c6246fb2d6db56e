"""One intrinsic table: every intrinsic te exports builds and runs on both targets, scalar and
vectorized, and agrees with its NumPy function on random data from its domain."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, garbage_like

import tessel
from tessel import te
from tessel.ir import expr as E
from tessel.ir.evaluate import evaluate
from tessel.ir.intrinsics import INTRINSICS
from tessel.te.intrin import EXPORTED

N = 37  # two vectors of 16, then 4 + 1 lanes: vector, shorter vector and scalar code all run
TOL = {"float32": (2e-6, 1e-6), "float64": (1e-12, 1e-14)}


def _data(name: str, dtype: str, seed: int) -> np.ndarray:
    spec = INTRINSICS[EXPORTED[name]]
    rng = np.random.default_rng(seed)
    lo, hi = spec.domain
    a = rng.uniform(lo, hi, N).astype(dtype)
    if spec.rule == "predicate":
        a[[3, 11, 20]] = [np.nan, np.inf, -np.inf]
    else:
        a[a == 0] = 0.5
    return a


def _elementwise(fn, args):
    return lambda i: fn(*[a[i] for a in args])


def _kernel(dtype: str):
    """One kernel computing every exported intrinsic into its own output (one build per target)."""
    ins, outs = [], []
    for name in sorted(EXPORTED):
        fn = getattr(te, name)
        arity = INTRINSICS[EXPORTED[name]].arity
        args = [te.placeholder((N,), name=f"{name}_x{j}", dtype=dtype) for j in range(arity)]
        out = te.compute((N,), _elementwise(fn, args), name=f"{name}_out")
        ins.append((name, args))
        outs.append(out)
    s = te.create_schedule([o.op for o in outs])
    for o in outs:
        s[o].vectorize(o.op.axis[0])
    flat_in = [a for _, args in ins for a in args]
    return s, flat_in, outs, ins


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_exported_intrinsic_matches_numpy_on_both_targets(dtype):
    s, flat_in, outs, ins = _kernel(dtype)
    data = {a: _data(name, dtype, seed=7 * k + j) for k, (name, args) in enumerate(ins)
            for j, a in enumerate(args)}
    rtol, atol = TOL[dtype]
    for target in TARGETS:
        f = tessel.build(s, flat_in + outs, target=target)
        got = [garbage_like(np.empty(N, str(o.dtype))) for o in outs]
        f(*[data[a] for a in flat_in], *got)
        for (name, args), out in zip(ins, got):
            want = INTRINSICS[EXPORTED[name]].numpy(*[data[a] for a in args])
            np.testing.assert_allclose(out, want, rtol=rtol, atol=atol,
                                       err_msg=f"te.{name} on {dtype}, target {target}")


def test_nearbyint_rounds_half_to_even_everywhere():
    A = te.placeholder((6,), name="A", dtype="float32")
    B = te.compute((6,), lambda i: te.nearbyint(A[i]), name="B")
    a = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.6], "float32")
    for target in TARGETS:
        out = np.empty(6, "float32")
        tessel.build(te.create_schedule(B.op), [A, B], target=target)(a, out)
        np.testing.assert_array_equal(out, np.rint(a), err_msg=target)
    x = te.var("x", "float64")
    assert evaluate(te.nearbyint(x), {x: 2.5}) == 2.0


def test_the_evaluator_knows_every_intrinsic_the_generators_know():
    """The simplifier's oracle gives each table entry the value of its NumPy reference."""
    for name, spec in INTRINSICS.items():
        if spec.rule in ("special", "int"):  # integer intrinsics: tests/te_ext/test_intrinsics_ext.py
            continue
        x = [E.Var(f"x{k}", "float64") for k in range(spec.arity)]
        lo, hi = spec.domain
        vals = [lo + (hi - lo) * (0.3 + 0.2 * k) for k in range(spec.arity)]
        dt = "bool" if spec.rule == "predicate" else "float64"
        got = evaluate(E.Call(dt, name, tuple(x)), dict(zip(x, vals)))
        want = spec.numpy(*[np.float64(v) for v in vals])
        assert got == pytest.approx(float(want), rel=1e-12), name


def test_an_unknown_intrinsic_is_refused_with_the_known_ones_listed():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: E.Call("float32", "frobnicate", (A[i],)), name="B")
    for target in TARGETS:
        with pytest.raises(tessel.BuildError, match="unknown intrinsic 'frobnicate'.*nearbyint"):
            tessel.build(te.create_schedule(B.op), [A, B], target=target)
