"""Three-way checks: the python target, the C target and NumPy must agree on random data."""

from __future__ import annotations

from tessel.testing.numeric import TARGETS, check, garbage_like, rand  # noqa: F401  (the tests' names)


def ir_text(sch, args, step="schedule_ops"):
    """The IR after one named lowering step, as text."""
    from tessel.driver import lower_steps

    _, steps = lower_steps(sch, args)
    return str(next(s.ir for s in steps if s.name == step))


def loops(text: str) -> list[str]:
    """The loop headers of an IR listing, in order, without indentation."""
    return [ln.strip() for ln in text.splitlines() if ln.strip().startswith(("for ", "parallel ", "vectorized ", "unrolled "))]


def four_stage_chain(middle: str = "C"):
    """A -> B -> <middle> -> D, elementwise on 8x6: the chain the legality tests attach along
    (``middle`` names the third stage, e.g. "bicycle" to test that a name is never read as a rule)."""
    from tessel import te

    A = te.placeholder((8, 6), name="A")
    B = te.compute((8, 6), lambda i, j: A[i, j] + 1, name="B")
    C = te.compute((8, 6), lambda i, j: B[i, j] * 2, name=middle)
    D = te.compute((8, 6), lambda i, j: C[i, j] - 3, name="D")
    return A, B, C, D
