"""The memo of generated code: a second build of a kernel skips the last passes and the C
generator, and nothing but the very same lowered kernel may ever get its code."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tessel
from tessel import te
from tessel.driver import _lower_schedule, lower
from tessel.ir import expr as E
from tessel.ir import stmt as S
from tessel.ir.dtype import DType
from tessel.ir.fingerprint import Unhashable, fingerprint
from tessel.runtime.cache import clear_memory_cache
from tessel.target import STREAMING_STORES, Target


def _tile_kernel(n=37, mr=4, nr=16, dtype="float32", vector=True, name="C"):
    """A register tile (unrolled and vectorized): most of its build is the passes the memo skips."""
    A = te.placeholder((n, n), name="A", dtype=dtype)
    B = te.placeholder((n, n), name="B", dtype=dtype)
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name=name)
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], mr, nr)
    s[CC].compute_at(s[C], jo)
    ic, jc = s[CC].op.axis
    s[CC].reorder(s[CC].op.reduce_axis[0], ic, jc)
    s[CC].unroll(ic)
    if vector:
        s[CC].vectorize(jc)
    return s, [A, B, C]


def _run(f, n=37, dtype="float32"):
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (n, n)).astype(dtype)
    b = rng.uniform(-1, 1, (n, n)).astype(dtype)
    c = np.full((n, n), np.nan, dtype)
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


@pytest.fixture(autouse=True)
def _forget():
    clear_memory_cache()  # the memo in memory outlives a test's cache directory


def _entries(cache):
    return sorted((cache / "lowered").glob("*.json"))


def test_second_build_takes_the_code_from_the_memo(fresh_cache):
    f1 = tessel.build(*_tile_kernel())
    assert len(_entries(fresh_cache)) == 1
    clear_memory_cache()  # what a new process sees: only the disk
    f2 = tessel.build(*_tile_kernel())
    assert f2.cache_hit and f2.source == f1.source
    assert f2._finish is not None  # the last passes have not run
    _run(f2)
    # the lowered kernel is still there when asked for, and it is the one a full lowering gives
    full = lower(*_tile_kernel())
    assert str(f2.func) == str(full) and fingerprint(f2.func) == fingerprint(full)
    assert f2._finish is None


@pytest.mark.parametrize("vector", [True, False])
def test_optimisation_level_follows_vector_code_also_from_the_memo(fresh_cache, monkeypatch, vector):
    """-O3 without GCC's loop vectorizer where the C holds tessel's own vector code (its
    schedule vectorized it), the whole of -O3 where GCC's vectorizer is all the kernel has; the
    memo remembers which, so a build from it compiles the same way."""
    monkeypatch.delenv("TESSEL_CFLAGS", raising=False)
    f1 = tessel.build(*_tile_kernel(vector=vector))
    assert ("vector_size(" in f1.source) == vector
    assert "-O3" in f1.compile_flags and ("-fno-tree-loop-vectorize" in f1.compile_flags) == vector
    clear_memory_cache()
    f2 = tessel.build(*_tile_kernel(vector=vector))
    assert f2._finish is not None and f2.compile_flags == f1.compile_flags
    _run(f2)


@pytest.mark.parametrize("change", [
    {"n": 38}, {"mr": 3}, {"nr": 8}, {"dtype": "float64"}, {"vector": False}, {"name": "D"},
])
def test_any_difference_in_the_kernel_is_a_different_entry(fresh_cache, change):
    base = tessel.build(*_tile_kernel())
    other = tessel.build(*_tile_kernel(**change))
    assert len(_entries(fresh_cache)) == 2
    assert other.source != base.source
    _run(other, n=change.get("n", 37), dtype=change.get("dtype", "float32"))


def test_damaged_entries_are_ignored(fresh_cache):
    f1 = tessel.build(*_tile_kernel())
    (entry,) = _entries(fresh_cache)
    data = json.loads(entry.read_text())
    # code changed behind the checksum's back: never compiled, the kernel is generated afresh
    data["source"] = data["source"].replace("+", "-")
    entry.write_text(json.dumps(data))
    clear_memory_cache()
    f2 = tessel.build(*_tile_kernel())
    assert f2.source == f1.source
    _run(f2)
    entry.write_text(entry.read_text()[:100])  # truncated
    clear_memory_cache()
    _run(tessel.build(*_tile_kernel()))
    assert json.loads(entry.read_text())["source"] == f1.source  # and rewritten whole


def test_fingerprint_sees_identity_dtype_and_every_slot():
    i, j = E.Var("i", "int32"), E.Var("i", "int32")
    buf = S.Buffer("A", "float32", (E.const(8),))

    def store(v, w, kind="serial", dtype="float32"):
        b = buf if dtype == "float32" else S.Buffer("A", dtype, (E.const(8),))
        body = S.BufferStore(b, E.cast(E.const(1.5), dtype), (w,))
        return S.For(v, E.const(0), E.const(8), kind, body)

    same = fingerprint(store(i, i))
    assert fingerprint(store(i, i)) == same
    assert fingerprint(store(j, j)) == same            # a fresh variable in the same places
    assert fingerprint(store(i, j)) != same            # the index is another variable of that name
    assert fingerprint(store(i, i, "unrolled")) != same
    assert fingerprint(store(i, i, dtype="float64")) != same
    # dtype is a slot of every expression, not a constructor field of a binary op
    a, b = E.add(i, E.const(1)), E.Add(i, E.const(1))
    b.dtype = DType("int64")
    assert fingerprint(a) != fingerprint(b)
    assert fingerprint(E.const(1)) != fingerprint(E.const(1, "int64")) != fingerprint(E.const(True))
    with pytest.raises(Unhashable):
        fingerprint(S.AttrStmt(object(), "x", 0, S.Evaluate(0)))


def test_kernel_holding_something_unhashable_builds_without_the_memo(fresh_cache, monkeypatch):
    import tessel.driver as driver

    def refuse(*parts):
        raise Unhashable("test")

    monkeypatch.setattr(driver, "fingerprint", refuse)
    f = tessel.build(*_tile_kernel())
    _run(f)
    assert not _entries(fresh_cache)


def test_lowering_front_is_what_the_key_is_made_of():
    """Two schedules written independently lower to IR with the same fingerprint."""
    f1, _ = _lower_schedule(*_tile_kernel(), "main")
    f2, _ = _lower_schedule(*_tile_kernel(), "main")
    assert f1 is not f2 and fingerprint(f1) == fingerprint(f2)


def test_symbolic_sizes_are_remembered_with_their_index_guards(fresh_cache):
    """The guards that refuse sizes overflowing int32 index arithmetic come from the last pass;
    a kernel with symbolic sizes is remembered with them, so a later build takes its code from
    the memo and still checks every call's sizes."""
    n = te.var("n")
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[i, j] * 2.0, name="B")
    s = te.create_schedule(B.op)
    f = tessel.build(s, [A, B])
    assert _entries(fresh_cache) and f.func.guards
    clear_memory_cache()
    g = tessel.build(s, [A, B])
    assert g._finish is not None  # from the memo: the last passes did not run
    assert [str(x.expr) for x in g._spec.guards.guards] == [str(x.expr) for x in f.func.guards]
    a = np.random.default_rng(1).random((9, 9), dtype=np.float32)
    out = np.empty_like(a)
    g(a, out)
    np.testing.assert_allclose(out, a * 2.0)


def test_a_limit_changed_at_run_time_is_part_of_the_key(fresh_cache, limits):
    """The streaming-store threshold is a limit a program (or a test) may lower
    (``tessel.tunables.using``); the memo must not hand back the code generated under the old
    value."""

    def big_copy():
        A = te.placeholder((64, 64), name="A")
        C = te.compute((64, 64), lambda i, j: A[i, j] + 1.0, name="C")
        s = te.create_schedule(C.op)
        s[C].vectorize(C.op.axis[1])
        return s, [A, C]

    x86 = Target(vector_bytes=32, features=frozenset({STREAMING_STORES}))  # any host: streaming is the target's
    plain = tessel.build(*big_copy(), target=x86)
    assert "stream" not in plain.source
    limits(stream_min_bytes=64)
    streamed = tessel.build(*big_copy(), target=x86)
    assert "tsl_stream" in streamed.source
    a = np.random.default_rng(0).uniform(-1, 1, (64, 64)).astype("float32")
    c = np.empty_like(a)
    streamed(a, c)
    np.testing.assert_array_equal(c, a + 1.0)
