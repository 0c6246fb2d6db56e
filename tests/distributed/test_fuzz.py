"""Random stencil-like programs x distribute x rank counts x block/block-cyclic on ranks as
threads, against one process bit for bit: a stencil of one step (reads of the input at random
offsets, guarded at the borders) or the same stencil as a recurrence over time. Its own seeds:
the schedule fuzzer's fixed examples are not shifted by it."""

from __future__ import annotations

import numpy as np
import pytest

import tessel
from tessel import DistributionError, te
from tessel import distributed as dist

SEEDS = range(10)


def _draw(rng: np.random.Generator, time: bool) -> dict:
    ndim = int(rng.integers(1, 3))
    shape = tuple(int(rng.integers(3, 12)) for _ in range(ndim))
    taps = [tuple(int(x) for x in rng.integers(-2, 3, ndim)) for _ in range(int(rng.integers(1, 5)))]
    return {"shape": shape, "taps": taps, "weights": [round(float(w), 3) for w in rng.random(len(taps))],
            "axis": int(rng.integers(0, ndim)), "ranks": int(rng.integers(2, 5)),
            "block": None if rng.random() < 0.5 else int(rng.integers(1, 4)),
            "time": time, "steps": int(rng.integers(2, 5)),
            "target": "python" if rng.random() < 0.3 else "c"}


def _value(read, shape, taps, weights, idx):
    """sum_k w_k x[idx + tap_k] where every read is inside, else x[idx] (the border keeps)."""
    inside = te.all(*[te.all(i + d >= 0, i + d < n) for tap in taps for i, d, n in zip(idx, tap, shape)])
    total = None
    for w, tap in zip(weights, taps):
        term = w * read(*[i + d for i, d in zip(idx, tap)])
        total = term if total is None else total + term
    return te.if_then_else(inside, total, read(*idx))


def _program(c: dict):
    shape, taps, weights = c["shape"], c["taps"], c["weights"]
    A = te.placeholder(shape, name="A", dtype="float64")
    opts = {"block": c["block"]} if c["block"] else {}
    if not c["time"]:
        B = te.compute(shape, lambda *idx: _value(lambda *x: A[x], shape, taps, weights, idx), name="B")
        s = te.create_schedule(B.op)
        s[B].distribute(B.op.axis[c["axis"]], **opts)
        return s, [A, B]
    def body(h, t, *idx):
        return _value(lambda *x: h[(t - 1, *x)], shape, taps, weights, idx)

    if len(shape) == 1:  # te reads the number of indices off the functions' signatures
        init = te.define(lambda h, t, i: A[i], where=lambda t, i: t == 0)
        step = te.define(lambda h, t, i: body(h, t, i), where=lambda t, i: t >= 1)
    else:
        init = te.define(lambda h, t, i, j: A[i, j], where=lambda t, i, j: t == 0)
        step = te.define(lambda h, t, i, j: body(h, t, i, j), where=lambda t, i, j: t >= 1)
    h = te.recurrence((c["steps"], *shape), [init, step], name="h")
    s = te.create_schedule(h.op)
    s[h].distribute(h.op.axis[1 + c["axis"]], **opts)
    return s, [A, h]


def _distributed(s, args, c: dict, g: np.ndarray, multi_hop: bool) -> np.ndarray:
    def run(comm):
        k = dist.build(s, args, comm, target=c["target"], multi_hop=multi_hop)
        a = k.scatter("A", g if comm.rank == 0 else None)
        out = k.empty(args[1].name)
        k(a, out)
        return k.gather(out)

    return dist.run_ranks(run, c["ranks"])[0]


@pytest.mark.parametrize("seed", SEEDS)
def test_random_stencils_distributed_are_one_process_bit_for_bit(seed):
    c = _draw(np.random.default_rng(1000 + seed), time=bool(seed % 2))  # half of them time loops
    s, args = _program(c)
    g = np.random.default_rng(seed).random(c["shape"])
    want = np.zeros(tuple(int(x) for x in args[1].shape))
    tessel.build(s, args, target=c["target"])(g, want)  # the same target: C may contract a * b + c
    want = want[-1] if c["time"] else want
    try:
        got = _distributed(s, args, c, g, multi_hop=False)
    except DistributionError as err:  # only ever a halo wider than a neighbour's block: exact with multi_hop
        assert "the halo is wider than a neighbour's block" in str(err), (c, err)
        got = _distributed(s, args, c, g, multi_hop=True)
    assert np.array_equal(got, want), c
