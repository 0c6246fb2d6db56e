"""``tvm.contrib.cblas``: matrix products as ``te.extern`` calls into the BLAS NumPy already loads.

``cblas.matmul(A, B, transa, transb)`` is an extern stage whose body is the packed call
``"tvm.contrib.cblas.matmul"`` (registered on import, as TVM registers it when built with BLAS):
``C = op(A) @ op(B)``, ``op`` transposing where asked, by ``numpy.matmul`` into the output.
``batch_matmul`` is the same over a leading batch axis.
"""

from __future__ import annotations

import numpy as np

from ...runtime.extern import register_func
from ...te import call_packed, extern


def _product(a, b, c, transa, transb) -> None:
    x, y = np.asarray(a), np.asarray(b)
    if transa:
        x = np.swapaxes(x, -1, -2)
    if transb:
        y = np.swapaxes(y, -1, -2)
    np.matmul(x, y, out=np.asarray(c))


register_func("tvm.contrib.cblas.matmul", _product, override=True)
register_func("tvm.contrib.cblas.batch_matmul", _product, override=True)


def matmul(lhs, rhs, transa: bool = False, transb: bool = False, **kwargs):
    """``op(lhs) @ op(rhs)`` as an extern stage (``kwargs``: TVM's ``name``/``tag``)."""
    n = lhs.shape[1] if transa else lhs.shape[0]
    m = rhs.shape[0] if transb else rhs.shape[1]
    return extern((n, m), [lhs, rhs],
                  lambda ins, outs: call_packed("tvm.contrib.cblas.matmul", ins[0], ins[1], outs[0], transa, transb),
                  name=kwargs.get("name", "C"), tag=kwargs.get("tag", ""))


def batch_matmul(lhs, rhs, transa: bool = False, transb: bool = False, **kwargs):
    """The product of each pair of matrices along the leading axis."""
    b = lhs.shape[0]
    n = lhs.shape[2] if transa else lhs.shape[1]
    m = rhs.shape[1] if transb else rhs.shape[2]
    return extern((b, n, m), [lhs, rhs],
                  lambda ins, outs: call_packed("tvm.contrib.cblas.batch_matmul", ins[0], ins[1], outs[0], transa,
                                                transb),
                  name=kwargs.get("name", "C"), tag=kwargs.get("tag", ""))


__all__ = ["batch_matmul", "matmul"]
