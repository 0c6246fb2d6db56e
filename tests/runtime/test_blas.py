"""share_blas_threads (tessel/runtime/blas.py): NumPy's OpenBLAS jobs run on the OpenMP pool
tessel's kernels use, with NumPy's results bit for bit as before, and back on OpenBLAS's own
pool when undone; where no OpenBLAS with the control is loaded it says so and changes nothing."""

from __future__ import annotations

import numpy as np
import pytest

from tessel.errors import TesselWarning
from tessel.runtime import blas, share_blas_threads


def _products() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    out = []
    for n, m, k in ((512, 384, 256), (97, 1031, 65), (1, 300, 2)):  # large enough for its threads, odd, tiny
        a, b = rng.standard_normal((n, k)), rng.standard_normal((k, m))
        out += [a @ b, (a.astype("float32") @ b.astype("float32"))]
    return out


def test_numpys_products_are_the_same_on_the_shared_pool_and_after():
    before = _products()
    if not blas._openblas():
        with pytest.warns(TesselWarning, match="no OpenBLAS with a threads callback"):
            assert share_blas_threads() is False
        return
    try:
        assert share_blas_threads() is True
        shared = _products()
    finally:
        assert share_blas_threads(False) is True
    after = _products()
    for x, y, z in zip(before, shared, after):
        np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(x, z)


def test_no_openblas_is_said_not_a_crash(monkeypatch):
    monkeypatch.setattr(blas, "_openblas", lambda: [])
    with pytest.warns(TesselWarning, match="NumPy must be imported first"):
        assert share_blas_threads() is False


def test_a_forked_child_computes_on_openblas_own_pool():
    """A child forked while the pool is shared runs NumPy on OpenBLAS's own pool (OpenMP's
    does not survive fork): its product is right and it ends, where it could have hung."""
    import os
    import signal

    if not blas._openblas():
        pytest.skip("no OpenBLAS with a threads callback in this process")  # the first test covers this case
    want = _products()[0]
    share_blas_threads()
    _products()  # the shared pool has run, in the parent
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover (the child)
            ok = np.array_equal(_products()[0], want)
            os._exit(0 if ok else 1)
        for _ in range(600):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            __import__("time").sleep(0.05)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child did not finish its product in 30 s")
        assert os.waitstatus_to_exitcode(status) == 0
        np.testing.assert_array_equal(_products()[0], want)  # the parent shares again after the fork
    finally:
        share_blas_threads(False)
