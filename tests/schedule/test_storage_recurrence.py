"""Storage commands meeting recurrences and in-place stages (fuzz findings F8, F10, F11).

A recurrence's definitions share one storage: ``store_in`` / ``storage_fold`` of the recurrence
moves every definition's writes, and the fold check sees all of them; a definition alone, or a
recurrence written in place, is refused. ``cache_write`` of a stage updating its input in place
(``store_in`` of a tensor it reads) is refused.
"""

import numpy as np
import pytest

from tessel import te
from tessel.errors import ScheduleError
from tessel.testing import check, rand


def _rec(n=6, m=3):
    A = te.placeholder((n, m), name="A")
    C = te.recurrence((n, m), [te.define(lambda h, i, j: A[i, j]),
                               te.define(lambda h, i, j: A[i, j] + h[i - 1, j] * 0.5, where=lambda i, j: i >= 1)],
                      name="C")
    D = te.compute((n, m), lambda i, j: C[i, j] * 2.0, name="D")
    a = rand(n, m)
    rc = a.astype(np.float64).copy()
    for i in range(1, n):
        rc[i] = a[i] + rc[i - 1] * 0.5
    return A, C, D, a, (rc * 2.0).astype(np.float32)


@pytest.mark.parametrize("index", [lambda i, j: (i, j), lambda i, j: (j, i)])
def test_store_in_of_a_recurrence_moves_every_definition(index):
    A, C, D, a, rd = _rec()
    s = te.create_schedule([D.op])
    shape = (6, 3) if index(1, 2) == (1, 2) else (3, 6)
    s[C].store_in(te.placeholder(shape, name="CS"), index)
    check(s, [A, D], [a], [rd], targets=("c", "python"))


def test_storage_fold_of_a_recurrence_moves_every_definition():
    """Every definition writes the folded buffer (the first one wrote C's own before), and the
    fold check sees the first definition's writes: it runs whole before the second, so fewer
    rows than all lose its values (refused, not a wrong value)."""
    A, C, _, a, rd = _rec()
    L = te.compute((3,), lambda j: C[5, j] * 2.0, name="L")
    s = te.create_schedule([L.op])
    s[C].storage_fold(C.op.axis[0], 6)
    check(s, [A, L], [a], [rd[5]], targets=("c", "python"))
    for f in (1, 2):
        s = te.create_schedule([L.op])
        s[C].storage_fold(C.op.axis[0], f)
        with pytest.raises(ScheduleError, match="C.def0 -> C .*overwrote"):
            check(s, [A, L], [a], [rd[5]], targets=("c", "python"))


def test_storage_fold_of_a_recurrence_too_small_is_refused():
    """F11: the fold's check saw only the last definition's writes and proposed a fold of 32
    columns of 33, read whole afterwards; the values were wrong."""
    A = te.placeholder((13, 33), name="A", dtype="float64")
    B = te.recurrence((13, 33), [te.define(lambda h, i, j: A[i, j]),
                                 te.define(lambda h, i, j: A[i, j] + h[i - 1, j] * 0.5 + h[i - 2, j - 1] * -0.25,
                                           where=lambda i, j: te.all(i >= 2, j >= 1))], name="B")
    C = te.compute((13, 33), lambda i, j: B[i, j] * 1.5 + 0.25, name="C")
    a = rand(13, 33, dtype="float64")
    rb = a.copy()
    for i in range(2, 13):
        for j in range(1, 33):
            rb[i, j] = a[i, j] + rb[i - 1, j] * 0.5 + rb[i - 2, j - 1] * -0.25
    for f in (2, 32):
        s = te.create_schedule([C.op])
        s[B].storage_fold(B.op.axis[1], f)
        with pytest.raises(ScheduleError, match="storage_fold\\(B.op.axis\\[1\\], 33\\)"):
            check(s, [A, C], [a], [rb * 1.5 + 0.25], targets=("c", "python"))
    s = te.create_schedule([C.op])
    s[B].storage_fold(B.op.axis[1], 33)
    check(s, [A, C], [a], [rb * 1.5 + 0.25], targets=("c", "python"))


def test_storage_of_one_definition_or_an_in_place_recurrence_is_refused():
    A, C, D, _, _ = _rec()
    s = te.create_schedule([D.op])
    d0 = C.op.definitions[0]
    with pytest.raises(ScheduleError, match=r"s\[C\]\.store_in"):
        s[d0].store_in(te.placeholder((6, 3), name="CS"))
    with pytest.raises(ScheduleError, match=r"s\[C\]\.storage_fold"):
        s[d0].storage_fold(d0.op.axis[0], 2)
    Img = te.placeholder((6, 3), name="Img")
    R = te.recurrence((6, 3), [te.define(lambda h, i, j: h[i - 1, j] * 0.5 + h[i, j], where=lambda i, j: i >= 1)],
                      name="R", inplace=Img)
    s = te.create_schedule([R.op])
    with pytest.raises(ScheduleError, match="written in place"):
        s[R].storage_fold(R.op.axis[0], 2)


def test_cache_write_of_an_in_place_stencil_is_refused():
    """F10: B stored in its input A (Gauss-Seidel); a cache computed every point from A's old
    values (Jacobi): wrong values. Refused; the stencil still runs in place."""
    A = te.placeholder((13, 3), name="A")
    B = te.compute((11, 1), lambda i, j: A[i, j + 1] * 0.5 + A[i + 1, j] + A[i + 1, j + 1] * -0.25
                   + A[i + 1, j + 2] * 0.125 + A[i + 2, j + 1] * 0.375, name="B")
    s = te.create_schedule([B.op])
    s[B].store_in(A, lambda i, j: (i + 1, j + 1))
    with pytest.raises(ScheduleError, match="cache_write.*in place"):
        s.cache_write(B, "local")
    a = rand(13, 3)
    xb = a.astype(np.float64).copy()
    for i in range(11):
        xb[i + 1, 1] = (xb[i, 1] * 0.5 + xb[i + 1, 0] + xb[i + 1, 1] * -0.25 + xb[i + 1, 2] * 0.125
                        + xb[i + 2, 1] * 0.375)
    check(s, [A], [a], [], targets=("c", "python"), updated={0: xb})


def test_cache_read_of_a_tensor_updated_in_place_is_refused():
    """F13 (seed 1 case 281): B stored in its input A reads the neighbour it updated just before
    (Gauss-Seidel along j); cache_read(A, readers=[B]) gave B a copy of A's old values (a
    Jacobi step): wrong values on both targets. Refused; without it B runs in place, right."""
    A = te.placeholder((3, 10), name="A")
    B = te.compute((1, 8), lambda i, j: A[i + 1, j] * 0.5 + A[i + 1, j + 1] + A[i, j + 1] * -0.25, name="B")
    s = te.create_schedule([B.op])
    s[B].store_in(A, lambda i, j: (i + 1, j + 1))
    with pytest.raises(ScheduleError, match="cache_read of A is refused: stage B writes its values into A in place"):
        s.cache_read(A, "shared", [s[B]])
    a = rand(3, 10)
    xb = a.astype(np.float64).copy()
    for j in range(8):
        xb[1, j + 1] = xb[1, j] * 0.5 + xb[1, j + 1] + xb[0, j + 1] * -0.25
    check(s, [A], [a], [], targets=("c", "python"), updated={0: xb})


def test_fold_is_judged_only_inside_the_tensor_as_written():
    """F14: at sizes where a reader already reads past a tensor's end (m = 0: ``C[i, 0]`` of an
    (n, 0) tensor), the folded buffer's bound check refused a legal fold with a BoundError
    blaming the reader's 'store_in'. The fold is judged on the elements of C alone."""
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    C = te.compute((n, m), lambda i, j: A[i, j] * 2.0 + 1.0, name="C")
    D = te.compute((n,), lambda i: C[i, 0] * 2.0 + C[i, m - 1], name="D")
    s = te.create_schedule([D.op])
    s[C].compute_at(s[D], D.op.axis[0])
    s[C].storage_fold(C.op.axis[0], 1)
    a = rand(5, 7)
    c = a * 2.0 + 1.0
    check(s, [A, D], [a], [c[:, 0] * 2.0 + c[:, 6]], targets=("c", "python"))


def test_fold_of_a_symbolic_recurrence_read_whole_is_refused_as_a_fold():
    """F14's program: the recurrence's first definition runs whole before the second, so no
    fold of its rows is legal; the refusal names the fold and the dependence, not a bound."""
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    C = te.recurrence((n, m), [te.define(lambda h, i, j: A[i, j]),
                               te.define(lambda h, i, j: A[i, j] + h[i - 2, j] * 0.5, where=lambda i, j: i >= 2)],
                      name="C")
    Dp = te.compute((n,), lambda i: C[i, 0] * 2.0 + 0.5, name="Dp")
    s = te.create_schedule([Dp.op])
    a = rand(6, 3)
    with pytest.raises(ScheduleError, match=r"storage_fold\(C.folded\[i%3, j\]\) is refused: .*C.def0 -> C"):
        s[C].storage_fold(s[C].leaf_iter_vars[0], 3)
        check(s, [A, Dp], [a], [a[:, 0]], targets=("c", "python"))
