"""A new target is one entry in the backend table (tessel/target/backends.py): registered there,
``tessel.build`` compiles and runs it with no change in the driver. This is the extension point
docs/contributing.md's target recipe builds on."""

from __future__ import annotations

import numpy as np
from helpers import rand

import tessel
from tessel import te
from tessel.codegen.python import generate_python
from tessel.runtime.loader import load_python
from tessel.target import backends


def test_a_registered_target_builds_through_the_driver(monkeypatch):
    monkeypatch.setattr(backends, "_BACKENDS", dict(backends._BACKENDS))  # the registration is undone after
    seen = []

    def generate(func, target):
        seen.append((target.kind, func.name))
        return generate_python(func, target)

    backends.register_backend("toy", backends.Backend(generate, load_python))
    A = te.placeholder((13,), name="A")
    B = te.compute((13,), lambda i: A[i] * 3 - 1, name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=4)
    f = tessel.build(s, [A, B], target="toy", name="toy_kernel")
    a, b = rand(13), np.full(13, np.nan, dtype="float32")
    f(a, b)
    np.testing.assert_allclose(b, a * 3 - 1, rtol=1e-6)
    assert seen == [("toy", "toy_kernel")]
