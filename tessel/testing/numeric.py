"""NumPy comparisons on random data: the python target, the C target and NumPy must agree.

Generated reproductions of the fuzzer import these (``from tessel.testing import check, rand``),
so they live in the package, not in the test suite."""

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


def check(sch, args, inputs, expected, targets=TARGETS, rtol=1e-5, atol=1e-5, updated=None, kernels=None,
          exact=True):
    """Build for every target, run on ``inputs``, compare the outputs with ``expected``.

    ``args`` are the tensors in call order: the inputs first, then the outputs.
    ``updated`` maps the position of an input a kernel writes in place (``store_in`` of an
    input, ``te.recurrence(inplace=...)``) to the values it must hold afterwards; every other
    input must come back unchanged. Returns the built kernels by target; pass them back as
    ``kernels`` to check the same kernels at other sizes (symbolic ones) without building again;
    ``exact``: ``build``'s (False: InferBound's interval regions).
    """
    updated = updated or {}
    kernels = dict(kernels or {})
    for target in targets:
        f = kernels.get(target) or tessel.build(sch, args, target=target, exact=exact)
        ins = [np.array(a, copy=True) for a in inputs]
        outs = [garbage_like(np.asarray(e)) for e in expected]
        f(*ins, *outs)
        for k, (a, b) in enumerate(zip(ins, inputs)):
            if k in updated:
                np.testing.assert_allclose(a, updated[k], rtol=rtol, atol=atol, err_msg=f"target {target}, input {k} updated in place")
            else:
                np.testing.assert_array_equal(a, b, err_msg=f"{target}: an input was modified")
        for k, (got, want) in enumerate(zip(outs, expected)):
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"target {target}, output {k}")
        kernels[target] = f
    return kernels


def refused(call) -> None:
    """``call()`` must be refused with a ScheduleError (the fuzzer's programs keep the primitives
    tessel refused this way, so that they replay exactly, refusals included)."""
    try:
        call()
    except tessel.ScheduleError:
        return
    raise AssertionError("expected a ScheduleError: the primitive was accepted this time")
