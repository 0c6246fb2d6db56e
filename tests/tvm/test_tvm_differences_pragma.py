"""Issue 15, difference 4: a pragma tessel does not apply is kept, as TVM keeps it.

TVM records any pragma on the loop (``IterVarAttr.pragma_keys``) and ScheduleOps emits it as
an attribute ``pragma_<key>``; passes that know the key act on it. tessel keeps unknown keys
the same way (visible in the lowered IR and as comments in both targets' code) and warns that
no tessel pass acts on them. The keys tessel applies keep their meaning and checks.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from helpers import check, rand

import tessel
from tessel import ScheduleError, te
from tessel.errors import TesselWarning
from tessel.ir.stmt import LoopKind

# the suite's replay check runs every schedule's steps again, which warns again
pytestmark = pytest.mark.filterwarnings("ignore:.*no tessel pass acts on this pragma")


def _scaled():
    A = te.placeholder((8, 12), name="A")
    C = te.compute((8, 12), lambda i, j: A[i, j] * 3, name="C")
    return A, C, te.create_schedule(C.op)


def test_unknown_pragma_is_kept_on_the_loop_with_a_warning():
    A, C, s = _scaled()
    i, j = C.op.axis
    jo, ji = s[C].split(j, factor=4)
    with pytest.warns(TesselWarning, match=r"stage C: pragma\(j.outer, 'parallel_launch_point'\): no tessel pass"):
        s[C].pragma(jo, "parallel_launch_point")
    with pytest.warns(TesselWarning, match="pragma_my_hint"):
        s[C].pragma(i, "my_hint", 7)
    attrs = s[C].iter_var_attrs
    assert attrs[jo].pragma_keys == ("parallel_launch_point",) and attrs[i].pragma_keys == ("my_hint",)
    assert [int(v.value) for v in attrs[i].pragma_values] == [7]
    text = str(tessel.lower(s, [A, C], simple_mode=True))
    assert "// attr [j.outer] pragma_parallel_launch_point = 1" in text  # no value: 1, as in TVM
    assert "// attr [i] pragma_my_hint = 7" in text
    # the attribute sits on its loop: right before the loop's header
    lines = [ln.strip() for ln in text.splitlines()]
    at = lines.index("// attr [i] pragma_my_hint = 7")
    assert lines[at + 1].startswith("for (i, 0, 8)")
    a = rand(8, 12)
    kernels = check(s, [A, C], [a], [a * 3])
    for f in kernels.values():
        assert "pragma_my_hint = 7" in f.source and "pragma_parallel_launch_point" in f.source


def test_several_pragmas_keep_their_order_and_string_values():
    A, C, s = _scaled()
    i = C.op.axis[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TesselWarning)
        s[C].pragma(i, "first", "a*/b")
        s[C].pragma(i, "second")
    assert s[C].iter_var_attrs[i].pragma_keys == ("first", "second")
    text = str(tessel.lower(s, [A, C], simple_mode=True))
    assert text.index("pragma_first") < text.index("pragma_second")
    a = rand(8, 12)
    for f in check(s, [A, C], [a], [a * 3]).values():
        assert "*/b" not in f.source  # a user's text never closes a comment of the generated code


def test_known_pragmas_still_act_and_do_not_warn():
    A, C, s = _scaled()
    i, j = C.op.axis
    with warnings.catch_warnings():
        warnings.simplefilter("error", TesselWarning)
        s[C].pragma(j, "auto_unroll_max_step", 16)
        s[C].pragma(j, "unroll_explicit", True)
    text = str(tessel.lower(s, [A, C], simple_mode=True))
    assert "pragma_auto_unroll" not in text and "for (j" not in text  # unrolled, not annotated
    a = rand(8, 12)
    check(s, [A, C], [a], [a * 3])


def test_pragma_key_must_be_a_string_and_value_a_number_string_or_expression():
    A, C, s = _scaled()
    i = C.op.axis[0]
    with pytest.raises(ScheduleError, match="needs a key that is a non-empty str"):
        s[C].pragma(i, 3)
    with pytest.raises(ScheduleError, match="a pragma's value is a number, a string or an expression"):
        s[C].pragma(i, "hint", {"a": 1})
    assert i not in s[C].iter_var_attrs  # refused calls leave nothing behind


def test_pragma_survives_replay_and_the_kept_attribute_on_a_parallel_loop():
    A, C, s = _scaled()
    i = C.op.axis[0]
    s[C].parallel(i)
    with pytest.warns(TesselWarning):
        s[C].pragma(i, "parallel_stride_pattern")
    text = str(tessel.lower(s, [A, C], simple_mode=True))
    assert "pragma_parallel_stride_pattern" in text and "parallel (i" in text
    a = rand(8, 12)
    check(s, [A, C], [a], [np.float32(3) * a])


def test_unroll_and_vectorize_pragmas_are_the_loop_kinds():
    """TVM's Stage.pragma spells two loop kinds: ``pragma(x, "vectorize")`` is ``vectorize(x)``."""
    n = 37
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] * 3.0, name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    s[C].pragma(xi, "vectorize")
    s[C].pragma(xo, "unroll")
    attrs = s[C].iter_var_attrs
    assert attrs[xi].kind == LoopKind.VECTORIZED and attrs[xo].kind == LoopKind.UNROLLED
    assert attrs[xi].pragma_keys == () and attrs[xo].pragma_keys == ()
    a = rand(n)
    check(s, [A, C], [a], [a * 3])
