"""Storage flattening: te tensors become flat buffers.

A realized region becomes an ``allocate`` of exactly its extents, indexed relative to the
region's minimum (so ``realize C([dj, 1], [dk, 1])`` is one element, and ``C[dj, dk]`` inside
it is ``C[0]``). A tensor passed as an argument is the caller's whole array instead, indexed
absolutely. Every access ends up as one row-major offset, which both backends consume.
"""

from __future__ import annotations

from ..errors import LowerError
from ..ir import expr as E
from ..ir import op as O
from ..ir import stmt as S
from ..ir.functor import Mutator


def flat_index(indices, shape) -> E.PrimExpr:
    """The row-major offset, exact: a constant row of a large tensor (``A[49999, i]``) folds to
    an offset beyond int32 that must not wrap (the index_dtype step gives it a dtype)."""
    idx: E.PrimExpr | None = None
    for i, n in zip(indices, shape):
        idx = i if idx is None else O.binary_exact(E.Add, O.binary_exact(E.Mul, idx, n), i)
    return idx if idx is not None else O.const(0, "int32")


class _Flatten(Mutator):
    def __init__(self, args: dict):
        self.args = args  # Tensor -> Buffer (the kernel's parameters)
        self.live: dict = {}  # Tensor -> (Buffer, mins)

    def _lookup(self, tensor, where: str):
        if tensor in self.live:
            return self.live[tensor]
        if tensor in self.args:
            buf = self.args[tensor]
            return buf, None
        raise LowerError(
            f"tensor {tensor.name} is {where} but is neither computed by this schedule nor passed as an "
            f"argument: add {tensor.name} to the argument list of lower/build"
        )

    def _index(self, tensor, indices, where: str):
        buf, mins = self._lookup(tensor, where)
        if mins is not None:
            indices = [O.sub(i, m) for i, m in zip(indices, mins)]
        return buf, flat_index(indices, buf.shape)

    def visit_ProducerRealize(self, s: S.ProducerRealize):
        if s.producer in self.args:
            return self.visit(s.body)
        shape = [r.extent for r in s.bounds]
        buf = S.Buffer(s.producer.name, s.producer.dtype, shape, s.scope)
        prev = self.live.get(s.producer)
        self.live[s.producer] = (buf, [r.min for r in s.bounds])
        body = self.visit(s.body)
        if prev is None:
            del self.live[s.producer]
        else:
            self.live[s.producer] = prev
        return S.Allocate(buf, body)

    def visit_ProducerStore(self, s: S.ProducerStore):
        value = self.visit(s.value)
        buf, idx = self._index(s.producer, [self.visit(i) for i in s.indices], "written")
        return S.BufferStore(buf, value, (idx,))

    def visit_ProducerLoad(self, e: E.ProducerLoad):
        buf, idx = self._index(e.producer, [self.visit(i) for i in e.indices], "read")
        return E.BufferLoad(buf, (idx,))


def storage_flatten(stmt: S.Stmt, args: dict) -> S.Stmt:
    """``args`` maps each argument tensor to its parameter Buffer."""
    return _Flatten(args).visit(stmt)
