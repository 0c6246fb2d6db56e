"""Issue 10, item 14: a kernel's library is unloaded when nothing refers to it any more.

An autotuner builds thousands of candidates in one process; each loaded library costs several
memory mappings, which used to stay for good.
"""

from __future__ import annotations

import ctypes
import gc
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
from cg_util import elementwise, ld

import tessel
from tessel.driver import build_func
from tessel.ir import stmt as S
from tessel.ir.expr import const
from tessel.runtime import cache

REPO = Path(tessel.__file__).resolve().parent.parent
N = 7


def _kernel(k: int) -> S.PrimFunc:
    """``B = A*3 + 1``; ``k`` only renames the input, so every ``k`` is a different source (and
    cache entry) for the very same machine code."""
    A, B = S.Buffer(f"A{k}", "float32", (N,)), S.Buffer("B", "float32", (N,))
    return elementwise("affine", [A], [(B, lambda i: ld(A, i) * const(3.0, "float32") + const(1.0, "float32"))], N)


def _mappings(root: Path) -> int:
    with open("/proc/self/maps") as f:
        return sum(str(root) in line for line in f)


def _check(f, a: np.ndarray) -> None:
    b = np.full(N, np.nan, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a * np.float32(3) + np.float32(1), rtol=1e-6)


def test_three_thousand_builds_keep_the_mapping_count_bounded(fresh_cache, monkeypatch):
    """3,000 builds, each a distinct library file loaded in this process. Compiling 3,000 sources
    would take minutes, so after the first (a real compile) the compiler is replaced by a copy of
    that first object: the sources differ only in a parameter's name, so the copy is the code the
    compiler would make, and every build still goes through the cache (key, lock, sidecar,
    verified load) and loads its own file. Every kernel is run and checked."""
    a = np.random.default_rng(1).uniform(-2, 2, N).astype("float32")
    kept = build_func(_kernel(0), "c")  # alive all along: must keep working
    _check(kept, a)
    first = kept.lib_path

    def copy_first(comp, source, out_path, flags, name):
        shutil.copyfile(first, out_path)

    monkeypatch.setattr(cache, "compile_shared", copy_first)
    pointer = build_func(_kernel(1), "c")._cfunc  # the kernel goes, a function pointer stays
    gc.collect()
    paths, most = set(), 0
    for k in range(2, 3002):
        f = build_func(_kernel(k), "c")
        assert not f.cache_hit
        paths.add(f.lib_path)
        _check(f, a)
        del f
        if k % 100 == 0:
            most = max(most, _mappings(fresh_cache))
    assert len(paths) == 3000
    assert most <= 60, f"{most} mappings of cache files after {len(paths)} builds"
    _check(kept, a)
    b = np.full(N, np.nan, "float32")
    assert pointer(a.ctypes.data, b.ctypes.data) == 0  # still loaded
    np.testing.assert_allclose(b, a * np.float32(3) + np.float32(1), rtol=1e-6)


_PARALLEL = r"""
import gc, sys
import numpy as np
import tessel
from tessel import te
for k in range(4):
    A = te.placeholder((64, 8), name="A")
    B = te.compute((64, 8), lambda i, j: A[i, j] * float(k + 2), name="B")
    s = te.create_schedule(B.op)
    s[B].parallel(B.op.axis[0])
    f = tessel.build(s, [A, B])
    a = np.random.default_rng(k).uniform(-1, 1, (64, 8)).astype("float32")
    b = np.zeros_like(a)
    f(a, b, num_threads=4)
    assert np.allclose(b, a * (k + 2)), k
    del f
    gc.collect()
print("ok")
"""


def test_unloading_parallel_kernels_leaves_the_openmp_runtime_working(fresh_cache):
    """The OpenMP runtime's pooled threads outlive each kernel: unloading kernels one after the
    other, with the pool in use in between, must neither crash nor break the next kernel (in a
    process of its own, so that a crash is a failure, not the end of the test run)."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    res = subprocess.run([sys.executable, "-c", _PARALLEL], env=env, cwd=str(REPO), capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0 and res.stdout.strip().endswith("ok"), res.stderr[-2000:]


def test_a_library_in_use_is_not_unloaded(fresh_cache):
    f = build_func(_kernel(0), "c")
    lib = f._lib
    del f
    gc.collect()
    handle = lib._handle
    # still mapped: dlopen with RTLD_NOLOAD finds it loaded
    again = ctypes.CDLL(str(cache.cache_dir() / "kernels" / Path(lib._name).name),
                        mode=os.RTLD_NOLOAD | os.RTLD_NOW)
    assert again._handle == handle
