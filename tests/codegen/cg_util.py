"""Hand-written lowered PrimFuncs and a runner that checks python vs. C vs. NumPy."""

from __future__ import annotations

import numpy as np

from tessel.driver import build_func
from tessel.ir import expr as E
from tessel.ir import stmt as S
from tessel.ir.expr import const

TARGETS = ("python", "c")


def ld(buf: S.Buffer, idx) -> E.BufferLoad:
    return E.BufferLoad(buf, (idx,))


def st(buf: S.Buffer, value, idx) -> S.BufferStore:
    return S.BufferStore(buf, value, (idx,))


def loop(v: E.Var, extent, body: S.Stmt, kind: str = "serial", lo=0) -> S.For:
    return S.For(v, const(lo, v.dtype), extent, kind, body)


def elementwise(name: str, inputs: list[S.Buffer], outputs: list[tuple[S.Buffer, object]], n,
                kind: str = "serial", i: E.Var | None = None) -> S.PrimFunc:
    """``out_k[i] = expr_k(i)`` for i in [0, n); ``outputs`` pairs a buffer with a function of i."""
    i = i if i is not None else E.Var("i", "int32")
    body = S.seq(*[st(b, fn(i), i) for b, fn in outputs])
    sizes = (n,) if isinstance(n, E.Var) else ()
    outs = [b for b, _ in outputs]
    return S.PrimFunc(name, (*inputs, *outs), sizes, loop(i, n, body, kind), tuple(outs))


def rand(shape, dtype, seed: int = 0, full_range: bool = False, low=-2.0, high=2.0) -> np.ndarray:
    """Random, never-zero data; ``full_range`` draws integers over the whole dtype (to wrap)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        a = rng.uniform(low, high, size=shape).astype(dt)
        a[a == 0] = 0.5
        return a
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    info = np.iinfo(dt)
    lo, hi = (info.min, info.max) if full_range else (max(info.min, -100), min(info.max, 100))
    a = rng.integers(lo, hi, size=shape, dtype=dt, endpoint=True)
    a[a == 0] = 3
    return a


def run(func: S.PrimFunc, inputs: list[np.ndarray], targets=TARGETS) -> dict[str, list[np.ndarray]]:
    """Build ``func`` per target and run it; outputs start as garbage the kernel must overwrite."""
    results = {}
    n_in = len(func.params) - len(func.outputs)
    for target in targets:
        k = build_func(func, target)
        assert k.target == target and k.func.params == func.params and k.name == func.name
        ins = [a.copy() for a in inputs]
        outs = []
        for b in func.params[n_in:]:
            shape = tuple(int(x) if isinstance(x, E.IntImm) else _size_of(func, x, inputs) for x in b.shape)
            out = np.empty(shape, b.dtype.numpy)
            out.view(np.uint8)[...] = 0xA5
            outs.append(out)
        k(*ins, *outs)
        for a, b in zip(ins, inputs):
            np.testing.assert_array_equal(a, b, err_msg=f"{target}: an input was modified")
        results[target] = outs
    return results


def _size_of(func: S.PrimFunc, v, inputs) -> int:
    for b, a in zip(func.params, inputs):
        for k, x in enumerate(b.shape):
            if x is v:
                return a.shape[k]
    raise AssertionError(f"cannot size {v}")


def assert_agree(results: dict[str, list[np.ndarray]], expected=None, rtol=0.0, atol=0.0) -> None:
    """python and C agree (to the tolerance), and both match ``expected`` when given."""

    def same(got, want, msg):
        want = np.asarray(want)
        assert got.dtype == want.dtype or expected is None or want.dtype.kind == got.dtype.kind, msg
        if rtol == 0 and atol == 0:
            np.testing.assert_array_equal(got, want, err_msg=msg)
        else:
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=msg)

    py, c = results.get("python"), results.get("c")
    if py is not None and c is not None:
        for k, (a, b) in enumerate(zip(py, c)):
            same(b, a, f"python vs c, output {k}")
    if expected is not None:
        for target, outs in results.items():
            for k, (got, want) in enumerate(zip(outs, expected)):
                same(got, want, f"{target}, output {k}")
