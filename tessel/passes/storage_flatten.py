"""Storage flattening: te tensors become flat buffers.

A realized region becomes an ``allocate`` of exactly its extents, indexed relative to the
region's minimum (so ``realize C([dj, 1], [dk, 1])`` is one element, and ``C[dj, dk]`` inside
it is ``C[0]``). A tensor passed as an argument is the caller's whole array instead, indexed
absolutely. Every access ends up as one row-major offset, which both backends consume.
"""

from __future__ import annotations

from ..errors import LowerError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.buffer import BufferBind, DimAlign, aligned_strides
from ..ir.functor import Mutator, free_vars, replace_buffer, substitute
from ..ir.stmt import AttrKey


def flat_index(indices, shape) -> E.PrimExpr:
    """The row-major offset, exact: a constant row of a large tensor (``A[49999, i]``) folds to
    an offset beyond int32 that must not wrap (the index_dtype step gives it a dtype)."""
    idx: E.PrimExpr | None = None
    for i, n in zip(indices, shape):
        idx = i if idx is None else E.binary_exact(E.Add, E.binary_exact(E.Mul, idx, n), i)
    return idx if idx is not None else E.const(0, "int32")


class _Flatten(Mutator):
    def __init__(self, args: dict):
        self.args = args  # Tensor -> Buffer (the kernel's parameters)
        self.live: dict = {}  # Tensor -> (Buffer, mins)
        self.strides: dict = {}  # Tensor -> its strides where storage_align padded them
        self.align: dict = {}  # Tensor -> storage_align's request, while its realize is visited
        self.bind_lets: dict = {}  # Var -> value, set by the enclosing buffer binds (one let each)

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
            indices = [E.sub(i, m) for i, m in zip(indices, mins)]
        strides = self.strides.get(tensor) if tensor in self.live else None
        if strides is not None:
            off = E.const(0, indices[0].dtype) if indices else E.const(0)
            for i, st in zip(indices, strides):
                off = E.add(off, E.mul(i, E.cast(st, i.dtype)))
            return buf, off
        return buf, flat_index(indices, buf.shape)

    def visit_ProducerRealize(self, s: S.ProducerRealize):
        if s.producer in self.args:
            return self.visit(s.body)
        shape = [r.extent for r in s.bounds]
        align = self.align.get(s.producer)
        prev_strides = self.strides.pop(s.producer, None)
        if align:  # storage_align: one flat block laid out with the padded strides
            strides, size = aligned_strides(shape, align)
            self.strides[s.producer] = strides
            shape = [size]
        buf = S.Buffer(s.producer.name, s.producer.dtype, shape, s.scope)
        prev = self.live.get(s.producer)
        self.live[s.producer] = (buf, [r.min for r in s.bounds])
        body = self.visit(s.body)
        self.strides.pop(s.producer, None)
        if prev_strides is not None:
            self.strides[s.producer] = prev_strides
        if prev is None:
            del self.live[s.producer]
        else:
            self.live[s.producer] = prev
        return S.Allocate(buf, body)

    def visit_ProducerStore(self, s: S.ProducerStore):
        value = self.visit(s.value)
        buf, idx = self._index(s.producer, [self.visit(i) for i in s.indices], "written")
        return S.BufferStore(buf, value, (idx,))

    def visit_AttrStmt(self, s: S.AttrStmt):
        if s.key == AttrKey.BUFFER_DIM_ALIGN and isinstance(s.node, DimAlign):
            for t in s.node.tensors:
                self.align[t] = s.node.align
            body = self.visit(s.body)
            for t in s.node.tensors:
                self.align.pop(t, None)
            return body
        if s.key == AttrKey.DOUBLE_BUFFER_SCOPE and hasattr(s.node, "outputs"):  # on the buffers, as TVM has it
            body = self.visit(s.body)
            for t in s.node.outputs:
                if t in self.live:
                    body = S.AttrStmt(self.live[t][0], s.key, s.value, body)
            return body
        if s.key != AttrKey.BUFFER_BIND_SCOPE:
            return self.generic_visit(s)
        bind: BufferBind = s.node
        region = [E.Range(self.visit(r.min), self.visit(r.extent)) for r in s.value]
        real, mins = self._lookup(bind.tensor, "bound to buffer " + bind.buffer.name)
        starts = [r.min for r in region] if mins is None else [E.sub(r.min, m) for r, m in zip(region, mins)]
        aligned = self.strides.get(bind.tensor) if bind.tensor in self.live else None
        strides = aligned or _row_major(real.shape)
        base = _dot(starts, aligned) if aligned else flat_index(starts, real.shape)
        lets = bind_view(bind, region, base, strides, self.bind_lets)
        self.bind_lets.update(lets)
        body = replace_buffer(self.visit(s.body), bind.buffer, real)
        for var, _ in lets:
            del self.bind_lets[var]
        # the view's variables are replaced by their values, as TVM's binder does (its offset
        # is then read where it is used: `address_of(A[i*16])`)
        return substitute(body, dict(lets)) if lets else body

    def visit_ProducerLoad(self, e: E.ProducerLoad):
        buf, idx = self._index(e.producer, [self.visit(i) for i in e.indices], "read")
        return E.BufferLoad(buf, (idx,))

    def visit_Call(self, e: E.Call):
        """A prefetch's address: its flat offset clamped into the buffer (schedule_ops.prefetches
        lets the indices run past a row, into the next)."""
        at = e.args[0] if e.op == "prefetch" and e.args else None
        if not (isinstance(at, E.Call) and at.op == "address_of" and isinstance(at.args[0], E.ProducerLoad)):
            return self.generic_visit(e)
        load = at.args[0]
        buf, idx = self._index(load.producer, [self.visit(i) for i in load.indices], "prefetched")
        last = flat_index([E.sub(n, 1) for n in buf.shape], buf.shape)  # exact, as every offset is
        idx = E.max_(E.min_(idx, last), E.const(0, idx.dtype))
        return E.Call(e.dtype, e.op, (E.Call(at.dtype, at.op, (E.BufferLoad(buf, (idx,)), *at.args[1:])),))


def _dot(indices, strides) -> E.PrimExpr:
    out: E.PrimExpr = E.const(0)
    for i, st in zip(indices, strides):
        out = E.add(out, E.mul(i, st))
    return out


def _row_major(shape) -> list[E.PrimExpr]:
    out: list[E.PrimExpr] = []
    acc: E.PrimExpr = E.const(1, shape[-1].dtype if shape else "int32")
    for n in reversed(shape):
        out.append(acc)
        acc = E.mul(acc, n)
    return out[::-1]


def bind_view(bind: BufferBind, region: list[E.Range], base: E.PrimExpr,
              strides: list[E.PrimExpr], outer: dict | None = None) -> list[tuple[E.Var, E.PrimExpr]]:
    """The variables of view ``bind.buffer`` (element offset, strides, sizes) set so that it
    stands for ``region`` of its tensor, whose flat storage starts the region at ``base`` with
    ``strides``; whatever is declared constant must match (else a LowerError saying what).

    The view's dimensions are the region's last ones; the region's leading extra dimensions
    must have extent 1 (TVM's rule: a 16x16 tile of a 3-d tensor is one slice of it). A variable
    an enclosing bind set (``outer``: two buffers of one intrinsic sized ``n``) is checked, not
    set again."""
    from ..arith import Analyzer

    ana = Analyzer()
    buf, t = bind.buffer, bind.tensor
    lead = len(region) - buf.ndim
    what = f"buffer {buf.name} bound to {t.name}"
    if lead < 0:
        raise LowerError(f"{what}: the buffer has {buf.ndim} dimensions, the tensor region only {len(region)}")
    for r in region[:lead]:
        if not ana.can_prove_equal(r.extent, 1):
            raise LowerError(f"{what}: the region {_text(region)} has more dimensions than the buffer, and the "
                             f"extra leading ones must have extent 1 (this one is {r.extent})")
    lets: list[tuple[E.Var, E.PrimExpr]] = []
    known: dict[E.Var, E.PrimExpr] = dict(outer or {})
    wanted = [(buf.elem_offset, base, "element offset")]
    wanted += [(n, r.extent, f"size of dimension {k}") for k, (n, r) in enumerate(zip(buf.shape, region[lead:]))]
    wanted += [(st, real, f"stride of dimension {k}") for k, (st, real) in enumerate(zip(buf.strides, strides[lead:]))]
    region_vars = set().union(*(free_vars(r.min) | free_vars(r.extent) for r in region)) if region else set()
    for decl, actual, label in wanted:
        actual = ana.simplify(actual)
        if isinstance(decl, E.Var) and decl not in region_vars and decl not in known:
            known[decl] = actual
            lets.append((decl, E.cast(actual, decl.dtype)))
            continue
        decl_v = ana.simplify(_subst(decl, known))
        if not ana.can_prove_equal(decl_v, E.cast(actual, decl_v.dtype)):
            hint = (" (declare the buffer with strides=[te.var(...), ..., 1] to accept any row length)"
                    if "stride" in label and buf.compact else "")
            hint = hint or (" (declare it with offset_factor=1 so that the offset is a variable)"
                            if label == "element offset" else "")
            raise LowerError(f"{what}: its {label} is declared {decl}, but the region {_text(region)} of "
                             f"{t.name} needs {actual}{hint}")
    start = ana.simplify(base)
    if isinstance(start, E.IntImm) and buf.offset_factor > 1 and start.value % buf.offset_factor:
        raise LowerError(f"{what}: the region starts at element {start}, not a multiple of the "
                         f"declared offset_factor {buf.offset_factor}")
    size = max(buf.dtype.bits // 8, 1)
    if isinstance(start, E.IntImm) and buf.data_alignment > 0 and (start.value * size) % buf.data_alignment:
        raise LowerError(f"{what}: the region starts {start.value * size} bytes into {t.name}, not on the declared "
                         f"data_alignment of {buf.data_alignment} bytes; declare a smaller alignment or align the tile")
    return lets


def _subst(e: E.PrimExpr, known: dict) -> E.PrimExpr:
    from ..ir.functor import substitute

    return substitute(e, known)


def _text(region) -> str:
    return "[" + ", ".join(f"{r.min}:{r.min + r.extent}" for r in region) + "]"


def storage_flatten(stmt: S.Stmt, args: dict) -> S.Stmt:
    """``args`` maps each argument tensor to its parameter Buffer."""
    return _Flatten(args).visit(stmt)
