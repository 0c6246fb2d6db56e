"""Three-way checks: the python target, the C target and NumPy must agree on random data."""

from __future__ import annotations

import numpy as np

import tessel

TARGETS = ("python", "c")


def rand(*shape, dtype="float32", seed=0, low=-1.0, high=1.0):
    """Random data that is never all zeros (integers avoid zero too)."""
    rng = np.random.default_rng(seed + 17 * len(shape))
    dt = np.dtype(dtype)
    if dt.kind == "f":
        a = rng.uniform(low, high, size=shape).astype(dt)
        a[a == 0] = 0.5
        return a
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    info = np.iinfo(dt)
    lo, hi = max(info.min, -50), min(info.max, 50)
    a = rng.integers(lo, hi, size=shape).astype(dt)
    a[a == 0] = 3
    return a


def garbage_like(a: np.ndarray) -> np.ndarray:
    """An output array pre-filled with values a correct kernel must overwrite."""
    out = np.empty(a.shape, a.dtype)
    if out.dtype.kind == "f":
        out.fill(np.nan)
    elif out.dtype.kind == "b":
        out.fill(True)
    else:
        out.fill(np.iinfo(out.dtype).max // 3)
    return out


def check(sch, args, inputs, expected, targets=TARGETS, rtol=1e-5, atol=1e-5, exact=True):
    """Build for every target, run on ``inputs``, compare the outputs with ``expected``.

    ``args`` are the tensors in call order: the inputs first, then the outputs; ``exact``:
    ``build``'s (False: InferBound's interval regions). Returns the built kernels by target.
    """
    kernels = {}
    for target in targets:
        f = tessel.build(sch, args, target=target, exact=exact)
        ins = [np.array(a, copy=True) for a in inputs]
        outs = [garbage_like(np.asarray(e)) for e in expected]
        f(*ins, *outs)
        for a, b in zip(ins, inputs):
            np.testing.assert_array_equal(a, b, err_msg=f"{target}: an input was modified")
        for k, (got, want) in enumerate(zip(outs, expected)):
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"target {target}, output {k}")
        kernels[target] = f
    return kernels


def ir_text(sch, args, step="schedule_ops"):
    """The IR after one named lowering step, as text."""
    from tessel.driver import lower_steps

    _, steps = lower_steps(sch, args)
    return str(next(s.ir for s in steps if s.name == step))


def loops(text: str) -> list[str]:
    """The loop headers of an IR listing, in order, without indentation."""
    return [ln.strip() for ln in text.splitlines() if ln.strip().startswith(("for ", "parallel ", "vectorized ", "unrolled "))]


def four_stage_chain(middle: str = "C"):
    """A -> B -> <middle> -> D, elementwise on 8x6: the chain the legality tests attach along
    (``middle`` names the third stage, e.g. "bicycle" to test that a name is never read as a rule)."""
    from tessel import te

    A = te.placeholder((8, 6), name="A")
    B = te.compute((8, 6), lambda i, j: A[i, j] + 1, name="B")
    C = te.compute((8, 6), lambda i, j: B[i, j] * 2, name=middle)
    D = te.compute((8, 6), lambda i, j: C[i, j] - 3, name="D")
    return A, B, C, D
