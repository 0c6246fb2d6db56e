"""A loop's kind is one vocabulary (``LoopKind``) for the schedule's annotations and the IR's
loops: a str enum, so it prints, serializes and fingerprints as the name it always had."""

from __future__ import annotations

import json

import pytest

from tessel import te
from tessel.driver import lower_steps
from tessel.errors import InternalError
from tessel.ir import expr as E
from tessel.ir import stmt as S
from tessel.ir.fingerprint import fingerprint
from tessel.ir.functor import collect
from tessel.ir.stmt import LoopKind


def _loop(kind) -> S.For:
    i = E.Var("i", "int32")
    A = S.Buffer("A", "float32", (8,))
    return S.For(i, 0, 8, kind, S.BufferStore(A, E.FloatImm(1.0, "float32"), (i,)))


def test_a_loop_of_no_kind_is_refused_by_name():
    with pytest.raises(InternalError, match="'pipelined'.*serial, parallel, vectorized, unrolled, thread_binding"):
        _loop("pipelined")
    with pytest.raises(InternalError, match="tensorized"):
        _loop(LoopKind.TENSORIZED)  # the loops an intrinsic replaces never reach the IR


def test_a_kind_given_as_its_name_is_the_enum_and_hashes_as_the_name():
    by_name, by_enum = _loop("unrolled"), _loop(LoopKind.UNROLLED)
    assert by_name.kind is LoopKind.UNROLLED and by_name.kind == "unrolled"
    assert fingerprint(by_name) == fingerprint(by_enum)
    assert json.dumps(by_name.kind) == '"unrolled"' and f"{by_name.kind}" == "unrolled"
    assert "unrolled (i, 0, 8)" in str(by_name)


def test_the_schedule_annotations_are_the_loops_kinds():
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    o, i = s[B].split(B.op.axis[0], factor=8)
    s[B].unroll(i)
    s[B].parallel(o)
    assert s[B].leaf_kind(i) is LoopKind.UNROLLED and s[B].leaf_kind(o) is LoopKind.PARALLEL
    _, steps = lower_steps(s, [A, B])
    lowered = next(st.ir for st in steps if st.name == "simplify")  # before the unroll pass copies i.inner out
    kinds = {f.loop_var.name: f.kind for f in collect(lowered, lambda n: isinstance(n, S.For))}
    assert kinds == {"i.outer": LoopKind.PARALLEL, "i.inner": LoopKind.UNROLLED}
    assert all(type(k) is LoopKind for k in kinds.values())


def test_a_stages_attachment_is_an_attach_kind():
    from tessel.schedule.kinds import AttachKind

    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((16,), lambda i: B[i] * 2.0, name="C")
    D = te.compute((16,), lambda i: C[i] - 1.0, name="D")
    s = te.create_schedule(D.op)
    s[B].compute_inline()
    s[C].compute_at(s[D], D.op.axis[0])
    kinds = [s[t].attach_type for t in (B, C, D)]
    assert kinds == [AttachKind.INLINE, AttachKind.SCOPE, AttachKind.ROOT] == ["inline", "scope", "root"]
    assert all(type(k) is AttachKind for k in kinds)


def test_an_attribute_key_is_an_attr_key_and_a_pragma_keeps_its_name():
    from tessel.ir.stmt import AttrKey

    body = S.Evaluate(0)
    assert S.AttrStmt(None, "produce", 0, body).key is AttrKey.PRODUCE
    mine = S.AttrStmt(None, AttrKey.PRAGMA + "my_hint", 1, body)
    assert mine.key == "pragma_my_hint" and type(mine.key) is str
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    _, steps = lower_steps(s, [A, B])
    produce = collect(steps[0].ir, lambda n: isinstance(n, S.AttrStmt))
    assert produce and all(type(a.key) is AttrKey for a in produce)
