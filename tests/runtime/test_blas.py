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
