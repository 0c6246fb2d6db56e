"""The automatic scheduler's prefetch hint: a row kernel that reads an input twice per row
(softmax: its max, then its exponentials) asks, in the pass that finds the row in cache, for
the next row's lines. Checked on explicit Targets (nothing here depends on the machine): which
stage gets the hint, its step and distance, where it is left out, and that the values stay
NumPy's at awkward sizes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import check, ir_text

from tessel import te
from tessel.autosched import auto_schedule_result, rules
from tessel.target import Target

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/ lives at the root

from benchmarks import definitions

AVX2 = Target("c", vector_bytes=32, vector_registers=16, fma_units=2, caches=(32 << 10, 512 << 10, 8 << 20))
AVX512 = Target("c", vector_bytes=64, vector_registers=32, fma_units=2, caches=(48 << 10, 2 << 20, 32 << 20))


def auto(outputs, **kw):
    return auto_schedule_result(outputs, **{"budget": 0, **kw})


def _hints(schedule) -> dict[str, list[tuple[str, int]]]:
    """Stage name -> the (tensor, offset) prefetch hints on its loops."""
    out: dict[str, list[tuple[str, int]]] = {}
    for st in schedule.stages:
        for attr in st.iter_var_attrs.values():
            out.setdefault(st.name, []).extend((t.name, off.value) for t, off in attr.prefetch)
    return {k: v for k, v in out.items() if v}


@pytest.mark.parametrize("target", [AVX2, AVX512], ids=["avx2", "avx512"])
def test_softmaxs_exponentials_prefetch_the_next_row_a_line_at_a_time(target):
    d = definitions.softmax(5, 203)
    r = auto(d.outputs, target=target)
    assert r.knobs["O.prefetch"] is True
    # a line of 16 float32 per hint on both targets (AVX2's vector is half a line); a row of
    # 203 columns is 13 lines on: the next row, at the same column but for the last line's slack
    assert _hints(r.schedule) == {"E": [("A", 13)]}
    E = next(s for s in r.schedule.stages if s.name == "E")
    jo, ji = E.leaf_iter_vars[-2:]
    assert E.iter_var_attrs[jo].prefetch and E.iter_var_attrs[ji].kind == "vectorized"
    # the flat offset 13 lines (208 elements) on, clamped into A's 5 x 203 elements, not per index
    assert "prefetch(address_of(A[max(min(i*203 + (j.outer*16 + 208), 1014), 0)]" in ir_text(
        r.schedule, d.params + d.outputs, step="storage_flatten")
    a = d.inputs(np.random.default_rng(7))
    check(r.schedule, d.params + d.outputs, a, [d.reference(*a)], rtol=d.rtol, atol=d.atol)


def test_the_hint_is_searched_and_its_absence_is_the_plain_schedule():
    d = definitions.softmax(6, 130)
    r = auto(d.outputs, target=AVX2)
    knob = next(k for k in r.plan.knobs if k.name == "O.prefetch")
    assert knob.candidates == (True, False) and knob.default is True
    off = rules.build(r.plan, {**r.knobs, "O.prefetch": False})
    assert _hints(off) == {}
    assert "prefetch(" not in ir_text(off, d.params + d.outputs, step="storage_flatten")


def test_a_chunk_too_large_for_l2_gets_no_hint():
    d = definitions.softmax(64, 4096)  # 16 KiB rows: 32 of them fill AVX2's half of L2
    r = auto(d.outputs, target=AVX2)
    assert _hints(rules.build(r.plan, {**r.knobs, "O.chunk": 64})) == {}
    assert _hints(rules.build(r.plan, {**r.knobs, "O.chunk": 4})) == {"E": [("A", 4 * 4096 // 16)]}
    assert r.plan.distinct({**r.knobs, "O.chunk": 64, "O.prefetch": True})
    assert not r.plan.distinct({**r.knobs, "O.chunk": 64, "O.prefetch": False})


def test_an_output_pass_and_a_single_read_get_no_hint():
    """Layer norm rereads its input only in reductions and in the output's own pass, whose
    stores are memory traffic already; a blur reads its input once per strip."""
    for d in (definitions.layernorm(9, 131), definitions.blur(21, 35), definitions.row_sum(5, 333)):
        r = auto(d.outputs, target=AVX512)
        assert not any(k.name.endswith(".prefetch") for k in r.plan.knobs), d.name
        assert _hints(r.schedule) == {}, d.name


def test_the_hint_reaches_through_an_inlined_producer():
    """The exponentials read the input through a scaled copy inlined into them: still the
    input, read a second time per row."""
    rows, cols = 7, 150
    A = te.placeholder((rows, cols), name="A")
    k1 = te.reduce_axis((0, cols), name="k1")
    M = te.compute((rows,), lambda i: te.max(A[i, k1], axis=k1), name="M")
    X = te.compute((rows, cols), lambda i, j: A[i, j] * 0.5, name="X")
    E = te.compute((rows, cols), lambda i, j: te.exp(X[i, j] - M[i] * 0.5), name="E")
    k2 = te.reduce_axis((0, cols), name="k2")
    S = te.compute((rows,), lambda i: te.sum(E[i, k2], axis=k2), name="S")
    O = te.compute((rows, cols), lambda i, j: E[i, j] / S[i], name="O")
    r = auto([O], target=AVX512)
    assert _hints(r.schedule) == {"E": [("A", -(-cols // 16))]}
    a = np.random.default_rng(2).uniform(-3, 3, (rows, cols)).astype("float32")
    e = np.exp(0.5 * a - 0.5 * a.max(axis=1, keepdims=True))
    check(r.schedule, [A, O], [a], [e / e.sum(axis=1, keepdims=True)], rtol=1e-5, atol=1e-6)


def test_a_chunk_of_fused_leading_loops_prefetches_one_row_on():
    """Softmax over the last axis of a (2, 40, 256) tensor: the threads' loop fuses the two
    leading loops, so a chunk is one row of 256 and the hint is one row (16 lines) on, not a
    whole 40-row plane."""
    b, n, m = 2, 40, 256
    A = te.placeholder((b, n, m), name="A")
    k1 = te.reduce_axis((0, m), name="k1")
    M = te.compute((b, n), lambda p, i: te.max(A[p, i, k1], axis=k1), name="M")
    E = te.compute((b, n, m), lambda p, i, j: te.exp(A[p, i, j] - M[p, i]), name="E")
    k2 = te.reduce_axis((0, m), name="k2")
    S = te.compute((b, n), lambda p, i: te.sum(E[p, i, k2], axis=k2), name="S")
    O = te.compute((b, n, m), lambda p, i, j: E[p, i, j] / S[p, i], name="O")
    r = auto([O], target=AVX512)
    assert _hints(r.schedule) == {"E": [("A", m // 16)]}
    a = np.random.default_rng(4).uniform(-3, 3, (b, n, m)).astype("float32")
    e = np.exp(a - a.max(axis=2, keepdims=True))
    check(r.schedule, [A, O], [a], [e / e.sum(axis=2, keepdims=True)], rtol=1e-5, atol=1e-6)
