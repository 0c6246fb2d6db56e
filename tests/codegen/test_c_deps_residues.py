"""A folded storage's slot (``h[(t + 1) % 2, i]`` written, ``h[t % 2, i ± 1]`` read) is a constant
for each residue of the time loop: the loops inside the time loop touch two different slots
and carry nothing, so they are left to the C compiler's vectorizer (they were kept scalar:
PolyBench's jacobi-2d ran at 0.17x gcc). Where two accesses do share a slot, the loop still
carries, and is still kept from the vectorizer."""

from __future__ import annotations

import numpy as np
import pytest
from codegen.test_c_deps import guarded_loops, loop_vars
from helpers import check, heat_steps, heat_steps_ref, rand

from tessel import te
from tessel.tunables import current


def _jacobi(steps, n, fold):
    A, h, O = heat_steps(steps, n, n)
    s = te.create_schedule(O.op)
    s[h].storage_fold(h.op.axis[0], fold)
    return A, O, s


@pytest.mark.parametrize(("steps", "n", "fold"), [(6, 13, 2), (5, 11, 3)])
def test_the_loops_inside_a_folded_time_loop_are_left_to_the_vectorizer(steps, n, fold):
    A, O, s = _jacobi(steps, n, fold)
    a = rand(n, n, dtype="float64")
    kernels = check(s, [A, O], [a], [heat_steps_ref(a, steps)], rtol=1e-12, atol=1e-12)
    src = kernels["c"].source
    guarded = guarded_loops(src)
    assert len(guarded) == 1, guarded  # the time loop only
    assert len(loop_vars(src)) > 2


def test_a_shared_slot_still_carries():
    """A running sum along i in one slot of a folded buffer: the i loop carries, whatever the slot."""
    steps, n = 4, 9
    A = te.placeholder((steps, n), name="A", dtype="float64")
    h = te.recurrence((steps, n), [te.define(
        lambda h, t, i: A[t, i] + te.if_then_else(i > 0, h[t, te.max(i - 1, 0)], te.const(0.0, "float64")))],
        name="h")
    O = te.compute((n,), lambda i: h[steps - 1, i], name="O")
    s = te.create_schedule(O.op)
    s[h].storage_fold(h.op.axis[0], 2)
    a = rand(steps, n, dtype="float64")
    kernels = check(s, [A, O], [a], [np.cumsum(a[-1])], rtol=1e-12, atol=1e-12)
    assert guarded_loops(kernels["c"].source), "the i loop carries the running sum"


def test_too_many_residues_keep_the_loop_scalar_and_right(limits):
    limits(max_residues=1)
    assert current().max_residues == 1
    A, O, s = _jacobi(5, 9, 2)
    a = rand(9, 9, dtype="float64")
    kernels = check(s, [A, O], [a], [heat_steps_ref(a, 5)], rtol=1e-12, atol=1e-12)
    assert len(guarded_loops(kernels["c"].source)) > 1
