"""Compiler invocation and the kernel cache: errors, hits across processes, races, corruption."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from cg_util import elementwise, ld, rand

import tessel
from tessel.codegen import c
from tessel.driver import build_func
from tessel.errors import BuildError
from tessel.ir import expr as E
from tessel.ir import stmt as S
from tessel.ir.expr import const
from tessel.runtime import cache
from tessel.runtime.compiler import format_compile_error
from tessel.runtime.module import KernelRuntimeError

REPO = Path(tessel.__file__).resolve().parent.parent

# Builds one kernel and reports how; ``tag`` makes the source (hence the cache key) unique per test.
_SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
from tessel.driver import build_func
from tessel.ir import expr as E, stmt as S
from tessel.ir.expr import const
start = float(sys.argv[2])
while time.time() < start:  # lets two processes start compiling at the same moment
    time.sleep(0.001)
n = E.Var("n", "int32")
A, B = S.Buffer("A", "float64", (n,)), S.Buffer("B", "float64", (n,))
i = E.Var("i", "int32")
body = S.For(i, const(0), n, "serial", S.BufferStore(B, E.BufferLoad(A, (i,)) * const(float(sys.argv[1]), "float64"), (i,)))
t1 = time.perf_counter()
k = build_func(S.PrimFunc("scale", (A, B), (n,), body, (B,)), "c")
t2 = time.perf_counter()
a = np.arange(1.0, 6.0); b = np.zeros(5)
k(a, b)
print(json.dumps({"hit": k.cache_hit, "build_s": k.build_time_s, "wall_s": t2 - t1,
                  "path": k.lib_path, "ok": bool(np.allclose(b, a * float(sys.argv[1])))}))
"""


def _spawn(tag: float, cache_dir: Path, start: float = 0.0) -> subprocess.Popen:
    env = dict(os.environ, TESSEL_CACHE_DIR=str(cache_dir), PYTHONPATH=str(REPO))
    return subprocess.Popen([sys.executable, "-c", _SCRIPT, str(tag), str(start)], env=env, cwd=str(REPO),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(p: subprocess.Popen) -> dict:
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def _scale_kernel(factor: float) -> S.PrimFunc:
    n = E.Var("n", "int64")
    A, B = S.Buffer("A", "float32", (n,)), S.Buffer("B", "float32", (n,))
    return elementwise("scale32", [A], [(B, lambda i: ld(A, i) * const(factor, "float32"))], n,
                       i=E.Var("i", "int64"))


def test_cache_directory_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv("TESSEL_CACHE_DIR", str(tmp_path / "explicit"))
    assert cache.cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("TESSEL_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "tessel"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == tmp_path / "home" / ".cache" / "tessel"


def test_second_build_in_process_is_a_hit(fresh_cache):
    k1 = build_func(_scale_kernel(1.5), "c")
    k2 = build_func(_scale_kernel(1.5), "c")
    assert not k1.cache_hit and k2.cache_hit and k1.lib_path == k2.lib_path
    assert Path(k1.lib_path).parent.parent == fresh_cache
    assert Path(k1.lib_path).with_suffix(".c").read_text() == k1.source
    a = rand(10, "float32")
    k2(a, b := np.zeros(10, "float32"))
    np.testing.assert_allclose(b, a * np.float32(1.5))


def test_cache_hit_across_processes(fresh_cache):
    first = _result(_spawn(2.5, fresh_cache))
    second = _result(_spawn(2.5, fresh_cache))
    assert first["ok"] and second["ok"]
    assert not first["hit"] and second["hit"]
    assert second["path"] == first["path"]
    # how fast the hit is, is measured by benchmarks/matmul.py (tests never assert timings)


def test_two_processes_building_one_kernel_at_once(fresh_cache):
    start = time.time() + 1.0
    procs = [_spawn(3.25, fresh_cache, start) for _ in range(2)]
    results = [_result(p) for p in procs]
    assert all(r["ok"] for r in results)
    assert results[0]["path"] == results[1]["path"]
    assert sum(not r["hit"] for r in results) >= 1
    leftovers = [p.name for p in (fresh_cache / "kernels").iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


@pytest.mark.parametrize("damage", ["truncate", "flip", "no_sidecar"])
def test_corrupt_cache_entry_is_rebuilt(fresh_cache, damage):
    tag = {"truncate": 4.5, "flip": 5.5, "no_sidecar": 6.5}[damage]
    first = _result(_spawn(tag, fresh_cache))  # built by another process: never mapped into this one
    so = Path(first["path"])
    data = so.read_bytes()
    if damage == "truncate":
        so.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        so.write_bytes(data[:100] + bytes([data[100] ^ 0xFF]) + data[101:])
    else:
        so.with_suffix(".json").unlink()
    again = _result(_spawn(tag, fresh_cache))
    assert again["ok"] and not again["hit"]
    assert so.read_bytes() != b"" and len(so.read_bytes()) == json.loads(so.with_suffix(".json").read_text())["size"]
    assert _result(_spawn(tag, fresh_cache))["hit"]


def test_compile_error_shows_compiler_message_and_source_lines(fresh_cache, monkeypatch):
    monkeypatch.setitem(c.CTYPE, "float32", "flaot")  # generate C the compiler must reject
    with pytest.raises(BuildError) as info:
        build_func(_scale_kernel(7.0), "c")
    msg = str(info.value)
    assert "the C compiler failed on kernel 'scale32'" in msg
    assert "flaot" in msg and "error" in msg  # the compiler's own words
    assert ">>" in msg and "| int32_t scale32(const flaot* restrict A" in msg  # numbered, marked lines
    assert "Traceback" not in msg


def test_missing_compiler(fresh_cache, monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/cc")
    with pytest.raises(BuildError, match=r"C compiler '/nonexistent/cc' named by \$CC was not found.*target='python'"):
        build_func(_scale_kernel(8.0), "c")
    build_func(_scale_kernel(8.0), "python")  # the reference target needs no compiler


def test_format_compile_error_points_at_lines():
    src = "\n".join(f"line{k}" for k in range(1, 21))
    msg = format_compile_error("k", "k.c", src, ["cc", "k.c"], "k.c:10:3: error: boom\nk.c:18:1: note: here")
    assert "k.c:10:3: error: boom" in msg
    assert ">>   10 | line10" in msg and "     9 | line9" in msg and ">>   18 | line18" in msg
    assert "line3\n" not in msg and "  ..." in msg


@pytest.mark.parametrize("target", ["c", "python"])
def test_failed_temporary_allocation_is_an_exception(fresh_cache, target):
    n = E.Var("n", "int64")
    A, B = S.Buffer("A", "float64", (n,)), S.Buffer("B", "float64", (n,))
    huge = S.Buffer("huge", "float64", (n, 1 << 50))  # 8 PiB per row: no allocator can say yes
    i = E.Var("i", "int64")
    body = S.Allocate(huge, S.For(i, const(0, "int64"), n, "serial", S.seq(
        S.BufferStore(huge, ld(A, i), (i,)), S.BufferStore(B, ld(huge, i), (i,)))))
    k = build_func(S.PrimFunc("greedy", (A, B), (n,), body, (B,)), target)
    with pytest.raises(KernelRuntimeError, match="could not allocate"):
        k(rand(3, "float64"), np.zeros(3))
