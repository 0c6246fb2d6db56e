"""storage_align, set_store_predicate, prefetch, create_group (more in test_groups.py) and popcount: each a recorded
step that replays (the suite replays every lowered schedule), checked on both targets."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, check, garbage_like, ir_text, rand

import tessel
from tessel import te
from tessel.errors import DefinitionError, ScheduleError


def _chain(n=13, m=10):
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2, name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] + A[i, j], name="C")
    return A, B, C


def test_storage_align_pads_the_stride_of_a_dimension():
    A, B, C = _chain()
    s = te.create_schedule(C.op)
    s[B].storage_align(B.op.axis[0], 16, 3)
    text = ir_text(s, [A, C], step="storage_flatten")
    assert "allocate B[float32 * 247]" in text  # 13 rows of 19 = 16 + 3 elements
    assert "B[i*19 + j]" in text.replace("(", "").replace(")", "")
    a = rand(13, 10, seed=1)
    check(s, [A, C], [a], [3 * a])


def test_storage_align_of_a_tile_computed_inside_its_reader():
    A, B, C = _chain(37, 21)
    s = te.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=8)
    s[B].compute_at(s[C], io)
    s[B].storage_align(B.op.axis[0], 8, 1)
    a = rand(37, 21, seed=2)
    check(s, [A, C], [a], [3 * a])


def test_storage_align_checks_its_arguments():
    A, B, C = _chain()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"stage B: storage_align\(i, 4, 4\) needs factor > 0 and 0 <= offset < factor"):
        s[B].storage_align(B.op.axis[0], 4, 4)
    with pytest.raises(ScheduleError, match="stage B: storage_align needs one of the axes of its storage"):
        s[B].storage_align(C.op.axis[0], 4, 1)


def test_a_store_predicate_leaves_the_other_elements_untouched():
    A, B, C = _chain(11, 9)
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    s[C].set_store_predicate(te.all((i + j) % 3 != 0, i < 8))
    a = rand(11, 9, seed=3)
    ii, jj = np.meshgrid(np.arange(11), np.arange(9), indexing="ij")
    keep = ((ii + jj) % 3 != 0) & (ii < 8)
    for target in TARGETS:
        out = garbage_like(a)
        before = out.copy()
        tessel.build(s, [A, C], target=target)(a, out)
        np.testing.assert_allclose(out[keep], (3 * a)[keep], rtol=1e-6, err_msg=target)
        np.testing.assert_array_equal(out[~keep], before[~keep], err_msg=target)


def test_a_store_predicate_must_be_a_condition():
    A, B, C = _chain()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="stage C: the store predicate `i` must be a condition"):
        s[C].set_store_predicate(C.op.axis[0])


def test_prefetch_is_a_hint_in_the_loop_and_changes_no_value():
    A, B, C = _chain(40, 24)
    s = te.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=8)
    s[C].prefetch(A, io, 1)
    text = ir_text(s, [A, C], step="storage_flatten")
    assert "prefetch(address_of(A[" in text
    a = rand(40, 24, seed=4)
    kernels = check(s, [A, C], [a], [3 * a])
    assert "__builtin_prefetch(" in kernels["c"].source


def test_a_prefetch_past_a_rows_end_is_the_next_row_and_stays_inside_the_tensor():
    """Three steps of 8 on a 24-wide row: 3 iterations on is the next row at the same column
    (a row's pass fetching the row after it); the flat offset, not each index, is clamped, so
    the last row's hints fall on the tensor's last element."""
    A, B, C = _chain(40, 24)
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=8)
    s[C].vectorize(ji)
    s[C].prefetch(A, jo, 3)
    text = ir_text(s, [A, C], step="storage_flatten")
    assert "prefetch(address_of(A[max(min(i*24 + (j.outer*8 + 24), 959), 0)], 'r'))" in text, text
    a = rand(40, 24, seed=5)
    check(s, [A, C], [a], [3 * a])


def test_a_group_is_computed_at_its_consumer_together():
    n, m = 30, 12
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] + 1, name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] * 2, name="C")
    D = te.compute((n, m), lambda i, j: C[i, j] - A[i, j], name="D")
    s = te.create_schedule(D.op)
    g = s.create_group(outputs=C, inputs=A)
    assert [st.name for st in g.members] == ["B", "C"]
    s[B].compute_at(s[C], C.op.axis[0])  # placed inside the group: stays there
    do, di = s[D].split(D.op.axis[0], factor=7)
    g.compute_at(s[D], do)
    assert s[C].attach_stage is s[D] and s[B].attach_stage is s[C]
    assert [st.primitive for st in s.history][-2:] == ["split", "compute_at"]
    a = rand(n, m, seed=5)
    check(s, [A, D], [a], [(a + 1) * 2 - a])


def test_a_group_needs_stages_between_its_ends():
    A, B, C = _chain()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="no stage lies between"):
        s.create_group(outputs=A, inputs=A)


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint16", "int64"])
def test_popcount_counts_the_bits_of_the_twos_complement_pattern(dtype):
    n = 23
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.compute((n,), lambda i: te.popcount(A[i]), name="B")
    s = te.create_schedule(B.op)
    info = np.iinfo(dtype)
    a = np.random.default_rng(6).integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    a[:3] = [info.min, info.max, -1 if info.min < 0 else 7]
    bits = np.unpackbits(a.view(np.uint8)).reshape(n, -1).sum(axis=1).astype(dtype)
    check(s, [A, B], [a], [bits], rtol=0, atol=0)


def test_popcount_refuses_a_float_and_the_evaluator_knows_it():
    with pytest.raises(DefinitionError, match="te.popcount needs an integer argument"):
        te.popcount(te.const(1.5))
    from tessel.ir.evaluate import evaluate

    assert evaluate(te.popcount(te.const(-1, "int16"))) == 16
