"""A padded copy's border is cut out of its loops, and a depthwise conv computes its padded
planes inside the thread loop of its tiles.

``Xp[y, x] = if_then_else(border test, X[y - 1, x - 1], 0)`` is lowered as a branch that
loop partitioning cuts at the border (tessel/passes/guarded_store.py), so the interior is a
plain copy; a guard that reads data, or one the loops cannot be cut on, stays a guarded store.
The automatic scheduler computes a depthwise conv's padded input at its tile's thread loop (a
thread's channels read only their own planes) but not a conv2d's (every output channel reads
every plane). The plan is asked of explicit Targets; values are NumPy's on both targets.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import TARGETS, check, rand

from tessel import te
from tessel.autosched import auto_schedule_result, make_plan
from tessel.driver import lower_steps
from tessel.ir import expr as E
from tessel.ir import stmt as S
from tessel.ir.functor import collect
from tessel.target import Target

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # examples/ and benchmarks/ live at the root

from benchmarks import definitions
from examples import fast_conv2d

AVX2 = Target("c", vector_bytes=32, vector_registers=16, fma_units=2, caches=(32 << 10, 512 << 10, 8 << 20))
AVX512 = Target("c", vector_bytes=64, vector_registers=32, fma_units=2, caches=(48 << 10, 2 << 20, 32 << 20))
NEON = Target("c", vector_bytes=16, vector_registers=32, fma_units=2, caches=(64 << 10, 1 << 20, 8 << 20))


def _pad(h, w, p: int = 1):
    X = te.placeholder((h, w), name="X")
    Xp = te.compute((h + 2 * p, w + 2 * p), lambda y, x: te.if_then_else(
        te.all(y >= p, y < h + p, x >= p, x < w + p), X[y - p, x - p], 0.0), name="Xp")
    return X, Xp


def _partitioned(s, args, target=AVX2) -> S.Stmt:
    _, steps = lower_steps(s, args, target=target)
    return next(st.ir for st in steps if st.name == "loop_partition")


def _guarded_stores(stmt: S.Stmt) -> list[S.BufferStore]:
    return collect(stmt, lambda n: isinstance(n, S.BufferStore) and collect(
        n.value, lambda e: isinstance(e, E.Call) and e.op == "if_then_else"))


def _reference(a: np.ndarray, p: int) -> np.ndarray:
    return np.pad(a, ((p, p), (p, p)))


@pytest.mark.parametrize("shape,p", [((7, 19), 1), ((1, 1), 1), ((13, 5), 2)])
@pytest.mark.parametrize("vector", [False, True], ids=["scalar", "vectorized"])
def test_padded_copy_is_cut_at_the_border(shape, p, vector):
    X, Xp = _pad(*shape, p)
    s = te.create_schedule(Xp.op)
    if vector:
        s[Xp].vectorize(s[Xp].op.axis[1])
    assert not _guarded_stores(_partitioned(s, [X, Xp]))  # every element: a load or a zero
    a = rand(*shape)
    check(s, [X, Xp], [a], [_reference(a, p)])


def test_padded_copy_of_symbolic_size_keeps_its_values():
    h, w = te.var("h"), te.var("w")
    X, Xp = _pad(h, w)
    s = te.create_schedule(Xp.op)
    for shape in ((5, 9), (1, 3)):
        a = rand(*shape)
        check(s, [X, Xp], [a], [_reference(a, 1)])


def test_a_guard_reading_data_stays_a_guarded_store():
    X = te.placeholder((6, 11), name="X")
    M = te.placeholder((6,), name="M")
    Y = te.compute((6, 11), lambda y, x: te.if_then_else(te.all(M[y] > 0.0, x >= 2), X[y, x], -1.0), name="Y")
    s = te.create_schedule(Y.op)
    assert _guarded_stores(_partitioned(s, [X, M, Y]))  # M[y] is data: nothing to cut on
    a, m = rand(6, 11), rand(6, seed=3)
    want = np.where((m[:, None] > 0) & (np.arange(11)[None, :] >= 2), a, np.float32(-1.0))
    check(s, [X, M, Y], [a, m], [want])


@pytest.mark.parametrize("target", [AVX2, AVX512, NEON], ids=["avx2", "avx512", "neon"])
def test_depthwise_computes_its_padding_in_the_tiles_thread_loop(target):
    plan = make_plan([definitions.depthwise(5, 11, 40).outputs[0].op], target)
    (tile,) = plan.anchors
    assert tile.kind == "tile" and [m.name for m in tile.members] == ["Xp"]


@pytest.mark.parametrize("target", [AVX2, AVX512, NEON], ids=["avx2", "avx512", "neon"])
def test_conv2d_keeps_its_padding_a_pass_of_its_own(target):
    plan = make_plan([definitions.conv2d(5, 7, 9, 19).outputs[0].op], target)
    names = {a.op.name: a for a in plan.anchors}
    assert set(names) == {"Y", "Xp"} and not names["Y"].members  # each channel's plane read by every output channel


def test_a_matmuls_scaled_operand_stays_a_pass_of_its_own():
    A = te.placeholder((24, 16), name="A")
    B = te.placeholder((16, 40), name="B")
    A2 = te.compute((24, 16), lambda i, k: A[i, k] * 2.0, name="A2")
    k = te.reduce_axis((0, 16), name="k")
    C = te.compute((24, 40), lambda i, j: te.sum(A2[i, k] * B[k, j], axis=k), name="C")
    for target in (AVX2, AVX512, NEON):
        tile = next(a for a in make_plan([C.op], target).anchors if a.op is C.op)
        assert tile.kind == "tile" and not tile.members  # every thread reads all of A2's rows it tiles over k
    r = auto_schedule_result([C], target=AVX2, budget=0)
    a, b = rand(24, 16), rand(16, 40, seed=2)
    check(r.schedule, r.args, [a, b], [(a * 2.0) @ b], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target", [AVX2, NEON], ids=["avx2", "neon"])
@pytest.mark.parametrize("size", [(3, 7, 19), (9, 13, 5), (1, 2, 9)])
def test_depthwise_auto_and_hand_equal_numpy(target, size):
    c, h, w = size
    d = definitions.depthwise(c, h, w)
    r = auto_schedule_result(d.outputs, target=target, budget=0)
    assert r.level == "full"
    ins = d.inputs(np.random.default_rng(7))
    want = fast_conv2d.depthwise_reference(*ins)
    targets = [target.with_(kind=k) for k in TARGETS]
    check(r.schedule, d.params + d.outputs, ins, [want], targets=targets, rtol=1e-4, atol=1e-4)
    s, args = fast_conv2d.depthwise(1, c, h, w, target)
    check(s, args, ins, [want], targets=targets, rtol=1e-4, atol=1e-4)
