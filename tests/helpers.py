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


def heat_steps(steps: int, n: int, m: int):
    """``A`` and a recurrence ``h`` over ``(steps, n, m)``: the five-point average of the step
    before inside, the border carried over (its reads clamped so the unchosen side stays in the
    array), and ``out`` = the last step."""
    from tessel import te

    A = te.placeholder((n, m), name="A", dtype="float64")

    def step(h, t, i, j):
        inside = te.all(i > 0, j > 0, i < n - 1, j < m - 1)
        c = (h[t - 1, i, j] + h[t - 1, te.max(i - 1, 0), j] + h[t - 1, te.min(i + 1, n - 1), j]
             + h[t - 1, i, te.max(j - 1, 0)] + h[t - 1, i, te.min(j + 1, m - 1)]) * 0.2
        return te.if_then_else(inside, c, h[t - 1, i, j])

    h = te.recurrence((steps, n, m), [te.define(lambda h, t, i, j: A[i, j], where=lambda t, i, j: t == 0),
                                      te.define(step, where=lambda t, i, j: t > 0)], name="h")
    out = te.compute((n, m), lambda i, j: h[steps - 1, i, j], name="out")
    return A, h, out


def five_point(x):
    """One step of ``heat_steps``'s stencil in NumPy: the interior averaged, the border kept."""
    y = x.copy()
    y[1:-1, 1:-1] = (x[1:-1, 1:-1] + x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:]) * 0.2
    return y


def heat_steps_ref(a, steps: int):
    for _ in range(1, steps):
        a = five_point(a)
    return a


def cross_thread_row_sum(n, m):
    """TVM's reduction tutorial's last schedule: B = A.sum(axis=1), rows over blockIdx.x and
    threadIdx.y, the factored reduction over threadIdx.x, one thread storing each row's sum
    (set_store_predicate). ``(s, A, B, BF)``."""
    from tessel import te

    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    _, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    BF = s.rfactor(B, ki)
    xo, xi = s[B].split(s[B].op.axis[0], factor=32)
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    s[B].bind(xi, te.thread_axis("threadIdx.y"))
    tx = te.thread_axis("threadIdx.x")
    s[B].bind(s[B].op.reduce_axis[0], tx)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    s[B].set_store_predicate(tx.var == 0)
    return s, A, B, BF
