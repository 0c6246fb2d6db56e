"""The limits builds stop at are one frozen record (tessel.tunables), changed for a stretch of
code with ``using`` and part of the key under which lowered code and kernels are remembered."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from helpers import check, rand

import tessel
from tessel import te
from tessel.tunables import Tunables, current, using


def test_using_changes_a_limit_inside_and_restores_it_after():
    before = current()
    with using(max_pragma_unroll=8, stack_limit_bytes=1024) as now:
        assert now is current() and now.max_pragma_unroll == 8 and now.stack_limit_bytes == 1024
        assert now.max_unroll_statements == before.max_unroll_statements  # the others stay
        with using(max_pragma_unroll=4):
            assert current().max_pragma_unroll == 4
        assert current().max_pragma_unroll == 8
    assert current() == before
    with pytest.raises(ZeroDivisionError), using(max_pragma_unroll=2):
        1 / 0  # noqa: B018 -- an exception inside still restores the limits
    assert current() == before


def test_a_limit_is_frozen_and_every_one_is_in_the_key():
    with pytest.raises(dataclasses.FrozenInstanceError):
        current().max_pragma_unroll = 3  # type: ignore[misc]
    names = [f.name for f in dataclasses.fields(Tunables)]
    for k, name in enumerate(names):
        with using(**{name: getattr(current(), name) + 1}):
            key = current().key()
        assert key != Tunables().key() and key[k] == getattr(Tunables(), name) + 1, name


def test_a_wrong_name_or_value_is_refused_naming_the_limits():
    with pytest.raises(tessel.BuildError, match="no limit named 'max_unroll'.*max_unroll_statements"):
        with using(max_unroll=3):
            pass
    with pytest.raises(tessel.BuildError, match="max_pragma_unroll must be a non-negative int, got '8'"):
        with using(max_pragma_unroll="8"):  # type: ignore[arg-type]
            pass
    with pytest.raises(tessel.BuildError, match="non-negative"):
        with using(max_steps=-1):
            pass
    assert current() == Tunables()


def _long_unrolled_loop():
    n = 301  # past the IR unroller's extent: it stays a loop, which GCC is asked to unroll
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    s[B].unroll(B.op.axis[0])
    return s, [A, B], n


def test_a_build_under_another_limit_is_not_handed_code_made_under_the_first():
    """The same schedule built twice, the second time under a lower pragma limit: the memo and
    the kernel cache must not return the first build's code, and both compute NumPy's values."""
    s, args, n = _long_unrolled_loop()
    first = tessel.build(s, args, target="c")
    with using(max_pragma_unroll=5):
        second = tessel.build(s, args, target="c")
    third = tessel.build(s, args, target="c")
    asked = [[int(x) for x in re.findall(r"#pragma GCC unroll (\d+)", f.source)] for f in (first, second, third)]
    assert max(asked[0]) > 5 and asked[1] and max(asked[1]) == 5 and asked[2] == asked[0]
    a = rand(n)
    for f in (first, second, third):
        out = np.empty(n, "float32")
        f(a, out)
        np.testing.assert_allclose(out, a * a + 1.0, rtol=1e-6)


def test_a_smaller_stack_limit_moves_a_temporary_to_the_heap_and_the_values_hold(limits):
    A = te.placeholder((37,), name="A")
    T = te.compute((37,), lambda i: A[i] * 3.0, name="T")
    B = te.compute((37,), lambda i: T[36 - i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    assert "tsl_alloc" not in tessel.build(s, [A, B], target="c").source
    limits(stack_limit_bytes=64)
    s = te.create_schedule(B.op)
    a = rand(37)
    f = check(s, [A, B], [a], [a[::-1] * 3.0 + 1.0])["c"]
    assert "tsl_alloc" in f.source
