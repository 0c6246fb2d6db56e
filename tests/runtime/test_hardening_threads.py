"""Issue 10, item 10: a kernel is callable from any number of threads at once.

A kernel with symbolic sizes remembers the sizes its index guards accepted (a bounded list, the
oldest forgotten first); eight threads calling it with more distinct shapes than it remembers
made two of them forget the same entry (``KeyError``). Every call here is checked against NumPy.
"""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import tessel
from tessel import te
from tessel.runtime.guards import REMEMBERED

THREADS = 8
SHAPES = [(n, m) for n in range(1, 16) for m in range(1, 11)]  # 150 small shapes: twice REMEMBERED and more


def _kernel(target: str):
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2.0 - A[i, 0], name="B")
    return tessel.build(te.create_schedule(B.op), [A, B], target=target)


@pytest.mark.parametrize("target", ["c", "python"])
def test_eight_threads_calling_one_symbolic_kernel_with_many_shapes(target):
    f = _kernel(target)
    assert f._spec.guards is not None  # the remembered sizes are what is shared between threads
    assert len(SHAPES) > 2 * REMEMBERED
    rng = np.random.default_rng(7)
    inputs = [rng.uniform(-2, 2, shape).astype("float32") for shape in SHAPES]
    for a in inputs:
        a.flags.writeable = False  # shared by every thread
    expected = [a * np.float32(2.0) - a[:, :1] for a in inputs]
    rounds = 12 if target == "c" else 3
    start = threading.Barrier(THREADS)
    failures: list[BaseException] = []

    def work(seed: int) -> None:
        order = np.random.default_rng(seed)
        try:
            start.wait()
            for _ in range(rounds):
                for k in order.permutation(len(SHAPES)):
                    b = np.full(SHAPES[k], np.nan, "float32")
                    f(inputs[k], b)
                    if not np.allclose(b, expected[k], rtol=1e-6, atol=1e-6):
                        raise AssertionError(f"wrong values for shape {SHAPES[k]}")
        except BaseException as e:  # reported by the main thread
            failures.append(e)
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: races show up at once
    try:
        threads = [threading.Thread(target=work, args=(s,)) for s in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert not failures, f"{len(failures)} thread(s) failed, first: {failures[0]!r}"
    assert len(f._spec.guards._accepted) <= REMEMBERED
