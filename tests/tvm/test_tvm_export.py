"""export_library -> a new process -> load_module -> the same values, with no compiler there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import rand

import tessel
import tessel.tvm as tvm
from tessel import te
from tessel.errors import ArgumentError, BuildError, IndexOverflowError
from tessel.runtime import load_module

ROOT = Path(__file__).resolve().parents[2]

# the child process: load the library, run it on the saved inputs, save the output (and what a
# wrong call says); CC points nowhere, so any use of a compiler there would fail
CHILD = """
import json, sys
import numpy as np
import tvm
lib, inputs, out_shape, out_path = sys.argv[1], sys.argv[2].split(","), json.loads(sys.argv[3]), sys.argv[4]
f = tvm.runtime.load_module(lib)
arrays = [tvm.nd.array(np.load(p)) for p in inputs]
out = tvm.nd.array(np.full(out_shape, np.nan, dtype="float32"))
f(*arrays, out)
np.save(out_path, out.numpy())
try:
    f(*arrays, tvm.nd.array(np.zeros([s + 1 for s in out_shape], dtype="float32")))
except tvm.error.TVMError as e:
    print("REFUSED", type(e).__name__, e)
print("REPR", f.kernel)
"""


def _run_child(tmp_path: Path, lib: Path, inputs: list[np.ndarray], out_shape) -> tuple[np.ndarray, str]:
    paths = []
    for k, a in enumerate(inputs):
        p = tmp_path / f"in{k}.npy"
        np.save(p, a)
        paths.append(str(p))
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = dict(os.environ, CC="/nonexistent/cc", TESSEL_CACHE_DIR=str(tmp_path / "empty-cache"),
               PYTHONPATH=str(ROOT))
    out = tmp_path / "out.npy"
    res = subprocess.run([sys.executable, "-m", "tessel", "tvm", str(script), str(lib), ",".join(paths),
                          json.dumps(list(out_shape)), str(out)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    return np.load(out), res.stdout


def test_parallel_vectorized_kernel_in_a_new_process(tmp_path):
    n = te.var("n")
    A = te.placeholder((n, 19), name="A")
    B = te.placeholder((19,), name="B")
    C = te.compute((n, 19), lambda i, j: A[i, j] * B[j] + te.exp(A[i, j]), name="C")
    s = te.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=4)
    jo, ji = s[C].split(C.op.axis[1], factor=8)
    s[C].reorder(io, jo, ii, ji)
    s[C].parallel(io)
    s[C].vectorize(ji)
    f = tvm.build(s, [A, B, C], "llvm -mattr=+sse2", name="scale_exp")
    assert f.kernel.parallel and "omp" in f.get_source()
    lib = tmp_path / "scale_exp.so"
    f.export_library(str(lib))
    a, b = rand(37, 19), rand(19, seed=4)
    here = tvm.nd.array(np.zeros((37, 19), "float32"))
    f(tvm.nd.array(a), tvm.nd.array(b), here)
    got, stdout = _run_child(tmp_path, lib, [a, b], (37, 19))
    np.testing.assert_allclose(got, a * b + np.exp(a), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got, here.numpy())  # the same code: the same bits
    assert "REFUSED ArgumentError" in stdout and "'C'" in stdout  # the argument checks travel with it
    assert "scale_exp(A: float32(n, 19), B: float32(19,), C: float32(n, 19))" in stdout


def test_size_guards_travel_with_the_library(tmp_path):
    n = te.var("n")
    m = te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n * m,), lambda k: A[k // m, k % m] + 1, name="B")
    f = tessel.build(te.create_schedule(B.op), [A, B], target="c")
    lib = tmp_path / "flat.so"
    f.export_library(lib)
    g = load_module(lib)
    assert g.func.guards and len(g.func.guards) == len(f.func.guards)
    a = rand(5, 7)
    out = np.zeros(35, "float32")
    g(a, out)
    np.testing.assert_allclose(out, a.reshape(-1) + 1)
    # the loaded guards decide as the original's do (sizes past int32 cannot be allocated here)
    for sizes in ((5, 7), (46340, 46340), (46341, 46341), (70000, 3), (2**31 - 1, 1)):
        verdicts = []
        for kernel in (f, g):
            try:
                kernel._spec.guards.check(sizes)
                verdicts.append("ok")
            except IndexOverflowError as e:
                verdicts.append(str(e))
        assert verdicts[0] == verdicts[1], sizes
    with pytest.raises(IndexOverflowError, match="46341"):
        g._spec.guards.check((46341, 46341))
    with pytest.raises(ArgumentError, match="expected shape"):
        g(a, np.zeros(34, "float32"))


def test_names_are_data_in_the_library(tmp_path):
    name = 'A"*/\\\n?? \u00e9'
    A = te.placeholder((6,), name=name)
    B = te.compute((6,), lambda i: A[i] * 3, name="B")
    f = tessel.build(te.create_schedule(B.op), [A, B], target="c", name='k"\\')
    f.export_library(tmp_path / "k.so")
    g = load_module(tmp_path / "k.so")
    assert g.name == 'k"\\' and g.func.params[0].name == name
    a, out = rand(6), np.zeros(6, "float32")
    g(a, out)
    np.testing.assert_allclose(out, a * 3)


def test_a_loaded_library_exports_again(tmp_path):
    A = te.placeholder((9,), name="A")
    B = te.compute((9,), lambda i: A[i] - 1, name="B")
    tvm.build(te.create_schedule(B.op), [A, B], "llvm").export_library(str(tmp_path / "one.so"))
    once = tvm.runtime.load_module(str(tmp_path / "one.so"))
    once.export_library(str(tmp_path / "two.so"))
    assert (tmp_path / "two.so").read_bytes() == (tmp_path / "one.so").read_bytes()
    a, out = rand(9), tvm.nd.array(np.zeros(9, "float32"))
    tvm.runtime.load_module(str(tmp_path / "two.so"))(tvm.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), a - 1)


def test_refusals(tmp_path):
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(BuildError, match="target='c'"):
        tessel.build(s, [A, B], target="python").export_library(tmp_path / "p.so")
    with pytest.raises(BuildError, match="does not exist"):
        tessel.build(s, [A, B]).export_library(tmp_path / "no" / "such" / "dir.so")
    with pytest.raises(BuildError, match="no such file"):
        load_module(tmp_path / "missing.so")
    (tmp_path / "junk.so").write_bytes(b"not a library")
    with pytest.raises(BuildError, match="not a library written by tessel"):
        load_module(tmp_path / "junk.so")
    other = tessel.build(s, [A, B])  # a kernel from the cache: a library, but without the contract
    with pytest.raises(BuildError, match="not a library written by tessel"):
        load_module(other.lib_path)


def test_c_bytes_literal_escapes_every_byte():
    """What export_library embeds: every byte value comes back, and nothing can end the string,
    form a trigraph or comment, or splice a line."""
    import re

    from tessel.ir.names import c_bytes_literal

    data = bytes(range(256)) + b'??/ */ "\\\n' * 3
    text = c_bytes_literal(data, width=40)
    lines = text.split("\n")
    assert all(ln.startswith('"') and ln.endswith('"') for ln in lines) and len(lines) > 10
    body = "".join(ln[1:-1] for ln in lines)
    assert all(" " <= ch <= "~" for ch in body) and '"' not in body and "?" not in body
    assert re.fullmatch(r"(?:[^\\]|\\[0-7]{3})*", body)  # every backslash starts an octal escape
    decoded = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), body.encode("ascii"))
    assert decoded == data


@pytest.mark.parametrize("parallel", [False, True])
def test_save_then_create_shared_then_load_module(tmp_path, parallel):
    """TVM's getting-started route: ``fadd.save("x.o")``, ``cc.create_shared("x.so", ["x.o"])``,
    ``load_module("x.so")``: the object carries the calling contract, the library computes the
    same values and checks its arguments as the kernel did."""
    from tessel.tvm.contrib import cc

    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 3.0 - 1.0, name="B")
    s = te.create_schedule(B.op)
    if parallel:
        outer, _ = s[B].split(B.op.axis[0], factor=16)
        s[B].parallel(outer)
    fadd = tvm.build(s, [A, B], "llvm")
    fadd.save(str(tmp_path / "add.o"))
    cc.create_shared(str(tmp_path / "add.so"), [str(tmp_path / "add.o")])
    again = tvm.runtime.load_module(str(tmp_path / "add.so"))
    a = rand(77)
    b = tvm.nd.array(np.full(77, np.nan, "float32"))
    again(tvm.nd.array(a), b)
    np.testing.assert_allclose(b.numpy(), a * 3 - 1, rtol=1e-6)
    with pytest.raises(ArgumentError):
        again(tvm.nd.array(a), tvm.nd.array(np.zeros(5, "float32")))


def test_create_shared_takes_paths_as_data(tmp_path):
    from tessel.tvm.contrib import cc

    with pytest.raises(BuildError, match="linking failed"):
        cc.create_shared(str(tmp_path / "x.so"), ["-v"])  # a file named -v, not the option
    with pytest.raises(BuildError, match="options and cc are not taken"):
        cc.create_shared(str(tmp_path / "x.so"), [], options=["-O0"])
