"""A statement builder for the bodies of extern stages and tensor intrinsics (TVM's
``tvm.tir.ir_builder``): loops, branches, temporaries and stores written as Python code.

    ib = ir_builder.create()
    a, b = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
    with ib.for_range(0, n, name="i") as i:
        with ib.if_scope(i > 0):
            b[i] = a[i] + a[i - 1]
        with ib.else_scope():
            b[i] = a[i]
    return ib.get()

Everything it makes is ordinary IR (``For``, ``IfThenElse``, ``Allocate``, stores into the
declared buffers), so storage flattening binds the buffers and both targets run it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ..errors import DefinitionError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.buffer import DeclBuffer
from ..ir.dtype import DTypeLike
from ..ir.dtype import dtype as to_dtype

# the spellings for_range accepts (TVM's and the primitives'), by the loop kind each means
_KINDS = {"serial": S.LoopKind.SERIAL, "parallel": S.LoopKind.PARALLEL, "vectorize": S.LoopKind.VECTORIZED,
          "vectorized": S.LoopKind.VECTORIZED, "unroll": S.LoopKind.UNROLLED, "unrolled": S.LoopKind.UNROLLED}


class BufferVar:
    """Indexing a buffer inside the builder: ``p[i]`` reads, ``p[i] = v`` stores. An index per
    dimension, or one flat index (elements from the buffer's start, as TVM's pointers take)."""

    def __init__(self, builder: IRBuilder, buffer: S.Buffer):
        self._builder, self._buffer = builder, buffer

    @property
    def dtype(self):
        return self._buffer.dtype

    def _offset(self, index) -> E.PrimExpr:
        idx = index if isinstance(index, tuple | list) else (index,)
        buf = self._buffer
        if isinstance(buf, DeclBuffer):
            if len(idx) == 1 and buf.ndim != 1:
                return E.add(buf.elem_offset, idx[0])
            return buf.offset_of(tuple(idx))
        if len(idx) != 1:
            raise DefinitionError(f"ir_builder: the temporary {buf.name} is flat; index it with one index")
        return E.convert(idx[0])

    def __getitem__(self, index) -> E.PrimExpr:
        return E.BufferLoad(self._buffer, (self._offset(index),))

    def __setitem__(self, index, value) -> None:
        value = E.cast(value, self._buffer.dtype)
        self._builder.emit(S.BufferStore(self._buffer, value, (self._offset(index),)))


class IRBuilder:
    """Collects statements; ``get()`` gives them as one statement."""

    def __init__(self) -> None:
        self._seq: list[list] = [[]]
        self._last_if: S.IfThenElse | None = None

    def emit(self, stmt) -> None:
        """Append a statement (an expression is evaluated for its effect; a function wraps all
        the statements that follow it in the current scope)."""
        if isinstance(stmt, E.PrimExpr | int):
            stmt = S.Evaluate(E.convert(stmt))
        if not (isinstance(stmt, S.Stmt) or callable(stmt)):
            raise DefinitionError(f"ir_builder.emit: {stmt!r} is not a statement or an expression")
        self._seq[-1].append(stmt)

    def _pop(self) -> S.Stmt:
        parts = self._seq.pop()
        body: S.Stmt = S.Evaluate(0)
        for p in reversed(parts):
            body = p(body) if callable(p) and not isinstance(p, S.Stmt) else S.seq(p, body)
        return body

    @contextmanager
    def for_range(self, begin, end, name: str = "i", dtype: DTypeLike = "int32", kind: str = "serial") -> Iterator[E.Var]:
        if kind not in _KINDS:
            raise DefinitionError(f"ir_builder.for_range: kind {kind!r} is not one of {', '.join(_KINDS)}")
        var = E.Var(name, to_dtype(dtype))
        self._seq.append([])
        yield var
        body = self._pop()
        begin, end = E.cast(begin, var.dtype), E.cast(end, var.dtype)
        self.emit(S.For(var, begin, E.sub(end, begin), _KINDS[kind], body))

    @contextmanager
    def if_scope(self, cond) -> Iterator[None]:
        self._seq.append([])
        yield
        stmt = S.IfThenElse(E.convert(cond), self._pop())
        self.emit(stmt)
        self._last_if = stmt

    @contextmanager
    def else_scope(self) -> Iterator[None]:
        prev = self._seq[-1][-1] if self._seq[-1] else None
        if prev is None or prev is not self._last_if or prev.else_case is not None:
            raise DefinitionError("ir_builder.else_scope must follow an if_scope directly")
        self._seq.append([])
        yield
        branch = S.IfThenElse(prev.condition, prev.then_case, self._pop())
        self._seq[-1][-1] = branch
        self._last_if = None

    def allocate(self, dtype: DTypeLike, shape, name: str = "buf", scope: str = "local") -> BufferVar:
        """A temporary alive for the rest of the current scope."""
        n = shape if isinstance(shape, int | E.PrimExpr) else _product(shape)
        buf = S.Buffer(name, dtype, (n,), scope if scope in ("global", "local", "shared", "warp") else "local")
        self.emit(_allocator(buf))
        return BufferVar(self, buf)

    def buffer_ptr(self, buf: S.Buffer, shape=None) -> BufferVar:
        if not isinstance(buf, S.Buffer):
            raise DefinitionError(f"ir_builder.buffer_ptr needs a buffer (the ins/outs of te.extern), got {buf!r}")
        return BufferVar(self, buf)

    def get(self) -> S.Stmt:
        if len(self._seq) != 1:
            raise DefinitionError("ir_builder.get: a scope (for_range, if_scope) is still open")
        return self._pop()


def _product(shape) -> E.PrimExpr:
    out: E.PrimExpr = E.const(1)
    for n in shape:
        out = E.mul(out, n)
    return out


def _allocator(buf: S.Buffer) -> Callable[[S.Stmt], S.Stmt]:
    return lambda body: S.Allocate(buf, body)


def create() -> IRBuilder:
    return IRBuilder()


__all__ = ["BufferVar", "IRBuilder", "create"]
